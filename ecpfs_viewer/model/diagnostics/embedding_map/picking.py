"""Asking the embedding map about a place: what is under the cursor, what a box or a lasso holds,
and where a query went.

- :func:`leaves_under`: the leaves most present in a small rectangle (hover, a click), with their share.
- :func:`select_box`: the items inside a rectangle and the nodes of every level they are beneath.
- :func:`select_polygon`: the same for a polygon (a lasso), by the even-odd rule; only the items of
  the cells its bounding box touches are read, and each edge tests only the items level with it.
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
from ecpfs_viewer.model.formatting import count_noun
from ecpfs_viewer.model.search.results import SearchResult


@dataclass(frozen=True)
class LeafShare:
    """A leaf under a region: its id, its items there and their share of the region's items."""

    leaf_id: int
    items: int
    share: float

    def describe(self, levels: int) -> str:
        return f"{node_path(levels, self.leaf_id)}: {count_noun(self.items, 'item')} ({self.share:.0%})"


def leaves_under(index: DensityIndex, rect: ViewRect, top: int = 5) -> list[LeafShare]:
    """The ``top`` leaves with the most items in ``rect``, most first (ties: lower leaf id first)."""
    placement = index.placement
    positions = index.items_in(rect)
    if not positions.size:
        return []
    counts = np.bincount(placement.leaves_of(positions), minlength=placement.leaf_ids.size)
    present = np.flatnonzero(counts)
    ranked = present[np.lexsort((placement.leaf_ids[present], -counts[present]))][:top]
    total = float(positions.size)
    return [LeafShare(int(placement.leaf_ids[p]), int(counts[p]), counts[p] / total) for p in ranked]


@dataclass(frozen=True, eq=False)
class Selection:
    """What a rectangle or a polygon holds: item positions and ids, and per level the nodes beneath
    which they lie. ``rect`` is the box, or the polygon's bounding box."""

    rect: ViewRect
    positions: np.ndarray  # int64 positions into the placement, ascending
    item_ids: np.ndarray  # int64, aligned with positions
    nodes: dict[int, tuple[np.ndarray, np.ndarray]]  # level -> (node ids, items of the selection beneath each)
    polygon: np.ndarray | None = None  # (k, 2) float64 vertices of a lasso; None for a box

    @property
    def count(self) -> int:
        return int(self.positions.size)

    def node_paths(self, level: int) -> list[str]:
        return [node_path(level, int(n)) for n in self.nodes.get(level, (np.zeros(0, np.int64),))[0]]


def select_box(index: DensityIndex, index_map: IndexMap, rect: ViewRect) -> Selection:
    """Every item inside ``rect`` and the nodes of each level above them, most items first."""
    return _selection(index, index_map, rect, index.items_in(rect))


def select_polygon(index: DensityIndex, index_map: IndexMap, polygon: np.ndarray) -> Selection:
    """Every item inside ``polygon`` ((k, 2) vertices in placement units, closed implicitly; the
    even-odd rule, so a self-crossing lasso holds what it encircles an odd number of times) and the
    nodes of each level above them, as :func:`select_box`. Fewer than 3 vertices hold nothing."""
    vertices = np.asarray(polygon, np.float64).reshape(-1, 2)
    finite = vertices[np.isfinite(vertices).all(axis=1)]
    if len(finite) < 3:
        x, y = (float(finite[0, 0]), float(finite[0, 1])) if len(finite) else (0.0, 0.0)
        return _selection(index, index_map, ViewRect(x, x, y, y), np.zeros(0, np.int64), finite)
    (x0, y0), (x1, y1) = finite.min(axis=0), finite.max(axis=0)
    rect = ViewRect(float(x0), float(np.nextafter(x1, np.inf)), float(y0), float(np.nextafter(y1, np.inf)))
    candidates = index.items_in(rect)  # the bounding box's items, read through the cells it touches
    inside = inside_polygon(index.placement.coords[candidates], finite)
    return _selection(index, index_map, rect, candidates[inside], finite)


def inside_polygon(xy: np.ndarray, polygon: np.ndarray) -> np.ndarray:
    """Whether each point of ``xy`` ((n, 2)) lies inside ``polygon`` ((k, 2), closed implicitly), by
    the even-odd rule (a horizontal ray to the left crosses its edges an odd number of times); a point
    on a lower or left edge is inside, on an upper or right edge outside, so polygons that tile the
    plane share out its points once. The points are sorted by y once, so each edge tests only the
    points level with it: n log n plus the points times the edges a horizontal line crosses."""
    x, y = np.asarray(xy[:, 0], np.float64), np.asarray(xy[:, 1], np.float64)
    order = np.argsort(y, kind="stable")
    xs, ys = x[order], y[order]
    odd = np.zeros(x.size, bool)
    ends = np.roll(polygon, -1, axis=0)
    for (ax, ay), (bx, by) in zip(polygon.tolist(), ends.tolist(), strict=True):
        if ay == by:
            continue  # horizontal: the edges either side count the crossing
        lo, hi = np.searchsorted(ys, min(ay, by), "left"), np.searchsorted(ys, max(ay, by), "left")
        if lo == hi:
            continue
        level = ys[lo:hi]  # min(ay, by) <= y < max(ay, by)
        odd[lo:hi] ^= ax + (level - ay) * ((bx - ax) / (by - ay)) <= xs[lo:hi]
    out = np.empty(x.size, bool)
    out[order] = odd
    return out


def _selection(index: DensityIndex, index_map: IndexMap, rect: ViewRect, positions: np.ndarray,
               polygon: np.ndarray | None = None) -> Selection:
    placement = index.placement
    positions = positions.astype(np.int64, copy=False)  # ascending, as items_in gives them
    leaf_pos = placement.leaves_of(positions)
    nodes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for depth, ancestors in enumerate(leaf_ancestors(index_map)):
        band = index_map.band(depth + 1)
        up = ancestors[leaf_pos]
        up = up[up >= 0]
        counts = np.bincount(up, minlength=len(band))
        present = np.flatnonzero(counts)
        ranked = present[np.lexsort((band.node_ids[present], -counts[present]))]
        nodes[depth + 1] = (band.node_ids[ranked].copy(), counts[ranked].astype(np.int64))
    return Selection(rect, positions, placement.item_ids[positions].astype(np.int64), nodes, polygon)


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
