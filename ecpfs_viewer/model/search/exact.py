"""Exact k nearest neighbours over every stored item: the ground truth recall is measured against.

All leaves are read once (through the store's batched, concurrent reads) into one float32
matrix; queries are scored against it in blocks with one BLAS matrix product per block, with
the same metric and score convention as eCP search (§4.1), ties broken by item id.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ecpfs_viewer.model.blas import one_blas_thread
from ecpfs_viewer.model.search.reader import LeafMatrix, NodeReader, row_dots, score_block, squared_norms
from ecpfs_viewer.model.search.results import ProgressCallback, QueryError, Reporter, SearchHit

if TYPE_CHECKING:
    from ecpfs_viewer.model.search.locate import ItemLocator

#: Leaves read per batch (embeddings and item_ids): one progress step each.
LEAF_READ_BATCH = 200
#: Stored items scored per matrix product.
ITEM_BLOCK = 16384
#: Extra candidates kept from the float32 blocks, re-scored exactly like search before the final cut.
RESCORE_MARGIN = 16
_NO_ID = np.iinfo(np.int64).max  # sorts padding after every real item with the same key


class LeafSource(Protocol):
    """What exact search needs of a reader: its scoring rule and every leaf in one matrix (cached)."""

    metric: str
    is_normalized: bool

    def prepare_queries(self, queries: Any) -> np.ndarray: ...

    def leaf_matrix(self, progress: ProgressCallback | None = None,
                    cancel: threading.Event | None = None) -> LeafMatrix: ...


def load_leaves(index: NodeReader, locator: ItemLocator, reporter: Reporter) -> LeafMatrix:
    """Read every leaf (embeddings and item_ids) and stack them; reports progress, honours cancel.

    The locator is given the item ids read, so locating an item afterwards reads nothing."""
    leaves = index.leaf_ids()
    vectors: list[np.ndarray] = []
    norms: list[np.ndarray] = []
    ids: list[np.ndarray] = []
    present: list[int] = []
    reporter.report("reading leaves", 0, len(leaves))
    for start in range(0, len(leaves), LEAF_READ_BATCH):
        part = leaves[start:start + LEAF_READ_BATCH]
        for leaf, node in zip(part, index.read_nodes(index.levels, part, reporter), strict=True):
            if node is not None:
                present.append(leaf)
                vectors.append(node.vectors)
                norms.append(node.sq_norms)
                ids.append(node.ids)
        reporter.report("reading leaves", start + len(part), len(leaves))
    sizes = [len(i) for i in ids]
    bounds = np.cumsum([0, *sizes])
    v = np.concatenate(vectors) if vectors else np.empty((0, index.dim), np.float32)
    matrix = LeafMatrix(
        vectors=v,
        sq_norms=np.concatenate(norms) if norms else np.empty(0, np.float32),
        ids=np.concatenate(ids) if ids else np.empty(0, np.int64),
        leaves=np.repeat(np.asarray(present, np.int64), sizes),
        rows=np.concatenate([np.arange(n) for n in sizes]) if sizes else np.empty(0, np.int64),
        offsets={leaf: (int(bounds[j]), int(bounds[j + 1])) for j, leaf in enumerate(present)},
    )
    locator.learn(present, ids)
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


def exact_knn(index: LeafSource, queries: Any, k: int, exclude: frozenset[int] = frozenset(),
              self_ids: Sequence[int | None] | None = None, progress: ProgressCallback | None = None,
              cancel: threading.Event | None = None) -> ExactNeighbours:
    """Exact top-k for each query row over every stored item.

    Blocks of items are ranked in float32 with one BLAS matrix product each, keeping the best
    k + margin per query (every item tied with the last one kept comes along); those candidates
    are then scored exactly as eCP search scores them (:func:`row_dots`) and cut to k, ties by
    item id, so search and exact search give an item the same score bit for bit.
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
    keep = k + RESCORE_MARGIN
    own = np.array([-1 if s is None else s for s in self_ids], np.int64) if self_ids is not None else None
    excluded = np.fromiter(exclude, np.int64, len(exclude)) if exclude else None
    blocks = range(0, len(data), ITEM_BLOCK)
    with one_blas_thread():
        best_key, best_pos = _scan(index, data, q, blocks, keep, own, excluded, reporter)
    reporter.report("exact search", len(blocks), len(blocks))
    return _final(index, data, q, best_key, best_pos, k)




def _scan(index: LeafSource, data: LeafMatrix, q: np.ndarray, blocks: range, keep: int, own: np.ndarray | None,
          excluded: np.ndarray | None, reporter: Reporter) -> tuple[np.ndarray, np.ndarray]:
    """The best `keep` ranking keys and matrix positions per query over every block of items."""
    best_key = np.full((len(q), keep), np.inf, np.float32)
    best_pos = np.full((len(q), keep), -1, np.int64)
    for b, start in enumerate(blocks):
        reporter.report("exact search", b, len(blocks))
        stop = min(start + ITEM_BLOCK, len(data))
        key = _ranking_keys(index, q, data.vectors[start:stop], data.sq_norms[start:stop])
        ids = data.ids[start:stop]
        if excluded is not None:
            key[:, np.isin(ids, excluded)] = np.inf
        if own is not None:
            key[ids[None, :] == own[:, None]] = np.inf
        threshold = best_key[:, -1].copy()  # worst kept so far: nothing above it can enter
        filling = np.nonzero(~np.isfinite(threshold))[0]
        if len(filling) and key.shape[1] > keep:
            threshold[filling] = np.partition(key[filling], keep - 1, axis=1)[:, keep - 1]
        rows, cols = np.nonzero(key <= threshold[:, None])
        best_key, best_pos = _merge(best_key, best_pos, rows, key[rows, cols], cols + start, data.ids, keep)
    return best_key, best_pos


def _ranking_keys(index: LeafSource, q: np.ndarray, vectors: np.ndarray, sq_norms: np.ndarray) -> np.ndarray:
    """Per (query, item) a float32 key ordered like the score (lower is better), without the sqrt."""
    key: np.ndarray = q @ vectors.T
    if index.metric == "IP" or index.is_normalized:
        np.negative(key, out=key)  # larger dot product, smaller score
    else:
        key *= np.float32(-2.0)
        key += sq_norms[None, :]  # |e|^2 - 2 e.q: the squared distance less the per-query |q|^2
    return key


def _merge(best_key: np.ndarray, best_pos: np.ndarray, rows: np.ndarray, keys: np.ndarray, pos: np.ndarray,
           ids: np.ndarray, keep: int) -> tuple[np.ndarray, np.ndarray]:
    """The best `keep` (key, then item id) of each row among the kept ones and new candidates."""
    nq = best_key.shape[0]
    all_rows = np.concatenate([np.repeat(np.arange(nq), keep), rows])
    all_keys = np.concatenate([best_key.ravel(), keys])
    all_pos = np.concatenate([best_pos.ravel(), pos])
    all_ids = np.where(all_pos >= 0, ids[np.maximum(all_pos, 0)], _NO_ID)
    order = np.lexsort((all_ids, all_keys, all_rows))
    sorted_rows = all_rows[order]
    rank = np.arange(len(order)) - np.searchsorted(sorted_rows, np.arange(nq))[sorted_rows]
    chosen = order[rank < keep]  # `keep` per row (padding included), rows in order
    return all_keys[chosen].reshape(nq, keep), all_pos[chosen].reshape(nq, keep)


def _final(index: LeafSource, data: LeafMatrix, q: np.ndarray, key: np.ndarray, pos: np.ndarray,
           k: int) -> ExactNeighbours:
    """Score the candidates the way search does, order by (score, item id), keep k, pad the rest."""
    valid = (pos >= 0) & np.isfinite(key)
    scores = np.full(pos.shape, np.inf, np.float32)
    q_sq = squared_norms(q)
    for i in range(len(q)):
        rows = pos[i][valid[i]]
        if len(rows):
            scores[i][valid[i]] = score_block(index.metric, index.is_normalized, row_dots(data.vectors[rows], q[i]),
                                              data.sq_norms[rows], q_sq[i])
    valid &= np.isfinite(scores)
    ids = np.where(valid, data.ids[np.maximum(pos, 0)] if len(data) else -1, _NO_ID)
    order = np.lexsort((ids, scores), axis=-1)[:, :k]  # keep > k columns, so always k left
    pos, scores, ids, valid = (np.take_along_axis(a, order, 1) for a in (pos, scores, ids, valid))
    safe = np.maximum(pos, 0)
    return ExactNeighbours(
        np.where(valid, ids, -1),
        np.where(valid, scores, np.inf).astype(np.float32),
        np.where(valid, data.leaves[safe], -1) if len(data) else np.full(pos.shape, -1, np.int64),
        np.where(valid, data.rows[safe], -1) if len(data) else np.full(pos.shape, -1, np.int64),
    )
