"""Hostile stores a user can be handed: bounded memory, bounded time, a message instead of a traceback.

Each case runs `info`, `check` or the library in a subprocess with an address-space limit
(RLIMIT_AS) and a time limit, so a regression fails the test instead of taking the machine down
(a FIFO blocks forever, /dev/zero and zip bombs exhaust memory).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
import zarr
from command_runs import assert_clean, run_cli, run_limited  # tests/ is on sys.path (conftest)
from hostile_builders import write_zip_with_bomb

from ecpfs_viewer.model.limits import Limits, limits_from_env

NODE = "lvl_2/node_2/embeddings"  # an ecpfs leaf array of two_clusters, one chunk c/0/0

_LIBRARY = """
from ecpfs_viewer.model.zarrtree.chunks import ChunkStatsError, chunk_stats
from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.storage.opening import StoreOpenError, open_store
from ecpfs_viewer.model.zarrtree.subset import SelectionError, default_selection, read_subset
path, node = sys.argv[1], sys.argv[2]
try:
    h = Hierarchy(open_store(path))
except StoreOpenError as exc:
    print("open:", exc)
    sys.exit(0)
for child in h.children("lvl_2" if node.startswith("lvl_2/") else ""):
    print("child:", child.path, child.kind.value, child.error or "")
def subset():
    return read_subset(h, node, default_selection(h.array_details(node, SelectionError))).data.shape
for what, job in (("stats", lambda: chunk_stats(h, node).describe()), ("subset", subset)):
    try:
        print(what + ":", job())
    except (ChunkStatsError, SelectionError) as exc:
        print(what + " error:", exc)
"""


def run_library(path: Path | str, node: str = NODE, env: dict[str, str] | None = None
                ) -> subprocess.CompletedProcess[str]:
    """Open, list the node's siblings, chunk statistics and the default selection of `node`."""
    return run_limited(_LIBRARY, str(path), node, env=env)


# -- special files ---------------------------------------------------------------------------------------
def test_a_fifo_as_zarr_json_or_chunk_is_refused_not_waited_on(two_clusters_copy: Path) -> None:
    os.unlink(two_clusters_copy / "lvl_2/node_1/zarr.json")
    os.mkfifo(two_clusters_copy / "lvl_2/node_1/zarr.json")
    chunk = two_clusters_copy / NODE / "c/0/0"
    chunk.unlink()
    os.mkfifo(chunk)
    for command in ("info", "check"):
        assert_clean(run_cli(command, str(two_clusters_copy)), "named pipe")
    output = assert_clean(run_library(two_clusters_copy))
    assert "lvl_2/node_1/zarr.json: cannot read (not a regular file but a named pipe (FIFO); not read)" in output
    assert "child: lvl_2/node_3 group" in output  # the siblings load
    assert f"subset error: {NODE}: {chunk}: not a regular file but a named pipe" in output


def test_zarr_json_linked_to_dev_zero_is_refused(two_clusters_copy: Path) -> None:
    for key in ("zarr.json", "lvl_2/node_1/zarr.json", f"{NODE}/c/0/0"):
        (two_clusters_copy / key).unlink()
        (two_clusters_copy / key).symlink_to("/dev/zero")
    for command in ("info", "check"):
        assert_clean(run_cli(command, str(two_clusters_copy)))
    output = assert_clean(run_library(two_clusters_copy), "not a regular file but a character device")
    assert "subset error:" in output


def test_metadata_past_the_cap_is_refused_with_the_setting_named(two_clusters_copy: Path) -> None:
    document = json.loads((two_clusters_copy / NODE / "zarr.json").read_text())
    padded = json.dumps(document) + " " * (3 << 20)  # valid JSON of 3 MB
    (two_clusters_copy / NODE / "zarr.json").write_text(padded)
    env = {"ECPFS_VIEWER_MAX_METADATA_MB": "2"}
    output = assert_clean(run_library(two_clusters_copy, env=env))
    assert (f"{NODE}/zarr.json: cannot read (the file is 3.0 MiB, over the 2 MB cap "
            "(ECPFS_VIEWER_MAX_METADATA_MB)") in output
    assert "3.0 MiB" not in assert_clean(run_library(two_clusters_copy))  # under the default cap: read


def test_limits_come_from_one_place() -> None:
    assert Limits().max_metadata_bytes == 64 << 20
    changed = limits_from_env({"ECPFS_VIEWER_MAX_METADATA_MB": "128", "ECPFS_VIEWER_MAX_CHUNKS_PER_READ": "50",
                               "ECPFS_VIEWER_MAX_CHUNK_MB": "not a number"})
    assert changed.max_metadata_bytes == 128 << 20 and changed.max_chunks_per_read == 50
    assert changed.max_chunk_bytes == Limits().max_chunk_bytes
    assert Limits().describe("max_metadata_bytes") == "the 64 MB cap (ECPFS_VIEWER_MAX_METADATA_MB)"


# -- zip bombs -------------------------------------------------------------------------------------------
def test_a_zip_bomb_chunk_is_refused_before_decompressing(two_clusters_path: Path, tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    write_zip_with_bomb(bomb, two_clusters_path, f"{NODE}/c/0/0", b"", b"\0", 2 << 30)
    assert bomb.stat().st_size < 4 << 20
    with zipfile.ZipFile(bomb) as archive:
        assert archive.getinfo(f"{NODE}/c/0/0").file_size == 2 << 30
    for command in ("info", "check"):
        assert_clean(run_cli(command, str(bomb)))
    output = assert_clean(run_library(bomb), "over the 256 MB cap (ECPFS_VIEWER_MAX_CHUNK_MB)")
    assert f"{bomb}#{NODE}/c/0/0: the member, uncompressed as the zip declares, is 2.0 GiB" in output


def test_a_zip_bomb_zarr_json_is_refused(two_clusters_path: Path, tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    write_zip_with_bomb(bomb, two_clusters_path, "lvl_2/node_1/zarr.json",
                        b'{"zarr_format": 3, "node_type": "group"}', b" ", 1 << 30)
    assert bomb.stat().st_size < 2 << 20
    for command in ("info", "check"):
        assert_clean(run_cli(command, str(bomb)))
    output = assert_clean(run_library(bomb))
    assert "lvl_2/node_1/zarr.json: cannot read" in output and "over the 64 MB cap" in output
    assert "child: lvl_2/node_3 group" in output


def test_a_damaged_zip_is_told_what_is_wrong(two_clusters_path: Path, tmp_path: Path) -> None:
    whole = tmp_path / "whole.zip"
    shutil.make_archive(str(whole.with_suffix("")), "zip", two_clusters_path)
    data = whole.read_bytes()
    (tmp_path / "truncated.zip").write_bytes(data[: len(data) // 2])
    result = assert_clean(run_cli("info", str(tmp_path / "truncated.zip")))
    assert "damaged zip file" in result and "truncated" in result and "expected a folder" not in result
    # a member whose compressed bytes are garbage: that member is named, the rest opens
    with zipfile.ZipFile(whole) as archive:
        info = archive.getinfo(f"{NODE}/c/0/0")
        start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    damaged = bytearray(data)
    damaged[start:start + info.compress_size] = b"\xff" * info.compress_size
    (tmp_path / "member.zip").write_bytes(bytes(damaged))
    output = assert_clean(run_library(tmp_path / "member.zip"))
    assert f"member.zip#{NODE}/c/0/0: damaged zip member" in output


# -- huge grids and declared sizes -------------------------------------------------------------------------
def test_chunk_stats_on_128_million_declared_chunks_follow_what_is_stored(tmp_path: Path) -> None:
    store = tmp_path / "grid.zarr"
    leaf = zarr.create_array(store, name="leaf", shape=(10**6, 128), chunks=(1, 1), dtype="float32")
    leaf[0, 0:3] = 1
    code = _LIBRARY.split("path, node")[0] + (
        "s = chunk_stats(Hierarchy(open_store(sys.argv[1])), 'leaf')\nprint(s.n_present, s.n_chunks, s.notes[0])\n")
    result = assert_clean(run_limited(code, str(store)))
    assert result.strip() == "3 128000000 128,000,000 chunks declared; statistics computed from the 3 stored objects"
    assert "subset: (1, 1)" in assert_clean(run_library(store, "leaf"))  # the default selection: one chunk


def test_chunk_stats_of_268_million_inner_chunks(tmp_path: Path) -> None:
    store = tmp_path / "sharded.zarr"
    array = zarr.create_array(store, name="a", shape=(1 << 24, 16), shards=(1 << 10, 16), chunks=(1, 1),
                              dtype="uint8")
    array[0:2048:512, :] = 1  # four shards, one inner row each
    code = _LIBRARY.split("path, node")[0] + (
        "s = chunk_stats(Hierarchy(open_store(sys.argv[1])), 'a')\nprint(s.n_present, s.n_chunks)\n")
    result = assert_clean(run_limited(code, str(store)))
    assert result.strip() == f"{4 * 16} {(1 << 24) * 16}"


def test_a_check_of_a_leaf_declaring_a_million_rows_is_bounded(two_clusters_copy: Path) -> None:
    for name, shape, chunks in (("embeddings", [10**6, 2], [1, 1]), ("item_ids", [10**6], [1])):
        path = two_clusters_copy / "lvl_2/node_2" / name / "zarr.json"
        document = json.loads(path.read_text())
        document["shape"], document["chunk_grid"]["configuration"]["chunk_shape"] = shape, chunks
        path.write_text(json.dumps(document))
    output = assert_clean(run_cli("check", str(two_clusters_copy)))
    assert "lvl_2/node_2/item_ids: cannot read data" in output
    assert "touches 1,000,000 chunks, over the 100,000 cap (ECPFS_VIEWER_MAX_CHUNKS_PER_READ)" in output


@pytest.mark.parametrize("chunk_rows", [1000, 10**14])
def test_selections_on_10_15_rows_read_a_capped_window(tmp_path: Path, chunk_rows: int) -> None:
    store = tmp_path / "rows.zarr"
    array = zarr.create_array(store, name="a", shape=(10**15, 4), chunks=(chunk_rows, 4), dtype="float32")
    if chunk_rows == 1000:
        array[0:10] = np.arange(40, dtype="float32").reshape(10, 4)
    code = _LIBRARY.split("path, node")[0] + """
h = Hierarchy(open_store(sys.argv[1]))
for text in (default_selection(h.array_details("a")), "-5:", ":", "::100000000000000"):
    try:
        print(text, "->", read_subset(h, "a", text).data.shape)
    except SelectionError as exc:
        print(text, "-> error:", exc)
"""
    output = assert_clean(run_limited(code, str(store)))
    lines = output.strip().splitlines()
    if chunk_rows == 1000:
        assert lines[0] == "0:1000, : -> (1000, 4)" and lines[1] == "-5: -> (5, 4)"
        assert "touches 900,000,000,001 chunks, over the 100,000 cap" in lines[3]  # zarr visits each
    else:
        assert "a: one chunk [100000000000000, 4] decodes to" in lines[0] and "over the 256 MB cap" in lines[0]
        assert "over the 256 MB cap" in lines[1] and "over the 256 MB cap" in lines[3]
    assert "selection has 4,000,000,000,000,000 elements; the limit is 4,000,000" in lines[2]


# -- permissions and links -------------------------------------------------------------------------------
def test_permission_denied_is_said_not_missing(two_clusters_path: Path, request: pytest.FixtureRequest) -> None:
    """Root ignores permissions: as root the run is made as 'nobody' (uid 65534)."""
    base = Path(tempfile.mkdtemp(prefix="ecpfs-perm-"))
    target = base / "locked.zarr"
    try:
        shutil.copytree(two_clusters_path, target)
        base.chmod(0o755)
        for path in [target, *target.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        (target / "lvl_2/node_1").chmod(0)
        (target / NODE / "c/0/0").chmod(0)
        nobody = request.getfixturevalue("nobody_python") if os.geteuid() == 0 else None
        result = run_limited(_LIBRARY, str(target), NODE, nobody=nobody)
        output = assert_clean(result)
        assert "child: lvl_2/node_1 error lvl_2/node_1/zarr.json: cannot read (Permission denied)" in output
        assert "child: lvl_2/node_3 group" in output
        assert "subset error:" in output and "Permission denied" in output
        assert "no such" not in output and "missing" not in output.split("subset")[-1]
    finally:
        for path in [target, *target.rglob("*")] if target.exists() else []:
            path.chmod(0o755)
        shutil.rmtree(base)


def test_symlink_loops_give_a_message_not_a_hang(two_clusters_copy: Path) -> None:
    (two_clusters_copy / "lvl_2/node_1/zarr.json").unlink()
    (two_clusters_copy / "lvl_2/node_1/zarr.json").symlink_to("zarr.json")  # links to itself
    (two_clusters_copy / NODE / "c/loop").symlink_to("..")  # a folder link back up the chunk tree
    (two_clusters_copy / "lvl_2/node_9").symlink_to("node_9")
    for command in ("info", "check"):
        assert_clean(run_cli(command, str(two_clusters_copy)))
    output = assert_clean(run_library(two_clusters_copy), "symbolic links")
    assert "child: lvl_2/node_3 group" in output
    assert "stats: 1 chunks (1 stored, 0 missing)" in output
    loop = two_clusters_copy.parent / "self.zarr"
    loop.symlink_to(loop)
    assert_clean(run_cli("info", str(loop)), "cannot open (too many levels of symbolic links)")
