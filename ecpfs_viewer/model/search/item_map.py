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


@dataclass(frozen=True)
class ItemMap:
    """Every item id of an index with the leaf and row that hold it, sorted by item id.

    Duplicated ids (a corrupt index) are kept in leaf order, so a lookup answers with the first
    leaf that holds one, as a reader scanning the leaves in order would. Saved as an .npz
    (:meth:`to_bytes`), so a later process can locate items without reading a leaf.
    """

    item_ids: np.ndarray  # int64, ascending
    leaves: np.ndarray  # int64 leaf node number (lvl_L/node_<leaf>) of each entry
    rows: np.ndarray  # int64 row inside that leaf's item_ids

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
        return ItemMap(ids, np.concatenate([p.leaves for p in parts])[order],
                       np.concatenate([p.rows for p in parts])[order])

    def lookup(self, wanted: np.ndarray) -> dict[int, tuple[int, int]]:
        """(leaf, row) of each wanted id (int64) the map holds, the first leaf for a duplicated one."""
        at = np.searchsorted(self.item_ids, wanted)
        hit = at < len(self.item_ids)
        hit[hit] = self.item_ids[at[hit]] == wanted[hit]
        return {int(i): (int(self.leaves[a]), int(self.rows[a])) for i, a in zip(wanted[hit], at[hit], strict=True)}

    def unique_ids(self) -> np.ndarray:
        ids = self.item_ids
        return ids[np.concatenate(([True], ids[1:] != ids[:-1]))] if len(ids) else ids

    def to_bytes(self) -> bytes:
        return links_bytes(self.item_ids, self.leaves, self.rows)

    @classmethod
    def from_bytes(cls, data: bytes) -> ItemMap:
        """A map saved by :meth:`to_bytes` (the format of model/ecpfs/parent_links.py); ValueError
        (saying what is wrong) for anything else."""
        return cls(*read_links(data))


@dataclass(frozen=True)
class _Run:
    """Item ids of consecutive leaves as read, leaf after leaf: searched for a few wanted ids by a
    scan, and sorted once, when every leaf is read (one sort of the whole index, not one per batch)."""

    ids: np.ndarray  # int64, each leaf's in row order
    leaves: np.ndarray  # int64, the leaves in order
    sizes: np.ndarray  # int64, the items of each leaf

    @staticmethod
    def of_leaves(leaves: Sequence[int], ids_per_leaf: Sequence[np.ndarray]) -> _Run:
        if not len(ids_per_leaf):
            return _Run(_EMPTY, _EMPTY, _EMPTY)
        return _Run(np.concatenate(ids_per_leaf, dtype=np.int64, casting="unsafe"),  # each leaf's type as int64
                    np.asarray(leaves, np.int64), np.fromiter(map(len, ids_per_leaf), np.int64, len(ids_per_leaf)))

    @staticmethod
    def joined(runs: Sequence[_Run]) -> _Run:
        if not runs:
            return _Run(_EMPTY, _EMPTY, _EMPTY)
        return _Run(*(np.concatenate([getattr(r, f) for r in runs]) for f in ("ids", "leaves", "sizes")))

    @staticmethod
    def of_map(item_map: ItemMap) -> _Run:
        """A map's entries leaf after leaf, each leaf's in row order."""
        leaves, rows = item_map.leaves, item_map.rows
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
        """The run as an ItemMap: sorted by item id, a duplicated id's entries in leaf order."""
        order, ids = stable_order(self.ids)
        starts = np.cumsum(self.sizes) - self.sizes
        rows = np.arange(len(ids), dtype=np.int64) - np.repeat(starts, self.sizes)
        return ItemMap(ids, np.repeat(self.leaves, self.sizes)[order], rows[order])

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
    slot = np.full(high - low + 1, -1, np.int64)
    slot[keys - low] = np.arange(n, dtype=np.int64)  # a repeated key leaves a slot unfilled
    filled = slot >= 0
    order = slot[filled]
    if len(order) != n:
        return None
    return order, (np.flatnonzero(filled) + low).astype(keys.dtype, copy=False)
