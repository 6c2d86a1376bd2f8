"""Chunk grids that metadata declares far larger than what is stored (issue 19).

- A grid of many tiny chunks: zarr-python starts one task per chunk; when one failed, the others
  went on after the caller had its error, and a program ending meanwhile printed "Task was destroyed
  but it is pending" and "cannot schedule new futures after shutdown".
- A shard whose index declares 65,536 x 4,096 inner chunks: zarr-python allocates that index
  (4 GiB) for any read of the shard; `check` reached 2.1 GB. It is refused from the metadata.
"""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import zarr
from command_runs import run_cli_cleanly  # tests/ is on sys.path (conftest)
from hostile_builders import GIANT_SHARD, giant_shard_index, tiny_chunk_grid
from locations import REPO
from numpy.lib import format as npy_format
from remote_fixtures import serve_static
from zarr.core.sync import sync

from ecpfs_viewer.model.build.builder import BuildError
from ecpfs_viewer.model.build.sources import inspect_source
from ecpfs_viewer.model.ecpfs.derived_listing import MAX_DERIVED_LEVELS, index_hierarchy
from ecpfs_viewer.model.ecpfs.nodes import ROOT, NodeRef, index_summary, parent_of
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.validation import validate
from ecpfs_viewer.model.views.node_info import children_of
from ecpfs_viewer.model.zarrtree.chunks import ChunkStatsError, chunk_stats
from ecpfs_viewer.model.zarrtree.hierarchy import ArrayReadError, Hierarchy
from ecpfs_viewer.model.zarrtree.read_guard import (
    DeclaredArray,
    ReadTooLarge,
    check_read,
    chunks_touched,
    normalise,
    row_blocks,
)


async def _other_tasks() -> int:
    return len(asyncio.all_tasks()) - 1  # all but this one


def test_a_failed_read_leaves_no_task_running(two_clusters_copy: Path) -> None:
    tiny_chunk_grid(two_clusters_copy, 20_000)
    h = Hierarchy(open_store(two_clusters_copy))
    with pytest.raises(ArrayReadError, match=r"rep_embeddings.*c/0/0: not a regular file but a named pipe"):
        h.read_array("rep_embeddings")
    assert sync(_other_tasks()) == 0  # not 39,999 chunk reads still under way


_READ_AND_LEAVE = """
import sys
sys.path.insert(0, sys.argv[2])
from ecpfs_viewer.model.zarrtree.chunks import ChunkStatsError, chunk_stats
from ecpfs_viewer.model.ecpfs.derived_listing import MAX_DERIVED_LEVELS
from ecpfs_viewer.model.zarrtree.hierarchy import ArrayReadError, Hierarchy
from ecpfs_viewer.model.views.node_info import children_of
from ecpfs_viewer.model.ecpfs.nodes import ROOT, NodeRef, index_summary, parent_of
from ecpfs_viewer.model.storage.opening import open_store
try:
    Hierarchy(open_store(sys.argv[1])).read_array("rep_embeddings")
except ArrayReadError as exc:
    print(exc)
"""


def test_a_program_ending_after_a_failed_read_prints_nothing_more(two_clusters_copy: Path) -> None:
    tiny_chunk_grid(two_clusters_copy, 20_000)
    done = subprocess.run([sys.executable, "-c", _READ_AND_LEAVE, str(two_clusters_copy), str(REPO)],
                          capture_output=True, text=True, timeout=120)
    assert "named pipe" in done.stdout
    assert done.stderr == ""  # no "Task was destroyed but it is pending", no RuntimeError at exit
    assert done.returncode == 0


def test_check_on_a_tiny_chunk_grid_ends_with_its_report_and_nothing_else(two_clusters_copy: Path) -> None:
    tiny_chunk_grid(two_clusters_copy, 50_000)  # 100,000 chunks: the most one read may touch
    done = run_cli_cleanly("check", str(two_clusters_copy))  # 1 GiB address space, 30 s
    assert done.returncode == 1
    assert "rep_embeddings: cannot read data:" in done.stdout and "named pipe (FIFO)" in done.stdout
    assert done.stderr == ""


def test_a_giant_shard_index_is_refused_from_the_metadata(two_clusters_copy: Path) -> None:
    with pytest.raises(ReadTooLarge, match=r"each shard \[65536, 4096\] declares 4.0 GiB of index for "
                                           r"268,435,456 inner chunks of \[1, 1\], over the 64 MB cap"):
        check_read("a", DeclaredArray((4, 2), (1, 1), 4, tuple(GIANT_SHARD)), (0, slice(None)))
    check_read("fine", DeclaredArray((4096, 128), (64, 128), 4, (4096, 128)))  # 64 inner chunks: 1 kB of index
    giant_shard_index(two_clusters_copy)
    h = Hierarchy(open_store(two_clusters_copy))
    with pytest.raises(ArrayReadError, match=r"declares 4\.0 GiB of index"):
        h.read_array("rep_embeddings", (slice(0, 1), slice(None)))
    report = validate(Hierarchy(open_store(two_clusters_copy)))
    assert any(f.path == "rep_embeddings" and "declares 4.0 GiB of index" in f.message for f in report.findings)


@pytest.mark.parametrize("path", ["rep_embeddings", "lvl_2/node_2/embeddings"])
def test_check_on_a_giant_shard_index_stays_within_the_memory_limit(two_clusters_copy: Path, path: str) -> None:
    giant_shard_index(two_clusters_copy, path)
    done = run_cli_cleanly("check", str(two_clusters_copy))  # 1 GiB address space (it reached 2.1 GB resident)
    assert done.returncode == 1, done.stderr
    assert f"ERROR: {path}: cannot read data:" in done.stdout and "declares 4.0 GiB of index" in done.stdout
    assert done.stderr == ""


def _billion_root_rows(store: Path) -> None:
    document_path = store / "index_root" / "embeddings" / "zarr.json"
    document = json.loads(document_path.read_text())
    document["shape"][0] = 10**9  # the fan-out as declared: an arange of it was 8 GB
    document_path.write_text(json.dumps(document))


def test_a_root_declaring_a_billion_rows_allocates_nothing_of_that_size(two_clusters_copy: Path) -> None:
    _billion_root_rows(two_clusters_copy)
    h = Hierarchy(open_store(two_clusters_copy))
    assert index_summary(h).fan_out == 10**9
    tracemalloc.start()
    try:
        link = parent_of(h, NodeRef(1, 1))
        beyond = parent_of(h, NodeRef(1, 10**9))
        children = children_of(h, ROOT)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (link.parent, link.row) == (ROOT, 1)
    assert beyond.parent is None and beyond.finding is not None
    assert "index_root/embeddings has no such row" in beyond.finding.message
    assert children.rows == () and [f.message for f in children.findings] == [
        "index_root/embeddings: 1,000,000,000 rows declared would take 238.4 GiB, over the 512 MB cap "
        "(ECPFS_VIEWER_MAX_DECODED_READ_MB); not listed"]
    assert peak < 64 << 20


def test_a_server_without_listings_refuses_to_derive_a_billion_level_1_nodes(two_clusters_copy: Path) -> None:
    _billion_root_rows(two_clusters_copy)
    with serve_static(two_clusters_copy.parent) as (url, _tally):
        h = index_hierarchy(open_store(f"{url}/{two_clusters_copy.name}"))
        assert [n.name for n in h.children("")][:3] == ["index_root", "info", "lvl_1"]
        with pytest.raises(OSError, match=r"lvl_1: cannot derive the nodes: index_root/embeddings: "
                                          r"1,000,000,000 rows \(level-1 nodes\) declared would take"):
            h.children("lvl_1")
        assert [n.name for n in h.children("index_root")] == ["embeddings"]  # the rest still derives


def test_a_grid_whose_chunk_count_wraps_int64_is_not_probed_key_by_key(two_clusters_copy: Path) -> None:
    document_path = two_clusters_copy / "lvl_2" / "node_2" / "embeddings" / "zarr.json"
    document = json.loads(document_path.read_text())
    document["shape"] = [2**32, 2**32]
    document["chunk_grid"]["configuration"]["chunk_shape"] = [1, 1]  # 2^64 chunks: 0 as an int64 product
    document_path.write_text(json.dumps(document))
    with serve_static(two_clusters_copy.parent) as (url, _tally):
        h = index_hierarchy(open_store(f"{url}/{two_clusters_copy.name}"))
        with pytest.raises(ChunkStatsError, match=r"18,446,744,073,709,551,616 chunks and no folder listing"):
            chunk_stats(h, "lvl_2/node_2/embeddings")


def test_a_npy_header_whose_size_wraps_int64_is_truncated_not_mapped(tmp_path: Path) -> None:
    header = io.BytesIO()
    npy_format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (2**32, 2**32)})
    source = tmp_path / "wraps.npy"
    source.write_bytes(header.getvalue() + bytes(64))  # 2^64 elements: 0 bytes as an int64 product
    with pytest.raises(BuildError, match=r"file is truncated \(192 bytes, the header promises 73786976294838206592\)"):
        inspect_source(str(source))


def test_a_server_without_listings_probes_a_bounded_number_of_declared_levels(two_clusters_copy: Path) -> None:
    zarr.open_array(two_clusters_copy / "info" / "levels", mode="r+")[...] = 4_000_000_000
    with serve_static(two_clusters_copy.parent) as (url, _tally):
        h = index_hierarchy(open_store(f"{url}/{two_clusters_copy.name}"))
        names = [n.name for n in h.children("")]
    levels = [name for name in names if name.startswith("lvl_")]  # as declared: a server cannot say which exist
    assert levels == [f"lvl_{n}" for n in range(1, MAX_DERIVED_LEVELS + 1)]  # not 4 billion names
    assert [n for n in names if n not in levels] == ["index_root", "info", "rep_embeddings", "rep_item_ids"]


@pytest.mark.parametrize("selection", [..., (slice(7, 2990), slice(None)), (slice(0, 3000), 1), 5, (slice(1, 10, 2),)])
def test_row_blocks_cover_the_selection_each_within_the_chunk_bound(selection: object) -> None:
    array = DeclaredArray((3000, 2), (1, 1), 4)
    blocks = row_blocks(array, selection, most=512)
    if selection in (5, (slice(1, 10, 2),)):  # an int first axis, a step: not cut (nor needed here)
        assert blocks == []
        return
    assert all((chunks_touched(array, block) or 0) <= 512 for block in blocks)
    normal = normalise(selection, array.shape)
    assert normal is not None
    rows = [r for block in blocks for r in range(block[0].start, block[0].stop)]  # type: ignore[union-attr]
    assert rows == list(range(normal[0].start, normal[0].stop))  # type: ignore[union-attr]
    assert all(block[1:] == normal[1:] for block in blocks)


def test_a_read_of_many_chunks_hands_zarr_a_bounded_number_at_once(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """zarr-python starts a task per chunk and, when one fails, cancels the rest in time quadratic
    in their number (40,000: 17 s of CPU): a read is handed to it in blocks of whole chunk rows."""
    from ecpfs_viewer.model.zarrtree import read_guard

    monkeypatch.setattr(read_guard, "CHUNKS_PER_READ", 64)
    values = np.arange(400, dtype="int32").reshape(200, 2)
    zarr.create_array(tmp_path / "a.zarr", data=values, chunks=(1, 1))
    h = Hierarchy(open_store(tmp_path / "a.zarr"))
    handed: list[int] = []
    opened = h.open_async_array

    class Counted:
        def __init__(self, path: str) -> None:
            self.array, self.path = opened(path), path

        def getitem(self, selection: object) -> object:
            handed.append(chunks_touched(h.array_details(self.path), selection) or 0)
            return self.array.getitem(selection)
    monkeypatch.setattr(h, "open_async_array", Counted)
    assert np.array_equal(h.read_array(""), values)
    assert np.array_equal(h.read_array("", (slice(5, 199), 1)), values[5:199, 1])
    assert max(handed) <= 64 and sum(handed) == 400 + 194 and len(handed) > 2
