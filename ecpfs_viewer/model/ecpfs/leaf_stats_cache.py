"""The leaf level's statistics kept in the cache folder, so that ``info`` of a large index tells the
sum of leaf sizes without reading every leaf's documents again (200,000 leaves: three documents each).

What is kept: the node ids and sizes of a leaf level whose statistics are complete and clean (no
finding, no empty, broken or unread node, nothing but nodes in the level's folder); anything else
is computed afresh each time, as before. The entry carries the stamps of the level's folder and of
each leaf's group, ``embeddings`` and ``item_ids`` documents, each taken before it was read, and is
answered only while every one is unchanged (model/ecpfs/index_cache.py).
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from dataclasses import dataclass

import numpy as np

from ecpfs_viewer.model.ecpfs.index_cache import index_cache
from ecpfs_viewer.model.ecpfs.levels import LevelStats, level_stats
from ecpfs_viewer.model.ecpfs.paths import level_path, parse_node_name
from ecpfs_viewer.model.ecpfs.summary import IndexSummary
from ecpfs_viewer.model.storage.stamps import ALWAYS, Stamps
from ecpfs_viewer.model.storage.zip_stamps import archive_directory
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

LEAF_STATS = "leaf_stats_lvl_{level}.npz"
#: held by the one process reading a leaf level's statistics in the background
LEAF_READER = "leaf_stats_lvl_{level}.reader"
_DOCUMENTS = ("zarr.json", "embeddings/zarr.json", "item_ids/zarr.json")


def _clean(stats: LevelStats) -> bool:
    return (stats.complete and stats.is_leaf is True and not stats.findings and not stats.empty_nodes
            and not stats.other_entries and not stats.broken_ids and not stats.sizeless and not stats.unread_ids
            and not stats.subset)


def _to_bytes(stats: LevelStats) -> bytes:
    scalars = {"level": stats.level, "path": stats.path, "max_nodes": stats.max_nodes, "gap_count": stats.gap_count,
               "gap_ids": list(stats.gap_ids), "out_of_range_ids": list(stats.out_of_range_ids),
               "chunk_rows": stats.chunk_rows, "total_items": stats.total_items}
    out = io.BytesIO()
    np.savez(out, node_ids=stats.node_ids, sizes=stats.sizes,
             scalars=np.frombuffer(json.dumps(scalars).encode(), np.uint8))
    return out.getvalue()


def _from_bytes(data: bytes, summary: IndexSummary) -> LevelStats | None:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as saved:
            node_ids, sizes = saved["node_ids"], saved["sizes"]
            scalars = json.loads(saved["scalars"].tobytes().decode())
        stats = LevelStats(int(scalars["level"]), str(scalars["path"]), True, node_ids, sizes,
                           scalars["max_nodes"], int(scalars["gap_count"]), tuple(map(int, scalars["gap_ids"])),
                           tuple(map(int, scalars["out_of_range_ids"])), scalars["chunk_rows"], scalars["total_items"],
                           kept=True)
    except (OSError, EOFError, KeyError, ValueError, TypeError, UnicodeDecodeError, zipfile.BadZipFile):
        return None
    if (node_ids.dtype != np.int64 or sizes.dtype != np.int64 or node_ids.shape != sizes.shape or node_ids.ndim != 1
            or stats.total_items != summary.total_items or stats.level != summary.levels):
        return None
    return stats


def saved_leaf_stats(h: Hierarchy, summary: IndexSummary) -> LevelStats | None:
    """The leaf level's statistics kept for this index, when none of its documents changed."""
    if summary.levels is None:
        return None
    data = index_cache(h).load_checked(LEAF_STATS.format(level=summary.levels))
    return None if data is None else _from_bytes(data, summary)


@dataclass(frozen=True)
class ReaderClaim:
    """Whether this process may start the background reader of a leaf level's statistics."""

    elsewhere: bool  # another process holds the claim: it is reading them now
    fd: int | None = None  # the lock taken here, to hand to the reader started (None: none could be taken)


def claim_leaf_reader(h: Hierarchy, summary: IndexSummary) -> ReaderClaim:
    """Claim the reading of the leaf level's statistics for one process at a time: a second
    ``info`` while a reader runs starts no other. Without a cache folder or file locks, unclaimed."""
    cache = index_cache(h).disk
    if cache is None or summary.levels is None:
        return ReaderClaim(False)
    try:
        fd = cache.claim(LEAF_READER.format(level=summary.levels))
    except OSError:
        return ReaderClaim(False)
    return ReaderClaim(fd is None, fd)


def _sources(h: Hierarchy, level: int) -> list[tuple[str, int]] | None:
    """(path, owner) of every document the leaf level's statistics are read from, from a plain
    listing of its folder (a local store or a zip); None when unknown."""
    path = level_path(level)
    store = h.store
    directory = archive_directory(store.archive_sizes) if store.kind == "zip" else None
    if directory is not None:  # its central directory lists it, with no read
        names = list(directory.children(store.key(path)))
    elif store.kind != "local" or store.local_path is None:
        return None
    else:
        try:
            names = os.listdir(os.path.join(store.local_path, store.key(path)))
        except OSError:
            return None
    nodes = sorted(n for n in (parse_node_name(name) for name in names) if n is not None)
    return [(f"{path}/node_{n}/{document}", n) for n in nodes for document in _DOCUMENTS]


def read_leaf_stats(h: Hierarchy, summary: IndexSummary) -> LevelStats:
    """The leaf level's statistics read from every leaf (``level_stats``), kept in the cache folder
    for the next process when they are clean and the store can be stamped."""
    assert summary.levels is not None
    cache = index_cache(h)
    sources = _sources(h, summary.levels)
    if sources is None or cache.disk is None:
        return level_stats(h, summary.levels, summary)
    parts = [cache.stamp([(level_path(summary.levels), ALWAYS)], walk=False)]
    with cache.stamped_files(sources, parts):  # in a local folder each document as it is read
        stats = level_stats(h, summary.levels, summary)
    stamps = Stamps.joined(parts)
    if stamps is not None and _clean(stats):
        cache.save(LEAF_STATS.format(level=summary.levels), _to_bytes(stats), stamps)
    return stats
