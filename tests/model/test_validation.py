"""The §10 validation checklist (model/validation/): findings with paths, sampling, cancel."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import numpy as np
import zarr

from ecpfs_viewer.model.ecpfs import Severity
from ecpfs_viewer.model.hierarchy import Hierarchy
from ecpfs_viewer.model.stores import open_store
from ecpfs_viewer.model.validation import CheckProgress, validate


def check(path: Path, **kwargs):
    return validate(Hierarchy(open_store(path)), **kwargs)


def overwrite(root: Path, name: str, values, dtype: str) -> None:
    """Replace the data of an existing array, keeping its metadata (chunks, codecs)."""
    array = zarr.open_array(root / name, mode="r+")
    array[...] = np.asarray(values, dtype=dtype)


def messages(report, severity: Severity) -> list[tuple[str, str]]:
    return [(f.path, f.message) for f in report.findings if f.severity is severity]


def test_two_clusters_is_clean(two_clusters_path: Path) -> None:
    report = check(two_clusters_path)
    assert report.ok and report.findings == ()
    assert "lvl_2 item_ids: 4 of 4 usable leaves decoded (8 distinct item ids)" in report.checked
    assert report.summary is not None and report.summary.levels == 2


def test_format_version_2_is_an_error(two_clusters_copy: Path) -> None:
    overwrite(two_clusters_copy, "info/format_version", 2, "uint32")
    report = check(two_clusters_copy)
    assert [p for p, _ in messages(report, Severity.ERROR)] == ["info/format_version"]
    assert "format version 2 is not supported" in report.errors[0].message


def test_missing_format_version_is_a_warning(two_clusters_copy: Path) -> None:
    shutil.rmtree(two_clusters_copy / "info" / "format_version")
    report = check(two_clusters_copy)
    assert report.ok
    assert [p for p, _ in messages(report, Severity.WARNING)] == ["info/format_version"]


def test_metric_cosine_is_an_error(two_clusters_copy: Path) -> None:
    overwrite(two_clusters_copy, "info/metric", "cosine", "T")
    report = check(two_clusters_copy)
    assert ("info/metric", "'cosine' is not a metric ecpfs knows (expected 'L2' or 'IP', case-sensitive)") \
        in messages(report, Severity.ERROR)


def test_missing_required_arrays_are_each_named(two_clusters_copy: Path) -> None:
    shutil.rmtree(two_clusters_copy / "rep_item_ids")
    shutil.rmtree(two_clusters_copy / "info" / "next_item_id")
    report = check(two_clusters_copy)
    errors = messages(report, Severity.ERROR)
    assert ("info/next_item_id", "missing (required by format version 1)") in errors
    assert ("rep_item_ids", "missing (required by format version 1)") in errors


def test_ids_embeddings_length_mismatch(two_clusters_copy: Path) -> None:
    group = zarr.open_group(two_clusters_copy / "lvl_2" / "node_3", mode="a")
    del group["item_ids"]
    group.create_array("item_ids", data=np.array([6, 7, 1], dtype="uint32"))
    report = check(two_clusters_copy)
    errors = messages(report, Severity.ERROR)
    assert ("lvl_2/node_3", "embeddings has 2 rows but item_ids has 3 (shape [3]); they must agree") in errors
    # the extra id also appears in another leaf: a duplicate found by decoding all 4 leaves
    assert any(p == "lvl_2/node_3/item_ids" and "item id 1 appears in lvl_2/node_0" in m for p, m in errors)
    # node sizes count embeddings rows, so the leaf sum still matches total_items
    assert not any("leaf sizes sum" in m for _, m in messages(report, Severity.WARNING))


def test_ids_beyond_counters_and_representatives(two_clusters_copy: Path) -> None:
    overwrite(two_clusters_copy, "lvl_2/node_1/item_ids", [2, 30], "uint32")
    overwrite(two_clusters_copy, "lvl_1/node_1/node_ids", [1, 2, 9], "uint32")
    report = check(two_clusters_copy)
    errors = messages(report, Severity.ERROR)
    assert ("lvl_2/node_1/item_ids", "item id 30 is not below next_item_id (8)") in errors
    assert ("lvl_1/node_1/node_ids", "value 9 is not a representative (R = 4)") in errors


def test_crash_gap_and_wrong_dtype(two_clusters_copy: Path) -> None:
    overwrite(two_clusters_copy, "info/next_item_id", 11, "uint32")
    group = zarr.open_group(two_clusters_copy / "info", mode="a")
    del group["levels"]
    group.create_array("levels", shape=(), dtype="int64", compressors=None, fill_value=0)[...] = 2
    report = check(two_clusters_copy)
    assert ("info/levels", "must be uint32, found int64") in messages(report, Severity.ERROR)
    warnings = messages(report, Severity.WARNING)
    assert any(p == "info/next_item_id" and m.startswith("3 item ids reserved but never written")
               for p, m in warnings)


def test_missing_child_and_root_mismatch(two_clusters_copy: Path) -> None:
    shutil.rmtree(two_clusters_copy / "lvl_2" / "node_1")
    overwrite(two_clusters_copy, "index_root/embeddings", [[0, 0], [5, 5]], "float32")
    report = check(two_clusters_copy)
    warnings = messages(report, Severity.WARNING)
    assert any(p == "lvl_2" and m.startswith("1 of 4 referenced child nodes do not exist (e.g. node_1)")
               for p, m in warnings)
    assert any(p == "index_root/embeddings" and "row 1 differs from rep_embeddings[1]" in m for p, m in warnings)


def test_normalized_flag_on_non_unit_vectors(two_clusters_copy: Path) -> None:
    group = zarr.open_group(two_clusters_copy / "info", mode="a")
    group["is_normalized"][...] = True
    report = check(two_clusters_copy)
    [finding] = [f for f in report.findings if "is_normalized is true" in f.message]
    assert finding.severity is Severity.WARNING and finding.sampled.startswith("checked ")


def test_corrupt_chunk_is_an_error_naming_the_path(two_clusters_copy: Path) -> None:
    (two_clusters_copy / "lvl_2" / "node_2" / "item_ids" / "c" / "0").write_bytes(b"garbage")
    report = check(two_clusters_copy)
    assert any(f.path == "lvl_2/node_2/item_ids" and "cannot read data" in f.message for f in report.errors)


def test_sampling_is_reported_and_bounded(two_clusters_path: Path) -> None:
    report = check(two_clusters_path, max_node_reads=2)
    assert any("(sampled)" in item and "of 4 usable leaves" in item for item in report.checked)


def test_progress_and_cancel(two_clusters_path: Path) -> None:
    seen: list[CheckProgress] = []
    report = check(two_clusters_path, progress=seen.append)
    assert seen and seen[-1].done == seen[-1].total
    cancel = threading.Event()
    cancel.set()
    stopped = check(two_clusters_path, cancel=cancel)
    assert stopped.cancelled and "incomplete" in stopped.findings[-1].message
    assert report.ok


def test_legacy_index_is_one_error_with_the_reason(two_clusters_copy: Path) -> None:
    for name in ("info/format_version", "info/next_item_id"):
        shutil.rmtree(two_clusters_copy / name)
    report = check(two_clusters_copy)
    [error] = report.errors
    assert error.path == "" and error.message.startswith("pre-v1 Rust index: missing info/next_item_id")


def test_validation_reuses_level_stats_until_the_hierarchy_is_refreshed(two_clusters_copy: Path) -> None:
    """Statistics cached on the Hierarchy serve a second run; after refresh the change is seen."""
    h = Hierarchy(open_store(two_clusters_copy))
    first = validate(h)
    assert first.ok
    shutil.rmtree(two_clusters_copy / "lvl_2" / "node_3")
    again = validate(h)
    assert again.levels[-1] is first.levels[-1]  # nothing re-read: the store is not watched
    h.refresh("lvl_2")
    after = validate(h)
    assert after.levels[-1] is not first.levels[-1] and after.levels[-1].gap_ids == (3,)
    assert any(p == "lvl_2" and "do not exist" in m for p, m in messages(after, Severity.WARNING))
    other = validate(Hierarchy(open_store(two_clusters_copy)))  # a new Hierarchy computes its own
    assert other.levels[-1] is not after.levels[-1] and other.levels[-1].gap_ids == (3,)
