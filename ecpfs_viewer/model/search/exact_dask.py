"""Exact k nearest neighbours as a dask graph over blocks of leaves, for indexes one machine cannot hold.

The in-process exact search (:mod:`exact`) stacks every leaf into one matrix in memory. Here the
leaves become a dask array of blocks (one task reads a block of leaves through the store), each
block keeps its best ``k + RESCORE_MARGIN`` candidates per query, scored exactly as eCP search
scores them, and the candidates are merged down to k, ties by item id. Memory is one block per
worker thread. On the local threaded scheduler the blocks are a dask array and a tree reduction
merges them; on a ``dask.distributed`` cluster given as ``tcp://HOST:PORT`` (the optional
``scale`` extra, through :mod:`cluster`) each block is one task, retried on error, and the
caller merges the lists in block order as they arrive (progress per block, a cancel that
cancels the tasks). Workers of a cluster open the index themselves, so its location must be
one they can reach (a URL, or a path on a shared file system).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ecpfs_viewer.model.ecpfs.opened_index import open_index
from ecpfs_viewer.model.search.cluster import SCALE_EXTRA_HINT, SchedulerError, is_cluster, run_tasks
from ecpfs_viewer.model.search.exact import RESCORE_MARGIN, ExactNeighbours
from ecpfs_viewer.model.search.index import IndexReader, index_reader
from ecpfs_viewer.model.search.reader import row_dots, score_block, squared_norms
from ecpfs_viewer.model.search.results import ProgressCallback, QueryError, Reporter, SearchCancelled

if TYPE_CHECKING:
    from ecpfs_viewer.model.storage.options import RemoteOptions

#: Leaves read and scored by one task (about 12,800 rows at 50 rows per leaf).
LEAF_BLOCK = 256
_NO_ID = np.iinfo(np.int64).max  # sorts padding after every real item with the same score
_CANDIDATE = np.dtype([("score", "f4"), ("id", "i8"), ("leaf", "i8"), ("row", "i8")])


__all__ = ["SCALE_EXTRA_HINT", "IndexSource", "SchedulerError", "exact_knn_dask", "exact_with", "source_of"]


@dataclass(frozen=True)
class IndexSource:
    """Where a worker opens the index: a location it can reach and the remote options, if any."""

    location: str
    remote: RemoteOptions | None = None

    def open(self) -> IndexReader:
        return _opened(self)


@functools.lru_cache(maxsize=4)
def _opened(source: IndexSource) -> IndexReader:
    """One reader per source and worker process, reused by every block that worker scores."""
    return index_reader(open_index(source.location, remote=source.remote))


def source_of(index: IndexReader, remote: RemoteOptions | None = None) -> IndexSource:
    """The IndexSource of an opened reader: its URL, or its folder as an absolute path."""
    store = index.store
    if store.kind == "local" and store.local_path is not None:
        return IndexSource(str(store.local_path))
    if store.kind in ("remote", "zip"):
        return IndexSource(store.label if store.kind == "remote" else os.path.abspath(store.label.split("#")[0]),
                           remote)
    raise SchedulerError(f"{store.label}: an in-memory store cannot be opened by dask workers")


@dataclass(frozen=True)
class _Scoring:
    """What every block needs to score its rows: the queries and the search conventions."""

    q: np.ndarray  # (queries, dim) float32
    metric: str
    is_normalized: bool
    keep: int
    exclude: np.ndarray | None  # item ids never returned
    own: np.ndarray | None  # per query, an item id left out of that query's list (-1: none)


def exact_knn_dask(index: IndexReader, queries: Any, k: int, exclude: frozenset[int] = frozenset(),
                   self_ids: Sequence[int | None] | None = None, *, scheduler: str | None = None,
                   source: IndexSource | None = None, progress: ProgressCallback | None = None,
                   cancel: threading.Event | None = None) -> ExactNeighbours:
    """Exact top-k of each query row over every stored item, computed by dask.

    ``scheduler`` None or ``"threads"`` runs the graph on the local threaded scheduler (the
    blocks read through ``index``); ``"tcp://HOST:PORT"`` sends it to that dask.distributed
    scheduler, whose workers open ``source`` (default: where ``index`` was opened). Gives the
    same :class:`ExactNeighbours` as :func:`exact.exact_knn`.
    """
    if k < 1:
        raise QueryError(f"k must be at least 1 (got {k})")
    da, dask = _dask()
    q = index.prepare_queries(queries)
    if self_ids is not None and len(self_ids) != len(q):
        raise QueryError(f"{len(self_ids)} self ids for {len(q)} queries")
    reporter = Reporter(progress, cancel)
    distributed = is_cluster(scheduler)
    scoring = _Scoring(q, index.metric, index.is_normalized, k + RESCORE_MARGIN,
                       np.fromiter(exclude, np.int64, len(exclude)) if exclude else None,
                       np.array([-1 if s is None else s for s in self_ids], np.int64) if self_ids is not None else None)
    leaves = index.leaf_ids()
    blocks = [leaves[i:i + LEAF_BLOCK] for i in range(0, len(leaves), LEAF_BLOCK)]
    if not blocks:
        return _unpack(np.full(len(q) * scoring.keep, _padding(), _CANDIDATE), len(q), k)
    reporter.report("exact search (dask)", 0, len(blocks))
    if distributed:
        found = _on_cluster(source or source_of(index), index.levels, blocks, scoring, str(scheduler), reporter,
                            cancel)
    else:
        counter = _BlockCounter(reporter, len(blocks))
        parts = [da.from_delayed(dask.delayed(_read_block, pure=True)(index, index.levels, block, counter),
                                 shape=(np.nan,), dtype=_rows_dtype(index.dim)) for block in blocks]
        merge = functools.partial(_merge, keep=scoring.keep, queries=len(q))
        top = da.reduction(da.concatenate(parts), chunk=functools.partial(_block_top, scoring=scoring),
                           combine=merge, aggregate=merge, axis=0, keepdims=True, dtype=_CANDIDATE,
                           output_size=len(q) * scoring.keep, concatenate=True)
        found = top.compute(scheduler="threads")
    reporter.report("exact search (dask)", len(blocks), len(blocks))
    return _unpack(np.asarray(found), len(q), k)


def _dask() -> tuple[Any, Any]:
    try:
        import dask
        import dask.array as da
    except ImportError as exc:
        raise SchedulerError(f"exact search with dask needs dask; {SCALE_EXTRA_HINT}") from exc
    return da, dask


def _on_cluster(source: IndexSource, levels: int, blocks: list[list[int]], scoring: _Scoring, address: str,
                reporter: Reporter, cancel: threading.Event | None) -> np.ndarray:
    """Each block read and cut to its best candidates as one task on the cluster (retried, cancelled with
    the run); the candidate lists merged here in block order as they arrive, so the progress is per
    block, only blocks that arrive ahead of their turn wait in memory, and the merge is the same
    left-to-right one as the local reduction's."""
    queries, keep = len(scoring.q), scoring.keep
    merged = np.full(queries * keep, _padding(), _CANDIDATE)
    early: dict[int, np.ndarray] = {}
    arrived = [0, 0]  # blocks arrived, blocks merged

    def on_block(i: int, candidates: np.ndarray) -> None:
        nonlocal merged
        early[i] = candidates
        while arrived[1] in early:
            merged = _merge(np.concatenate([merged, early.pop(arrived[1])]), keep=keep, queries=queries)
            arrived[1] += 1
        arrived[0] += 1
        reporter.report("exact search (dask)", arrived[0], len(blocks))

    run_tasks(address, _block_candidates, [(source, levels, block, scoring) for block in blocks],
              name="ecpfs-exact", cancel=cancel, on_done=on_block, cancelled=SearchCancelled, keep_results=False)
    return merged


def _block_candidates(source: IndexSource, levels: int, leaves: list[int], scoring: _Scoring, *,
                      stop: str | None = None) -> np.ndarray:
    """On a worker: one block's best candidates per query (a block is short: no cancel inside it)."""
    return _block_top(_read_block(source, levels, leaves, None), scoring=scoring)


def exact_with(index: IndexReader, scheduler: str | None,
               remote: RemoteOptions | None = None) -> Callable[..., ExactNeighbours]:
    """The exact search ``scheduler`` asks for, with ``index.exact``'s arguments: the in-process one
    for None, else :func:`exact_knn_dask` (on a cluster, its workers open the index where ``index``
    was opened, with ``remote``)."""
    if scheduler is None:
        return index.exact
    source = source_of(index, remote) if is_cluster(scheduler) else None

    def exact(queries: Any, k: int, exclude: frozenset[int] = frozenset(), self_ids: Any = None,
              progress: ProgressCallback | None = None, cancel: threading.Event | None = None) -> ExactNeighbours:
        return exact_knn_dask(index, queries, k, exclude, self_ids, scheduler=scheduler, source=source,
                              progress=progress, cancel=cancel)

    return exact


class _BlockCounter:
    """Progress and cancel for the local scheduler: one step per block read."""

    def __init__(self, reporter: Reporter, total: int) -> None:
        self.reporter, self.total, self.done = reporter, total, 0
        self._lock = threading.Lock()

    def step(self) -> None:
        with self._lock:
            self.done += 1
            done = self.done
        self.reporter.report("exact search (dask)", done, self.total)


def _rows_dtype(dim: int) -> np.dtype[Any]:
    return np.dtype([("v", "f4", (dim,)), ("id", "i8"), ("leaf", "i8"), ("row", "i8")])


def _read_block(reads: IndexSource | IndexReader, level: int, leaves: list[int],
                counter: _BlockCounter | None) -> np.ndarray:
    """The rows of a block of leaves (vector, item id, leaf, row), read in one batch."""
    index = reads.open() if isinstance(reads, IndexSource) else reads
    if counter is not None:
        counter.reporter.check()
    nodes = [(leaf, node) for leaf, node in zip(leaves, index.read_nodes(level, leaves), strict=True)
             if node is not None]
    out = np.empty(sum(len(n.ids) for _, n in nodes), _rows_dtype(index.dim))
    start = 0
    for leaf, node in nodes:
        stop = start + len(node.ids)
        out["v"][start:stop] = node.vectors
        out["id"][start:stop] = node.ids
        out["leaf"][start:stop] = leaf
        out["row"][start:stop] = np.arange(len(node.ids))
        start = stop
    if counter is not None:
        counter.step()
    return out


def _padding() -> np.ndarray:
    """A 0-d candidate that sorts after every real one (fill value of the candidate lists)."""
    return np.array((np.inf, _NO_ID, -1, -1), _CANDIDATE)


def _block_top(block: np.ndarray, axis: Any = None, keepdims: bool = True, *, scoring: _Scoring) -> np.ndarray:
    """The best ``keep`` candidates of each query in one block, scored like eCP search, query-major.

    Rows are ranked by a float32 key first (one matrix product, as in :mod:`exact`); the best
    ``keep`` by key are then scored with :func:`row_dots` and ordered by (score, item id).
    """
    nq, keep = len(scoring.q), scoring.keep
    out = np.full((nq, keep), _padding(), _CANDIDATE)
    if len(block):
        vectors = np.ascontiguousarray(block["v"])
        ids = block["id"]
        sq_norms = squared_norms(vectors)
        key = scoring.q @ vectors.T
        if scoring.metric == "IP" or scoring.is_normalized:
            np.negative(key, out=key)
        else:
            key = sq_norms[None, :] - np.float32(2.0) * key
        if scoring.exclude is not None:
            key[:, np.isin(ids, scoring.exclude)] = np.inf
        if scoring.own is not None:
            key[ids[None, :] == scoring.own[:, None]] = np.inf
        q_sq = squared_norms(scoring.q)
        for i in range(nq):
            rows = np.argsort(key[i], kind="stable")[:keep]
            rows = rows[np.isfinite(key[i][rows])]
            if not len(rows):
                continue
            scores = score_block(scoring.metric, scoring.is_normalized, row_dots(vectors[rows], scoring.q[i]),
                                 sq_norms[rows], q_sq[i])
            found = np.empty(len(rows), _CANDIDATE)
            found["score"], found["id"] = scores, ids[rows]
            found["leaf"], found["row"] = block["leaf"][rows], block["row"][rows]
            found = found[np.isfinite(found["score"])]
            found.sort(order=["score", "id"])
            out[i, :len(found)] = found
    return out.ravel()


def _merge(candidates: np.ndarray, axis: Any = None, keepdims: bool = True, *, keep: int,
           queries: int) -> np.ndarray:
    """Candidate lists of several blocks (concatenated, each query-major) cut to the best ``keep``."""
    merged = candidates.reshape(-1, queries, keep).transpose(1, 0, 2).reshape(queries, -1)
    order = np.lexsort((merged["id"], merged["score"]), axis=-1)[:, :keep]
    return np.take_along_axis(merged, order, axis=1).ravel()


def _unpack(found: np.ndarray, queries: int, k: int) -> ExactNeighbours:
    """The first k of each query's merged candidates (already ordered by score, then item id)."""
    best = found.reshape(queries, -1)[:, :k]
    valid = np.isfinite(best["score"]) & (best["id"] != _NO_ID)
    return ExactNeighbours(
        np.where(valid, best["id"], -1).astype(np.int64),
        np.where(valid, best["score"], np.inf).astype(np.float32),
        np.where(valid, best["leaf"], -1).astype(np.int64),
        np.where(valid, best["row"], -1).astype(np.int64),
    )
