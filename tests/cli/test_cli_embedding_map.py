"""`ecpfs-viewer map INDEX --png OUT.png`: a real PNG with the picture, title and legend, headless (no Qt
imported, no display), for every colouring, and usage errors in one line."""

from __future__ import annotations

import os
import stat
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from command_runs import run, run_limited
from index_factory import build_clustered_index

from ecpfs_viewer.model.diagnostics.embedding_map import PALETTE


def read_png(path: Path) -> np.ndarray:
    """(h, w, 3) uint8 of an 8-bit RGB PNG without filters (what the map writes), checked chunk by chunk."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks = 8, {}
    while at < len(data):
        (length,) = struct.unpack(">I", data[at:at + 4])
        kind, body = data[at + 4:at + 8], data[at + 8:at + 8 + length]
        assert struct.unpack(">I", data[at + 8 + length:at + 12 + length])[0] == zlib.crc32(kind + body)
        chunks[kind] = chunks.get(kind, b"") + body
        at += 12 + length
    w, h, depth, colour_type = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, colour_type) == (8, 2) and b"IEND" in chunks
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(h, 1 + 3 * w)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:].reshape(h, w, 3)


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_clustered_index(tmp_path_factory.mktemp("map"), 400, 6, clusters=4, levels=2,
                                 target_cluster_items=20)


def test_map_png_holds_the_picture_title_and_legend_in_the_palette(capsys, small_index: Path, tmp_path: Path) -> None:
    out = tmp_path / "map.png"
    code, stdout, err = run(capsys, "map", str(small_index), "--png", str(out), "--width", "300", "--height", "200")
    assert code == 0, err
    assert "400 items coloured by level-1 cluster" in stdout
    image = read_png(out)
    assert image.shape[0] > 200 and image.shape[1] > 300
    colours = {tuple(c) for c in image.reshape(-1, 3).tolist()}
    assert tuple(PALETTE[0].tolist()) in colours  # the legend's first swatch
    assert (image[12:26, :] < 100).any()  # dark title text above the map
    second = tmp_path / "again.png"
    code, stdout, _ = run(capsys, "map", str(small_index), "--png", str(second), "--width", "300", "--height", "200")
    assert code == 0 and "placement from the cache" in stdout
    assert second.read_bytes() != b""


@pytest.mark.parametrize("colour", ["leaf", "level", "size", "misses", "workload", "strays", "boundary"])
def test_every_colouring_draws(capsys, small_index: Path, tmp_path: Path, colour: str) -> None:
    out = tmp_path / f"{colour}.png"
    code, stdout, err = run(capsys, "map", str(small_index), "--png", str(out), "--colour", colour, "--sample", "5",
                            "--width", "120", "--height", "100", "--quiet")
    assert code == 0, err
    assert str(out) in stdout and read_png(out).shape[1] > 120


def test_map_runs_headless_without_importing_qt(small_index: Path, tmp_path: Path) -> None:
    out = tmp_path / "headless.png"
    script = """
import os, sys
os.environ.pop("DISPLAY", None); os.environ.pop("WAYLAND_DISPLAY", None); os.environ.pop("QT_QPA_PLATFORM", None)
from ecpfs_viewer.cli import main
code = main(sys.argv[1:])
print(f"exit={code} qt={'PySide6' in sys.modules}")
"""
    done = run_limited(script, "map", str(small_index), "--png", str(out), "--quiet")
    assert done.stdout.strip().endswith("exit=0 qt=False"), done.stdout + done.stderr
    assert read_png(out).size


def test_usage_errors_are_one_line(capsys, small_index: Path, tmp_path: Path) -> None:
    code, _, err = run(capsys, "map", str(small_index), "--png", str(tmp_path / "x.png"), "--colour", "level",
                       "--level", "9")
    assert code == 2 and "the index has 2 levels" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "map", str(small_index))
    assert code == 2 and "--png" in err
    assert not (tmp_path / "x.png").exists()


def test_placement_tsne_draws_and_says_so(capsys, small_index: Path, tmp_path: Path) -> None:
    pytest.importorskip("openTSNE")  # both legs of the suite install it (the layout extra)
    out = tmp_path / "tsne.png"
    code, stdout, err = run(capsys, "map", str(small_index), "--png", str(out), "--placement", "tsne", "--width", "120",
                            "--height", "100", "--quiet")
    assert code == 0, err
    assert "400 items coloured by level-1 cluster" in stdout and "placed by t-SNE of the representatives" in stdout
    assert read_png(out).shape[1] > 120  # the PCA and t-SNE entries kept apart: test_embedding_map_tsne.py


def test_placement_tsne_without_opentsne_is_refused_in_one_line(capsys, small_index: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from ecpfs_viewer.cli.embedding_map import PLACEMENTS
    from ecpfs_viewer.model.diagnostics.embedding_map import MAP_PLACEMENTS

    assert tuple(m.id for m in MAP_PLACEMENTS) == PLACEMENTS  # --placement offers the model's table
    monkeypatch.setitem(sys.modules, "openTSNE", None)  # what an absent package does to an import
    out = tmp_path / "x.png"
    code, _, err = run(capsys, "map", str(small_index), "--png", str(out), "--placement", "tsne")
    assert code == 2 and not out.exists()
    assert err.strip() == "ecpfs-viewer: error: The t-SNE placement needs openTSNE, which is not installed: " \
        "install the layout extra (pip install 'ecpfs-viewer[layout]')."


def test_an_index_that_cannot_be_opened_exits_2_and_writes_nothing(capsys, tmp_path: Path) -> None:
    out = tmp_path / "x.png"
    code, _, err = run(capsys, "map", str(tmp_path / "absent.zarr"), "--png", str(out))
    assert code == 2 and "absent.zarr" in err and not out.exists()


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_the_png_gets_the_permissions_of_any_new_file_of_the_user(capsys, small_index: Path, tmp_path: Path,
                                                                  umask: int) -> None:
    out = tmp_path / f"perm-{umask:o}.png"
    before = os.umask(umask)
    try:
        code, _out, _err = run(capsys, "map", str(small_index), "--png", str(out), "--width", "100", "--height", "80")
    finally:
        os.umask(before)
    assert code == 0 and stat.S_IMODE(out.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []  # no temporary left beside it


def test_map_against_draws_both_side_by_side_with_the_moved_count(capsys, small_index: Path, tmp_path: Path) -> None:
    from ecpfs_viewer.model.build.builder import BuildParams, build_index

    build_index(small_index.parent / "data.npy", tmp_path / "coarse.zarr", BuildParams(levels=2,
                                                                                        target_cluster_items=60))
    from ecpfs_viewer.model.search import IndexReader
    from ecpfs_viewer.model.tuning.compare import migration

    moved = migration(IndexReader(small_index), IndexReader(tmp_path / "coarse.zarr")).moved_items
    out = tmp_path / "pair.png"
    code, stdout, err = run(capsys, "map", str(small_index), "--against", str(tmp_path / "coarse.zarr"), "--png",
                            str(out), "--width", "400", "--height", "200", "--quiet")
    assert code == 0, err
    assert f"{moved:,} of the 400 items both hold moved" in stdout and moved > 0
    image = read_png(out)
    assert image.shape[1] > 2 * 200 and image.shape[0] > 200  # two maps of 200 x 200 and the legend
    assert tuple(PALETTE[0].tolist()) in {tuple(c) for c in image.reshape(-1, 3).tolist()}
    code, _stdout, err = run(capsys, "map", str(small_index), "--against", str(small_index), "--colour", "size",
                             "--png", str(out))
    assert code != 0 and "--colour size: with --against both maps are coloured by leaf" in err
