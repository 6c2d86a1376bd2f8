"""Recognising, summarising and measuring ecpfs indexes (model/ecpfs/)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import zarr
from index_factory import hierarchy  # tests/ is on sys.path (conftest)

from ecpfs_viewer.model.ecpfs import (
    ChildReferences,
    Finding,
    Generation,
    Severity,
    cached_level_stats,
    detect_index,
    forget_level_stats,
    level_stats,
    referenced_children,
    shared_level_stats,
    summarize,
)
from ecpfs_viewer.model.ecpfs.shared_levels import level_stats_cache
from ecpfs_viewer.model.validation import validate
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def put(root: Path, name: str, value, dtype) -> None:
    """Write one array with zarr-python (scalars uncompressed, as upstream does)."""
    group = zarr.open_group(root, mode="a")
    data = np.asarray(value, dtype=dtype) if dtype is not str else value
    shape = () if dtype is str else data.shape
    if name in group:
        del group[name]
    array = group.create_array(name, shape=shape, dtype=dtype, compressors=None,
                               fill_value="" if dtype is str else 0)
    array[...] = data


def write_python_legacy(root: Path, first_level: int) -> None:
    """A June-2025 (first_level=1) or early (first_level=0) Python index: int64 (1,) scalars."""
    put(root, "info/levels", [2], "int64")
    put(root, "info/metric", [1], "int64")
    put(root, "rep_item_ids", [0, 2, 4, 6], "uint32")
    put(root, "index_root/embeddings", np.zeros((2, 2)), "float32")
    put(root, "index_root/node_ids", [0, 2], "int64")
    for level in (first_level, first_level + 1):
        for node in range(2):
            put(root, f"lvl_{level}/node_{node}/embeddings", np.ones((2, 2)), "float32")
            put(root, f"lvl_{level}/node_{node}/item_ids", [node, node + 1], "uint32")


@pytest.fixture
def two_clusters(two_clusters_path: Path) -> Hierarchy:
    return hierarchy(two_clusters_path)


def test_two_clusters_summary(two_clusters: Hierarchy) -> None:
    s = summarize(two_clusters)
    assert s.layout.generation is Generation.V1 and s.layout.supported
    assert s.format_version == 1
    assert (s.levels, s.metric, s.is_normalized, s.normalized_stored) == (2, "L2", False, True)
    assert (s.total_items, s.next_item_id, s.gap) == (8, 8, 0)
    assert (s.representatives, s.fan_out, s.expected_fan_out) == (4, 2, 2)
    assert (s.dim, s.dtype) == (2, "float32")
    assert (s.node_chunk_rows, s.rep_chunk_rows) == (65536, 1048576)
    assert s.writer == "zarrs 0.23.14"
    assert s.has_rep_embeddings
    assert s.level_paths == ("lvl_1", "lvl_2")
    assert s.saved_query_count == 0 and s.findings == ()


def test_summary_reads_no_chunk_but_the_scalars(two_clusters: Hierarchy) -> None:
    summarize(two_clusters)
    before = two_clusters.store.stats()
    level_stats(two_clusters, 2)
    # level_stats re-summarises (scalars) and reads node metadata; never a node's chunk files
    read_keys: list[str] = []
    original = two_clusters.store.read_many_or_errors
    two_clusters.store.read_many_or_errors = (  # type: ignore[method-assign]
        lambda keys: (read_keys.extend(keys), original(keys))[1])
    level_stats(two_clusters, 2, summarize(two_clusters))
    assert read_keys and all(k.endswith("zarr.json") for k in read_keys)
    assert two_clusters.store.stats().requests > before.requests


def test_two_clusters_level_stats(two_clusters: Hierarchy) -> None:
    s = summarize(two_clusters)
    one = level_stats(two_clusters, 1, s)
    assert (one.node_count, one.max_nodes, one.gap_count, one.is_leaf) == (2, 2, 0, False)
    assert one.node_ids.tolist() == [0, 1] and one.sizes.tolist() == [1, 3]  # reps {0} and {1,2,3}
    two = level_stats(two_clusters, 2, s)
    assert (two.node_count, two.max_nodes, two.gap_count, two.is_leaf) == (4, 4, 0, True)
    assert two.sizes.tolist() == [2, 2, 2, 2]
    assert (two.min_size, two.median_size, two.mean_size, two.max_size) == (2, 2.0, 2.0, 2)
    assert two.leaf_sum == 8 == s.total_items
    counts, edges = two.histogram()
    assert counts.tolist() == [4] and edges[0] < 2 < edges[1]
    assert two.largest(1)[0].path == "lvl_2/node_0"
    assert two.chunk_rows == 65536 and two.underfill == pytest.approx(2 / 65536)
    assert two.findings == ()


def test_gaps_and_referenced_missing_children(two_clusters_copy: Path) -> None:
    shutil.rmtree(two_clusters_copy / "lvl_2" / "node_2")
    h = hierarchy(two_clusters_copy)
    s = summarize(h)
    stats = level_stats(h, 2, s)
    assert stats.node_count == 3 and stats.gap_count == 1 and stats.gap_ids == (2,)
    assert stats.leaf_sum == 6
    refs = referenced_children(h, 2, s, stats)
    assert refs.complete and refs.referenced == 4
    assert refs.missing_ids == (2,) and refs.missing_count == 1


def test_level_stats_fast_on_a_wide_level(tmp_path: Path) -> None:
    """Metadata only: 800 nodes whose arrays have no chunk files at all."""
    root = tmp_path / "wide.zarr"
    shutil.copytree(Path(__file__).parents[2] / "data" / "two_clusters.zarr", root)
    template = (root / "lvl_2" / "node_0" / "embeddings" / "zarr.json").read_text()
    ids_template = (root / "lvl_2" / "node_0" / "item_ids" / "zarr.json").read_text()
    for i in range(4, 800):
        node = root / "lvl_2" / f"node_{i}"
        (node / "embeddings").mkdir(parents=True)
        (node / "item_ids").mkdir()
        rows = 1 + i % 7
        (node / "embeddings" / "zarr.json").write_text(template.replace("2,\n    2\n  ]", f"{rows},\n    2\n  ]", 1))
        (node / "item_ids" / "zarr.json").write_text(ids_template.replace('"shape": [\n    2\n  ]',
                                                                          f'"shape": [\n    {rows}\n  ]', 1))
    h = hierarchy(root)
    stats = level_stats(h, 2)
    assert stats.node_count == 800
    assert stats.max_nodes == 4 and len(stats.out_of_range_ids) > 0
    assert stats.max_size == 7 and stats.min_size == 1
    assert any("more than the possible" in f.message for f in stats.findings)


def test_ids_and_embeddings_length_mismatch(two_clusters_copy: Path) -> None:
    put(two_clusters_copy, "lvl_2/node_1/item_ids", [2, 3, 9], "uint32")
    h = hierarchy(two_clusters_copy)
    stats = level_stats(h, 2)
    [finding] = [f for f in stats.findings if f.path == "lvl_2/node_1"]
    assert finding.severity is Severity.ERROR
    assert "embeddings has 2 rows but item_ids has 3" in finding.message


def test_node_without_ids_and_wrong_ids_key(two_clusters_copy: Path) -> None:
    shutil.rmtree(two_clusters_copy / "lvl_2" / "node_0" / "item_ids")
    (two_clusters_copy / "lvl_1" / "node_1" / "node_ids").rename(two_clusters_copy / "lvl_1" / "node_1" / "item_ids")
    h = hierarchy(two_clusters_copy)
    leaf = level_stats(h, 2)
    assert any(f.path == "lvl_2/node_0" and "no ids array" in f.message for f in leaf.findings)
    upper = level_stats(h, 1)
    assert any(f.path == "lvl_1/node_1/item_ids" and "expected node_ids" in f.message for f in upper.findings)


def test_unstamped_v1_is_read_as_version_1(two_clusters_copy: Path) -> None:
    shutil.rmtree(two_clusters_copy / "info" / "format_version")
    layout = detect_index(hierarchy(two_clusters_copy))
    assert layout.generation is Generation.UNSTAMPED and layout.supported
    assert "format_version is missing" in layout.reason


def test_newer_format_version_is_unsupported(two_clusters_copy: Path) -> None:
    put(two_clusters_copy, "info/format_version", 2, "uint32")
    s = summarize(hierarchy(two_clusters_copy))
    assert s.layout.generation is Generation.NEWER and not s.layout.supported
    assert s.format_version == 2
    assert "format version 2 is not supported" in s.layout.reason
    assert s.levels == 2  # the rest is still shown


def test_unknown_metric_is_named(two_clusters_copy: Path) -> None:
    put(two_clusters_copy, "info/metric", "cosine", str)
    s = summarize(hierarchy(two_clusters_copy))
    assert s.metric == "cosine"
    [finding] = s.findings
    assert finding.path == "info/metric" and finding.severity is Severity.ERROR
    assert "'cosine'" in finding.message and "L2" in finding.message


def test_unreadable_scalar_names_the_path(two_clusters_copy: Path) -> None:
    (two_clusters_copy / "info" / "levels" / "c").write_bytes(b"\x01")  # 1 byte for a uint32
    s = summarize(hierarchy(two_clusters_copy))
    assert s.levels is None
    assert any(f.path == "info/levels" and "unreadable value" in f.message for f in s.findings)


def test_corrupt_metadata_names_the_path(two_clusters_copy: Path) -> None:
    (two_clusters_copy / "rep_item_ids" / "zarr.json").write_text("{not json")
    s = summarize(hierarchy(two_clusters_copy))
    assert s.representatives is None
    assert any(f.path == "rep_item_ids" and "not valid JSON" in f.message for f in s.findings)


def test_missing_required_arrays_listed_like_upstream(two_clusters_copy: Path) -> None:
    for name in ("info/format_version", "info/total_items", "rep_item_ids"):
        shutil.rmtree(two_clusters_copy / name)
    layout = detect_index(hierarchy(two_clusters_copy))
    assert layout.generation is Generation.RUST_PRE_V1  # metric is a string and counters are missing (§7 step 3)
    shutil.rmtree(two_clusters_copy / "info" / "metric")
    layout = detect_index(hierarchy(two_clusters_copy))
    assert layout.generation is Generation.NOT_INDEX
    assert layout.missing == ("info/format_version", "info/metric", "info/total_items", "rep_item_ids")
    assert layout.reason == ("not a valid ecpfs index, missing: info/format_version, info/metric, "
                             "info/total_items, rep_item_ids")


def test_plain_zarr_store_is_not_an_index(tmp_path: Path) -> None:
    put(tmp_path / "plain.zarr", "data", np.arange(5), "int32")
    s = summarize(hierarchy(tmp_path / "plain.zarr"))
    assert s.layout.generation is Generation.NOT_INDEX and not s.layout.is_index
    assert "info/levels" in s.layout.missing


def test_june_2025_python_index(tmp_path: Path) -> None:
    root = tmp_path / "g1.zarr"
    write_python_legacy(root, first_level=1)
    s = summarize(hierarchy(root))
    assert s.layout.generation is Generation.PYTHON_JUNE_2025 and s.layout.is_legacy
    assert "info/levels has shape (1,) (int64)" in s.layout.reason
    assert "index_root/node_ids exists" in s.layout.reason and "rebuild required" in s.layout.reason
    assert s.levels == 2 and s.metric == "IP"  # the int code decoded for display


def test_early_python_index(tmp_path: Path) -> None:
    root = tmp_path / "g0.zarr"
    write_python_legacy(root, first_level=0)
    layout = detect_index(hierarchy(root))
    assert layout.generation is Generation.PYTHON_EARLY
    assert "lvl_0 exists" in layout.reason


def test_rust_pre_v1_index_without_counters(two_clusters_copy: Path) -> None:
    for name in ("info/format_version", "info/total_items", "info/next_item_id"):
        shutil.rmtree(two_clusters_copy / name)
    s = summarize(hierarchy(two_clusters_copy))
    assert s.layout.generation is Generation.RUST_PRE_V1
    assert "missing info/total_items, info/next_item_id" in s.layout.reason
    assert s.levels == 2 and s.metric == "L2" and s.total_items is None


def test_saved_queries(two_clusters_copy: Path) -> None:
    put(two_clusters_copy, "queries/3/persisted_at", 1_000, "uint64")
    put(two_clusters_copy, "queries/3/items_id", [4, 5, 6], "uint32")
    put(two_clusters_copy, "queries/3/tree_pq_node_id", [1], "uint32")
    put(two_clusters_copy, "queries/3/exclude", [0, 1], "uint32")
    s = summarize(hierarchy(two_clusters_copy), now=4_600)
    assert s.saved_query_count == 1
    [q] = s.saved_queries
    assert (q.query_id, q.persisted_at, q.age_seconds) == ("3", 1000, 3600)
    assert (q.buffered_items, q.heap_entries, q.exclude_size) == (3, 1, 2)


def test_shared_level_stats_computed_once_then_reused(two_clusters: Hierarchy) -> None:
    """Validation, the level overview and the tree's row counts share one computation per level."""
    assert cached_level_stats(two_clusters, 2) is None  # nothing computed yet, and asking computes nothing
    summary = summarize(two_clusters)
    reads = two_clusters.store.stats().requests
    first = shared_level_stats(two_clusters, 2, summary)
    assert first.sizes.tolist() == [2, 2, 2, 2]
    after_first = two_clusters.store.stats().requests
    assert after_first > reads
    again = shared_level_stats(two_clusters, 2, summary)
    assert again is first and cached_level_stats(two_clusters, 2) is first
    assert two_clusters.store.stats().requests == after_first  # no node document read again
    report = validate(two_clusters)
    assert report.levels[-1] is first  # validation reused it


def test_refresh_invalidates_shared_level_stats(two_clusters_copy: Path) -> None:
    h = hierarchy(two_clusters_copy)
    before = shared_level_stats(h, 2)
    assert before.node_count == 4
    shutil.rmtree(two_clusters_copy / "lvl_2" / "node_3")
    assert shared_level_stats(h, 2) is before  # cached: the store is not re-read until a refresh
    h.refresh("lvl_2")
    assert cached_level_stats(h, 2) is None
    after = shared_level_stats(h, 2)
    assert after.node_count == 3 and after.gap_ids == (3,)
    h.refresh("")  # refreshing the whole store drops every level
    assert cached_level_stats(h, 2) is None


def test_forget_level_stats_after_refreshing_a_node(two_clusters_copy: Path) -> None:
    h = hierarchy(two_clusters_copy)
    one, two = shared_level_stats(h, 1), shared_level_stats(h, 2)
    put(two_clusters_copy, "lvl_2/node_1/item_ids", [2, 3, 9], "uint32")
    h.refresh("lvl_2/node_1")
    forget_level_stats(h, "lvl_2/node_1")
    assert cached_level_stats(h, 2) is None and cached_level_stats(h, 1) is one  # other levels kept
    assert shared_level_stats(h, 2) is not two
    assert any(f.path == "lvl_2/node_1" for f in shared_level_stats(h, 2).findings)
    forget_level_stats(h)
    assert cached_level_stats(h, 1) is None


def test_refresh_drops_the_level_stats_the_hierarchy_owns(two_clusters_copy: Path) -> None:
    """Hierarchy.refresh alone makes the cache forget: a node refresh drops its level, other paths all."""
    h = hierarchy(two_clusters_copy)
    one, two = shared_level_stats(h, 1), shared_level_stats(h, 2)
    assert two.seconds > 0  # the time it took is recorded on the result
    h.refresh("lvl_2/node_1")
    assert cached_level_stats(h, 2) is None and cached_level_stats(h, 1) is one
    assert shared_level_stats(h, 2) is not two
    h.refresh("info")  # outside every level: the summary the statistics were judged by may change
    assert cached_level_stats(h, 1) is None and cached_level_stats(h, 2) is None


def test_two_hierarchies_do_not_share_level_stats(two_clusters_path: Path) -> None:
    a, b = hierarchy(two_clusters_path), hierarchy(two_clusters_path)
    from_a = shared_level_stats(a, 2)
    assert cached_level_stats(b, 2) is None
    from_b = shared_level_stats(b, 2)
    assert from_b is not from_a and from_b.sizes.tolist() == from_a.sizes.tolist()
    a.refresh()
    assert cached_level_stats(a, 2) is None and cached_level_stats(b, 2) is from_b


def test_level_stats_computed_across_a_refresh_are_not_kept(two_clusters_copy: Path) -> None:
    h = hierarchy(two_clusters_copy)

    def refreshed_meanwhile():
        stats = level_stats(h, 2)
        shutil.rmtree(two_clusters_copy / "lvl_2" / "node_3")
        h.refresh("lvl_2")  # e.g. the user pressed F5 while a worker was computing
        return stats

    stale = level_stats_cache(h).get_or_compute(2, (), refreshed_meanwhile)
    assert stale.node_count == 4  # the caller still gets what it computed...
    assert cached_level_stats(h, 2) is None  # ...but nobody else is handed the stale result
    assert shared_level_stats(h, 2).node_count == 3


def test_child_references_tally_decoded_node_ids() -> None:
    """The tally validation and referenced_children share: decoded ids, invalid values per parent."""
    refs = ChildReferences(representatives=4, invalid_per_parent=1)
    decoded = refs.add("lvl_1/node_0", np.array([[0], [5], [6]], dtype=np.uint32))
    assert decoded.dtype == np.int64 and decoded.tolist() == [0, 5, 6]
    refs.add("lvl_1/node_1", np.array([1, 2], dtype=np.uint32))
    assert refs.invalid == [("lvl_1/node_0", 5)]  # one per parent kept
    assert refs.missing(np.array([0, 1])) == [2, 5, 6]
    assert ChildReferences.of_root(3).missing(np.array([1])) == [0, 2]


def test_each_layout_states_its_meaning_in_one_finding(two_clusters_copy: Path, tmp_path: Path) -> None:
    """One finding per layout problem, one severity; the summary does not repeat it in its findings."""
    assert detect_index(hierarchy(two_clusters_copy)).finding is None  # a v1 index
    root = tmp_path / "g1.zarr"
    write_python_legacy(root, first_level=1)
    legacy = summarize(hierarchy(root))
    assert legacy.layout.finding == Finding("ECPFS-E021", "", legacy.layout.reason)
    assert legacy.layout.finding not in legacy.findings
    assert legacy.layout.to_dict()["finding"]["severity"] == "error"
    zarr.open_array(two_clusters_copy / "info" / "format_version", mode="r+")[...] = 2
    newer = detect_index(hierarchy(two_clusters_copy)).finding
    assert newer is not None and (newer.severity, newer.path) == (Severity.ERROR, "info/format_version")
    shutil.rmtree(two_clusters_copy / "info" / "format_version")
    unstamped = detect_index(hierarchy(two_clusters_copy)).finding
    assert unstamped is not None and (unstamped.severity, unstamped.path) == (Severity.WARNING, "info/format_version")
