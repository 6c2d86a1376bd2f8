"""The §10 validation checklist (model/validation/): findings with paths, sampling, cancel."""

from __future__ import annotations

import dataclasses
import re
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
import zarr
from index_factory import build_clustered_index

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.build.demo import ensure_demo_index
from ecpfs_viewer.model.ecpfs import Severity, summarize
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.validation import CheckProgress, findings_under, oversize_rule, oversized_leaves, validate
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


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


# -- numbers a user can trust, fewer false alarms ------------------------------------------------

_X_OF_Y = re.compile(r"(\d[\d,]*) of (\d[\d,]*)")


def _x_of_y(report) -> list[tuple[str, int, int]]:
    """Every 'x of y' count the report states (checked lines, messages, sampling notes)."""
    texts = [*report.checked, *(f.message for f in report.findings), *(f.sampled for f in report.findings)]
    return [(text, int(x.replace(",", "")), int(y.replace(",", "")))
            for text in texts for x, y in _X_OF_Y.findall(text)]


def _fresh_build(tmp_path: Path, vectors: np.ndarray, params: BuildParams) -> Path:
    source, output = tmp_path / "vectors.npy", tmp_path / "fresh.zarr"
    np.save(source, vectors)
    build_index(source, output, params)
    return output


def _corrupt(root: Path) -> Path:
    """two_clusters with a leaf that lost its embeddings (ids only): broken, and not listed as a node."""
    shutil.rmtree(root / "lvl_2" / "node_2" / "embeddings")
    return root


def test_a_leaf_with_unreadable_embeddings_exists_and_is_said_broken_once(two_clusters_copy: Path) -> None:
    """item_ids reads, embeddings/zarr.json is not JSON: one error naming that document, no 'missing'."""
    (two_clusters_copy / "lvl_2" / "node_1" / "embeddings" / "zarr.json").write_text("{not json")
    report = check(two_clusters_copy)
    about_node = [(f.path, f.message) for f in report.findings if f.path.startswith("lvl_2/node_1")]
    assert len(about_node) == 1 and about_node[0][1].startswith("lvl_2/node_1/embeddings/zarr.json: not valid JSON")
    assert not [m for _p, m in messages(report, Severity.WARNING) if "do not exist" in m]
    assert ("lvl_2", "leaf sizes sum to 6 but total_items is 8 (1 leaf without usable embeddings not counted)") \
        in messages(report, Severity.WARNING)
    assert report.levels[-1].gap_count == 0 and report.levels[-1].sizeless == {1: "unreadable"}


def test_every_x_of_y_has_x_at_most_y(two_clusters_path: Path, two_clusters_copy: Path, tmp_path: Path) -> None:
    gaussian = np.random.default_rng(1).standard_normal((2000, 8)).astype(np.float32)
    stores = {
        "two_clusters": two_clusters_path,
        "corrupt": _corrupt(two_clusters_copy),
        "demo": ensure_demo_index(),
        "gaussian": _fresh_build(tmp_path, gaussian, BuildParams(levels=2, target_cluster_items=10)),
    }
    for name, path in stores.items():
        for budget in (256, 3):  # complete and sampled
            counts = _x_of_y(check(path, max_node_reads=budget))
            assert counts, name
            assert [c for c in counts if c[1] > c[2]] == [], name


def test_rep_rows_are_counted_once(tmp_path: Path) -> None:
    """R = 200 but the root and lvl_1 hold 15 + 200 copies: 200 distinct rows are compared."""
    gaussian = np.random.default_rng(2).standard_normal((2000, 8)).astype(np.float32)
    report = check(_fresh_build(tmp_path, gaussian, BuildParams(levels=2, target_cluster_items=10)))
    [line] = [c for c in report.checked if c.startswith("rep_embeddings")]
    assert line.startswith("rep_embeddings rows compared: 200 of 200 (")


def test_broken_leaf_is_not_subtracted_twice(two_clusters_copy: Path) -> None:
    report = check(_corrupt(two_clusters_copy))
    assert "lvl_2 item_ids: 3 of 3 usable leaves decoded (6 distinct item ids)" in report.checked
    assert ("lvl_2/node_2", "has item_ids but no embeddings array") in [
        (f.path, f.message.split(";")[0]) for f in report.errors]


def test_fresh_builds_of_demo_and_gaussian_data_have_no_warnings(tmp_path: Path) -> None:
    gaussian = np.random.default_rng(3).standard_normal((20000, 16)).astype(np.float32)
    for path in (ensure_demo_index(), _fresh_build(tmp_path, gaussian, BuildParams(levels=3))):
        report = check(path)
        assert report.findings == (), [f.describe() for f in report.findings]


def test_a_leaf_that_hurts_search_is_warned_with_the_rule(tmp_path: Path) -> None:
    """600 copies of one vector all land in one leaf; with 32-row chunks it spans 19+ chunks."""
    rng = np.random.default_rng(4)
    vectors = np.concatenate([rng.standard_normal((1400, 8)), np.ones((600, 8))]).astype(np.float32)
    path = _fresh_build(tmp_path, vectors, BuildParams(levels=2, target_cluster_items=10,
                                                       node_chunk_bytes=32 * 8 * 4))
    report = check(path)
    [big] = [f for f in report.warnings if "chunks of" in f.message]
    assert big.path.startswith("lvl_2/node_") and "chunks of 32, far above this level's leaves" in big.message
    assert oversize_rule() in big.message and "at least 3 chunks" in big.message
    leaves = report.levels[-1]
    [oversized] = oversized_leaves(leaves)
    assert oversized.rows == leaves.max_size >= 600 and oversized.chunks == -(-oversized.rows // 32)


def test_imbalance_within_one_chunk_is_not_a_warning(two_clusters_copy: Path) -> None:
    """A leaf 50x the median is information while it fits in a chunk or two."""
    leaves = check(two_clusters_copy).levels[-1]
    skewed = dataclasses.replace(leaves, sizes=np.array([2, 2, 2, 2, 100]), node_ids=np.arange(5), chunk_rows=64)
    assert oversized_leaves(skewed) == []
    assert [n.rows for n in oversized_leaves(dataclasses.replace(skewed, chunk_rows=32))] == [100]


@pytest.mark.parametrize("damage", ["future_v2", "legacy", "unstamped", "not_index"])
def test_a_layout_problem_is_one_finding_with_one_severity(two_clusters_copy: Path, damage: str) -> None:
    if damage == "future_v2":
        overwrite(two_clusters_copy, "info/format_version", 2, "uint32")
    elif damage == "legacy":
        for name in ("info/format_version", "info/next_item_id"):
            shutil.rmtree(two_clusters_copy / name)
    elif damage == "unstamped":
        shutil.rmtree(two_clusters_copy / "info" / "format_version")
    else:
        for name in ("info", "rep_item_ids"):
            shutil.rmtree(two_clusters_copy / name)
    h = Hierarchy(open_store(two_clusters_copy))
    summary = summarize(h)
    layout_finding = summary.layout.finding
    assert layout_finding is not None and layout_finding not in summary.findings
    report = validate(h)
    assert report.layout_finding == layout_finding
    assert [f for f in report.findings if summary.layout.reason in f.message or f == layout_finding] == [layout_finding]
    assert layout_finding not in report.findings_except_layout()
    assert len(report.findings_except_layout()) == len(report.findings) - 1
    expected = Severity.WARNING if damage == "unstamped" else Severity.ERROR
    assert layout_finding.severity is expected


def test_findings_by_path_and_level_findings(two_clusters_copy: Path) -> None:
    shutil.rmtree(two_clusters_copy / "lvl_2" / "node_1" / "item_ids")
    overwrite(two_clusters_copy, "info/next_item_id", 11, "uint32")
    report = check(two_clusters_copy)
    marks = report.findings_by_path()
    assert report.findings_by_path() is marks  # computed once
    node = marks["lvl_2/node_1"]
    assert node.severity is Severity.ERROR and "no ids array" in node.text()
    assert marks["info/next_item_id"].severity is Severity.WARNING
    assert sum(len(m.findings) for m in marks.values()) == len(report.findings)
    worst = report.worst_below()
    assert worst["lvl_2"] is Severity.ERROR and worst[""] is Severity.ERROR and worst["info"] is Severity.WARNING
    assert "lvl_1" not in worst
    level = report.level_findings(2)
    assert [f.path for f in level] == ["lvl_2/node_1"]
    assert report.level_findings(1) == () and findings_under(report.findings, "") == report.findings


def _leaf_documents_read(index: Path) -> tuple[object, int]:
    """validate() by a fresh Hierarchy (a later process) and how many leaf group documents
    (lvl_2/node_N/zarr.json, which only the level's statistics read) it read."""
    h = Hierarchy(open_store(index))
    read: list[str] = []
    real = h.store.read_many_or_errors

    def counted(keys, *args, **kwargs):  # type: ignore[no-untyped-def]
        read.extend(k for k in keys if re.fullmatch(r"lvl_2/node_\d+/zarr\.json", k))
        return real(keys, *args, **kwargs)

    h.store.read_many_or_errors = counted  # type: ignore[method-assign]
    return validate(h), len(read)


def test_a_later_check_takes_the_leaf_level_from_the_cache_folder_until_a_leaf_document_changes(
        tmp_path: Path) -> None:
    """Validation's leaf statistics are the ones `info` and the index map keep in the cache folder:
    a later process reads none of the leaves' documents while none changed, and says so (10M
    items: 600,000 documents, read again by every window that opened the index)."""
    index = build_clustered_index(tmp_path, 3000, 8)
    leaves = len(list((index / "lvl_2").glob("node_*")))
    first, reads = _leaf_documents_read(index)
    assert reads == leaves and "cache folder" not in first.checked[0]
    again, reads = _leaf_documents_read(index)
    assert reads == 0 and "(lvl_2's from the cache folder: none of its documents has changed" in again.checked[0]
    assert [f.describe() for f in again.findings] == [f.describe() for f in first.findings]
    assert again.levels[-1].sizes.tolist() == first.levels[-1].sizes.tolist()
    leaf = index / "lvl_2" / "node_1" / "embeddings" / "zarr.json"
    leaf.write_bytes(leaf.read_bytes())  # rewritten in place: its stamp changed
    after, reads = _leaf_documents_read(index)
    assert reads == leaves and "cache folder" not in after.checked[0]
