"""Decode bombs for tests (issue 34): a leaf embeddings chunk of a few KB decoding to far more than
the chunk, in an index the test builds; and running the app in a child whose peak RSS is measured."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import numcodecs
import numpy as np
import zarr
import zstandard
from command_runs import run_measured
from locations import REPO

BOMB = 128 << 20  # decoded bytes of each bomb: past any run's own size by far
MARGIN_KB = 48 << 10  # what a refused bomb may add to the clean run's peak: tens of MB, not BOMB
LEAF = "lvl_2/node_0"

def bomb(kind: str) -> bytes:
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
    """`ecpfs-viewer ARGS` in a process of its own (no address-space limit): its result and its peak RSS in KiB."""
    env = {"QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "ECPFS_VIEWER_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(REPO)}
    return run_measured(*args, env=env, seconds=120, memory_mb=None)


def _leaf_chunk(index: Path) -> Path:
    document = json.loads((index / LEAF / "embeddings" / "zarr.json").read_text())
    assert [c["name"] for c in document["codecs"]][-1] == "zstd", document["codecs"]
    chunk = index / LEAF / "embeddings" / "c" / "0" / "0"
    assert chunk.is_file()
    return chunk


def bombed(clean: Path, tmp_path: Path, kind: str) -> Path:
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
    chunk.write_bytes(bomb(kind))
    return index
