"""Routing of vectors down an eCP tree: the "nearest row" rule of spec §3.6, vectorised.

Scores follow upstream: L2 maximises ``-(|a|^2 - 2 a.x + |x|^2)``, IP and normalised L2
maximise ``a.x``; the highest-index maximal row wins ties. Dot products come from BLAS in
float64; rows whose best candidates are too close to call are re-scored with a
position-independent reduction and compared as float32, so identical candidates always tie
exactly (and the last one wins) whatever the batch composition.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ecpfs_viewer.model.ecpfs.paths import node_path

#: Candidates whose float64 score lies within this fraction of the score scale are re-scored.
_CLOSE = 1e-6



@dataclass
class NodeTable:
    """One node's rows as used for routing: widened vectors, squared norms, child ids."""

    vectors: np.ndarray  # (n, dim) float64 (exact widening of the stored values)
    sq_norms: np.ndarray  # (n,) float64
    ids: np.ndarray  # (n,) int64, representative row ids (children) or item ids

    @classmethod
    def from_rows(cls, vectors: np.ndarray, ids: np.ndarray) -> NodeTable:
        v = np.ascontiguousarray(vectors, dtype=np.float64)
        return cls(v, np.einsum("ij,ij->i", v, v), np.asarray(ids, dtype=np.int64))


def _canonical_scores(x: np.ndarray, a: np.ndarray, use_dot: bool) -> np.ndarray:
    """Scores of rows ``a`` (c, dim) for one vector ``x`` computed so equal rows give equal values."""
    dots: np.ndarray = (a * x).sum(axis=1)
    if use_dot:
        return dots.astype(np.float32)
    a2: np.ndarray = (a * a).sum(axis=1)
    x2 = (x * x).sum()
    scores: np.ndarray = -(a2 - 2.0 * dots + x2)
    return scores.astype(np.float32)


def nearest(node: NodeTable, x: np.ndarray, x_sq: np.ndarray, use_dot: bool) -> np.ndarray:
    """Index of the best row of ``node`` for each row of ``x`` (float64), last maximum wins."""
    a = node.vectors
    n = a.shape[0]
    if n == 1:
        return np.zeros(x.shape[0], dtype=np.int64)
    dots = x @ a.T
    s = dots if use_dot else -(node.sq_norms[None, :] - 2.0 * dots + x_sq[:, None])
    best = s.max(axis=1)
    scale = float(node.sq_norms.max()) + x_sq + 1e-30
    close = s >= (best - _CLOSE * scale)[:, None]
    pick: np.ndarray = n - 1 - np.argmax(s[:, ::-1], axis=1)
    ambiguous = np.flatnonzero(close.sum(axis=1) > 1)
    for r in ambiguous:
        cols = np.flatnonzero(close[r])
        sc = _canonical_scores(x[r], a[cols], use_dot)
        top = sc.max()
        pick[r] = cols[np.flatnonzero(sc == top)[-1]]
    return pick


class Router:
    """Routes vectors from the root down through the levels built so far."""

    def __init__(self, root: NodeTable, use_dot: bool) -> None:
        self.root = root
        self.use_dot = use_dot
        self.levels: list[dict[int, NodeTable]] = []  # levels[l-1] = nodes of lvl_l

    def add_level(self, nodes: dict[int, NodeTable]) -> None:
        self.levels.append(nodes)

    def route(self, x32: np.ndarray, target: int) -> np.ndarray:
        """Node id at level ``target`` (1-based) for each row of ``x32``."""
        x = np.ascontiguousarray(x32, dtype=np.float64)
        x_sq = np.einsum("ij,ij->i", x, x)
        cur: np.ndarray = self.root.ids[nearest(self.root, x, x_sq, self.use_dot)]
        for level in range(1, target):
            nodes = self.levels[level - 1]
            order = np.argsort(cur, kind="stable")
            sorted_ids = cur[order]
            cuts = np.flatnonzero(np.diff(sorted_ids)) + 1
            starts = np.concatenate(([0], cuts))
            ends = np.concatenate((cuts, [len(order)]))
            nxt = np.empty_like(cur)
            for s, e in zip(starts.tolist(), ends.tolist(), strict=False):
                node_id = int(sorted_ids[s])
                node = nodes.get(node_id)
                if node is None:
                    raise RuntimeError(f"corrupt tree: route reached missing node {node_path(level, node_id)}")
                rows = order[s:e]
                nxt[rows] = node.ids[nearest(node, x[rows], x_sq[rows], self.use_dot)]
            cur = nxt
        return cur


def group_rows(assign: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """``(node_id, ascending row indices)`` for every node that received rows."""
    order = np.argsort(assign, kind="stable")
    sorted_ids = assign[order]
    cuts = np.flatnonzero(np.diff(sorted_ids)) + 1
    return [(int(seg_ids[0]), rows) for seg_ids, rows in
            zip(np.split(sorted_ids, cuts), np.split(order, cuts), strict=False) if len(rows)]
