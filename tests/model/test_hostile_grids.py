"""A read of a grid of many tiny chunks that fails on one chunk leaves nothing running behind it.

zarr-python starts one task per chunk; when one fails, the others used to go on after the caller had
its error, and a program ending meanwhile printed "Task was destroyed but it is pending" and
"cannot schedule new futures after shutdown" (issue 19).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from zarr.core.sync import sync

from ecpfs_viewer.model.hierarchy import ArrayReadError, Hierarchy
from ecpfs_viewer.model.stores import open_store

REPO = Path(__file__).resolve().parents[2]


def tiny_chunk_grid(store: Path, rows: int, *, fifo_first_chunk: bool = True) -> None:
    """rep_embeddings of store declared as rows x 2 in 1 x 1 chunks; its stored chunk (one object,
    for a far larger chunk) is replaced by a FIFO, which the store refuses at once."""
    document_path = store / "rep_embeddings" / "zarr.json"
    document = json.loads(document_path.read_text())
    document["shape"] = [rows, 2]
    document["chunk_grid"]["configuration"]["chunk_shape"] = [1, 1]
    document_path.write_text(json.dumps(document))
    if fifo_first_chunk:
        first = store / "rep_embeddings" / "c" / "0" / "0"
        first.unlink()
        os.mkfifo(first)


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
from ecpfs_viewer.model.hierarchy import ArrayReadError, Hierarchy
from ecpfs_viewer.model.stores import open_store
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
