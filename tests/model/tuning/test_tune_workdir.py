"""Where a tune works: a RAM filesystem when one has room (and the user chose no temporary folder),
and the work folders that killed tunes left behind are removed by the next tune."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tune_data import CLUSTER, cluster_rows

from ecpfs_viewer.model.tuning import workdir
from ecpfs_viewer.model.tuning.tune import TuneGrid, TuneSettings, tune
from ecpfs_viewer.model.tuning.workdir import ram_folder, remove_stale_work


@pytest.fixture
def ram(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder standing in for /dev/shm, with no temporary folder chosen by the user."""
    folder = tmp_path / "shm"
    folder.mkdir()
    monkeypatch.setattr(workdir, "RAM_FOLDERS", (str(folder),))
    for name in ("TMPDIR", "TEMP", "TMP"):
        monkeypatch.delenv(name, raising=False)
    return folder


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_tune_works_in_memory_and_leaves_nothing_there(tmp_path: Path, ram: Path) -> None:
    rows, _ = cluster_rows(tmp_path)
    report = tune(rows, TuneGrid(levels=(1,), target_cluster_items=(CLUSTER,)),
                  TuneSettings(holdout=20, search_exps=(1,)))
    assert report.work_folder == str(ram) and report.remove_seconds > 0
    assert report.variants[0].points[0].recall > 0
    assert list(ram.iterdir()) == []


def test_a_chosen_temporary_folder_or_no_room_keeps_the_tune_out_of_memory(ram: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    assert ram_folder(1 << 20) == ram
    assert ram_folder(1 << 62) is None  # more than the free space and the memory
    monkeypatch.setenv("TMPDIR", str(ram.parent))
    assert ram_folder(1 << 20) is None


def test_work_folders_of_killed_tunes_are_removed(tmp_path: Path) -> None:
    dead = tmp_path / f".ecpfs-tune-{_dead_pid()}-k1ll3d_"
    mine = tmp_path / f".ecpfs-tune-{os.getpid()}-runn1ng"  # this process: a tune in a thread
    old = tmp_path / ".ecpfs-tune-0ldn4me"  # an older tune's name (no process id), unchanged for two days
    fresh = tmp_path / ".ecpfs-tune-fr3sh"
    other = tmp_path / "ecpfs-tune-notours"
    for folder in (dead, mine, old, fresh, other):
        (folder / "l1_t25.zarr" / "lvl_1").mkdir(parents=True)
        (folder / "remaining.npy").write_bytes(b"x" * 100)
    two_days_ago = time.time() - 2 * 24 * 3600
    os.utime(old, (two_days_ago, two_days_ago))
    assert sorted(remove_stale_work([tmp_path, tmp_path])) == sorted([dead, old])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (mine, fresh, other))
