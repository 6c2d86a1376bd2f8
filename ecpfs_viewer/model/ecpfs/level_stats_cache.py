"""Level statistics kept per Hierarchy, so that validation, the level overview and the tree's row
counts share one computation per level.

Parsing a level's node documents is slow Python, so it is done once per Hierarchy and level. The
cache is kept beside the Hierarchy (``Hierarchy.cache``), which drops its entries when refreshed;
the statistics themselves are computed in ``ecpfs.levels``, whatever type they have here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ecpfs_viewer.model.ecpfs.paths import parse_level

_Stats = TypeVar("_Stats")



class LevelStatsCache(Generic[_Stats]):
    """Statistics of each level of one store, valid until a refresh of that level (or above)."""

    def __init__(self) -> None:
        # one per level, held while computing it: a second caller waits and reuses, and a level above
        # (a node page's parents) is not kept waiting behind a leaf level that takes seconds
        self._computing: dict[int, threading.Lock] = {}
        self._lock = threading.Lock()  # guards the entries only, never held while reading the store
        self._entries: dict[int, tuple[tuple[Any, ...], _Stats]] = {}
        self._generation = 0  # bumped by forget, so a result computed across a refresh is not kept

    def get_or_compute(self, level: int, key: tuple[Any, ...], compute: Callable[[], _Stats],
                       keep: Callable[[_Stats], bool] = lambda stats: True) -> _Stats:
        """The entry of a level computed with the same key, else compute(), kept unless a refresh
        intervened or keep() says no (statistics lacking what could not be read)."""
        with self._computing_lock(level):
            with self._lock:
                entry = self._entries.get(level)
                if entry is not None and entry[0] == key:
                    return entry[1]
                generation = self._generation
            stats = compute()
            with self._lock:
                if generation == self._generation and keep(stats):
                    self._entries[level] = (key, stats)
            return stats

    def peek(self, level: int, key: tuple[Any, ...]) -> _Stats | None:
        """The entry of a level computed with key, or None; never waits for a computation."""
        with self._lock:
            entry = self._entries.get(level)
            return entry[1] if entry is not None and entry[0] == key else None

    def get(self, level: int) -> _Stats | None:
        """The entry of a level, without computing; waits while another thread computes one."""
        with self._computing_lock(level), self._lock:
            entry = self._entries.get(level)
            return None if entry is None else entry[1]

    def _computing_lock(self, level: int) -> threading.Lock:
        with self._lock:
            return self._computing.setdefault(level, threading.Lock())

    def forget(self, path: str = "") -> None:
        """Drop what a refresh of path makes stale: its level, or every level for a path outside them."""
        path = path.strip("/")
        level = parse_level(path.split("/", 1)[0]) if path else None
        with self._lock:
            self._generation += 1
            if level is None:
                self._entries.clear()
            else:
                self._entries.pop(level, None)
