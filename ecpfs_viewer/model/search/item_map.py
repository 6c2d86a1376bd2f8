"""The item -> (leaf, row) map of an index, sorted by item id, and the sorting it needs: what
``locate`` keeps and saves (model/search/locate.py), and what a later process loads back.

Zarr-free: the saved map answers a later process without zarr (model/search/saved_locate.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ecpfs_viewer.model.ecpfs.parent_links import links_bytes, read_links

_EMPTY = np.empty(0, np.int64)
_INT32_MAX = int(np.iinfo(np.int32).max)
#: Entries computed at a time where a whole-map int64 temporary is avoided.
_STEP = 1 << 18


def narrowed(values: np.ndarray) -> np.ndarray:
    """Non-negative integers as int32 where every one fits (a copy), else as they are."""
    if values.dtype == np.int32 or (len(values) and not 0 <= int(values.min()) <= int(values.max()) <= _INT32_MAX):
        return values
    return values.astype(np.int32)


@dataclass(frozen=True)
class ItemMap:
    """Every item id of an index with the leaf and row that hold it, sorted by item id.

    Duplicated ids (a corrupt index) are kept in leaf order, so a lookup answers with the first
    leaf that holds one, as a reader scanning the leaves in order would. Saved as an .npz
    (:meth:`to_bytes`), so a later process can locate items without reading a leaf. Leaves and
    rows are held in the narrowest of int32 and int64 that holds them (:func:`narrowed`): the map
    of a 10,000,000-item index is most of a first ``locate``'s memory; saved, they are int64.
    """

    item_ids: np.ndarray  # ascending: uint32 where the leaves store them so (the spec's type), else int64
    leaves: np.ndarray  # leaf node number (lvl_L/node_<leaf>) of each entry: int32 where all fit, else int64
    rows: np.ndarray  # row inside that leaf's item_ids: int32 where all fit, else int64

    def __len__(self) -> int:
        return len(self.item_ids)

    @staticmethod
    def of_leaves(leaves: Sequence[int], ids_per_leaf: Sequence[np.ndarray]) -> ItemMap:
        """The map of some leaves' item_ids, given in leaf order."""
        return _Run.of_leaves(leaves, ids_per_leaf).sorted()

    @staticmethod
    def merged(parts: Sequence[ItemMap]) -> ItemMap:
        """One map of maps of consecutive runs of leaves, given in leaf order (ties keep that order)."""
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return ItemMap(_EMPTY, _EMPTY, _EMPTY)
        order, ids = stable_order(np.concatenate([p.item_ids for p in parts]))  # ties keep leaf order
        return ItemMap(ids, narrowed(np.concatenate([p.leaves for p in parts])[order]),
                       narrowed(np.concatenate([p.rows for p in parts])[order]))

    def lookup(self, wanted: np.ndarray) -> dict[int, tuple[int, int]]:
        """(leaf, row) of each wanted id (int64) the map holds, the first leaf for a duplicated one."""
        wanted = in_type_of(self.item_ids, wanted)  # else the search would copy the map into their type
        at = np.searchsorted(self.item_ids, wanted)
        hit = at < len(self.item_ids)
        hit[hit] = self.item_ids[at[hit]] == wanted[hit]
        return {int(i): (int(self.leaves[a]), int(self.rows[a])) for i, a in zip(wanted[hit], at[hit], strict=True)}

    def unique_ids(self) -> np.ndarray:
        """Every id once, ascending, as int64."""
        ids = self.item_ids
        return (ids[np.concatenate(([True], ids[1:] != ids[:-1]))] if len(ids) else ids).astype(np.int64, copy=False)

    def to_bytes(self) -> bytes:
        return links_bytes(self.item_ids, self.leaves, self.rows)

    @classmethod
    def from_bytes(cls, data: bytes) -> ItemMap:
        """A map saved by :meth:`to_bytes` (the format of model/ecpfs/parent_links.py); ValueError
        (saying what is wrong) for anything else."""
        ids, leaves, rows = read_links(data)
        return cls(ids, narrowed(leaves), narrowed(rows))


@dataclass(frozen=True)
class _Run:
    """Item ids of consecutive leaves as read, leaf after leaf: searched for a few wanted ids by a
    scan, and sorted once, when every leaf is read (one sort of the whole index, not one per batch)."""

    ids: np.ndarray  # each leaf's in row order: uint32 where every leaf stores unsigned ids of 32 bits or less
    leaves: np.ndarray  # int64, the leaves in order
    sizes: np.ndarray  # int64, the items of each leaf

    @staticmethod
    def of_leaves(leaves: Sequence[int], ids_per_leaf: Sequence[np.ndarray]) -> _Run:
        if not len(ids_per_leaf):
            return _Run(_EMPTY, _EMPTY, _EMPTY)
        narrow = all(ids.dtype.kind == "u" and ids.dtype.itemsize <= 4 for ids in ids_per_leaf)
        return _Run(np.concatenate(ids_per_leaf, dtype=np.uint32 if narrow else np.int64, casting="unsafe"),
                    np.asarray(leaves, np.int64), np.fromiter(map(len, ids_per_leaf), np.int64, len(ids_per_leaf)))

    @staticmethod
    def joined(runs: Sequence[_Run]) -> _Run:
        if not runs:
            return _Run(_EMPTY, _EMPTY, _EMPTY)
        return _Run(*(np.concatenate([getattr(r, f) for r in runs]) for f in ("ids", "leaves", "sizes")))

    @staticmethod
    def of_map(item_map: ItemMap) -> _Run:
        """A map's entries leaf after leaf, each leaf's in row order."""
        leaves: np.ndarray = item_map.leaves.astype(np.int64, copy=False)
        rows: np.ndarray = item_map.rows.astype(np.int64, copy=False)
        stride = int(rows.max()) + 1 if len(rows) else 1
        if len(leaves) and int(leaves.max()) < np.iinfo(np.int64).max // stride:  # one int64 key per (leaf, row)
            order = stable_order(leaves * stride + rows)[0]
        else:
            order = np.lexsort((rows, leaves))
        by_leaf = leaves[order]
        starts = np.flatnonzero(np.concatenate(([True], by_leaf[1:] != by_leaf[:-1]))) if len(by_leaf) else _EMPTY
        return _Run(item_map.item_ids[order], by_leaf[starts], np.diff(np.append(starts, len(by_leaf))))

    def places(self, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The leaf and row of the entries at positions ``at``."""
        ends = np.cumsum(self.sizes)
        k = np.searchsorted(ends, at, side="right")
        return self.leaves[k], at - (ends[k] - self.sizes[k])

    def sorted(self) -> ItemMap:
        """The run as an ItemMap: sorted by item id, a duplicated id's entries in leaf order.

        Each entry's leaf and row are found from its position through the number of its leaf in
        the run (int32 where the run has fewer than 2**31 leaves): one array as long as the map
        at a time beside the order and the map itself."""
        order, ids = stable_order(self.ids)
        count = len(self.sizes)
        at = np.repeat(np.arange(count, dtype=np.int32 if count <= _INT32_MAX else np.int64), self.sizes)[order]
        starts = np.cumsum(self.sizes) - self.sizes  # where each leaf starts in the run
        rows = np.empty(len(ids), np.int32 if not count or int(self.sizes.max()) <= _INT32_MAX else np.int64)
        for low in range(0, len(ids), _STEP):  # a step at a time: no int64 array as long as the map
            high = low + _STEP
            np.subtract(order[low:high], starts[at[low:high]], out=rows[low:high])
        del order  # before the leaves are made: never the order, the leaf numbers and both answers at once
        return ItemMap(ids, narrowed(self.leaves)[at], rows)

    def lookup(self, wanted: np.ndarray) -> dict[int, tuple[int, int]]:
        """(leaf, row) of each wanted id (int64, ascending, unique) the run holds, its first entry."""
        if not len(wanted) or not len(self.ids):
            return {}
        at = np.searchsorted(wanted, self.ids)
        np.minimum(at, len(wanted) - 1, out=at)
        hit = np.flatnonzero(wanted[at] == self.ids)
        if not len(hit):
            return {}
        found, first = np.unique(self.ids[hit], return_index=True)  # the first occurrence of each
        leaves, rows = self.places(hit[first])
        return dict(zip(found.tolist(), zip(leaves.tolist(), rows.tolist(), strict=True), strict=True))


def in_type_of(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The wanted ids (int64) that ids of this array's type can hold, in that type."""
    if ids.dtype == wanted.dtype or not len(wanted):
        return wanted
    info = np.iinfo(ids.dtype)
    return wanted[(wanted >= info.min) & (wanted <= info.max)].astype(ids.dtype)


def stable_order(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.argsort(keys, kind="stable")`` and the keys in that order, in the time of the fast sort
    when the keys are unique (every sort gives unique keys the same order; only equal keys need
    the stable one), and with no sort at all when they are also dense (item ids 0..N-1)."""
    placed = _placed_by_value(keys)
    if placed is not None:
        return placed
    order = np.argsort(keys)
    ranked = keys[order]
    if len(ranked) > 1 and bool((ranked[1:] == ranked[:-1]).any()):
        order = np.argsort(keys, kind="stable")
        ranked = keys[order]
    return order, ranked


#: Keys spanning fewer than this many values per key are placed by value (a table of the span).
DENSE_SPAN_PER_KEY = 2


def _placed_by_value(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The sorted order of unique keys that span few values, each put in its slot of a table of the
    span: a few linear passes instead of a sort. None for keys that repeat or spread wide."""
    n = len(keys)
    if n < 1024:
        return None
    low, high = int(keys.min()), int(keys.max())
    if high - low >= DENSE_SPAN_PER_KEY * n:
        return None
    span = high - low + 1
    slot: np.ndarray = np.full(span, -1, np.int32 if n <= _INT32_MAX else np.int64)
    for start in range(0, n, _STEP):  # a step at a time: no whole-map temporaries beside the table
        part = keys[start:start + _STEP] - low
        slot[part] = np.arange(start, start + len(part), dtype=slot.dtype)  # a repeated key leaves a slot unfilled
    if span == n:  # as many values as keys (ids 0..N-1): the table is the order, if every slot is filled
        if bool((slot < 0).any()):
            return None
        return slot, np.arange(low, high + 1, dtype=keys.dtype)
    filled = slot >= 0
    if int(np.count_nonzero(filled)) != n:
        return None
    order = slot[filled]
    del slot
    ranked = np.flatnonzero(filled)
    ranked += low
    return order, ranked.astype(keys.dtype, copy=False)
