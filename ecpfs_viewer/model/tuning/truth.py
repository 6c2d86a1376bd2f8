"""Exact neighbours of the tuning queries over an in-memory (or memory-mapped) array, once for all variants.

Every variant of a tune indexes the same rows with the same item ids (their row numbers), so the
ground truth is computed once from the array itself, not from any one index: one float32 BLAS
product per block of rows ranks candidates, the best ``k + margin`` of each query are kept, and
the survivors are re-scored in float64 before the cut to k (ties by item id).
"""

from __future__ import annotations

import threading

import numpy as np

from ecpfs_viewer.model.blas import one_blas_thread
from ecpfs_viewer.model.search.exact import ExactNeighbours
from ecpfs_viewer.model.tasks import Counted, ProgressCallback, checkpoint

#: rows of the input scored per matrix product
BLOCK_ROWS = 16_384
#: extra candidates kept from the float32 ranking before the exact re-score
MARGIN = 16


def _keys(block: np.ndarray, q: np.ndarray, metric: str) -> np.ndarray:
    """Ranking keys (smaller is nearer), (queries, rows) float32."""
    dots: np.ndarray = q @ block.T
    if metric == "IP":
        return -dots
    keys: np.ndarray = np.einsum("ij,ij->i", block, block)[None, :] - 2 * dots
    return keys.astype(np.float32, copy=False)


def exact_neighbours(data: np.ndarray, queries: np.ndarray, k: int, metric: str = "L2",
                     progress: ProgressCallback | None = None,
                     cancel: threading.Event | None = None) -> ExactNeighbours:
    """The exact top-k row numbers of ``data`` for each query (leaves and rows unknown: -1)."""
    rows = len(data)
    q = np.ascontiguousarray(queries, dtype=np.float32)
    keep = min(rows, k + MARGIN)
    cand = np.empty((len(q), 0), np.int64)
    cand_keys = np.empty((len(q), 0), np.float32)
    with one_blas_thread():
        for start in range(0, rows, BLOCK_ROWS):
            checkpoint(cancel)
            block = np.asarray(data[start:start + BLOCK_ROWS], dtype=np.float32)
            keys = np.concatenate([cand_keys, _keys(block, q, metric)], axis=1)
            ids = np.concatenate([cand, np.broadcast_to(np.arange(start, start + len(block)), (len(q), len(block)))],
                                 axis=1)
            if keys.shape[1] > keep:
                part = np.argpartition(keys, keep - 1, axis=1)[:, :keep]
                keys = np.take_along_axis(keys, part, axis=1)
                ids = np.take_along_axis(ids, part, axis=1)
            cand, cand_keys = ids, keys
            if progress is not None:
                progress(Counted(min(rows, start + BLOCK_ROWS), rows, "exact neighbours"))
    vectors = np.asarray(data[np.sort(np.unique(cand))], dtype=np.float64)
    lookup = np.sort(np.unique(cand))
    v = vectors[np.searchsorted(lookup, cand)]  # (queries, keep, dim)
    q64 = q.astype(np.float64)
    dots = np.einsum("qkd,qd->qk", v, q64)
    scores = -dots if metric == "IP" else np.einsum("qkd,qkd->qk", v, v) - 2 * dots + (q64 * q64).sum(1)[:, None]
    order = np.lexsort((cand, scores), axis=1)[:, :k]
    ids = np.take_along_axis(cand, order, axis=1)
    final = np.take_along_axis(scores, order, axis=1).astype(np.float32)
    if ids.shape[1] < k:  # fewer rows than k: pad as ExactNeighbours does
        pad = k - ids.shape[1]
        ids = np.pad(ids, ((0, 0), (0, pad)), constant_values=-1)
        final = np.pad(final, ((0, 0), (0, pad)), constant_values=np.inf)
    unknown = np.full(ids.shape, -1, np.int64)
    return ExactNeighbours(ids=ids.astype(np.int64), scores=final, leaves=unknown, rows=unknown.copy())
