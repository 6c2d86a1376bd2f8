"""Exact search with a helper process scoring the far end of the blocks (model/search/exact.py on
model/storage/far_end.py): the same neighbours, scores, leaves and rows, ties included, and the
same unreadable leaves in the same order, as scored in one process."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.search import exact as exact_module
from ecpfs_viewer.model.search.exact import ExactNeighbours
from ecpfs_viewer.model.storage import far_end
from ecpfs_viewer.model.storage.far_end import FarEnd


@pytest.fixture(scope="module")
def tied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """An L2 index of 600 small-integer vectors with 40 distinct values: most items tie."""
    tmp = tmp_path_factory.mktemp("exact_helper")
    rng = np.random.default_rng(5)
    data = rng.integers(-3, 4, (40, 6)).astype(np.float32)[rng.integers(0, 40, 600)]
    np.save(tmp / "d.npy", data)
    build_index(tmp / "d.npy", tmp / "L2.zarr", BuildParams(levels=2, target_cluster_items=9))
    return tmp / "L2.zarr", data


@pytest.fixture
def helpers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[FarEnd]]:
    """One leaf a block, a helper for 4 blocks or more (on any machine); this process's first block
    waits until the helper is done, so the helper scores every other one."""
    started: list[FarEnd] = []

    class Kept(FarEnd):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

    score = exact_module._score_block

    def after_the_helper(*args: Any, **kwargs: Any) -> Any:
        deadline = time.monotonic() + 60
        while started and started[-1].running():
            assert time.monotonic() < deadline, "the helper did not finish"
            time.sleep(0.01)
        return score(*args, **kwargs)

    monkeypatch.setattr(exact_module, "MAX_BLOCK_LEAVES", 1)
    monkeypatch.setattr(exact_module, "HELPER_MIN_BLOCKS", 4)
    monkeypatch.setattr(exact_module, "FarEnd", Kept)
    monkeypatch.setattr(exact_module, "_score_block", after_the_helper)
    monkeypatch.setattr(far_end, "helper_possible", lambda: True)
    yield started


def _alone(monkeypatch: pytest.MonkeyPatch, run: Any) -> ExactNeighbours:
    monkeypatch.setattr(exact_module, "HELPER_MIN_BLOCKS", 10**9)
    try:
        return run()
    finally:
        monkeypatch.setattr(exact_module, "HELPER_MIN_BLOCKS", 4)


def _same(a: ExactNeighbours, b: ExactNeighbours) -> None:
    for x, y in zip((a.ids, a.scores, a.leaves, a.rows), (b.ids, b.scores, b.leaves, b.rows), strict=True):
        np.testing.assert_array_equal(x, y)
    assert a.unreadable == b.unreadable


@pytest.mark.parametrize("k", [3, 40])
def test_exact_search_with_a_helper_finds_what_it_finds_alone(
        tied: tuple[Path, np.ndarray], helpers: list[FarEnd], monkeypatch: pytest.MonkeyPatch, k: int) -> None:
    path, data = tied
    queries = data[::37] + np.float32(0.5)

    def run() -> ExactNeighbours:
        return IndexReader(path).exact(queries, k, exclude=frozenset({3, 4}), self_ids=list(range(len(queries))))

    alone = _alone(monkeypatch, run)
    helped = run()
    assert len(helpers) == 1 and helpers[0].failure is None
    assert helpers[0].low() <= 1  # every block but this process's first scored by the helper
    _same(helped, alone)


def test_a_far_leaf_that_cannot_be_read_is_named_as_alone(
        tied: tuple[Path, np.ndarray], helpers: list[FarEnd], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    path = tmp_path / "copy.zarr"
    shutil.copytree(tied[0], path)
    last = IndexReader(path).leaf_ids()[-3]
    (path / "lvl_2" / f"node_{last}" / "embeddings" / "c" / "0" / "0").write_bytes(b"not zstd")
    queries = tied[1][:4]

    def run() -> ExactNeighbours:
        return exact_module.exact_knn(IndexReader(path), queries, 10, skip_unreadable=True)

    alone = _alone(monkeypatch, run)
    assert [u.path for u in alone.unreadable] == [f"lvl_2/node_{last}"]
    helped = run()
    assert helpers[0].failure is None
    _same(helped, alone)


def test_with_a_helper_this_process_scores_with_one_worker_fewer(
        tied: tuple[Path, np.ndarray], helpers: list[FarEnd], monkeypatch: pytest.MonkeyPatch) -> None:
    """The helper has a core of its own: a worker thread per core here as well only took turns at
    the interpreter lock (recall at 10M on two CPUs: 16.8-17.9 s with two workers, 15.3-15.9 s with one)."""
    path, data = tied
    pools: list[int] = []
    real_pool = exact_module.ThreadPoolExecutor

    def pool(workers: int, **kwargs: Any) -> Any:
        pools.append(workers)
        return real_pool(workers, **kwargs)

    monkeypatch.setattr(exact_module, "ThreadPoolExecutor", pool)
    monkeypatch.setattr(exact_module.os, "cpu_count", lambda: 4)
    IndexReader(path).exact(data[:5], 3)
    _alone(monkeypatch, lambda: IndexReader(path).exact(data[:5], 3))
    assert helpers and pools == [3, 4]  # fails when the helper's core is counted for a worker here too
