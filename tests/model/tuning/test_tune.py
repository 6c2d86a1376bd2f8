"""Tune on real builds and real searches: the better setting known by construction is recommended,
and a cancelled or refused tune leaves nothing behind."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest
from tune_data import CLUSTER, cluster_rows

from ecpfs_viewer.model.build.builder import BuildParams
from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.tuning.pareto import cheapest_reaching, pareto_front
from ecpfs_viewer.model.tuning.truth import exact_neighbours
from ecpfs_viewer.model.tuning.tune import (
    TuneCancelled,
    TuneError,
    TuneGrid,
    TuneProgress,
    TuneSettings,
    build_command,
    tune,
)


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folder tune works in, empty, so a test sees what it left."""
    work = tmp_path / "tmp"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    monkeypatch.setenv("TMPDIR", str(work))  # chosen by the user: not a RAM filesystem
    return work


def test_tune_recommends_the_target_that_matches_the_clusters(tmp_path: Path, own_tmp: Path) -> None:
    rows, queries = cluster_rows(tmp_path)
    seen: list[TuneProgress] = []
    report = tune(rows, TuneGrid(levels=(1,), target_cluster_items=(CLUSTER, 8 * CLUSTER)),
                  TuneSettings(queries=str(queries), search_exps=(1, 2, 4), recall_target=0.9), progress=seen.append)
    small, large = report.variants
    assert small.params.target_cluster_items == CLUSTER and report.rows == 40 * CLUSTER
    assert [p.recall for p in small.points] == [1.0, 1.0, 1.0]  # each leaf is one whole cluster
    leaf_sizes = small.balance[0].sizes
    assert leaf_sizes.max() == np.median(leaf_sizes) == CLUSTER and small.balance[0].coefficient_of_variation == 0
    assert small.points[0].costs["leaves_scanned"].mean == 1
    assert small.points[0].cost() == 40 + CLUSTER  # the 40 representatives, then one leaf's items
    assert large.points[0].cost() > 2 * small.points[0].cost()
    rec = report.recommendation
    assert rec is not None and (rec.variant, rec.search_exp, rec.recall) == (0, 1, 1.0)
    assert rec.command == build_command(str(rows), small.params) and f"--target-cluster-items {CLUSTER}" in rec.command
    assert report.frontier()[0] is small.points[0] and all(p.on_frontier is False for p in large.points)
    assert small.disk_bytes > 0 and small.files > 0 and small.build_seconds > 0 and small.path is None
    assert {p.variant for p in seen} >= {0, 1} and seen[-1].done == seen[-1].total == 1000
    assert [p.done for p in seen] == sorted(p.done for p in seen)  # overall progress never goes back
    assert list(own_tmp.iterdir()) == []  # every variant and the work folder removed


def test_held_out_rows_are_not_items_and_kept_variants_open(tmp_path: Path, own_tmp: Path) -> None:
    rows, _ = cluster_rows(tmp_path, clusters=12)
    keep = tmp_path / "kept"
    report = tune(rows, TuneGrid(levels=(1, 2), target_cluster_items=(25,)),
                  TuneSettings(holdout=30, k=5, search_exps=(1, 64), keep=str(keep)))
    assert report.queries == 30 and len(report.held_out) == 30 and report.rows == 12 * CLUSTER - 30
    data = np.load(rows)
    for variant in report.variants:
        assert variant.path is not None and Path(variant.path).parent == keep
        reader = IndexReader(variant.path)
        try:
            assert reader.total_items == report.rows
            stored = reader.vectors_for_items(range(report.rows))
        finally:
            reader.close()
        remaining = np.delete(data, list(report.held_out), axis=0)
        assert np.array_equal(stored, remaining)  # item ids are the remaining rows, in order
        assert variant.points[-1].recall == 1.0  # search_exp 64 scans every leaf: the exact answer
    assert sorted(p.name for p in keep.iterdir()) == ["l1_t25.zarr", "l2_t25.zarr"]
    assert list(own_tmp.iterdir()) == []


def test_cancel_leaves_nothing_behind(tmp_path: Path, own_tmp: Path) -> None:
    rows, queries = cluster_rows(tmp_path)
    keep = tmp_path / "kept"
    cancel = __import__("threading").Event()

    def stop_in_second_search(p: TuneProgress) -> None:
        if p.variant == 1 and p.step == "search":
            cancel.set()

    with pytest.raises(TuneCancelled):
        tune(rows, TuneGrid(levels=(1,), target_cluster_items=(50, 100)),
             TuneSettings(queries=str(queries), keep=str(keep)), progress=stop_in_second_search, cancel=cancel)
    assert not keep.exists()  # the kept variant built before the cancel went too
    with pytest.raises(TuneCancelled):
        cancel.clear()
        tune(rows, TuneGrid(levels=(1,), target_cluster_items=(50, 100)), TuneSettings(holdout=20),
             progress=stop_in_second_search, cancel=cancel)
    assert list(own_tmp.iterdir()) == []


def test_a_grid_the_builder_would_refuse_stops_before_building(tmp_path: Path, own_tmp: Path) -> None:
    src = tmp_path / "rows.npy"
    np.save(src, np.random.default_rng(0).standard_normal((3000, 64)).astype(np.float32))
    with pytest.raises(TuneError, match=r"L64 t1: about 8\.1 GiB, 2,120,387 files and folders\. Nothing is left"):
        tune(src, TuneGrid(levels=(64,), target_cluster_items=(1,)), TuneSettings(holdout=10))
    with pytest.raises(TuneError, match="larger than the number of rows"):
        tune(src, TuneGrid(levels=(1,), target_cluster_items=(5000,)), TuneSettings(holdout=10))
    with pytest.raises(TuneError, match="file not found"):
        tune(tmp_path / "absent.npy", TuneGrid())
    assert list(own_tmp.iterdir()) == []


def test_exact_neighbours_match_the_index_exact_search(tmp_path: Path) -> None:
    rows, queries = cluster_rows(tmp_path, clusters=8)
    from ecpfs_viewer.model.build.builder import build_index

    build_index(rows, tmp_path / "idx.zarr", BuildParams(levels=2, target_cluster_items=20))
    q = np.load(queries) + np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32) * 20
    ours = exact_neighbours(np.load(rows), q, 7)
    reader = IndexReader(tmp_path / "idx.zarr")
    try:
        theirs = reader.exact(q, 7)
    finally:
        reader.close()
    assert np.array_equal(ours.ids, theirs.ids)


def test_pareto_front_and_cheapest() -> None:
    costs = [10, 5, 5, 20, 7]
    recalls = [0.8, 0.5, 0.6, 0.95, 0.6]
    assert pareto_front(costs, recalls) == [2, 0, 3]
    assert cheapest_reaching(costs, recalls, 0.9) == 3
    assert cheapest_reaching(costs, recalls, 0.6) == 2
    assert cheapest_reaching(costs, recalls, 0.99) is None


def test_a_grid_larger_than_the_free_space_stops_before_building(tmp_path: Path, own_tmp: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    rows, _ = cluster_rows(tmp_path, clusters=10)
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: usage(10**9, 10**9 - 4096, 4096))  # a full disk
    expected = rf"^{own_tmp / 'k'}: the grid's builds would take about .* on disk \(all 2 kept\), only 4.0 KiB is free"
    with pytest.raises(TuneError, match=expected):
        tune(rows, TuneGrid(levels=(1, 2), target_cluster_items=(25,)),
             TuneSettings(holdout=10, keep=str(own_tmp / "k")))
    assert list(own_tmp.iterdir()) == []


def test_the_size_guard_splits_the_grid_and_anyway_keeps_it_whole(tmp_path: Path) -> None:
    """Issue 37 §6: variants over `build`'s size guard are left out (all named, with sizes), unless included."""
    from tune_data import cluster_rows

    from ecpfs_viewer.model.tuning.tune import TuneError, TuneGrid, runnable_variants

    rows, _ = cluster_rows(tmp_path)
    run, left = runnable_variants(str(rows), TuneGrid(levels=(1, 200), target_cluster_items=(50,)))
    assert [s.name for s in run] == ["L1 t50"] and [s.name for s in left] == ["L200 t50"]
    assert left[0].oversize and left[0].estimated_bytes > 256 << 20
    run, left = runnable_variants(str(rows), TuneGrid(levels=(1, 200), target_cluster_items=(50,),
                                                      include_oversize=True))
    assert [s.name for s in run] == ["L1 t50", "L200 t50"] and left == []
    with pytest.raises(TuneError, match=r"2 variants of 2 left out.*L150 t50: about 299\.0 MiB.*L200 t50"):
        runnable_variants(str(rows), TuneGrid(levels=(150, 200), target_cluster_items=(50,)))
