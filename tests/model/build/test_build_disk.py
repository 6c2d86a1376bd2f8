"""What a build costs on disk and what killed builds leave: the size estimate against real builds,
the "unusually large" guard, and the removal of stale temporary folders."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ecpfs_viewer.model.build.builder import BuildParams, build_index, preview_build
from ecpfs_viewer.model.build.output import remove_stale_builds, stale_builds


def du(root: Path) -> tuple[int, int]:
    """(bytes on disk, file bytes) of a tree, as ``du`` and ``du --apparent-size`` count them."""
    on_disk = os.lstat(root).st_blocks * 512
    apparent = 0
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            st = os.lstat(os.path.join(folder, name))
            on_disk += st.st_blocks * 512
            if name in files:
                apparent += st.st_size
    return on_disk, apparent


@pytest.mark.parametrize(
    ("rows", "dim", "dtype", "levels", "target"),
    [(1000, 16, "float32", 2, 10),  # 100 leaves of 10 rows: folders and block rounding are almost all of it
     (3000, 64, "float32", 3, 100),
     (5000, 128, "float32", 2, 500),  # leaves of 256 KiB: the vectors dominate
     (3000, 8, "uint8", 3, 10)],
)
def test_estimate_is_within_a_quarter_of_the_real_size_on_disk(tmp_path: Path, rows: int, dim: int, dtype: str,
                                                               levels: int, target: int) -> None:
    rng = np.random.default_rng(rows)
    data = rng.standard_normal((rows, dim)).astype(np.float32)
    if dtype == "uint8":
        data = rng.integers(0, 256, size=(rows, dim)).astype(np.uint8)
    src = tmp_path / "in.npy"
    np.save(src, data)
    out = tmp_path / "out.zarr"
    params = BuildParams(levels=levels, target_cluster_items=target)
    preview = preview_build(src, params, out)
    build_index(src, out, params)
    on_disk, apparent = du(out)
    assert 0.75 <= on_disk / preview.estimated_bytes <= 1.25, (on_disk, preview.estimated_bytes)
    assert 0.75 <= apparent / preview.estimated_apparent_bytes <= 1.25, (apparent, preview.estimated_apparent_bytes)
    entries = sum(len(d) + len(f) for _, d, f in os.walk(out)) + 1
    assert 0.9 <= entries / preview.estimated_files <= 1.1


def test_unusually_large_builds_are_named(tmp_path: Path) -> None:
    src = tmp_path / "rows.npy"
    np.save(src, np.zeros((3000, 64), np.float32))
    normal = preview_build(src, BuildParams(levels=3, target_cluster_items=100))
    assert normal.oversize == "" and normal.input_bytes == 3000 * 64 * 4
    huge = preview_build(src, BuildParams(levels=64, target_cluster_items=1))
    assert huge.estimated_files == 2_120_387
    assert huge.oversize.startswith("the index would take about 8.1 GiB on disk in 2,120,387 files and folders")


def _dead_pid() -> int:
    """The id of a process that has ended (and was reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_only_folders_of_ended_builds_are_stale(tmp_path: Path) -> None:
    dead = _dead_pid()
    gone = tmp_path / f".a.zarr.building-{dead}-0123abcd"
    mine = tmp_path / f".b.zarr.building-{os.getpid()}-0123abcd"  # this process: maybe a build in a thread
    alive = tmp_path / f".c.zarr.building-{os.getppid()}-0123abcd"
    user_folder = tmp_path / f"d.zarr.building-{dead}-0123abcd"  # not hidden: not ours to judge
    for folder in (gone, mine, alive, user_folder):
        (folder / "lvl_1" / "node_0").mkdir(parents=True)
        (folder / "lvl_1" / "node_0" / "zarr.json").write_text("{}")
    assert [s.path for s in stale_builds(tmp_path)] == [gone]

    removed, freed = remove_stale_builds(tmp_path)
    assert [s.pid for s in removed] == [dead] and freed > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in (mine, alive, user_folder))


def test_preview_warns_and_build_removes_stale_folders(tmp_path: Path) -> None:
    src = tmp_path / "in.npy"
    np.save(src, np.random.default_rng(0).standard_normal((50, 4)).astype(np.float32))
    stale = tmp_path / f".old.zarr.building-{_dead_pid()}-0123abcd"
    (stale / "lvl_1" / "node_0" / "embeddings" / "c" / "0").mkdir(parents=True)  # as a killed build leaves it
    (stale / "lvl_1" / "node_0" / "embeddings" / "c" / "0" / "0").write_bytes(b"x" * 10000)
    params = BuildParams(levels=1, target_cluster_items=5)
    preview = preview_build(src, params, tmp_path / "new.zarr")
    assert f"1 unfinished build folder left by killed builds will be removed ({stale.name})" in preview.warnings
    lines: list[str] = []
    result = build_index(src, tmp_path / "new.zarr", params, log=lines.append)
    assert not stale.exists()
    said = [w for w in result.warnings if w.startswith("removed 1 unfinished build folder")]
    assert said and said[0] in lines and stale.name in said[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.npy", "new.zarr"]
