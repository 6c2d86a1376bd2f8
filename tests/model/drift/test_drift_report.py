"""The drift report's model: cancel during the fresh build leaves no temporary folder behind, the size
guard refuses a build that does not fit or is unusually large without force, and an index whose
representatives do not tell its build's size says so instead of guessing."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from drift_data import PARAMS, ROWS, clustered

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.build.insert import add_rows
from ecpfs_viewer.model.drift.fresh import DriftCancelled, DriftError, FreshPlan, guard
from ecpfs_viewer.model.drift.origin import build_origin
from ecpfs_viewer.model.drift.report import DriftSettings, drift_report
from ecpfs_viewer.model.ecpfs.opened_index import open_index
from ecpfs_viewer.model.search.index import index_reader
from ecpfs_viewer.model.search.results import SearchProgress


@pytest.fixture
def grown(tmp_path: Path) -> Path:
    data = clustered(600)
    np.save(tmp_path / "first.npy", data[:120])
    build_index(tmp_path / "first.npy", tmp_path / "grown.zarr", PARAMS)
    add_rows(tmp_path / "grown.zarr", data[120:])
    return tmp_path / "grown.zarr"


@pytest.mark.parametrize("phase", ["fresh build: writing", "fresh build: ", "index: item ids"])
def test_cancel_leaves_no_temporary_folder(grown: Path, tmp_path: Path, phase: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    cancel = threading.Event()
    seen: list[str] = []

    def progress(p: SearchProgress) -> None:
        seen.append(p.phase)
        if p.phase.startswith(phase):
            cancel.set()

    with pytest.raises(DriftCancelled, match="nothing was left behind"):
        drift_report(index_reader(open_index(grown)), settings=DriftSettings(work_dir=str(work)),
                     progress=progress, cancel=cancel)
    assert any(s.startswith(phase) for s in seen)
    assert list(work.iterdir()) == []


def test_the_guard_refuses_what_does_not_fit_and_asks_force_for_an_oversize_build(tmp_path: Path) -> None:
    free = shutil.disk_usage(tmp_path).free
    with pytest.raises(DriftError, match=r"only .* is free"):
        guard(FreshPlan(PARAMS, 10, 2 * free, 1), tmp_path, force=True)  # twice what is free (others write too)
    big = FreshPlan(PARAMS, 10, 1000, 300 * 1024 * 1024)  # far over 4× its vectors and over 256 MiB
    with pytest.raises(DriftError, match="--force"):
        guard(big, tmp_path, force=False)
    if big.need_bytes < free:
        guard(big, tmp_path, force=True)  # forced: no error


def test_random_representatives_leave_the_build_size_unknown_unless_given(tmp_path: Path) -> None:
    data = clustered(400)
    np.save(tmp_path / "first.npy", data[:200])
    build_index(tmp_path / "first.npy", tmp_path / "r.zarr",
                BuildParams(levels=2, target_cluster_items=20, rep_selection="random", seed=3))
    add_rows(tmp_path / "r.zarr", data[200:])
    reader = index_reader(open_index(tmp_path / "r.zarr"))
    origin = build_origin(reader)
    assert not origin.known and "unknown" in origin.how and "--built-items" in origin.how
    assert origin.rep_selection == "random"
    given = build_origin(reader, built_items=200)
    assert (given.built_below, given.inserted_from, given.target) == (200, 200, 20)
    report = drift_report(reader, settings=DriftSettings(sample=30, built_items=200))
    assert report.reach_inserted is not None and report.reach_inserted.checked == 200
    assert report.reach_built is not None and report.reach_built.checked == 200
    assert "--rep-selection random --seed 0" in report.verdict.command


def test_an_index_with_a_gap_is_compared_on_the_same_query_vectors(tmp_path: Path) -> None:
    """The fresh build numbers items 0..n-1; with a gap the ids differ, so queries are the index's vectors."""
    import zarr

    data = clustered(500)
    np.save(tmp_path / "first.npy", data[:300])
    build_index(tmp_path / "first.npy", tmp_path / "g.zarr", PARAMS)
    zarr.open_array(tmp_path / "g.zarr", path="info/next_item_id", mode="r+")[...] = np.uint32(310)  # a crash gap
    add_rows(tmp_path / "g.zarr", data[300:])
    report = drift_report(index_reader(open_index(tmp_path / "g.zarr")), settings=DriftSettings(sample=40))
    assert report.gap == 10 and report.total_items == 500 and report.next_item_id == 510
    assert report.recall.source.startswith("the vectors of 40 sampled items")
    assert ROWS  # the shared data module is the one the CLI tests use


def test_the_equal_cost_ladder_reaches_past_the_index_cost_and_below_it_when_cheaper() -> None:
    from ecpfs_viewer.model.drift.equal_cost import LADDER, ladder

    up = ladder(4, 3.7)
    assert up == sorted(up) and up[0] > 4 and up[-1] >= 4 * 3.7 * 1.5 and len(up) <= LADDER
    down = ladder(8, 0.5)
    assert down and down[-1] < 8 and down[0] >= 1 and 8 not in down


def test_a_killed_runs_folder_is_removed_by_the_next_and_a_folder_with_anything_else_stays(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from ecpfs_viewer.model.drift.stale import remove_stale_drift

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    dead = int(gone.stdout)
    data = clustered(200)
    np.save(tmp_path / "rows.npy", data)
    killed = tmp_path / f".ecpfs-drift-{dead}-abc123"
    killed.mkdir()
    np.save(killed / "items.npy", data)
    build_index(tmp_path / "rows.npy", killed / "fresh.zarr", PARAMS)
    someones = tmp_path / f".ecpfs-drift-{dead}-def456"
    someones.mkdir()
    (someones / "notes.txt").write_text("mine")
    alive = tmp_path / f".ecpfs-drift-{os.getpid()}-ghi789"
    alive.mkdir()
    assert remove_stale_drift(tmp_path) == [killed]
    assert not killed.exists() and (someones / "notes.txt").exists() and alive.exists()
