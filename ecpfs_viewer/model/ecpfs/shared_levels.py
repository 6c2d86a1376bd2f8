"""A level's statistics computed once per Hierarchy and shared by every reader of it (validation,
the node and level pages, the index map, rebuild, balance, the projection), kept beside the
Hierarchy until a refresh of the level drops them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ecpfs_viewer.model.ecpfs.leaf_stats_cache import read_leaf_stats, saved_leaf_stats
from ecpfs_viewer.model.ecpfs.level_stats_cache import LevelStatsCache
from ecpfs_viewer.model.ecpfs.levels import LevelStats, level_stats
from ecpfs_viewer.model.ecpfs.summary import IndexSummary, summarize
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def shared_level_stats(h: Hierarchy, level: int, summary: IndexSummary | None = None) -> LevelStats:
    """:func:`level_stats`, computed once per Hierarchy and level and then reused; never raises.

    Kept beside h (:func:`level_stats_cache`) until ``Hierarchy.refresh`` of the level (or above) drops it;
    statistics that lack what could not be read on the way are not kept (asked again next time).
    The leaf level's come from the cache folder while none of its documents changed since an
    earlier process read them, else are read and kept there (model/ecpfs/leaf_stats_cache.py):
    200,000 leaves are 600,000 documents, which validation, ``info``, the index map and the pages
    then do not read again in each process.
    """
    summary = summary if summary is not None else summarize(h)
    key = _summary_key(summary, level)
    compute: Callable[[], LevelStats] = (
        (lambda: saved_leaf_stats(h, summary) or read_leaf_stats(h, summary)) if level == summary.levels
        else (lambda: level_stats(h, level, summary)))
    return level_stats_cache(h).get_or_compute(level, key, compute, keep=lambda s: s.complete)


def held_level_stats(h: Hierarchy, level: int, summary: IndexSummary | None = None) -> LevelStats | None:
    """The shared statistics of a level if computed already for this summary; never waits, reads
    nothing (while another thread computes them: None)."""
    summary = summary if summary is not None else summarize(h)
    return level_stats_cache(h).peek(level, _summary_key(summary, level))


def level_stats_cache(h: Hierarchy) -> LevelStatsCache[LevelStats]:
    """The shared level statistics of h, dropped with its nodes by ``Hierarchy.refresh``."""
    return h.cache(LevelStatsCache)


def cached_level_stats(h: Hierarchy, level: int) -> LevelStats | None:
    """The shared statistics of a level if already computed and still valid (no I/O, no parsing).

    While another thread computes statistics this waits for it (so a caller that would otherwise
    parse the same documents itself gets the result instead of competing for the interpreter)."""
    return level_stats_cache(h).get(level)


def forget_level_stats(h: Hierarchy, path: str = "") -> None:
    """Drop shared statistics that a refresh of path (and below) makes stale."""
    level_stats_cache(h).forget(path)


def _summary_key(summary: IndexSummary, level: int) -> tuple[Any, ...]:
    """The summary fields level statistics use."""
    return (summary.levels, summary.max_nodes(level), summary.total_items, summary.dim, summary.dtype)
