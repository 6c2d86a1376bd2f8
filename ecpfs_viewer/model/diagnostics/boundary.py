"""Boundary items: per node, the share of its items that sit near a border between representatives.

At level N an eCP search chooses among the representatives of one node of level N-1 (index_root
for level 1): the children of the item's own ancestor there, i.e. its ancestor at N and that
ancestor's siblings. That is the candidate set used here: an item is a *boundary item at level N*
when, scored against those candidates like a search scores (§4.1, lower is better), its second
best scores within ``tolerance`` (5% by default) of its best: ``second - best <= tolerance * |best|``.
A query near such an item is the one most likely to go down the other branch. A node's share is
over every item beneath it, at the node's own level. Leaves are read in batches (their embeddings,
once), and scored with one matrix product per candidate node and batch.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ecpfs_viewer.model.diagnostics.index_map import IndexMap, MapOverlay, leaf_ancestors
from ecpfs_viewer.model.search.reader import NodeData, NodeReader, as_float32, on_stored_vectors, score_block
from ecpfs_viewer.model.tasks import Counted, ProgressCallback, checkpoint

DEFAULT_TOLERANCE = 0.05
LEAF_BATCH = 250


@dataclass(frozen=True, eq=False)
class BoundaryReport:
    """Boundary items per node: counts and items beneath, per level, aligned with the map's bands."""

    index_map: IndexMap
    tolerance: float
    boundary: dict[int, np.ndarray]  # level -> int64 boundary items beneath each node (at that level)
    items: dict[int, np.ndarray]  # level -> int64 items scored beneath each node
    scored: int  # items scored

    def shares(self, level: int) -> np.ndarray:
        items = self.items[level]
        out = np.full(items.size, np.nan)
        np.divide(self.boundary[level], items, out=out, where=items > 0)
        return out

    def node_share(self, level: int, node_id: int) -> tuple[int, int] | None:
        """(boundary items, items scored) beneath a node; None when the map has no such node."""
        i = self.index_map.band(level).index_of(node_id)
        if i is None:
            return None
        return int(self.boundary[level][i]), int(self.items[level][i])

    def describe(self, level: int, node_id: int) -> str | None:
        """The fact line of a node page: 'boundary items: 12% (30 of 250 within 5% of a second representative)'."""
        found = self.node_share(level, node_id)
        if found is None or not found[1]:
            return None
        b, n = found
        return (f"boundary items: {b / n:.0%} ({b:,} of {n:,} score a second representative of lvl_{level} "
                f"within {self.tolerance:.0%} of the best)")

    def overlay(self) -> MapOverlay:
        return MapOverlay("boundary", f"boundary items ({self.tolerance:.0%})",
                          {band.level: self.shares(band.level) for band in self.index_map.levels},
                          f"share of the node's items whose second-best representative at its level scores within "
                          f"{self.tolerance:.0%} of the best: 0 .. 100%", high=1.0,
                          formatter=lambda v: f"{v:.0%}")

    def level_share(self, level: int) -> float | None:
        n = int(self.items[level].sum())
        return None if not n else float(self.boundary[level].sum()) / n

    def to_dict(self) -> dict[str, Any]:
        return {"tolerance": self.tolerance, "items_scored": self.scored,
                "levels": [{"level": band.level, "share": self.level_share(band.level)}
                           for band in self.index_map.levels]}


def boundary_items(reader: NodeReader, index_map: IndexMap, tolerance: float = DEFAULT_TOLERANCE,
                   progress: ProgressCallback | None = None, cancel: threading.Event | None = None,
                   leaf_batch: int = LEAF_BATCH) -> BoundaryReport:
    """Score every item against its candidate representatives at every level (module docstring)."""
    n_levels = len(index_map.levels)
    boundary = {band.level: np.zeros(len(band), np.int64) for band in index_map.levels}
    items = {band.level: np.zeros(len(band), np.int64) for band in index_map.levels}
    leaves = index_map.band(n_levels)
    ancestors = leaf_ancestors(index_map)
    candidates: dict[tuple[int, int], NodeData | None] = {}
    readable = np.flatnonzero(leaves.rows > 0)
    scored = 0
    for start in range(0, readable.size, leaf_batch):
        checkpoint(cancel)
        part = readable[start:start + leaf_batch]
        nodes = reader.read_nodes(n_levels, [int(n) for n in leaves.node_ids[part]])
        kept = [(p, node) for p, node in zip(part, nodes, strict=True) if node is not None and node.ids.size]
        if not kept:
            continue
        vectors = np.concatenate([node.vectors for _, node in kept])
        sq = np.concatenate([node.sq_norms for _, node in kept])
        leaf_pos = np.repeat(np.asarray([p for p, _ in kept], np.int64), [node.ids.size for _, node in kept])
        scored += leaf_pos.size
        for depth in range(n_levels):  # level depth+1: candidates are the children of the ancestor one up
            here = ancestors[depth][leaf_pos]
            up = ancestors[depth - 1][leaf_pos] if depth else np.zeros(leaf_pos.size, np.int64)
            linked = here >= 0
            np.add.at(items[depth + 1], here[linked], 1)
            flags = np.zeros(leaf_pos.size, bool)
            for owner in np.unique(up[linked & (up >= 0)]):
                rows = np.flatnonzero(linked & (up == owner))
                cand = reader.root if depth == 0 else _candidate(reader, candidates, index_map, depth, int(owner))
                if cand is None or cand.ids.size < 2:
                    continue
                flags[rows] = _near_tie(reader, cand, vectors[rows], sq[rows], tolerance)
            np.add.at(boundary[depth + 1], here[flags], 1)
        if progress is not None:
            progress(Counted(min(start + leaf_batch, readable.size), readable.size, "leaves scored"))
    return BoundaryReport(index_map, tolerance, boundary, items, scored)


def _candidate(reader: NodeReader, cache: dict[tuple[int, int], NodeData | None], index_map: IndexMap,
               depth: int, owner: int) -> NodeData | None:
    level = depth  # the owner is at level `depth` (one above the candidates' level depth+1)
    node_id = int(index_map.band(level).node_ids[owner])
    key = (level, node_id)
    if key not in cache:
        try:
            cache[key] = reader.node(level, node_id)
        except Exception:  # an unreadable node: its children are not scored (the map marks it)
            cache[key] = None
    return cache[key]


@on_stored_vectors
def _near_tie(reader: NodeReader, cand: NodeData, vectors: np.ndarray, sq: np.ndarray, tolerance: float) -> np.ndarray:
    dots = as_float32(vectors.astype(np.float64) @ cand.vectors.astype(np.float64).T)
    scores = score_block(reader.metric, reader.is_normalized, dots, cand.sq_norms, sq[:, None])
    two = np.partition(scores, 1, axis=1)[:, :2]
    best, second = two[:, 0].astype(np.float64), two[:, 1].astype(np.float64)
    near: np.ndarray = (second - best) <= tolerance * np.abs(best)
    return near


def rank_correlation(a: np.ndarray, b: np.ndarray) -> float | None:
    """Spearman's rank correlation of two equal-length arrays (ties get their mean rank); NaN pairs
    are left out; None with fewer than 3 pairs or when either side is constant."""
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    if a.size < 3:
        return None
    ra, rb = _mean_ranks(a), _mean_ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


def boundary_miss_correlation(report: BoundaryReport, per_node_misses: np.ndarray, level: int) -> float | None:
    """How the nodes of a level that hold more boundary items rank against those that lose more neighbours
    (:func:`rank_correlation` of the boundary share and the misses per node; arrays of the same map)."""
    return rank_correlation(report.shares(level), per_node_misses.astype(np.float64))


def _mean_ranks(values: np.ndarray) -> np.ndarray:
    _unique, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    starts = np.cumsum(counts) - counts
    ranks: np.ndarray = (starts + (counts - 1) / 2.0)[inverse]
    return ranks
