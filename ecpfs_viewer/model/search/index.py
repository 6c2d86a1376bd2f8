"""An opened index with its search operations: eCP search, locate, exact search (each in its own module).

:class:`IndexReader` is the entry point: a :class:`~ecpfs_viewer.model.search.reader.NodeReader`
(info, cached nodes, scores) that also keeps the item locator, shared by
every operation run on it. The algorithms read through the node reader only.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ecpfs_viewer.model.ecpfs.opened_index import OpenedIndex
from ecpfs_viewer.model.search.ecp import ecp_search
from ecpfs_viewer.model.search.exact import ExactNeighbours, exact_knn
from ecpfs_viewer.model.search.item_cache import CachedParentLinks, save_item_map, saved_item_map
from ecpfs_viewer.model.search.locate import ItemLocation, ItemLocator
from ecpfs_viewer.model.search.reader import NodeReader
from ecpfs_viewer.model.search.results import (
    ProgressCallback,
    Reporter,
    SearchParams,
    SearchResult,
    UnknownItemError,
)
from ecpfs_viewer.model.search.saved_locate import LocateFacts
from ecpfs_viewer.model.storage.opening import OpenedStore
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


class IndexReader(NodeReader):
    """An opened index for eCP search, locate and exact search; caches every decoded node."""

    def __init__(self, source: str | os.PathLike[str] | OpenedStore | Hierarchy | OpenedIndex) -> None:
        super().__init__(source)
        self.cache = self.opened.cache
        self._locator: ItemLocator | None = None
        self._map_saved = False
        #: whether exact search keeps every leaf's item ids for the locator (then locating reads
        #: nothing, but memory grows with the index); a recall run without a miss map turns it off
        self.learn_from_scans = True
        self._scan_order: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def hold_scan_order(self, order: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> None:
        """Keep every leaf's item ids (ids, leaves, sizes) for the next exact search only, which then
        reads just the embeddings (a sampling pass read them; bounded in model/search/sampling.py)."""
        with self._lock:
            self._scan_order = order

    def scan_leaf_order(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Every leaf's item ids for an exact search: the locator's complete map, else the ones held
        by :meth:`hold_scan_order` (handed over once), else None (the scan reads item_ids too)."""
        order = self.locator.leaf_order()
        with self._lock:
            held, self._scan_order = self._scan_order, None
        return order if order is not None else held

    def search(self, query: Any, params: SearchParams | None = None, *, skip_unreadable: bool = False) -> SearchResult:
        """One eCP search pass of a new query (§4.3), with the trace of popped nodes; with
        ``skip_unreadable``, a node that cannot be read is named in the result instead of failing it."""
        return ecp_search(self, query, params, skip_unreadable=skip_unreadable)

    @property
    def locator(self) -> ItemLocator:
        """Item id -> leaf, row and ancestors: from the map and links a process saved in the cache
        folder, else from item_ids and node_ids arrays only (read on demand, cached)."""
        with self._lock:
            if self._locator is None:
                saved = saved_item_map(self.cache)
                item_map, stamps = (None, None) if saved is None else saved
                self._locator = ItemLocator(self, item_map, CachedParentLinks(self.cache), stamps, self.cache)
            return self._locator

    def keep_item_map(self) -> None:
        """Save the locator's map for later processes once it is complete (once per reader)."""
        with self._lock:
            if self._map_saved or self._locator is None or self._locator.given:
                return
            item_map = self._locator.complete_map()
            if item_map is None:
                return
            self._map_saved = True
            facts = LocateFacts(self.levels, len(self.root.ids), self._locator.id_range())
            stamps, facts_stamps = self._locator.stamps(), self._locator.facts_stamps()
        if stamps is not None and facts_stamps is not None:  # read elsewhere unstamped: not kept
            save_item_map(self.cache, item_map, stamps, facts, facts_stamps)

    def finish_item_map(self) -> None:
        """Read the item_ids a lookup stopped short of and save the whole map, so that a later
        process answers any item from the cache folder; nothing when it is saved already or
        nothing of the index may be kept (no fingerprint: a server without validators, an fsspec
        store). Of a remote index this reads the rest of the leaves once (after the answer is
        printed): a later process then checks the entry by listing (an object store) or by asking
        for the objects its answer depends on (plain HTTP), not by reading every leaf again."""
        with self._lock:
            if self._map_saved or self.cache.disk is None:
                return
            if self._locator is not None and self._locator.given:
                return
        self.locator.read_everything()
        self.keep_item_map()

    def locate(self, item_id: int) -> ItemLocation:
        """Where an item is stored: leaf, row and the path from index_root (UnknownItemError if nowhere)."""
        try:
            return self.locator.location(item_id)
        finally:
            self.keep_item_map()

    def vector_for_item(self, item_id: int) -> np.ndarray:
        """The stored vector of an item, widened to float32: item_ids to find it, then one leaf read."""
        try:
            leaf, row = self.locator.find_one(item_id)
        except UnknownItemError:
            raise UnknownItemError(f"item {item_id} is not in any leaf of this index") from None
        finally:
            self.keep_item_map()
        node = self.node(self.levels, leaf)
        assert node is not None  # the locator read this leaf's item_ids
        vector: np.ndarray = node.vectors[row].copy()
        return vector

    def vectors_for_items(self, item_ids: Iterable[int], reporter: Reporter | None = None) -> np.ndarray:
        """Stored vectors of several items (one row each, in the order given); reads their leaves only."""
        items = [int(i) for i in item_ids]
        found = self.locator.find(items, reporter)
        self.keep_item_map()
        missing = [i for i in items if i not in found]
        if missing:
            raise UnknownItemError(f"item {missing[0]} is not in any leaf of this index")
        leaves = sorted({found[i][0] for i in items})
        nodes = dict(zip(leaves, self.nodes(self.levels, leaves, reporter), strict=True))
        out = np.empty((len(items), self.dim), np.float32)
        for j, item in enumerate(items):
            leaf, row = found[item]
            out[j] = nodes[leaf].vectors[row]  # type: ignore[union-attr]
        return out

    def exact_search(self, query: Any, k: int, exclude: Iterable[int] = ()) -> list[tuple[int, float]]:
        """Best k items over every leaf, scored like eCP search: the ground truth for recall."""
        result = self.exact(query, k, frozenset(int(i) for i in exclude))
        return [(h.item_id, h.score) for h in result.hits(0)]

    def exact(self, queries: Any, k: int, exclude: frozenset[int] = frozenset(),
              self_ids: Sequence[int | None] | None = None, progress: ProgressCallback | None = None,
              cancel: threading.Event | None = None, *, skip_unreadable: bool = False) -> ExactNeighbours:
        """Exact k nearest neighbours of each query row (see :func:`exact.exact_knn`); the scan
        completes the locator for this reader. Its map is not saved for later processes: the
        leaves it learnt from were not stamped before they were read (some may have been read
        long before), so nothing would prove the map describes the index as it is."""
        return exact_knn(self, queries, k, exclude, self_ids, progress, cancel, skip_unreadable=skip_unreadable)


def index_reader(index: OpenedIndex) -> IndexReader:
    """The one reader of an opened index, built by the first caller (every front-end shares it)."""
    return index.shared(IndexReader)
