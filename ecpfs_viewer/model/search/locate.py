"""Where an item is stored: its leaf, its row there, and the path from index_root down to it.

Reads only ids arrays: the leaves' ``item_ids`` (in batches, stopping as soon as the wanted
items are found, cached) and, for the ancestor path, the internal levels' ``node_ids``. Never a
leaf's embeddings, which are what make reading a leaf expensive.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ecpfs_viewer.model.ecpfs.paths import node_array_path, node_name, node_path
from ecpfs_viewer.model.search.reader import NodeReader
from ecpfs_viewer.model.search.results import ItemIdRangeError, Reporter, UnknownItemError

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


@dataclass(frozen=True)
class ItemMap:
    """Every item id of an index with the leaf and row that hold it, sorted by item id.

    (The item-map contract of issue 21, as the cache21 branch needs it; search21's locate.py
    supersedes this class and the item_map / complete_map parts of ItemLocator at merge.)"""

    item_ids: np.ndarray  # int64, sorted ascending
    leaves: np.ndarray  # int64 leaf node number of each entry
    rows: np.ndarray  # int64 row inside that leaf's item_ids

    def to_bytes(self) -> bytes:
        out = io.BytesIO()
        np.savez(out, item_ids=self.item_ids, leaves=self.leaves, rows=self.rows)
        return out.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> ItemMap:
        """The map saved by :meth:`to_bytes`; ValueError for anything else."""
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as saved:
                arrays = [np.asarray(saved[name]) for name in ("item_ids", "leaves", "rows")]
        except (OSError, KeyError, ValueError, EOFError) as exc:
            raise ValueError(f"not a saved item map ({exc})") from None
        if any(a.dtype != np.int64 or a.ndim != 1 or len(a) != len(arrays[0]) for a in arrays):
            raise ValueError("a saved item map holds three int64 vectors of one length")
        if len(arrays[0]) > 1 and bool((arrays[0][1:] < arrays[0][:-1]).any()):
            raise ValueError("a saved item map's item ids are not sorted")
        return cls(*arrays)


class ItemLocator:
    """Item id -> (leaf, row), learnt from item_ids arrays batch by batch; parents from node_ids."""

    def __init__(self, index: NodeReader, item_map: ItemMap | None = None) -> None:
        self.index = index
        self._lock = threading.RLock()
        self._next = 0  # leaves read so far, in ascending leaf id order
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # item ids, leaf, row
        self._sorted: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # lookup table of _parts
        self._parents: dict[int, dict[int, tuple[int, int]]] = {}  # level -> child -> (parent, row)
        self._id_range: ItemIdRange | None = None
        self._given = item_map is not None
        if item_map is not None:
            self._sorted = (item_map.item_ids, item_map.leaves, item_map.rows)
            self._parts = [self._sorted]

    @property
    def complete(self) -> bool:
        return self._given or self._next >= len(self.index.leaf_ids())

    def complete_map(self) -> ItemMap | None:
        """The map once every leaf's item_ids has been read (None before)."""
        with self._lock:
            return ItemMap(*self._table()) if self.complete else None

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
            found = self._lookup(wanted)
            while len(found) < len(wanted) and not self.complete:
                self._read_batch(reporter)
                found = self._lookup(wanted)
            return found

    def id_range(self) -> ItemIdRange:
        """The ids this index can hold, from the first leaf's item_ids metadata (the spec: uint32)."""
        with self._lock:
            if self._id_range is None:
                self._id_range = self._read_id_range()
            return self._id_range

    def _read_id_range(self) -> ItemIdRange:
        leaves = self.index.leaf_ids()
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
            raise UnknownItemError(f"item {item_id} is not in this index")
        return found[item_id]

    def all_item_ids(self, reporter: Reporter | None = None) -> np.ndarray:
        """Every stored item id, ascending (reads every leaf's item_ids once)."""
        with self._lock:
            while not self.complete:
                self._read_batch(reporter)
            ids = self._table()[0]
        return ids[np.concatenate(([True], ids[1:] != ids[:-1]))] if len(ids) else ids

    def learn(self, leaf_ids: list[int], ids_per_leaf: list[np.ndarray]) -> None:
        """Take item_ids read elsewhere (exact search reads every leaf) so they are not read again."""
        with self._lock:
            if self.complete:
                return
            self._parts = [_part(leaf_ids, ids_per_leaf)]
            self._sorted = None
            self._next = len(self.index.leaf_ids())

    def _read_batch(self, reporter: Reporter | None) -> None:
        leaves = self.index.leaf_ids()
        part = leaves[self._next:self._next + LEAF_BATCH]
        arrays = self.index.arrays.read([node_array_path(self.index.levels, n, "item_ids") for n in part],
                                        None if reporter is None else reporter.check)
        present = [(leaf, np.asarray(ids, np.int64).reshape(-1)) for leaf, ids in zip(part, arrays, strict=True)
                   if ids is not None]
        self._parts.append(_part([leaf for leaf, _ in present], [ids for _, ids in present]))
        self._sorted = None
        self._next += len(part)
        if reporter is not None:
            reporter.report("reading item ids", self._next, len(leaves))

    def _table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every item id read so far, sorted (a duplicated id, from a corrupt index: first leaf first)."""
        if self._sorted is None:
            ids, leaves, rows = (np.concatenate([p[j] for p in self._parts]) if self._parts
                                 else np.empty(0, np.int64) for j in range(3))
            order = np.argsort(ids, kind="stable")
            self._sorted = (ids[order], leaves[order], rows[order])
        return self._sorted

    def _lookup(self, wanted: np.ndarray) -> dict[int, tuple[int, int]]:
        ids, leaves, rows = self._table()
        at = np.searchsorted(ids, wanted)
        hit = at < len(ids)
        hit[hit] = ids[at[hit]] == wanted[hit]
        return {int(i): (int(leaves[a]), int(rows[a])) for i, a in zip(wanted[hit], at[hit], strict=True)}

    def location(self, item_id: int) -> ItemLocation:
        """Leaf, row and ancestor path of an item; UnknownItemError when no leaf holds it."""
        leaf, row = self.find_one(int(item_id))
        path, complete = self.ancestors(leaf)
        return ItemLocation(int(item_id), leaf, row, path, complete)

    def ancestors(self, leaf: int) -> tuple[tuple[PathStep, ...], bool]:
        """The nodes from level 1 down to a leaf, and whether the chain reaches index_root."""
        steps: list[PathStep] = []
        level, node = self.index.levels, leaf
        while True:
            if level == 1:
                if node < len(self.index.root.ids):
                    steps.append(PathStep(1, node, node))  # index_root row i leads to lvl_1/node_i
                    return tuple(reversed(steps)), True
                steps.append(PathStep(1, node, -1))
                return tuple(reversed(steps)), False
            link = self._parents_of(level).get(node)
            steps.append(PathStep(level, node, -1 if link is None else link[1]))
            if link is None:
                return tuple(reversed(steps)), False
            node, level = link[0], level - 1

    def _parents_of(self, level: int) -> dict[int, tuple[int, int]]:
        """child id -> (parent id, row) for nodes of `level`, from every node_ids array one level up."""
        with self._lock:
            if level not in self._parents:
                above = self.index.level_node_ids(level - 1)
                arrays = self.index.arrays.read([node_array_path(level - 1, n, "node_ids") for n in above])
                links: dict[int, tuple[int, int]] = {}
                for parent, ids in zip(above, arrays, strict=True):
                    if ids is not None:
                        for row, child in enumerate(np.asarray(ids).reshape(-1).tolist()):
                            links.setdefault(int(child), (parent, row))
                self._parents[level] = links
            return self._parents[level]


def _part(leaves: list[int], ids_per_leaf: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flat (item id, leaf, row) arrays for some leaves' item_ids."""
    sizes = [len(ids) for ids in ids_per_leaf]
    if not sizes:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.int64)
    return (np.concatenate(ids_per_leaf).astype(np.int64), np.repeat(np.asarray(leaves, np.int64), sizes),
            np.concatenate([np.arange(n, dtype=np.int64) for n in sizes]))
