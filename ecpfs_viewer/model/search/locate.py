"""Where an item is stored: its leaf, its row there, and the path from index_root down to it.

Reads only ids arrays: the leaves' ``item_ids`` (in one pass of batches, stopping as soon as the
wanted items are found, kept as an :class:`ItemMap`) and, for the ancestor path, the internal
levels' ``node_ids``. Never a leaf's embeddings, which are what make reading a leaf expensive.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ecpfs_viewer import process_memory
from ecpfs_viewer.model.ecpfs.paths import level_path, node_array_path, node_name, node_path
from ecpfs_viewer.model.search.item_map import ItemMap, _Run
from ecpfs_viewer.model.search.leaf_helper import Batch, start_helper
from ecpfs_viewer.model.search.results import ItemIdRangeError, Reporter, UnknownItemError
from ecpfs_viewer.model.storage.far_end import FarEnd
from ecpfs_viewer.model.storage.stamps import ALWAYS, Stamps

if TYPE_CHECKING:  # the saved map answers a later process without zarr (model/search/saved_locate.py)
    from ecpfs_viewer.model.search.reader import NodeReader
    from ecpfs_viewer.model.zarrtree.array_batch import BeforeChunks

#: Leaves whose item_ids are read per batch; a lookup stops at the first batch that answers it.
LEAF_BATCH = 500
_INT64 = np.iinfo(np.int64)  # the lookup table's type: ids wider than it are never looked up


@dataclass(frozen=True)
class ItemIdRange:
    """The item ids an index can hold: its leaves' item_ids data type and that type's range."""

    dtype: str  # as stored, e.g. 'uint32'; '' when unknown (no leaf, or not an integer type)
    low: int
    high: int

    def refusal(self, item_id: int) -> str | None:
        """Why item_id cannot be in the index, or None when it can."""
        if self.low <= item_id <= self.high:
            return None
        held = f"stored as {self.dtype}" if self.dtype else "read as int64"
        return f"item {item_id} cannot be in this index: its item ids are {held}, from {self.low:,} to {self.high:,}"


@dataclass(frozen=True)
class PathStep:
    """One node on the way from index_root to a leaf, with the row that points at it in its parent."""

    level: int
    node_id: int
    row: int  # row in the parent's node_ids (index_root row for level 1)

    @property
    def path(self) -> str:
        return node_path(self.level, self.node_id)

    def to_dict(self) -> dict[str, int]:
        return {"level": self.level, "node_id": self.node_id, "row": self.row}


@dataclass(frozen=True)
class ItemLocation:
    """An item's leaf and row, and its ancestors from level 1 down to the leaf itself.

    ``complete`` is False when no chain of node_ids links the leaf to index_root: eCP search can
    never reach such a leaf, and ``path`` then holds only the part below the break.
    """

    item_id: int
    leaf: int
    row: int
    path: tuple[PathStep, ...]
    complete: bool = True

    @property
    def leaf_path(self) -> str:
        return self.path[-1].path if self.path else node_name(self.leaf)

    def describe(self) -> str:
        """'item 5 is in lvl_3/node_812, row 3; path: index_root row 3 > lvl_1/node_3 > ...'."""
        steps = [s.path if i else f"index_root row {s.row} > {s.path}" for i, s in enumerate(self.path)]
        if not self.complete:
            steps.insert(0, "(not linked to index_root) >")
        return f"item {self.item_id} is in {self.leaf_path}, row {self.row}; path: {' > '.join(steps)}"

    def to_dict(self) -> dict[str, Any]:
        return {"item_id": self.item_id, "leaf": self.leaf, "row": self.row, "complete": self.complete,
                "path": [s.to_dict() for s in self.path]}


class Provenance(Protocol):
    """Where the documents a locator reads can be stamped before reading and checked later
    (model/ecpfs/index_cache.py's IndexCache)."""

    def stamp(self, groups: Sequence[tuple[str, int]], *, walk: bool = True) -> Stamps | None: ...

    def stamped_reads(self, arrays: Sequence[tuple[str, int]], into: list[Stamps | None],
                      folders: Sequence[tuple[str, int]] | None = None
                      ) -> AbstractContextManager[BeforeChunks | None]: ...

    def unchanged(self, stamps: Stamps, owners: Sequence[int] | None = None) -> bool: ...


class ItemLocator:
    """Item id -> (leaf, row), learnt from item_ids arrays batch by batch; parents from node_ids.

    Each batch read is kept as read (a lookup scans it for the wanted ids) and reading every leaf
    costs one pass; once every leaf is read the batches are sorted once into one :class:`ItemMap`
    (:meth:`complete_map`), which a later process may hand back in with the stamps of the
    item_ids it was made from: an answer from it is given only while the documents it depends on
    are unchanged (a present item: its leaf's item_ids and the leaf level's folder; an absent one
    or the whole map: every leaf's), else the given map is dropped and the leaves are read.
    """

    def __init__(self, index: NodeReader, item_map: ItemMap | None = None, links: LinkCache | None = None,
                 stamps: Stamps | None = None, provenance: Provenance | None = None) -> None:
        self.index = index
        self._lock = threading.RLock()
        self._next = 0  # leaves read so far, in ascending leaf id order
        self._batches: list[_Run] = []  # one per run of leaves read, in leaf order
        self._map = item_map  # every leaf's: given, or merged from the batches once all are read
        self._leaf_order: _Run | None = None  # the complete map leaf after leaf (as the leaves store it)
        self._links = links
        self._parents: dict[int, ItemMap] = {}  # level -> its nodes' (parent, row), as an ItemMap
        self._id_range: ItemIdRange | None = None
        self._id_range_leaf: int | None = None  # the leaf whose item_ids metadata gave the range
        self._provenance = provenance
        self._stamps: list[Stamps | None] = []  # of each batch, taken before reading it
        self.given = item_map is not None and stamps is not None and provenance is not None
        if not self.given:
            self._map = None
        self._given_stamps = stamps if self.given else None
        self._checked: set[int] = set()  # leaves of the given map found unchanged in this process
        self._checked_all = False
        self._helper: FarEnd | None = None  # reading the far end of the pass (model/search/leaf_helper.py)
        self._helper_tried = False

    def stamps(self) -> Stamps | None:
        """What the complete map was derived from (None: not complete, or not stamped)."""
        with self._lock:
            if self._given_stamps is not None:
                return self._given_stamps
            if self.complete_map() is None or not self._stamps:
                return None
            return Stamps.joined(self._stamps)

    def facts_stamps(self) -> Stamps | None:
        """What the id range was taken from: the stamps of its leaf's item_ids."""
        whole = self.stamps()
        if whole is None or self._id_range_leaf is None:
            return None
        return whole.subset([self._id_range_leaf])

    def _given_valid(self, leaves: Sequence[int] | None) -> bool:
        """Whether the given map still answers for these leaves (all when None); when not, it is
        dropped and the leaves are read as if none was given."""
        stamps, provenance = self._given_stamps, self._provenance
        if stamps is None or provenance is None or self._checked_all:
            return True
        wanted = None if leaves is None else [leaf for leaf in set(leaves) if leaf not in self._checked]
        if wanted == []:
            return True
        if provenance.unchanged(stamps, wanted):
            if wanted is None:
                self._checked_all = True
            else:
                self._checked.update(wanted)
            return True
        self._map, self._leaf_order, self._given_stamps, self.given = None, None, None, False
        self._id_range = None
        return False

    @property
    def complete(self) -> bool:
        return self._map is not None or self._next >= len(self.index.leaf_ids())

    def find(self, items: Iterable[int], reporter: Reporter | None = None) -> dict[int, tuple[int, int]]:
        """(leaf, row) of each wanted item that the index holds; reads item_ids until all are found.

        An id the stored item_ids cannot hold is refused first (ItemIdRangeError, in words)."""
        ids = [int(i) for i in items]
        if ids:
            id_range = self.id_range()
            for extreme in (min(ids), max(ids)):
                refusal = id_range.refusal(extreme)
                if refusal is not None:
                    raise ItemIdRangeError(refusal)
        wanted = np.unique(np.asarray(ids, np.int64))
        with self._lock:
            whole = self._complete_map()
            if whole is not None:
                answer = whole.lookup(wanted)
                depends = None if len(answer) < len(wanted) else [leaf for leaf, _ in answer.values()]
                if self._given_valid(depends):
                    return answer
            found: dict[int, tuple[int, int]] = {}
            for batch in self._batches:
                _add_new(found, batch, wanted)
            while len(found) < len(wanted) and not self.complete:
                for batch in self._read_batch(reporter):
                    _add_new(found, batch, wanted)
            self.complete_map()
            return found

    def complete_map(self) -> ItemMap | None:
        """The map of every leaf's item_ids, once all are read (None before: a leaf is left to read)."""
        with self._lock:
            if self._map is not None and not self._given_valid(None):
                return None
            return self._complete_map()

    def _complete_map(self) -> ItemMap | None:
        with self._lock:
            if self._map is None and self._next >= len(self.index.leaf_ids()):
                batches, self._batches = self._batches, []
                self._leaf_order = _Run.joined(batches)
                del batches
                process_memory.return_freed_memory()  # the batches' pages, before the sort's arrays are made
                self._map = self._leaf_order.sorted()
            return self._map

    def leaf_order(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Every leaf's item ids in row order, leaf after leaf, as (ids, leaves ascending, items per
        leaf); None until every leaf is read. Kept from the read that made the map (no sort), else
        sorted out of a given map once."""
        with self._lock:
            whole = self.complete_map()
            if whole is None:
                return None
            if self._leaf_order is None:
                self._leaf_order = _Run.of_map(whole)
            run = self._leaf_order
            return run.ids, run.leaves, run.sizes

    def read_everything(self, reporter: Reporter | None = None) -> ItemMap | None:
        """Read every leaf's item_ids not read yet, in one pass; the complete map."""
        with self._lock:
            while (whole := self.complete_map()) is None:  # a given map found stale is read afresh
                self._read_batch(reporter)
            return whole

    def id_range(self) -> ItemIdRange:
        """The ids this index can hold, from the first leaf's item_ids metadata (the spec: uint32;
        with a saved map, the first leaf holding items)."""
        with self._lock:
            if self._id_range is None:
                self._id_range = self._read_id_range()
            return self._id_range

    def _read_id_range(self) -> ItemIdRange:
        # with a saved map, the first leaf it names: no listing of the leaf level (40,000 nodes at 2M)
        leaves = [int(self._map.leaves.min())] if self.given and self._map else self.index.leaf_ids()
        self._id_range_leaf = leaves[0] if leaves else None
        details = (self.index.hierarchy.details(node_array_path(self.index.levels, leaves[0], "item_ids")).array
                   if leaves else None)
        try:
            info = np.iinfo(np.dtype(details.dtype)) if details is not None else None
        except (TypeError, ValueError):  # not an integer type numpy knows: ids are read as int64
            info = None
        if info is None:
            return ItemIdRange("", int(_INT64.min), int(_INT64.max))
        assert details is not None
        return ItemIdRange(details.dtype, max(int(info.min), int(_INT64.min)), min(int(info.max), int(_INT64.max)))

    def find_one(self, item_id: int) -> tuple[int, int]:
        found = self.find([item_id])
        if item_id not in found:
            raise not_in_index(item_id)
        return found[item_id]

    def all_item_ids(self, reporter: Reporter | None = None) -> np.ndarray:
        """Every stored item id, ascending (reads every leaf's item_ids once)."""
        whole = self.read_everything(reporter)
        assert whole is not None  # every leaf was read
        return whole.unique_ids()

    def learn(self, leaves: Sequence[int], ids_per_leaf: Sequence[np.ndarray | None]) -> None:
        """Take item_ids read elsewhere (exact search streams every leaf in leaf order) so they are
        not read again: ``leaves`` is a run of :meth:`NodeReader.leaf_ids` (None: a leaf not stored),
        kept where it carries on from the leaves read so far."""
        with self._lock:
            if self._map is not None or not leaves:
                return
            every = self.index.leaf_ids()
            start = bisect.bisect_left(every, leaves[0])
            skip = self._next - start
            if not 0 <= skip < len(leaves) or every[start:start + len(leaves)] != list(leaves):
                return
            kept = [(leaf, ids) for leaf, ids in zip(leaves[skip:], ids_per_leaf[skip:], strict=True)
                    if ids is not None]
            self._stop_helper()  # its batches are on a grid this run leaves
            self._stamps.append(None)  # read elsewhere, not stamped before: the map is not kept
            self._batches.append(_Run.of_leaves([leaf for leaf, _ in kept], [ids for _, ids in kept]))
            self._next = start + len(leaves)

    def _read_batch(self, reporter: Reporter | None) -> list[_Run]:
        """Read the next LEAF_BATCH leaves' item_ids, or take the rest from the helper once it has read
        them; their maps (also kept)."""
        leaves = self.index.leaf_ids()
        helper = self._started_helper(leaves)
        if helper is not None and self._next >= helper.low():
            taken = helper.take(self._next)
            self._helper = None
            if taken is not None:
                return self._take(taken, len(leaves), reporter)
            helper = None  # a gap (it never leaves one): read the rest here
        end = len(leaves) if helper is None else helper.next_end(self._next)
        part = leaves[self._next:min(self._next + LEAF_BATCH, end)]
        paths = [node_array_path(self.index.levels, n, "item_ids") for n in part]
        # each file stamped before it is read (a change meanwhile makes the map stale); a pass over every leaf
        # keeps no document of theirs in the hierarchy (memory that grew with the index, held while it stayed open)
        check = None if reporter is None else reporter.check
        try:
            if self._provenance is None:
                arrays = self.index.arrays.read(paths, check, keep_documents=False)
            else:
                if self._next == 0:
                    self._stamps.append(self._provenance.stamp([(level_path(self.index.levels), ALWAYS)], walk=False))
                with self._provenance.stamped_reads(list(zip(paths, part, strict=True)), self._stamps) as stamp_chunks:
                    arrays = self.index.arrays.read(paths, check, keep_documents=False, before_chunks=stamp_chunks)
        except BaseException:
            if self._helper is not None:  # cancelled or failed: its finished batches stay for a later pass
                self._helper.stop()
            raise
        present = [(leaf, ids.reshape(-1)) for leaf, ids in zip(part, arrays, strict=True) if ids is not None]
        batch = _Run.of_leaves([leaf for leaf, _ in present], [ids for _, ids in present])
        self._batches.append(batch)
        self._next += len(part)
        if reporter is not None:
            reporter.report("reading item ids", self._next + (0 if helper is None else helper.done()), len(leaves))
        return [batch]

    def _started_helper(self, leaves: Sequence[int]) -> FarEnd | None:
        """The helper reading this pass's far end: started on a pass's first batch when it is worth it."""
        if self._helper is None and not self._helper_tried:
            self._helper_tried = True
            self._helper = start_helper(self.index.store, self.index.levels, leaves, self._next, LEAF_BATCH)
        return self._helper

    def _take(self, taken: list[Batch], count: int, reporter: Reporter | None) -> list[_Run]:
        """Keep the helper's batches, which hold every leaf left."""
        runs = [run for run, _ in taken]
        self._batches.extend(runs)
        if self._provenance is not None:  # stamped by the helper's reads, as this process stamps its own
            for _, stamps in taken:
                self._stamps.extend(stamps)
        self._next = count
        if reporter is not None:
            reporter.report("reading item ids", count, count)
        return runs

    def _stop_helper(self) -> None:
        if self._helper is not None:
            self._helper.stop()
            self._helper = None

    def location(self, item_id: int) -> ItemLocation:
        """Leaf, row and ancestor path of an item; UnknownItemError when no leaf holds it."""
        leaf, row = self.find_one(int(item_id))
        path, complete = self.ancestors(leaf)
        return ItemLocation(int(item_id), leaf, row, path, complete)

    def ancestors(self, leaf: int) -> tuple[tuple[PathStep, ...], bool]:
        """The nodes from level 1 down to a leaf, and whether the chain reaches index_root."""
        return ancestor_path(self.index.levels, len(self.index.root.ids), leaf, self._parents_of)

    def _parents_of(self, level: int) -> ItemMap:
        """(parent id, row) of each node of `level`, from every node_ids array one level up: an
        ItemMap whose "items" are the level's nodes and whose "leaves" are their parents (the first
        parent in listing order for a node two parents name). Kept in ``links`` for later processes:
        a 2,000,000-item index has 1,225 such arrays on the way to a leaf."""
        with self._lock:
            if level not in self._parents:
                links = self._links.load(level) if self._links is not None else None
                if links is None:
                    above = self.index.level_node_ids(level - 1)
                    stamps = None if self._provenance is None else Stamps.joined([
                        self._provenance.stamp([(level_path(level - 1), ALWAYS)], walk=False),
                        self._provenance.stamp([(node_array_path(level - 1, n, "node_ids"), n) for n in above])])
                    arrays = self.index.arrays.read([node_array_path(level - 1, n, "node_ids") for n in above])
                    read = [(parent, np.asarray(ids).reshape(-1)) for parent, ids in zip(above, arrays, strict=True)
                            if ids is not None]
                    links = ItemMap.of_leaves([p for p, _ in read], [ids for _, ids in read])
                    if self._links is not None and stamps is not None and len(read) == len(above):
                        self._links.save(level, links, stamps)  # only a whole level is kept
                self._parents[level] = links
            return self._parents[level]


def not_in_index(item_id: int) -> UnknownItemError:
    """The error of an item id no leaf holds (one wording for the reader and the saved map)."""
    return UnknownItemError(f"item {item_id} is not in this index")


def ancestor_path(levels: int, root_rows: int, leaf: int,
                  parents_of: Callable[[int], ItemMap]) -> tuple[tuple[PathStep, ...], bool]:
    """The nodes from level 1 down to a leaf of an index of `levels` levels whose index_root has
    `root_rows` rows, and whether the chain reaches index_root; ``parents_of(level)`` maps that
    level's nodes to their (parent, row)."""
    steps: list[PathStep] = []
    level, node = levels, leaf
    while True:
        if level == 1:
            if node < root_rows:
                steps.append(PathStep(1, node, node))  # index_root row i leads to lvl_1/node_i
                return tuple(reversed(steps)), True
            steps.append(PathStep(1, node, -1))
            return tuple(reversed(steps)), False
        link = parents_of(level).lookup(np.array([node], np.int64)).get(node)
        steps.append(PathStep(level, node, -1 if link is None else link[1]))
        if link is None:
            return tuple(reversed(steps)), False
        node, level = link[0], level - 1


class LinkCache(Protocol):
    """Where a locator keeps each level's child -> parent links between processes (a level's
    links are loaded only while every node_ids they were made from is unchanged)."""

    def load(self, level: int) -> ItemMap | None: ...

    def save(self, level: int, links: ItemMap, stamps: Stamps) -> None: ...


def _add_new(found: dict[int, tuple[int, int]], batch: _Run, wanted: np.ndarray) -> None:
    """Add the wanted ids a batch holds that an earlier batch (earlier leaves) did not."""
    for item, place in batch.lookup(wanted).items():
        found.setdefault(item, place)
