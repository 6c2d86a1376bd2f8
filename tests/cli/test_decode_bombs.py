"""Issue 34's bomb rows from the command line: one leaf's embeddings chunk of a few KB that decodes
to far more than the chunk (zstd without a declared size, two zstd frames, gzip, blosc), and the same
bomb in the input of `build store.zarr#a`. Every command refuses the chunk before decoding more than
its own size, names it, and peaks within tens of MB of the same command on the clean store.

Peaks are the child's peak RSS (getrusage of a fresh wrapper's only child), compared with the same
command on the undamaged copy; without the guarded decode each run decodes the whole bomb.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import zarr
from decode_bombs import CODECS, KINDS, LEAF, MARGIN_KB, bomb, bombed, peak_run
from index_factory import build_clustered_index


@pytest.fixture(scope="module")
def clean_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_clustered_index(tmp_path_factory.mktemp("bombs"), items=600, dim=64, levels=2)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", [("check",), ("check", "--deep"), ("search", "--item", "0", "--explain")])
def test_a_bomb_chunk_is_refused_by_every_command_within_tens_of_mb(clean_index: Path, tmp_path: Path, kind: str,
                                                                     command: tuple[str, ...]) -> None:
    index = bombed(clean_index, tmp_path, kind)
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
    (store / "a" / "c" / "0" / "0").write_bytes(bomb("zstd without a declared size"))
    done, peak = peak_run("build", f"{store}#a", str(tmp_path / "out.zarr"), tmp_path=tmp_path)
    said = done.stdout + done.stderr
    assert "Traceback" not in said and "reshape" not in said, said
    assert f"{store}#a" in said, said
    assert "the zstd chunk decodes to more than its 25,600 bytes; not decoded" in said, said
    assert done.returncode != 0
    assert not (tmp_path / "out.zarr").exists()
    assert peak < 300 << 10, peak  # the CLI bound; the bomb alone is 128 MiB decoded


def test_a_chunk_grown_past_what_its_codecs_make_is_refused_unread(clean_index: Path, tmp_path: Path) -> None:
    """A leaf chunk grown to just under the per-object cap (a store rewritten while read) is refused
    from its size, before it is read: the CLI stays within its bound, the chunk named."""
    index = tmp_path / "grown.zarr"
    shutil.copytree(clean_index, index)
    with open(index / LEAF / "embeddings" / "c" / "0" / "0", "r+b") as chunk:
        chunk.truncate(250 << 20)  # sparse: zeros after the chunk's own bytes
    done, peak = peak_run("check", str(index), "--deep", tmp_path=tmp_path)
    said = done.stdout + done.stderr
    assert "Traceback" not in said, said
    assert f"{LEAF}/embeddings/c/0/0: 262,144,000 bytes stored for a chunk that decodes to " in said, said
    assert done.returncode == 1, said
    assert peak < 300 << 10, peak  # the CLI bound; reading the chunk alone takes 250 MB
