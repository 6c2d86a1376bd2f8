"""Asking the embedding map about a place: what is under the cursor, what a box holds, and where a
query went.

- :func:`leaves_under`: the leaves most present in a small rectangle (hover), with their share.
- :func:`select_box`: the items inside a rectangle and the nodes of every level they are beneath.
- :func:`query_overlay`: a search drawn on the map: the query's own point, the leaves it scanned in
  visit order (their items' positions), its results and the true neighbours it missed.

Rectangles are :class:`~.density.ViewRect` in placement units; items are positions into the
:class:`~.placement.Placement` (``item_ids[p]`` is the id), found through the
:class:`~.density.DensityIndex` so a box reads only the items of the cells it touches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ecpfs_viewer.model.diagnostics.embedding_map.density import DensityIndex, ViewRect
from ecpfs_viewer.model.diagnostics.embedding_map.placement import Placement
from ecpfs_viewer.model.diagnostics.index_map import IndexMap, leaf_ancestors
from ecpfs_viewer.model.ecpfs.paths import node_path
from ecpfs_viewer.model.search.results import SearchResult


@dataclass(frozen=True)
class LeafShare:
    """A leaf under a region: its id, its items there and their share of the region's items."""

    leaf_id: int
    items: int
    share: float

    def describe(self, levels: int) -> str:
        return f"{node_path(levels, self.leaf_id)}: {self.items:,} items ({self.share:.0%})"


def leaves_under(index: DensityIndex, rect: ViewRect, top: int = 5) -> list[LeafShare]:
    """The ``top`` leaves with the most items in ``rect``, most first (ties: lower leaf id first)."""
    placement = index.placement
    positions = index.items_in(rect)
    if not positions.size:
        return []
    counts = np.bincount(placement.leaf_pos[positions], minlength=placement.leaf_ids.size)
    present = np.flatnonzero(counts)
    ranked = present[np.lexsort((placement.leaf_ids[present], -counts[present]))][:top]
    total = float(positions.size)
    return [LeafShare(int(placement.leaf_ids[p]), int(counts[p]), counts[p] / total) for p in ranked]


@dataclass(frozen=True, eq=False)
class Selection:
    """What a rectangle holds: item positions and ids, and per level the nodes beneath which they lie."""

    rect: ViewRect
    positions: np.ndarray  # int64 positions into the placement, ascending
    item_ids: np.ndarray  # int64, aligned with positions
    nodes: dict[int, tuple[np.ndarray, np.ndarray]]  # level -> (node ids, items of the selection beneath each)

    @property
    def count(self) -> int:
        return int(self.positions.size)

    def node_paths(self, level: int) -> list[str]:
        return [node_path(level, int(n)) for n in self.nodes.get(level, (np.zeros(0, np.int64),))[0]]


def select_box(index: DensityIndex, index_map: IndexMap, rect: ViewRect) -> Selection:
    """Every item inside ``rect`` and the nodes of each level above them, most items first."""
    placement = index.placement
    positions = index.items_in(rect)
    leaf_pos = placement.leaf_pos[positions]
    nodes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for depth, ancestors in enumerate(leaf_ancestors(index_map)):
        band = index_map.band(depth + 1)
        up = ancestors[leaf_pos]
        up = up[up >= 0]
        counts = np.bincount(up, minlength=len(band))
        present = np.flatnonzero(counts)
        ranked = present[np.lexsort((band.node_ids[present], -counts[present]))]
        nodes[depth + 1] = (band.node_ids[ranked].copy(), counts[ranked].astype(np.int64))
    return Selection(rect, positions, placement.item_ids[positions], nodes)


@dataclass(frozen=True, eq=False)
class QueryOverlay:
    """A search on the map (see the module docstring); positions index the placement, -1: not placed."""

    query_xy: np.ndarray  # (2,) float32: the query projected like the items
    scanned_leaves: tuple[int, ...]  # leaf ids in visit order
    scanned: tuple[np.ndarray, ...]  # per scanned leaf (same order), the positions of its items
    results: np.ndarray  # int64 positions of the returned items, best first
    missed: np.ndarray  # int64 positions of the true neighbours not returned

    @property
    def visit_rank(self) -> np.ndarray:
        """Per scanned item (concatenated in visit order), the 1-based visit rank of its leaf."""
        return np.repeat(np.arange(1, len(self.scanned) + 1), [s.size for s in self.scanned])


def positions_of(placement: Placement, leaves: Sequence[int], rows: Sequence[int]) -> np.ndarray:
    """Positions of items given by (leaf id, row in the leaf), as search hits and locations name
    them; -1 where the leaf is not placed or has no such row."""
    order = np.argsort(placement.leaf_ids, kind="stable")
    leaf_arr = np.asarray(leaves, np.int64)
    row_arr = np.asarray(rows, np.int64)
    if not placement.leaf_ids.size or not leaf_arr.size:
        return np.full(leaf_arr.size, -1, np.int64)
    at = np.minimum(np.searchsorted(placement.leaf_ids[order], leaf_arr), order.size - 1)
    pos = order[at]
    found = placement.leaf_ids[pos] == leaf_arr
    start, end = placement.leaf_start[pos], placement.leaf_start[pos + 1]
    ok = found & (row_arr >= 0) & (row_arr < end - start)
    return np.where(ok, start + row_arr, -1).astype(np.int64)


def query_overlay(placement: Placement, query: np.ndarray, result: SearchResult,
                  missed: Sequence[tuple[int, int]] = ()) -> QueryOverlay:
    """The search ``result`` of ``query`` on the map; ``missed`` holds (leaf id, row) of each true
    neighbour it did not return (``MissedNeighbour.location.leaf`` and ``.row`` from search.explain)."""
    leaves = [v.node_id for v in result.trace if v.is_leaf]
    scanned = []
    for leaf in leaves:
        p = placement.leaf_position(leaf)
        scanned.append(np.zeros(0, np.int64) if p is None else np.arange(*placement.leaf_items(p).indices(
            placement.count), dtype=np.int64))
    hits = positions_of(placement, [h.leaf for h in result.hits], [h.row for h in result.hits])
    lost = positions_of(placement, [m[0] for m in missed], [m[1] for m in missed])
    near = np.asarray(leaves[:1] or [-1], np.int64)  # a layout around the leaves: the first leaf scanned
    query_xy = placement.projection.project(np.asarray(query, np.float32).reshape(1, -1), near)[0]
    return QueryOverlay(query_xy, tuple(leaves), tuple(scanned), hits, lost)


def items_beneath(placement: Placement, index_map: IndexMap, level: int, node_id: int) -> np.ndarray:
    """Positions (into the placement, ascending) of the items beneath a node of ``level`` (a leaf's
    own items); empty when the map holds no such node. What the tree's selection shows on the map."""
    if not 1 <= level <= len(index_map.levels):
        return np.zeros(0, np.int64)
    at = index_map.band(level).index_of(node_id)
    if at is None:
        return np.zeros(0, np.int64)
    leaves = np.flatnonzero(leaf_ancestors(index_map)[level - 1] == at)
    starts = placement.leaf_start[leaves]
    lengths = placement.leaf_start[leaves + 1] - starts
    total = int(lengths.sum())
    return np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(total, dtype=np.int64)
