"""Exact k nearest neighbours over every stored item: the ground truth recall is measured against.

All leaves are read once (through the store's batched, concurrent reads) into one float32
matrix; queries are scored against it in blocks with one BLAS matrix product per block, with
the same metric and score convention as eCP search (§4.1), ties broken by item id.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ecpfs_viewer.model.search.index import NodeData, row_dots, score_block, squared_norms
from ecpfs_viewer.model.search.results import ProgressCallback, QueryError, Reporter, SearchHit

if TYPE_CHECKING:
    from ecpfs_viewer.model.search.index import IndexReader

#: Leaves read per batch (embeddings and item_ids): one progress step each.
LEAF_READ_BATCH = 200
#: Stored items scored per matrix product.
ITEM_BLOCK = 16384
#: Extra candidates kept from the float32 blocks, re-scored exactly like search before the final cut.
RESCORE_MARGIN = 16


@dataclass(frozen=True)
class LeafMatrix:
    """Every stored item: vectors (float32), squared norms, item ids, and where each row lives."""

    vectors: np.ndarray  # (N, dim)
    sq_norms: np.ndarray  # (N,)
    ids: np.ndarray  # (N,) int64
    leaves: np.ndarray  # (N,) int64 leaf node id of each row
    rows: np.ndarray  # (N,) int64 row inside that leaf
    offsets: dict[int, tuple[int, int]]  # leaf id -> [start, stop) in the matrix

    def __len__(self) -> int:
        return len(self.ids)

    def node(self, leaf: int) -> NodeData | None:
        """A leaf as a node view into the matrix (no copy), None when the leaf does not exist."""
        span = self.offsets.get(leaf)
        if span is None:
            return None
        start, stop = span
        return NodeData(self.vectors[start:stop], self.sq_norms[start:stop], self.ids[start:stop])


def load_leaves(index: IndexReader, reporter: Reporter) -> LeafMatrix:
    """Read every leaf (embeddings and item_ids) and stack them; reports progress, honours cancel."""
    leaves = index.leaf_ids()
    vectors: list[np.ndarray] = []
    ids: list[np.ndarray] = []
    present: list[int] = []
    reporter.report("reading leaves", 0, len(leaves))
    for start in range(0, len(leaves), LEAF_READ_BATCH):
        part = leaves[start:start + LEAF_READ_BATCH]
        for leaf, node in zip(part, index.read_nodes(index.levels, part, reporter), strict=True):
            if node is not None:
                present.append(leaf)
                vectors.append(node.vectors)
                ids.append(node.ids)
        reporter.report("reading leaves", start + len(part), len(leaves))
    sizes = [len(i) for i in ids]
    bounds = np.cumsum([0, *sizes])
    v = np.concatenate(vectors) if vectors else np.empty((0, index.dim), np.float32)
    matrix = LeafMatrix(
        vectors=v,
        sq_norms=squared_norms(v),
        ids=np.concatenate(ids) if ids else np.empty(0, np.int64),
        leaves=np.repeat(np.asarray(present, np.int64), sizes),
        rows=np.concatenate([np.arange(n) for n in sizes]) if sizes else np.empty(0, np.int64),
        offsets={leaf: (int(bounds[j]), int(bounds[j + 1])) for j, leaf in enumerate(present)},
    )
    index.locator.learn(present, ids)
    return matrix


@dataclass(frozen=True)
class ExactNeighbours:
    """The k best items of each query row; rows with fewer candidates are padded (id -1, score inf)."""

    ids: np.ndarray  # (queries, k) int64
    scores: np.ndarray  # (queries, k) float32
    leaves: np.ndarray  # (queries, k) int64
    rows: np.ndarray  # (queries, k) int64

    def hits(self, query: int) -> tuple[SearchHit, ...]:
        keep = self.ids[query] >= 0
        return tuple(SearchHit(int(i), float(s), int(leaf), int(r)) for i, s, leaf, r in zip(
            self.ids[query][keep], self.scores[query][keep], self.leaves[query][keep], self.rows[query][keep],
            strict=True))


def exact_knn(index: IndexReader, queries: Any, k: int, exclude: frozenset[int] = frozenset(),
              self_ids: Sequence[int | None] | None = None, progress: ProgressCallback | None = None,
              cancel: threading.Event | None = None) -> ExactNeighbours:
    """Exact top-k for each query row over every stored item.

    Blocks of items are scored in float32 with one matrix product each and the best k + margin
    kept; those candidates are then scored exactly as eCP search scores them (:func:`row_dots`)
    and cut to k, ties by item id, so search and exact search agree on scores bit for bit.
    ``exclude`` is never returned; ``self_ids[i]`` (when given and not None) is left out of query
    i's list only, for queries that are stored items.
    """
    if k < 1:
        raise QueryError(f"k must be at least 1 (got {k})")
    q = index.prepare_queries(queries)
    if self_ids is not None and len(self_ids) != len(q):
        raise QueryError(f"{len(self_ids)} self ids for {len(q)} queries")
    reporter = Reporter(progress, cancel)
    data = index.leaf_matrix(progress, cancel)
    n = len(data)
    q_sq = squared_norms(q)[:, None]
    keep = k + RESCORE_MARGIN
    own = np.array([-1 if s is None else s for s in self_ids], np.int64) if self_ids is not None else None
    excluded = np.fromiter(exclude, np.int64, len(exclude)) if exclude else None
    best_ids: np.ndarray = np.full((len(q), 0), -1, np.int64)
    best_scores: np.ndarray = np.full((len(q), 0), np.inf, np.float32)
    best_pos: np.ndarray = np.zeros((len(q), 0), np.int64)
    blocks = range(0, n, ITEM_BLOCK)
    for b, start in enumerate(blocks):
        reporter.report("exact search", b, len(blocks))
        stop = min(start + ITEM_BLOCK, n)
        ids = data.ids[start:stop]
        scores = score_block(index.metric, index.is_normalized, q @ data.vectors[start:stop].T,
                             data.sq_norms[start:stop], q_sq)
        if excluded is not None:
            scores[:, np.isin(ids, excluded)] = np.inf
        if own is not None:
            scores[ids[None, :] == own[:, None]] = np.inf
        cand_pos, cand_scores = _block_top(scores, ids, keep)
        cand_pos += start
        merged_pos = np.concatenate([best_pos, cand_pos], axis=1)
        merged_scores = np.concatenate([best_scores, cand_scores], axis=1)
        merged_ids = data.ids[merged_pos] if merged_pos.size else np.full(merged_pos.shape, -1, np.int64)
        order = np.lexsort((merged_ids, merged_scores), axis=-1)[:, :keep]
        best_pos = np.take_along_axis(merged_pos, order, 1)
        best_scores = np.take_along_axis(merged_scores, order, 1)
        best_ids = np.take_along_axis(merged_ids, order, 1)
    reporter.report("exact search", len(blocks), len(blocks))
    best_scores = _rescore(index, data, q, q_sq, best_pos, best_scores)
    order = np.lexsort((best_ids, best_scores), axis=-1)[:, :k]
    best_pos, best_scores, best_ids = (np.take_along_axis(a, order, 1) for a in (best_pos, best_scores, best_ids))
    return _padded(data, best_pos, best_scores, best_ids, k)


def _rescore(index: IndexReader, data: LeafMatrix, q: np.ndarray, q_sq: np.ndarray, pos: np.ndarray,
             scores: np.ndarray) -> np.ndarray:
    """The candidates' scores as search computes them; excluded candidates (inf) stay inf."""
    out = scores.copy()
    for i in range(len(q)):
        valid = np.isfinite(scores[i])
        if valid.any():
            rows = pos[i][valid]
            out[i][valid] = score_block(index.metric, index.is_normalized, row_dots(data.vectors[rows], q[i]),
                                        data.sq_norms[rows], q_sq[i, 0])
    return out


def _block_top(scores: np.ndarray, ids: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions and scores of the best min(k, n) columns of each row, ties at the cut-off by item id."""
    kb = min(k, scores.shape[1])
    if kb == scores.shape[1]:
        pos = np.broadcast_to(np.arange(kb), scores.shape).copy()
        return pos, scores.copy()
    pos = np.argpartition(scores, kb - 1, axis=1)[:, :kb]
    top = np.take_along_axis(scores, pos, 1)
    cutoff = top.max(axis=1)
    tied = np.nonzero((scores <= cutoff[:, None]).sum(axis=1) > kb)[0]
    for r in tied:  # rare: more columns share the cut-off score than fit; keep the lowest item ids
        cols = np.nonzero(scores[r] <= cutoff[r])[0]
        cols = cols[np.lexsort((ids[cols], scores[r, cols]))[:kb]]
        pos[r] = cols
        top[r] = scores[r, cols]
    return pos, top


def _padded(data: LeafMatrix, pos: np.ndarray, scores: np.ndarray, ids: np.ndarray, k: int) -> ExactNeighbours:
    """Results padded to k columns; excluded items (score inf) are dropped to padding."""
    nq = pos.shape[0]
    out_ids = np.full((nq, k), -1, np.int64)
    out_scores = np.full((nq, k), np.inf, np.float32)
    out_leaves = np.full((nq, k), -1, np.int64)
    out_rows = np.full((nq, k), -1, np.int64)
    width = pos.shape[1]
    valid = np.isfinite(scores)
    out_ids[:, :width] = np.where(valid, ids, -1)
    out_scores[:, :width] = np.where(valid, scores, np.inf)
    if width:
        out_leaves[:, :width] = np.where(valid, data.leaves[pos], -1)
        out_rows[:, :width] = np.where(valid, data.rows[pos], -1)
    return ExactNeighbours(out_ids, out_scores, out_leaves, out_rows)
