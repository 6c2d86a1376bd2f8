"""Routing of vectors down an eCP tree: the "nearest row" rule of spec §3.6, vectorised.

Scores follow upstream: L2 maximises ``-(|a|^2 - 2 a.x + |x|^2)``, IP and normalised L2
maximise ``a.x``; the highest-index maximal row wins ties. Dot products come from BLAS in
float64; rows whose best candidates are too close to call are re-scored with a
position-independent reduction and compared as float32, so identical candidates always tie
exactly (and the last one wins) whatever the batch composition.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ecpfs_viewer.model.ecpfs.paths import node_path

#: Candidates whose float64 score lies within this fraction of the score scale are re-scored.
_CLOSE = 1e-6

#: Entries of one block of the score matrix (4 MiB of float64).
_BLOCK_SCORES = 1 << 19
#: A block's matrix product has at least this many multiply-adds (above BLAS's small-matrix paths).
_MIN_PRODUCT = 1 << 22


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
    """Index of the best row of ``node`` for each row of ``x`` (float64), last maximum wins.

    The score matrix is made a block of rows at a time (about :data:`_BLOCK_SCORES` entries), so
    memory stays bounded and the passes over it stay in cache: routing 100,000 rows to 4,000
    representatives in one piece made 3 GB temporaries. Blocking does not change a score: BLAS
    gives each entry the same bits whatever the number of rows as long as the product is not
    tiny (numpy scores a single row with another routine, OpenBLAS has small-matrix kernels for
    M·N·K up to about 10^6), so ``x`` is cut into equal blocks that are all well above that.
    """
    n, dim = node.vectors.shape
    m = x.shape[0]
    if n == 1:
        return np.zeros(m, dtype=np.int64)
    step = max(2, -(-max(_BLOCK_SCORES, _MIN_PRODUCT // max(1, dim)) // n))
    blocks = max(1, m // step)  # each block has at least ``step`` rows
    if blocks == 1:
        return _nearest_block(node, x, x_sq, use_dot)
    pick = np.empty(m, dtype=np.int64)
    for b in range(blocks):
        lo, hi = b * m // blocks, (b + 1) * m // blocks
        pick[lo:hi] = _nearest_block(node, x[lo:hi], x_sq[lo:hi], use_dot)
    return pick


def _nearest_block(node: NodeTable, x: np.ndarray, x_sq: np.ndarray, use_dot: bool) -> np.ndarray:
    a = node.vectors
    s = x @ a.T
    if not use_dot:  # s = -(|a|^2 - 2 a.x + |x|^2), the same operations in place
        np.multiply(s, 2.0, out=s)
        np.subtract(node.sq_norms[None, :], s, out=s)
        np.add(s, x_sq[:, None], out=s)
        np.negative(s, out=s)
    pick: np.ndarray = s.argmax(axis=1)
    best = s[np.arange(s.shape[0]), pick]
    scale = float(node.sq_norms.max()) + x_sq + 1e-30
    floor = best - _CLOSE * scale
    # a row with one candidate in reach has a unique maximum (first == last); the others are settled
    # by the canonical scores, ties to the last
    ambiguous = np.flatnonzero(np.count_nonzero(s >= floor[:, None], axis=1) > 1)
    for r in ambiguous:
        cols = np.flatnonzero(s[r] >= floor[r])
        sc = _canonical_scores(x[r], a[cols], use_dot)
        top = sc.max()
        pick[r] = cols[np.flatnonzero(sc == top)[-1]]
    return pick


class MissingNodeError(RuntimeError):
    """A route reached an internal node that is not stored (spec §3.5: the build or insert fails).

    ``level`` and ``node_id`` name the node, ``row`` is one row of the routed batch that reached it.
    """

    def __init__(self, level: int, node_id: int, row: int) -> None:
        self.level = level
        self.node_id = node_id
        self.row = row
        self.path = node_path(level, node_id)
        super().__init__(f"corrupt tree: route reached missing node {self.path}")


class Router:
    """Routes vectors from the root down through the levels built so far."""

    def __init__(self, root: NodeTable, use_dot: bool,
                 fetch: Callable[[int, list[int]], None] | None = None) -> None:
        self.root = root
        self.use_dot = use_dot
        self.levels: list[dict[int, NodeTable]] = []  # levels[l-1] = nodes of lvl_l
        #: called with (level, node ids reached there) before they are used: an insert reads only the
        #: nodes its rows pass through into ``levels`` (a build has them all already)
        self.fetch = fetch

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
            if self.fetch is not None:
                self.fetch(level, sorted_ids[starts].tolist())
            for s, e in zip(starts.tolist(), ends.tolist(), strict=False):
                node_id = int(sorted_ids[s])
                node = nodes.get(node_id)
                rows = order[s:e]
                if node is None:
                    raise MissingNodeError(level, node_id, int(rows[0]))  # the first (a stable sort)
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
