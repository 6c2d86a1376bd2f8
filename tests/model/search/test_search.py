"""eCP search (§4), exact search and recall over indexes built in the test or the zarrs fixture."""

from __future__ import annotations

import dataclasses
import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
import zarr

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.search import (
    IndexReader,
    ItemIdRangeError,
    QueryError,
    SearchCancelled,
    SearchParams,
    SearchProgress,
    SearchResult,
    UnknownItemError,
    explain_misses,
    recall_at_k,
    recall_sweep,
    sample_items,
    saved_queries,
    saved_query_ids,
)
from ecpfs_viewer.model.storage.opening import open_memory, open_store


def _snapshot(root: Path) -> dict[str, float]:
    return {os.path.join(d, f): os.stat(os.path.join(d, f)).st_mtime_ns
            for d, _, fl in os.walk(root) for f in fl}


@pytest.fixture(scope="module")
def random_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    tmp = tmp_path_factory.mktemp("search")
    rng = np.random.default_rng(11)
    centers = rng.standard_normal((20, 12)) * 5
    data = (centers[rng.integers(0, 20, 3000)] + rng.standard_normal((3000, 12))).astype(np.float32)
    src = tmp / "data.npy"
    np.save(src, data)
    out = tmp / "idx.zarr"
    build_index(src, out, BuildParams(levels=2, target_cluster_items=30))
    return out, data


def test_two_clusters_origin_query_returns_items_in_order(two_clusters_path: Path) -> None:
    before = _snapshot(two_clusters_path)
    reader = IndexReader(two_clusters_path)
    res = reader.search(np.zeros(2, np.float32), SearchParams(k=8, search_exp=4))
    assert [i for i, _ in res.items] == list(range(8))
    assert res.items[1][1] == pytest.approx(np.hypot(0.4, 0.4), rel=1e-6)
    assert res.leaves_visited == 4
    assert [(v.level, v.node_id, v.is_leaf) for v in res.trace] == [
        (1, 0, False), (2, 0, True), (1, 1, False), (2, 1, True), (2, 2, True), (2, 3, True)]
    assert res.trace[2].score == pytest.approx(np.sqrt(2), rel=1e-6)
    assert _snapshot(two_clusters_path) == before  # read-only: nothing written or touched
    assert not (two_clusters_path / "queries").exists()


def test_a_search_counts_what_it_scored(two_clusters_path: Path) -> None:
    """two_clusters: index_root holds 2 representatives; lvl_1/node_0 holds 1 leaf, node_1 holds 3;
    every leaf holds 2 items."""
    reader = IndexReader(two_clusters_path)
    every_leaf = reader.search(np.zeros(2, np.float32), SearchParams(k=8, search_exp=4)).cost
    assert every_leaf.representatives_scored == (2, 4)  # index_root, then both lvl_1 nodes
    assert (every_leaf.items_scored, every_leaf.nodes_visited, every_leaf.leaves_scanned) == (8, 6, 4)
    assert every_leaf.distance_computations == 14
    one_leaf = reader.search(np.zeros(2, np.float32), SearchParams(k=2, search_exp=1, max_increments=0)).cost
    assert one_leaf.representatives_scored == (2, 1) and one_leaf.items_scored == 2
    assert one_leaf.to_dict()["distance_computations"] == 5


def test_a_search_counts_what_it_read_per_level(tmp_path: Path) -> None:
    """Cold: the bytes and requests at each level add up to what the store's counter saw; warm: 0 read,
    the same cold figures; index_root was read when the index opened (cold figure only)."""
    from tests.index_factory import build_clustered_index

    reader = IndexReader(build_clustered_index(tmp_path, 2000, 8, levels=3, target_cluster_items=20))
    query = np.zeros(8, np.float32)
    before = reader.store.counter.snapshot()
    cold = reader.search(query, SearchParams(k=10, search_exp=4)).cost
    seen = reader.store.counter.snapshot() - before
    assert len(cold.bytes_read) == len(cold.requests) == 4
    assert (cold.total_bytes, cold.total_requests) == (seen.bytes_read, seen.requests) and seen.requests > 0
    assert cold.bytes_read[0] == cold.requests[0] == 0
    assert all(b > 0 for b in cold.bytes_read[1:]) and all(r > 0 for r in cold.requests[1:])
    assert cold.cold_bytes[1:] == cold.bytes_read[1:] and cold.cold_requests[1:] == cold.requests[1:]
    assert cold.cold_bytes[0] > 0  # index_root's own read
    warm = reader.search(query, SearchParams(k=10, search_exp=4)).cost
    assert warm.bytes_read == warm.requests == (0, 0, 0, 0)
    assert (warm.cold_bytes, warm.cold_requests) == (cold.cold_bytes, cold.cold_requests)
    assert (warm.distance_computations, warm.nodes_visited) == (cold.distance_computations, cold.nodes_visited)
    data = warm.to_dict()
    assert data["bytes_read"] == [0, 0, 0, 0] and data["total_cold_bytes"] == sum(cold.cold_bytes)
    # a node read in a batch (here: every internal node at once) gets its share of the batch's reads
    fresh = IndexReader(reader.hierarchy.store)
    before = fresh.store.counter.snapshot()
    fresh.preload_internal()
    batch = fresh.store.counter.snapshot() - before
    shares = [c for key, c in fresh.read_costs.items() if key[0] in (1, 2)]
    assert sum(b for b, _ in shares) == pytest.approx(batch.bytes_read, abs=len(shares))
    preloaded = fresh.search(query, SearchParams(k=10, search_exp=4)).cost
    assert preloaded.bytes_read[1] == preloaded.bytes_read[2] == 0 and preloaded.bytes_read[3] > 0


def test_a_recall_sweep_shows_every_search_with_its_true_neighbours(two_clusters_path: Path) -> None:
    reader = IndexReader(two_clusters_path)
    seen = []
    report = recall_sweep(reader, sample_items(reader, 3, seed=1), k=3, search_exps=(1, 4), observe=seen.append)
    assert [(s.query, s.search_exp) for s in seen] == [(j, e) for e in (1, 4) for j in range(3)]
    for exp, row in zip((1, 4), report.rows, strict=True):
        mine = [s for s in seen if s.search_exp == exp]
        found = sum(len(s.true_ids) - len(s.missed) for s in mine)
        assert row.recall == pytest.approx(found / sum(len(s.true_ids) for s in mine))
    assert all(not s.missed for s in seen if s.search_exp == 4)  # every leaf opened: nothing missed


def test_search_exp_and_max_increments(two_clusters_path: Path) -> None:
    reader = IndexReader(two_clusters_path)
    q = np.zeros(2, np.float32)
    one = reader.search(q, SearchParams(k=8, search_exp=1, max_increments=0))
    assert one.leaves_visited == 1 and [i for i, _ in one.items] == [0, 1]
    doubled = reader.search(q, SearchParams(k=8, search_exp=1, max_increments=1))
    assert doubled.leaves_visited == 2 and len(doubled.items) == 4
    everything = reader.search(q, SearchParams(k=3, search_exp=0))
    assert everything.leaves_visited == 4 and [i for i, _ in everything.items] == [0, 1, 2]


def test_exclude_set(two_clusters_path: Path) -> None:
    reader = IndexReader(two_clusters_path)
    res = reader.search(np.zeros(2), SearchParams(k=3, exclude=frozenset({0, 2})))
    assert [i for i, _ in res.items] == [1, 3, 4]
    assert [i for i, _ in reader.exact_search(np.zeros(2), 3, exclude={0, 2})] == [1, 3, 4]


def test_identical_vector_scores_zero_not_nan(two_clusters_path: Path) -> None:
    reader = IndexReader(two_clusters_path)
    res = reader.search(np.array([10.4, 10.4], np.float32), SearchParams(k=1))
    assert res.items == [(5, 0.0)]


def test_results_equal_exact_search_when_every_leaf_is_scanned(random_index) -> None:
    path, data = random_index
    reader = IndexReader(path)
    leaves = len(reader.leaf_ids())
    rng = np.random.default_rng(5)
    for q in data[rng.choice(len(data), 10, replace=False)] + 0.1:
        res = reader.search(q, SearchParams(k=15, search_exp=leaves, max_increments=0))
        assert res.leaves_visited == leaves
        exact = reader.exact_search(q, 15)
        assert [i for i, _ in res.items] == [i for i, _ in exact]
        np.testing.assert_allclose([s for _, s in res.items], [s for _, s in exact], rtol=1e-5)
    assert recall_at_k(reader, data[:20], 10, search_exp=leaves, max_increments=0) == 1.0
    partial = recall_at_k(reader, data[:20], 10, search_exp=1, max_increments=0)
    assert 0.0 < partial <= 1.0


def test_vector_for_item(random_index) -> None:
    path, data = random_index
    reader = IndexReader(path)
    np.testing.assert_array_equal(reader.vector_for_item(1234), data[1234])
    with pytest.raises(KeyError):
        reader.vector_for_item(10**6)


def test_ip_scores_are_negated_dot_products(tmp_path: Path) -> None:
    data = np.array([[1, 0], [0, 1], [0.6, 0.8], [-1, 0]], np.float32)
    src = tmp_path / "ip.npy"
    np.save(src, data)
    out = tmp_path / "ip.zarr"
    build_index(src, out, BuildParams(levels=1, target_cluster_items=2, metric="IP"))
    reader = IndexReader(out)
    res = reader.search(np.array([1.0, 0.0]), SearchParams(k=4, search_exp=0))
    assert [i for i, _ in res.items] == [0, 2, 1, 3]
    np.testing.assert_allclose([s for _, s in res.items], [-1.0, -0.6, 0.0, 1.0], atol=1e-6)


def test_is_normalized_uses_the_unit_length_shortcut(tmp_path: Path) -> None:
    data = np.array([[1, 0], [0, 1], [0.6, 0.8], [-1, 0]], np.float32) * 2  # not unit length
    src = tmp_path / "n.npy"
    np.save(src, data)
    out = tmp_path / "n.zarr"
    build_index(src, out, BuildParams(levels=1, target_cluster_items=2, is_normalized=True))
    reader = IndexReader(out)
    assert reader.is_normalized
    q = np.array([1.0, 0.0], np.float32)
    res = dict(reader.search(q, SearchParams(k=4, search_exp=0)).items)
    # sqrt(1 - 2 e.q + |q|^2) with e.q = 2 for row 0 -> radicand -2, clamped to 0
    assert res[0] == 0.0
    assert res[3] == pytest.approx(np.sqrt(1 + 4 + 1))


def test_missing_node_is_skipped(tmp_path: Path, two_clusters_path: Path) -> None:
    copy = tmp_path / "tc.zarr"
    shutil.copytree(two_clusters_path, copy)
    shutil.rmtree(copy / "lvl_2" / "node_1")
    reader = IndexReader(copy)
    res = reader.search(np.zeros(2), SearchParams(k=8, search_exp=4))
    assert [i for i, _ in res.items] == [0, 1, 4, 5, 6, 7]
    assert (2, 1) not in {(v.level, v.node_id) for v in res.trace}
    assert [(v.level, v.node_id, v.rank, v.siblings) for v in res.skipped] == [(2, 1, 1, 3)]  # popped, missing
    assert res.leaves_visited == 3


def test_query_dimension_mismatch(two_clusters_path: Path) -> None:
    with pytest.raises(ValueError, match="3 dimensions"):
        IndexReader(two_clusters_path).search(np.zeros(3), SearchParams())


# -- the trace, worked out by hand on two_clusters ------------------------------------------------
# index_root rows: (0,0) -> lvl_1/node_0, (1,1) -> lvl_1/node_1.
# lvl_1/node_0 holds rep 0 (0,0); lvl_1/node_1 holds reps 1,2,3 at (1,1), (10,10), (11,11).
# Leaves lvl_2/node_0..3 hold items {0,1}, {2,3}, {4,5}, {6,7}.


def test_two_clusters_trace_ranks_parents_and_hit_rows(two_clusters_path: Path) -> None:
    res = IndexReader(two_clusters_path).search(np.zeros(2, np.float32), SearchParams(k=8, search_exp=4))
    s2 = np.sqrt(np.float32(2))
    # popped: root entry 0 (d 0, best of 2), its only child leaf 0; root entry 1 (d sqrt 2, 2nd of 2);
    # its children leaf 1 (d sqrt 2), leaf 2 (d 10 sqrt 2), leaf 3 (d 11 sqrt 2), ranked 1, 2, 3 of 3
    assert [(v.level, v.node_id, v.rank, v.siblings, v.parent) for v in res.trace] == [
        (1, 0, 1, 2, None), (2, 0, 1, 1, 0), (1, 1, 2, 2, None), (2, 1, 1, 3, 1), (2, 2, 2, 3, 1), (2, 3, 3, 3, 1)]
    np.testing.assert_allclose([v.score for v in res.trace], [0, 0, s2, s2, 10 * s2, 11 * s2], rtol=1e-6)
    assert [(h.item_id, h.leaf, h.row) for h in res.hits] == [(i, i // 2, i % 2) for i in range(8)]
    assert res.skipped == () and res.to_dict()["leaves_visited"] == 4


def test_query_near_the_second_cluster_pops_it_first(two_clusters_path: Path) -> None:
    res = IndexReader(two_clusters_path).search(np.array([10.5, 10.5]), SearchParams(k=2, search_exp=1))
    # root: node_1 at (1,1) is nearer than node_0 at (0,0); inside, (10,10) is nearest: leaf 2 first
    assert [(v.level, v.node_id, v.rank) for v in res.trace] == [(1, 1, 1), (2, 2, 1)]
    assert [h.item_id for h in res.hits] == [5, 4] and res.leaves_visited == 1


def test_search_rejects_bad_queries_and_parameters(two_clusters_path: Path) -> None:
    reader = IndexReader(two_clusters_path)
    for bad in (np.array([np.nan, 0]), np.array([np.inf, 0]), np.array([1e300, 0])):
        with pytest.raises(QueryError, match="NaN or Inf"):
            reader.search(bad)
    for params, message in ((SearchParams(k=0), "k must be at least 1"), (SearchParams(search_exp=-1), "search_exp"),
                            (SearchParams(max_increments=-2), "max_increments")):
        with pytest.raises(QueryError, match=message):
            reader.search(np.zeros(2), params)


# -- locate -----------------------------------------------------------------------------------------


def test_locate_reads_only_ids_arrays(two_clusters_path: Path) -> None:
    opened = open_store(two_clusters_path)
    reader = IndexReader(opened)
    keys: list[str] = []
    real_read_many = opened.read_many_or_errors
    opened.read_many_or_errors = lambda ks, *a, **kw: keys.extend(ks) or real_read_many(ks, *a, **kw)  # type: ignore[method-assign]
    location = reader.locate(5)
    assert (location.leaf, location.row, location.complete) == (2, 1, True)
    assert [(s.level, s.node_id, s.row) for s in location.path] == [(1, 1, 1), (2, 2, 1)]
    assert location.describe() == ("item 5 is in lvl_2/node_2, row 1; "
                                   "path: index_root row 1 > lvl_1/node_1 > lvl_2/node_2")
    assert keys and not any("embeddings" in k for k in keys)
    assert any(k.endswith("item_ids/c/0") for k in keys)
    with pytest.raises(UnknownItemError, match="item 42 is not in this index"):
        reader.locate(42)


def test_ids_outside_the_stored_dtype_are_refused_in_words(two_clusters_copy: Path) -> None:
    """2^63 gave numpy's "Python int too large to convert to C long"; now the range is said."""
    reader = IndexReader(two_clusters_copy)
    for item in (2**63, -1, 2**32, 10**30):
        with pytest.raises(ItemIdRangeError) as error:
            reader.locate(item)
        assert str(error.value) == (f"item {item} cannot be in this index: its item ids are stored as uint32, "
                                    "from 0 to 4,294,967,295")
    with pytest.raises(ItemIdRangeError, match="item 9223372036854775808 cannot be in this index"):
        reader.vector_for_item(2**63)
    with pytest.raises(UnknownItemError, match="item 4294967295 is not in this index"):
        reader.locate(2**32 - 1)  # the largest uint32: a fair question, just not held
    leaf = two_clusters_copy / "lvl_2" / "node_0" / "item_ids"
    ids = zarr.open_array(leaf, mode="r")[:]
    shutil.rmtree(leaf)
    zarr.create_array(leaf, data=ids.astype(np.int64))  # a Python writer's default int64 ids
    wide = IndexReader(two_clusters_copy)
    with pytest.raises(UnknownItemError, match="item 4294967296 is not in this index"):
        wide.locate(2**32)
    with pytest.raises(ItemIdRangeError, match="stored as int64, from -9,223,372,036,854,775,808 to "):
        wide.locate(2**63)


def test_locate_on_a_built_index_matches_the_leaves(random_index) -> None:
    path, _ = random_index
    reader = IndexReader(path)
    for item in (0, 1234, 2999):
        loc = reader.locate(item)
        assert reader.node(reader.levels, loc.leaf).ids[loc.row] == item
        root_row = loc.path[0].row
        assert loc.path[0].node_id == root_row and loc.complete
        parent = reader.node(1, loc.path[0].node_id)
        assert parent.ids[loc.path[1].row] == loc.leaf


# -- exact search -----------------------------------------------------------------------------------


def _brute_force(data: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    d = ((queries[:, None, :].astype(np.float64) - data[None, :, :]) ** 2).sum(-1)
    return np.lexsort((np.broadcast_to(np.arange(len(data)), d.shape), d), axis=-1)[:, :k]


def test_exact_neighbours_equal_brute_force_and_faiss(random_index) -> None:
    path, data = random_index
    reader = IndexReader(path)
    rng = np.random.default_rng(3)
    queries = (data[rng.choice(len(data), 40, replace=False)] + rng.normal(0, 0.5, (40, data.shape[1]))).astype(
        np.float32)
    exact = reader.exact(queries, 10)
    np.testing.assert_array_equal(exact.ids, _brute_force(data, queries, 10))
    np.testing.assert_array_equal(reader.node(reader.levels, int(exact.leaves[0, 0])).ids[exact.rows[0, 0]],
                                  exact.ids[0, 0])
    faiss = pytest.importorskip("faiss")
    flat = faiss.IndexFlatL2(data.shape[1])
    flat.add(np.ascontiguousarray(data))
    distances, ids = flat.search(queries, 10)
    np.testing.assert_array_equal(exact.ids, ids)
    np.testing.assert_allclose(exact.scores, np.sqrt(np.maximum(distances, 0)), rtol=1e-4, atol=1e-4)


def test_exact_ties_are_broken_by_item_id_and_exclusions_hold(tmp_path: Path) -> None:
    data = np.repeat(np.array([[0.0, 0.0], [5.0, 5.0]], np.float32), 40, axis=0)  # 40 copies of each
    np.save(tmp_path / "d.npy", data)
    build_index(tmp_path / "d.npy", tmp_path / "d.zarr", BuildParams(levels=2, target_cluster_items=7))
    reader = IndexReader(tmp_path / "d.zarr")
    exact = reader.exact(np.array([[0.0, 0.0], [5.0, 5.0]]), 5, exclude=frozenset({1, 41}), self_ids=[0, None])
    assert exact.ids.tolist() == [[2, 3, 4, 5, 6], [40, 42, 43, 44, 45]]
    assert exact.scores.max() == 0.0


def test_exact_pads_when_fewer_items_than_k(two_clusters_path: Path) -> None:
    exact = IndexReader(two_clusters_path).exact(np.zeros((1, 2)), 10, exclude=frozenset({0}))
    assert exact.ids[0].tolist() == [1, 2, 3, 4, 5, 6, 7, -1, -1, -1]
    assert np.isinf(exact.scores[0, 7:]).all() and len(exact.hits(0)) == 7


def test_exact_reports_progress_and_stops_on_cancel(random_index) -> None:
    path, data = random_index
    reports: list[SearchProgress] = []
    IndexReader(path).exact(data[:3], 5, progress=reports.append)
    phases = [r.phase for r in reports]
    assert "reading leaves" in phases and "exact search" in phases
    assert reports[-1].done == reports[-1].total
    cancel = threading.Event()

    def stop_after_first(report: SearchProgress) -> None:
        if report.done > 0:
            cancel.set()

    reader = IndexReader(path)
    with pytest.raises(SearchCancelled):
        reader.exact(data[:3], 5, progress=stop_after_first, cancel=cancel)


# -- recall and why-missed --------------------------------------------------------------------------


def test_recall_is_non_decreasing_in_search_exp(random_index) -> None:
    path, data = random_index
    reader = IndexReader(path)
    queries = sample_items(reader, 60, seed=4)
    assert len(queries) == 60 and all(i is not None for i in queries.self_ids)
    report = recall_sweep(reader, queries, k=10, search_exps=(1, 2, 4, 8, 1000), max_increments=0)
    recalls = [row.recall for row in report.rows]
    assert recalls == sorted(recalls) and recalls[0] < 1.0 and recalls[-1] == 1.0
    assert [row.leaves_mean for row in report.rows[:4]] == [1.0, 2.0, 4.0, 8.0]
    assert all(row.queries == 60 and row.ms_p95 >= 0 for row in report.rows)
    again = sample_items(reader, 60, seed=4)
    assert again.self_ids == queries.self_ids  # the seed makes the sample reproducible
    np.testing.assert_array_equal(queries.vectors, data[list(queries.self_ids)])


def test_why_missed_names_the_ancestor_and_its_rank(random_index) -> None:
    path, data = random_index
    reader = IndexReader(path)
    query = data[17] + 0.3
    result = reader.search(query, SearchParams(k=20, search_exp=1, max_increments=0))
    truth = reader.exact(query, 20).hits(0)
    misses = explain_misses(reader, query, result, truth)
    returned = {h.item_id for h in result.hits}
    assert [m.item_id for m in misses] == [h.item_id for h in truth if h.item_id not in returned]
    assert misses, "one leaf of ~30 items cannot hold all 20 true neighbours of this query"
    popped = {(v.level, v.node_id) for v in result.trace}
    for m in misses:
        assert m.reason == "not reached" and m.leaves_visited == 1
        assert m.left_at not in popped and m.rank is not None and 1 <= m.rank <= m.siblings
        above = [(s.level, s.node_id) for s in m.location.path]
        assert m.left_at in above and all(a in popped for a in above[:above.index(m.left_at)])
        assert m.describe().endswith("the search stopped after 1 leaf, before reaching it")


def test_saved_queries_are_read(two_clusters_copy: Path) -> None:
    import zarr

    group = zarr.open_group(two_clusters_copy, mode="a")
    for qid, vector in (("0", [10.4, 10.4]), ("3", [0.0, 0.0])):
        group.create_array(f"queries/{qid}/query", data=np.array(vector, np.float32))
    reader = IndexReader(two_clusters_copy)
    assert saved_query_ids(reader) == ["0", "3"]
    assert saved_queries(reader).vectors.tolist() == [[pytest.approx(10.4), pytest.approx(10.4)], [0.0, 0.0]]
    report = recall_sweep(reader, saved_queries(reader), k=2, search_exps=(0,))
    assert report.rows[0].recall == 1.0 and report.source == "2 saved queries"


# -- every store kind ----------------------------------------------------------------------------


def _without_io(result: SearchResult) -> SearchResult:
    """A result without its time and what it read (which depends on the store and its cache)."""
    cost = dataclasses.replace(result.cost, bytes_read=(), requests=(), cold_bytes=(), cold_requests=())
    return dataclasses.replace(result, seconds=0.0, cost=cost)


def test_zip_memory_and_http_give_the_folder_answers(random_index, tmp_path: Path, two_clusters_path: Path,
                                                     http_data_url: str) -> None:
    path, data = random_index
    archive = shutil.make_archive(str(tmp_path / "idx"), "zip", path)
    memory = open_memory({str(p.relative_to(path)).replace(os.sep, "/"): p.read_bytes()
                          for p in path.rglob("*") if p.is_file()})
    queries = data[:5] + 0.2
    folder = IndexReader(path)
    for other in (IndexReader(archive), IndexReader(memory)):
        for q in queries:
            mine, theirs = other.search(q), folder.search(q)
            assert _without_io(mine) == _without_io(theirs)  # the folder reader may have these nodes cached
        np.testing.assert_array_equal(other.exact(queries, 7).ids, folder.exact(queries, 7).ids)
        assert other.locate(2222) == folder.locate(2222)
    assert other.store.stats().requests > 0  # reads went through the counted store
    local = IndexReader(two_clusters_path)
    remote = IndexReader(f"{http_data_url}/two_clusters.zarr")
    for q in ([0.0, 0.0], [10.4, 10.4], [5.0, 6.0]):
        params = SearchParams(k=5, search_exp=1)
        assert remote.search(q, params).hits == local.search(q, params).hits
        assert remote.search(q).trace == local.search(q).trace
    assert remote.locate(6) == local.locate(6)


def test_a_root_declaring_thousands_of_absent_children_is_searched_from_one_listing(two_clusters_copy: Path) -> None:
    """index_root declares 5,000 level-1 nodes of which two exist: past MISSING_BEFORE_LISTING
    missing ones the level is listed once and the rest answered missing without a read (each was
    eight file opens), and the answer is the one reading every node gives."""
    from hostile_builders import set_shape  # tests/ is on sys.path (conftest)

    from ecpfs_viewer.model.search import reader as reader_module

    set_shape(two_clusters_copy, "index_root/embeddings", [5000, 2])
    found = IndexReader(two_clusters_copy).search([0.0, 0.0], SearchParams(k=4))
    assert sum(found.cost.requests) < 64 * 8 + 100, found.cost
    assert len(found.skipped) == 4998  # the gaps, as before (§4.3)
    reader_module.MISSING_BEFORE_LISTING, kept = 10**9, reader_module.MISSING_BEFORE_LISTING
    try:
        every = IndexReader(two_clusters_copy).search([0.0, 0.0], SearchParams(k=4))
    finally:
        reader_module.MISSING_BEFORE_LISTING = kept
    assert sum(every.cost.requests) > 5000
    assert found.items == every.items and len(found.items) == 4
    assert found.skipped == every.skipped
