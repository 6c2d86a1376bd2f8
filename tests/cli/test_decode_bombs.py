"""Issue 34's bomb rows from the command line: one leaf's embeddings chunk of a few KB that decodes
to far more than the chunk (zstd without a declared size, two zstd frames, gzip, blosc), and the same
bomb in the input of `build store.zarr#a`. Every command refuses the chunk before decoding more than
its own size, names it, and peaks within tens of MB of the same command on the clean store.

Peaks are the child's peak RSS (getrusage of a fresh wrapper's only child), compared with the same
command on the undamaged copy; without the guarded decode each run decodes the whole bomb.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr
import zstandard
from index_factory import build_clustered_index
from locations import REPO

BOMB = 128 << 20  # decoded bytes of each bomb: past any run's own size by far
MARGIN_KB = 48 << 10  # what a refused bomb may add to the clean run's peak: tens of MB, not BOMB
LEAF = "lvl_2/node_0"

_PEAK = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:])
sys.stderr.write(f"\\nPEAK_KB {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\\n")
sys.exit(done.returncode)
"""


def _bomb(kind: str) -> bytes:
    zeros = bytes(BOMB)
    if kind == "zstd without a declared size":
        return zstandard.ZstdCompressor(write_content_size=False).compress(zeros)
    if kind == "zstd of two frames":
        return numcodecs.Zstd().encode(bytes(1024)) + zstandard.ZstdCompressor(write_content_size=False).compress(zeros)
    if kind == "gzip":
        return gzip.compress(zeros, compresslevel=9)
    return bytes(numcodecs.Blosc(cname="zstd", clevel=9).encode(np.frombuffer(zeros, np.uint8)))


KINDS = ["zstd without a declared size", "zstd of two frames", "gzip", "blosc"]
CODECS = {"zstd without a declared size": "zstd", "zstd of two frames": "zstd", "gzip": "gzip", "blosc": "blosc"}


def peak_run(*args: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], int]:
    """`python -m ecpfs_viewer ARGS` in a child: its result and its peak RSS in KiB."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "config"),
               ECPFS_VIEWER_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(REPO), MALLOC_ARENA_MAX="2")
    done = subprocess.run([sys.executable, "-c", _PEAK, sys.executable, "-m", "ecpfs_viewer", *args], env=env,
                          capture_output=True, text=True, timeout=120)
    lines = done.stderr.rstrip().splitlines()
    assert lines and lines[-1].startswith("PEAK_KB "), done.stderr
    return done, int(lines[-1].split()[1])


@pytest.fixture(scope="module")
def clean_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_clustered_index(tmp_path_factory.mktemp("bombs"), items=600, dim=64, levels=2)


def _leaf_chunk(index: Path) -> Path:
    document = json.loads((index / LEAF / "embeddings" / "zarr.json").read_text())
    assert [c["name"] for c in document["codecs"]][-1] == "zstd", document["codecs"]
    chunk = index / LEAF / "embeddings" / "c" / "0" / "0"
    assert chunk.is_file()
    return chunk


def _bombed(clean: Path, tmp_path: Path, kind: str) -> Path:
    """A copy of the index whose leaf embeddings chunk is the bomb, in that codec's chain."""
    index = tmp_path / "bombed.zarr"
    shutil.copytree(clean, index)
    chunk = _leaf_chunk(index)
    meta = index / LEAF / "embeddings" / "zarr.json"
    document = json.loads(meta.read_text())
    codec = CODECS[kind]
    if codec != "zstd":
        document["codecs"][-1] = ({"name": "gzip", "configuration": {"level": 5}} if codec == "gzip" else
                                  zarr.codecs.BloscCodec(typesize=4).to_dict())
        meta.write_text(json.dumps(document))
    chunk.write_bytes(_bomb(kind))
    return index


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", [("check",), ("check", "--deep"), ("search", "--item", "0", "--explain")])
def test_a_bomb_chunk_is_refused_by_every_command_within_tens_of_mb(clean_index: Path, tmp_path: Path, kind: str,
                                                                     command: tuple[str, ...]) -> None:
    index = _bombed(clean_index, tmp_path, kind)
    done, peak = peak_run(command[0], str(index), *command[1:], tmp_path=tmp_path)
    _, clean_peak = peak_run(command[0], str(clean_index), *command[1:], tmp_path=tmp_path / "clean")
    said = done.stdout + done.stderr
    assert "Traceback" not in said, said
    assert f"{LEAF}/embeddings" in said, said
    assert f"the {CODECS[kind]} chunk" in said and "not decoded" in said, said
    assert done.returncode != 0, said
    assert peak < clean_peak + MARGIN_KB, (peak, clean_peak)


def test_a_bomb_in_builds_zarr_input_is_refused_naming_it(tmp_path: Path) -> None:
    store = tmp_path / "store.zarr"
    data = np.random.default_rng(1).standard_normal((100, 64)).astype("float32")
    zarr.create_array(store, name="a", shape=data.shape, chunks=data.shape, dtype="float32",
                      compressors=[zarr.codecs.ZstdCodec()])[...] = data
    (store / "a" / "c" / "0" / "0").write_bytes(_bomb("zstd without a declared size"))
    done, peak = peak_run("build", f"{store}#a", str(tmp_path / "out.zarr"), tmp_path=tmp_path)
    said = done.stdout + done.stderr
    assert "Traceback" not in said and "reshape" not in said, said
    assert f"{store}#a" in said, said
    assert "the zstd chunk decodes to more than its 25,600 bytes; not decoded" in said, said
    assert done.returncode != 0
    assert not (tmp_path / "out.zarr").exists()
    assert peak < 300 << 10, peak  # the CLI bound; the bomb alone is 128 MiB decoded
