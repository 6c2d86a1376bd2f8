"""The one way to open an index: :func:`open_index` gives an :class:`OpenedIndex` that every
front-end (the window, the CLI, compare, tune, the benchmarks) reads through.

It holds the opened store, its :class:`Hierarchy` (the tree derived where the store cannot list
folders, a remote store's consolidated documents taken from its root), the index's one cache
(model/ecpfs/index_cache.py: every entry checked against the documents it was made from) and
whatever readers are built on it, each built once, when first asked for (:meth:`OpenedIndex.shared`):
the search package's reader is one of them, so the window's search, its node pages and the CLI
share what one reader decoded. A hierarchy opened some other way gets its own on first use
(:func:`opened_index_of`), so there is never a second cache or reader for one hierarchy.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from zarr.abc.store import Store

from ecpfs_viewer.model.ecpfs.derived_listing import index_hierarchy
from ecpfs_viewer.model.ecpfs.index_cache import IndexCache, index_cache
from ecpfs_viewer.model.storage.opening import OpenedStore, open_store
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

_Shared = TypeVar("_Shared")


class OpenedIndex:
    """An opened index: its store, hierarchy and cache, and the readers built on it (lazily, once)."""

    def __init__(self, hierarchy: Hierarchy, location: str | None = None) -> None:
        self.hierarchy = hierarchy
        self.store: OpenedStore = hierarchy.store
        self.location = location if location is not None else self.store.label
        self.cache: IndexCache = index_cache(hierarchy)
        self._lock = threading.Lock()
        # readers hold this index: kept weakly here, shared while someone holds them, never a cycle
        # that keeps their decoded nodes until a full collection
        self._shared: weakref.WeakValueDictionary[object, Any] = weakref.WeakValueDictionary()

    def shared(self, kind: Callable[[OpenedIndex], _Shared]) -> _Shared:
        """The one ``kind(self)`` of this index, built on first use (a reader is built by the
        first worker that asks, and handed to every later one)."""
        with self._lock:
            found = self._shared.get(kind)
            if found is not None:
                return found  # type: ignore[no-any-return]  # stored under its own kind
        made = kind(self)  # outside the lock: building a reader reads the index
        with self._lock:
            found = self._shared.get(kind)
            if found is None:
                self._shared[kind] = found = made
            return found  # the first one wins

    def close(self) -> None:
        """Let the store go (what waits to be written to the cache folder is written)."""
        self.store.close()

    def __repr__(self) -> str:
        return f"OpenedIndex({self.location!r})"


class _Slot:
    """The opened index of a hierarchy, kept beside it (Hierarchy.cache) weakly: one per hierarchy
    while anyone holds it (a strong reference back would make a cycle through the hierarchy)."""

    def __init__(self) -> None:
        self.index: weakref.ref[OpenedIndex] | None = None

    def forget(self, path: str, /) -> None:
        """Kept across a refresh: its cache checks every entry on use, its readers are the caller's."""


_SLOT_LOCK = threading.Lock()


def opened_index_of(h: Hierarchy, location: str | None = None) -> OpenedIndex:
    """The opened index of a hierarchy (made on first use for one opened otherwise)."""
    slot = h.cache(_Slot)
    with _SLOT_LOCK:
        found = slot.index() if slot.index is not None else None
        if found is None:
            found = OpenedIndex(h, location)
            slot.index = weakref.ref(found)
        return found


def open_index(location: str | os.PathLike[str] | OpenedStore | Store | Hierarchy, *,
               remote: RemoteOptions | None = None) -> OpenedIndex:
    """Open what a user names (a folder, a zip, a URL, an opened store) as an ecpfs index.

    Nothing is read beyond what opening the store reads: the index's documents are read when
    something asks for them, and a store that is no index still opens (its tree can be shown)."""
    if isinstance(location, Hierarchy):
        return opened_index_of(location)
    store = location if isinstance(location, OpenedStore) else open_store(location, remote=remote)
    label = None if isinstance(location, OpenedStore | Store) else os.fspath(location)
    return opened_index_of(index_hierarchy(store), label)
