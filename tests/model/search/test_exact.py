"""Exact search streams the leaves in blocks: the answer equals a brute-force numpy one, ties by item id."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.search import exact as exact_module


@pytest.fixture(scope="module")
def tied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, np.ndarray]:
    """One L2 and one IP index of 600 small-integer vectors with only 40 distinct values, so
    every score is exact in float32 and most items tie with many others."""
    tmp = tmp_path_factory.mktemp("exact_ties")
    rng = np.random.default_rng(5)
    data = rng.integers(-3, 4, (40, 6)).astype(np.float32)[rng.integers(0, 40, 600)]
    np.save(tmp / "d.npy", data)
    indexes = []
    for metric in ("L2", "IP"):
        build_index(tmp / "d.npy", tmp / f"{metric}.zarr", BuildParams(levels=2, target_cluster_items=9, metric=metric))
        indexes.append(tmp / f"{metric}.zarr")
    return indexes[0], indexes[1], data


def _brute_force(data: np.ndarray, queries: np.ndarray, k: int, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Ids and scores of the k best rows of each query, in float64, ties by id (item id = row)."""
    d64, q64 = data.astype(np.float64), queries.astype(np.float64)
    distances = np.sqrt(((q64[:, None, :] - d64[None, :, :]) ** 2).sum(-1))
    scores = -(q64 @ d64.T) if metric == "IP" else distances
    order = np.lexsort((np.broadcast_to(np.arange(len(data)), scores.shape), scores), axis=-1)[:, :k]
    return order, np.take_along_axis(scores, order, 1)


@pytest.mark.parametrize("metric", ["L2", "IP"])
@pytest.mark.parametrize("k", [3, 25, 120])
def test_streamed_exact_equals_brute_force_with_ties(tied, metric: str, k: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    l2, ip, data = tied
    monkeypatch.setattr(exact_module, "MAX_BLOCK_LEAVES", 1)  # a block is one leaf
    reader = IndexReader(l2 if metric == "L2" else ip)
    assert max(len(reader.node(reader.levels, leaf).ids) for leaf in reader.leaf_ids()) < 120  # k = 120 > a block
    queries = np.vstack([data[:5], np.zeros((1, 6), np.float32), np.full((1, 6), 2, np.float32)])
    found = reader.exact(queries, k)
    ids, scores = _brute_force(data, queries, k, metric)
    np.testing.assert_array_equal(found.ids, ids)
    np.testing.assert_allclose(found.scores, scores, rtol=1e-6)
    for i in range(len(queries)):  # each hit names the leaf and row that hold it
        for hit in found.hits(i)[:5]:
            assert reader.node(reader.levels, hit.leaf).ids[hit.row] == hit.item_id


def test_block_size_does_not_change_the_answer(tied, monkeypatch: pytest.MonkeyPatch) -> None:
    l2, _, data = tied
    queries = data[::37] + np.float32(0.5)
    whole = IndexReader(l2).exact(queries, 30, exclude=frozenset({3, 4}), self_ids=list(range(len(queries))))
    monkeypatch.setattr(exact_module, "MAX_BLOCK_LEAVES", 1)
    monkeypatch.setattr(exact_module, "KEY_BYTES", 64)  # one query per matrix product
    small = IndexReader(l2).exact(queries, 30, exclude=frozenset({3, 4}), self_ids=list(range(len(queries))))
    for a, b in zip((whole.ids, whole.scores, whole.leaves, whole.rows),
                    (small.ids, small.scores, small.leaves, small.rows), strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.isin(whole.ids, [3, 4]).any()
    assert all(i not in whole.ids[i] for i in range(len(queries)))


def test_exact_search_teaches_the_locator(tied) -> None:
    l2, _, data = tied
    reader = IndexReader(l2)
    reader.exact(data[:2], 5)
    assert reader.locator.complete and reader.locator.complete_map() is not None
    reads = reader.store.stats().requests
    assert reader.locator.find_one(599) == reader.locator.find_one(599)
    # answered from what exact search read: at most the first leaf's item_ids document is read
    # (the ids' type), as a scan keeps no leaf's documents
    assert reader.store.stats().requests - reads <= 1


def test_a_complete_item_map_leaves_only_the_embeddings_to_read(tied) -> None:
    l2, _, data = tied
    cold = IndexReader(l2)
    before = cold.store.stats().requests
    expected = cold.exact(data[:4], 12)
    cold_reads = cold.store.stats().requests - before
    warm = IndexReader(l2)
    warm.locator.read_everything()
    before = warm.store.stats().requests
    found = warm.exact(data[:4], 12)
    assert warm.store.stats().requests - before < cold_reads * 0.6  # no item_ids read again
    for a, b in zip((found.ids, found.scores, found.leaves, found.rows),
                    (expected.ids, expected.scores, expected.leaves, expected.rows), strict=True):
        np.testing.assert_array_equal(a, b)


def test_exact_scores_equal_a_leafs_own_scores_bit_for_bit(tmp_path: Path) -> None:
    """On float vectors (sums that round), each exact hit has the score search gives it in its own
    leaf, bit for bit, whatever the block: the norms of a block of leaves computed at once equal
    each leaf's own."""
    from index_factory import build_clustered_index

    reader = IndexReader(build_clustered_index(tmp_path, 2000, 48, target_cluster_items=20))
    queries = np.random.default_rng(9).standard_normal((4, 48)).astype(np.float32) * 3
    found = reader.exact(queries, 40)
    checked = 0
    for i in range(len(queries)):
        q, q_sq = reader.prepare_query(queries[i])
        for hit in found.hits(i):
            own = reader.scores(reader.node(reader.levels, hit.leaf), q, q_sq)
            assert own[hit.row].tobytes() == np.float32(hit.score).tobytes()
            checked += 1
    assert checked == 160 and len(reader.leaf_ids()) > exact_module.MAX_BLOCK_LEAVES // 8
