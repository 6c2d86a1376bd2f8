"""Exact search as a dask graph over blocks of leaves: the local threaded scheduler and a
dask.distributed LocalCluster of two worker processes on loopback give the in-process answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from cloud_emulators import free_port  # tests/ is on sys.path (conftest)
from index_factory import build_clustered_index

from ecpfs_viewer.cli import main
from ecpfs_viewer.model.search import IndexReader, recall_sweep, sample_items
from ecpfs_viewer.model.search import exact_dask as exact_dask_module
from ecpfs_viewer.model.search.exact_dask import SchedulerError, exact_knn_dask, source_of
from ecpfs_viewer.model.storage.opening import open_memory

pytest.importorskip("dask.array", reason="dask is part of the scale extra")


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_clustered_index(tmp_path_factory.mktemp("exact_dask"), items=2500, dim=10)


@pytest.fixture(scope="module")
def cluster_address() -> Iterator[str]:
    distributed = pytest.importorskip("distributed", reason="dask.distributed is part of the scale extra")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        yield str(cluster.scheduler_address)


def _queries(reader: IndexReader, count: int = 12) -> np.ndarray:
    rng = np.random.default_rng(8)
    return (reader.root.vectors[:count] + rng.normal(0, 0.7, (min(count, len(reader.root.vectors)), reader.dim))
            ).astype(np.float32)


def _same(a: object, b: object) -> None:
    for name in ("ids", "scores", "leaves", "rows"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exact_dask_module, "LEAF_BLOCK", 7)  # many blocks, so the reduction is a real tree


def test_threaded_dask_equals_in_process_exact(index_path: Path, small_blocks: None) -> None:
    reader = IndexReader(index_path)
    queries = _queries(reader)
    expected = IndexReader(index_path).exact(queries, 10)
    _same(exact_knn_dask(reader, queries, 10), expected)
    own = [int(i) for i in expected.ids[:, 0]]
    excluded = frozenset({int(expected.ids[0, 1]), int(expected.ids[1, 2])})
    _same(exact_knn_dask(reader, queries, 7, excluded, own), IndexReader(index_path).exact(queries, 7, excluded, own))


def test_dask_pads_when_fewer_items_than_k(two_clusters_path: Path) -> None:
    found = exact_knn_dask(IndexReader(two_clusters_path), np.zeros((1, 2)), 10, exclude=frozenset({0}))
    assert found.ids[0].tolist() == [1, 2, 3, 4, 5, 6, 7, -1, -1, -1]
    assert np.isinf(found.scores[0, 7:]).all()


def test_local_cluster_of_two_workers_equals_in_process_exact(index_path: Path, cluster_address: str,
                                                             small_blocks: None) -> None:
    reader = IndexReader(index_path)
    queries = _queries(reader)
    seen: list[tuple[int, int]] = []
    found = exact_knn_dask(reader, queries, 10, scheduler=cluster_address,
                           progress=lambda p: seen.append((p.done, p.total)))
    _same(found, IndexReader(index_path).exact(queries, 10))
    blocks = -(-len(reader.leaf_ids()) // 7)
    assert [done for done, _total in seen] == [0, *range(1, blocks + 1), blocks]  # one step per block on a worker
    assert {total for _done, total in seen} == {blocks}


def test_recall_with_dask_truth_equals_in_process_recall(index_path: Path) -> None:
    reader = IndexReader(index_path)
    queries = sample_items(reader, 8, seed=1)
    plain = recall_sweep(IndexReader(index_path), queries, 5, (1, 4))
    with_dask = recall_sweep(reader, queries, 5, (1, 4), exact=lambda *a: exact_knn_dask(reader, *a[:4]))
    assert [r.recall for r in with_dask.rows] == [r.recall for r in plain.rows]


def test_cli_recall_and_explain_on_a_cluster(index_path: Path, cluster_address: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    args = ["recall", str(index_path), "--sample", "6", "--k", "5", "--search-exp", "1,2", "--json"]
    assert main(args) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*args, "--scheduler", cluster_address]) == 0
    on_cluster = json.loads(capsys.readouterr().out)
    assert [r["recall"] for r in on_cluster["rows"]] == [r["recall"] for r in plain["rows"]]
    search = ["search", str(index_path), "--item", "3", "--k", "5", "--explain", "--json"]
    assert main(search) == 0
    expected = json.loads(capsys.readouterr().out)["exact"]
    assert main([*search, "--scheduler", "threads"]) == 0
    assert json.loads(capsys.readouterr().out)["exact"] == expected


@pytest.mark.waits  # deadlines for schedulers that never answer
def test_cli_scheduler_errors_are_one_line(index_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["recall", str(index_path), "--sample", "2", "--k", "3", "--search-exp", "1"]
    assert main([*base, "--scheduler", "cluster-please"]) == 2  # a usage error
    assert "--scheduler must be 'threads' or a scheduler address" in capsys.readouterr().err
    pytest.importorskip("distributed")
    port = free_port()
    assert main([*base, "--scheduler", f"tcp://127.0.0.1:{port}"]) == 1
    assert f"cannot reach the dask scheduler at tcp://127.0.0.1:{port}" in capsys.readouterr().err


def test_memory_store_cannot_go_to_workers() -> None:
    reader_store = open_memory({})
    with pytest.raises(SchedulerError, match="in-memory store"):
        source_of(type("R", (), {"store": reader_store})())  # type: ignore[arg-type]
