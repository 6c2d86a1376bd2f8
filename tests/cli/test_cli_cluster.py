"""`recall`, `compare` and `tune` with `--scheduler tcp://…` on a real dask cluster on loopback (a
`dask scheduler` and two `dask worker` processes): the answers equal the local ones exactly, a worker
that dies mid-run is replaced by another, and a cancelled tune leaves nothing on the workers."""

from __future__ import annotations

import json
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dask_cluster import DaskCluster, DieOnce, dask_cluster
from index_factory import build_clustered_index
from tune_data import cluster_rows

from ecpfs_viewer.cli import main
from ecpfs_viewer.model.tuning.tune import TuneCancelled, TuneGrid, TuneSettings, tune

pytest.importorskip("distributed", reason="dask.distributed is part of the scale extra")

#: what depends on the clock, on the folder a run worked in, or on how this process first read a leaf (a
#: search's cold bytes and requests are each node's share of the batch it was read in: a local exact search
#: reads every leaf in batches here, one on the cluster reads none here): not the answer
NOT_ANSWERS = {"ms", "ms_mean", "ms_p95", "seconds", "build_seconds", "search_seconds", "exact_seconds",
               "remove_seconds", "work_folder", "bytes_mean", "bytes_p95", "requests_mean", "requests_p95",
               "bytes_cold"}
#: a bound on waiting for a condition (never reached when things work)
DEADLINE = 120.0


def _answer(value: Any) -> Any:
    """A JSON report without what is not its answer (NOT_ANSWERS)."""
    if isinstance(value, dict):
        return {k: _answer(v) for k, v in value.items() if k not in NOT_ANSWERS}
    if isinstance(value, list):
        return [_answer(v) for v in value]
    return value


def _wait_for(condition: Any, what: str) -> None:
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"waited {DEADLINE:.0f} s for {what}"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DaskCluster]:
    with dask_cluster(tmp_path_factory.mktemp("dask")) as running:
        yield running


@pytest.fixture
def same_tmp(cluster: DaskCluster, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This process works in a folder on the workers' file system, so disk figures compare."""
    local = cluster.tmp.parent / "local-tmp"
    local.mkdir(exist_ok=True)
    monkeypatch.setattr(tempfile, "tempdir", str(local))
    monkeypatch.setenv("TMPDIR", str(local))
    return local


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    assert main(args) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def index_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two builds of the same vectors with different leaf sizes."""
    a = build_clustered_index(tmp_path_factory.mktemp("a"), items=1500, dim=8)
    b = build_clustered_index(tmp_path_factory.mktemp("b"), items=1500, dim=8, target_cluster_items=60)
    return a, b


def test_recall_on_the_cluster_equals_local(index_pair: tuple[Path, Path], cluster: DaskCluster,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    recall = ["recall", str(index_pair[0]), "--sample", "20", "--k", "5", "--search-exp", "1,2,4", "--json"]
    local = _json(recall, capsys)
    assert 0 < local["rows"][0]["recall"] < 1  # a sweep that can tell a wrong truth from the right one
    assert _answer(_json([*recall, "--scheduler", cluster.address], capsys)) == _answer(local)


def test_compare_on_the_cluster_equals_local(index_pair: tuple[Path, Path], cluster: DaskCluster,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    compare = ["compare", *map(str, index_pair), "--sample", "20", "--k", "5", "--search-exp", "1,2", "--json"]
    local = _json(compare, capsys)
    assert local["recall"]["shared_truth"]  # same data: the exact neighbours computed once, on the cluster
    assert local["recall"]["differing_queries"]  # the per-query table is compared too
    assert _answer(_json([*compare, "--scheduler", cluster.address], capsys)) == _answer(local)


def test_tune_on_the_cluster_equals_local(tmp_path: Path, cluster: DaskCluster, same_tmp: Path,
                                          capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    cluster_rows(tmp_path, clusters=12)
    monkeypatch.chdir(tmp_path)  # a relative input: the workers, elsewhere, are sent its absolute path
    tune_args = ["tune", "rows.npy", "--levels", "1,2", "--target-cluster-items", "25,50", "--holdout", "30",
                 "--k", "5", "--search-exp", "1,2", "--json", "--quiet"]
    local = _json(tune_args, capsys)
    on_cluster = _json([*tune_args, "--scheduler", cluster.address], capsys)
    assert len(on_cluster["variants"]) == 4
    assert _answer(on_cluster) == _answer(local)
    assert cluster.work_folders() == [] and list(same_tmp.iterdir()) == []


def test_a_worker_that_dies_mid_run_is_replaced(tmp_path: Path, index_pair: tuple[Path, Path], cluster: DaskCluster,
                                                same_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows, _ = cluster_rows(tmp_path, clusters=6)
    grid = TuneGrid(levels=(1,), target_cluster_items=(25, 50))
    settings = TuneSettings(k=5, search_exps=(1, 2), holdout=20)
    local = tune(rows, grid, settings)
    recall = ["recall", str(index_pair[0]), "--sample", "10", "--k", "5", "--search-exp", "1,2", "--json"]
    local_recall = _json(recall, capsys)
    tune_died, block_died = tmp_path / "a tune worker died", tmp_path / "a block worker died"
    with cluster.client() as client:
        client.register_plugin(DieOnce("ecpfs-tune-", str(tune_died)), name="tune")
        client.register_plugin(DieOnce("ecpfs-exact-", str(block_died)), name="blocks")
        try:
            on_cluster = tune(rows, grid, settings, scheduler=cluster.address)
            on_cluster_recall = _json([*recall, "--scheduler", cluster.address], capsys)
        finally:
            client.unregister_worker_plugin("tune")
            client.unregister_worker_plugin("blocks")
    assert tune_died.exists() and block_died.exists()  # a worker did die starting a variant, and one a block
    assert [_answer(v.to_dict()) for v in on_cluster.variants] == [_answer(v.to_dict()) for v in local.variants]
    assert _answer(on_cluster_recall) == _answer(local_recall)


def test_a_cancelled_tune_leaves_nothing(tmp_path: Path, cluster: DaskCluster, same_tmp: Path) -> None:
    rows, _ = cluster_rows(tmp_path, clusters=20)
    grid = TuneGrid(levels=(1, 2, 3), target_cluster_items=(25, 50, 100, 200))
    cancel = threading.Event()
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            tune(rows, grid, TuneSettings(k=5, search_exps=(1, 2), holdout=20), cancel=cancel,
                 scheduler=cluster.address)
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    _wait_for(lambda: cluster.work_folders() or outcome, "a variant to start on a worker")
    cancel.set()
    thread.join(DEADLINE)
    assert isinstance(outcome[0], TuneCancelled)
    assert cluster.work_folders() == []  # the running variants removed their folders before tune returned
    assert list(same_tmp.iterdir()) == []
    with cluster.client() as client:  # and the run's tasks are gone from the cluster
        _wait_for(lambda: not any(client.processing().values()) and not any(client.has_what().values()),
                  "the scheduler to drop the cancelled tasks")


@pytest.mark.long
def test_a_scheduler_no_worker_joins_is_an_error_within_the_wait(tmp_path: Path, index_pair: tuple[Path, Path],
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Every wait has a deadline: a `dask scheduler` with no worker makes recall (and compare, through the
    same connection) stop with "no workers joined the scheduler at tcp://… within N s" (a failed run)."""
    from ecpfs_viewer.model.search import cluster as cluster_module

    monkeypatch.setattr(cluster_module, "WORKER_WAIT_SECONDS", 2.0)
    with dask_cluster(tmp_path, workers=0) as empty:
        recall = ["recall", str(index_pair[0]), "--sample", "5", "--k", "5", "--search-exp", "1", "--json",
                  "--scheduler", empty.address]
        started = time.monotonic()
        assert main(recall) == 1
        assert time.monotonic() - started < DEADLINE
        err = capsys.readouterr().err
        assert f"no workers joined the scheduler at {empty.address} within 2 s" in err
        compare = ["compare", *map(str, index_pair), "--sample", "5", "--k", "5", "--search-exp", "1",
                   "--scheduler", empty.address]
        assert main(compare) == 1
        assert f"no workers joined the scheduler at {empty.address} within 2 s" in capsys.readouterr().err
