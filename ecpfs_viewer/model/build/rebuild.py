"""Rebuilding an index this viewer (and upstream) cannot load, from its own vectors.

A legacy index still holds every item's vector in its leaves. :func:`write_item_vectors` writes
them to a ``.npy`` in item-id order (the build numbers rows 0, 1, ..., so ids 0..n-1 come back as
they were), and :func:`rebuild_command` is the ``ecpfs-viewer build`` line that rebuilds the
index from that file with the index's own levels, metric and leaf size.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ecpfs_viewer.model.ecpfs import IndexSummary, LevelStats, shared_level_stats
from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.tasks import checkpoint
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


class RebuildError(Exception):
    """The vectors cannot be written (a leaf unreadable, ids repeated); the message says which."""


@dataclass(frozen=True)
class RebuildPlan:
    """Where the vectors go, where the new index goes, and the command between them."""

    vectors: Path
    output: Path
    command: str
    leaf_size: int  # --target-cluster-items: the index's own mean leaf size


def rebuild_plan(location: str, summary: IndexSummary, leaves: LevelStats) -> RebuildPlan | None:
    """The rebuild of the local index at location, whose leaf level is ``leaves``; None when it
    cannot be said (a remote store, no levels, no leaves)."""
    if "://" in location or not summary.levels or leaves.node_count == 0:
        return None
    index = Path(location).expanduser().resolve()
    stem = index.name.removesuffix(".zarr") or "index"
    vectors, output = index.with_name(f"{stem}-vectors.npy"), index.with_name(f"{stem}-v1.zarr")
    leaf_size = max(1, round(leaves.total_rows / leaves.node_count))
    args = ["ecpfs-viewer", "build", str(vectors), str(output), "--levels", str(summary.levels),
            "--target-cluster-items", str(leaf_size), "--metric", summary.metric or "L2"]
    if summary.is_normalized:
        args.append("--normalized")
    return RebuildPlan(vectors, output, shlex.join(args), leaf_size)


def plan_rebuild(h: Hierarchy, summary: IndexSummary) -> RebuildPlan | None:
    """:func:`rebuild_plan` of a store on disk, its leaf level read (metadata only)."""
    folder = h.store.local_path
    if folder is None or not summary.levels:
        return None
    return rebuild_plan(str(folder), summary, shared_level_stats(h, summary.levels, summary))


def write_item_vectors(h: Hierarchy, summary: IndexSummary, out: Path, *,
                       progress: Callable[[int, int], None] | None = None,
                       cancel: threading.Event | None = None) -> int:
    """Write every leaf's vectors to out (.npy, float32) in item-id order; returns the row count.

    Reads the item_ids of every leaf first (to place each row), then the embeddings leaf by leaf
    into a memory-mapped file, so an index larger than memory is written without holding it."""
    if not summary.levels or summary.dim is None:
        raise RebuildError("the index has no levels or no dimension: nothing to write")
    stats = shared_level_stats(h, summary.levels, summary)
    if stats.sizeless:
        first = min(stats.sizeless)
        raise RebuildError(f"{stats.node_path(first)} has {stats.sizeless[first]} embeddings: its items' vectors "
                           "are not in the index")
    leaves = [stats.node_path(int(i)) for i in stats.node_ids]
    ids: list[np.ndarray] = []
    for done, leaf in enumerate(leaves):
        checkpoint(cancel)
        ids.append(_read(h, f"{leaf}/item_ids").astype(np.int64).ravel())
        if progress is not None:
            progress(done + 1, 2 * len(leaves))
    every = np.concatenate(ids) if ids else np.zeros(0, np.int64)
    order = np.argsort(every, kind="stable")
    if every.size and np.any(every[order][1:] == every[order][:-1]):
        raise RebuildError("an item id is held by two leaves; the index cannot be rebuilt from its leaves")
    place = np.empty_like(order)
    place[order] = np.arange(order.size)  # row of each stored item in the file: its rank among the ids
    out.parent.mkdir(parents=True, exist_ok=True)
    target = np.lib.format.open_memmap(out, mode="w+", dtype=np.float32, shape=(int(every.size), summary.dim))
    start = 0
    try:
        for done, (leaf, leaf_ids) in enumerate(zip(leaves, ids, strict=True)):
            checkpoint(cancel)
            vectors = _read(h, f"{leaf}/embeddings")
            if vectors.shape != (leaf_ids.size, summary.dim):
                raise RebuildError(f"{leaf}/embeddings has shape {list(vectors.shape)}, not "
                                   f"[{leaf_ids.size}, {summary.dim}] as its item_ids say")
            target[place[start:start + leaf_ids.size]] = vectors
            start += leaf_ids.size
            if progress is not None:
                progress(len(leaves) + done + 1, 2 * len(leaves))
        target.flush()
    except BaseException:
        del target
        out.unlink(missing_ok=True)  # no half-written file is left to build from
        raise
    return int(every.size)


def _read(h: Hierarchy, path: str) -> np.ndarray:
    try:
        return np.asarray(h.read_array(path))
    except Exception as exc:
        raise RebuildError(f"{path}: {describe_exception(exc)}") from exc
