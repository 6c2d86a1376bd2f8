"""eCP search (§4), exact search and recall over indexes built in the test or the zarrs fixture."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from ecpfs_viewer.model.build import BuildParams, build_index
from ecpfs_viewer.model.search import IndexReader, SearchParams, recall_at_k


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


def test_query_dimension_mismatch(two_clusters_path: Path) -> None:
    with pytest.raises(ValueError, match="3 dimensions"):
        IndexReader(two_clusters_path).search(np.zeros(3), SearchParams())
