"""Exact k nearest neighbours over every stored item: the ground truth recall is measured against.

The leaves are streamed in blocks (a bounded number of leaf arrays at a time, through the
store's batched reads), so memory does not grow with the index. Worker threads, one per core,
each read a block and rank its items in float32 with one BLAS matrix product per chunk of
queries, keeping every item within the best ``k + margin`` of each query (ties included);
those candidates are scored exactly as eCP search scores them (:func:`row_dots`). The main
thread merges the blocks, in leaf order, into a running best per query and cuts it to k,
ties by item id, so search and exact search give an item the same score bit for bit.

With ``skip_unreadable`` (the exact comparison of ``search --explain`` and the window's search),
a leaf that cannot be read is named with why and the answer is for every other leaf: a block
whose read fails is read again leaf by leaf to find which. Without it (recall, tuning) a leaf
that cannot be read fails the run: a truth missing a leaf would misjudge every query.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ecpfs_viewer.model.blas import one_blas_thread
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.search.reader import NodeData, row_dots, score_block, squared_norms
from ecpfs_viewer.model.search.results import (
    ProgressCallback,
    QueryError,
    Reporter,
    SearchCancelled,
    SearchHit,
    UnreadableNode,
    unreadable_node,
)
from ecpfs_viewer.model.storage.far_end import FarEnd, local_root, open_local, worth_a_helper

if TYPE_CHECKING:
    from ecpfs_viewer.model.search.locate import ItemLocator

#: Embedding bytes read per block of leaves (sized from the mean leaf), and at most MAX_BLOCK_LEAVES
#: leaves: a leaf's chunk decodes padded to the full chunk shape, often many times the leaf's rows.
BLOCK_BYTES = 16 << 20
MAX_BLOCK_LEAVES = 64
#: float32 ranking keys computed per matrix product (a chunk of queries times a block's items).
KEY_BYTES = 16 << 20
#: Extra candidates kept from the float32 ranking, re-scored exactly like search before the final cut.
RESCORE_MARGIN = 16
_NO_ID = np.iinfo(np.int64).max  # sorts padding after every real item with the same key
#: a scan of at least this many blocks of a local index has its far end scored by a helper process
HELPER_MIN_BLOCKS = 256
_JOB = f"{__name__}:scan_job"


class LeafSource(Protocol):
    """What exact search needs of a reader: its scoring rule, its leaves, and the item locator."""

    metric: str
    is_normalized: bool
    levels: int
    dim: int
    total_items: int | None
    learn_from_scans: bool  # whether a scan keeps every leaf's item ids for the locator (memory grows)

    @property
    def locator(self) -> ItemLocator: ...

    def prepare_queries(self, queries: Any) -> np.ndarray: ...

    def leaf_ids(self) -> list[int]: ...

    def read_nodes(self, level: int, node_ids: Sequence[int], reporter: Reporter | None = None,
                   known_ids: Sequence[np.ndarray] | None = None, *,
                   keep_documents: bool = True) -> list[NodeData | None]: ...

    def scan_leaf_order(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None: ...


@dataclass(frozen=True)
class ExactNeighbours:
    """The k best items of each query row; rows with fewer candidates are padded (id -1, score inf)."""

    ids: np.ndarray  # (queries, k) int64
    scores: np.ndarray  # (queries, k) float32
    leaves: np.ndarray  # (queries, k) int64
    rows: np.ndarray  # (queries, k) int64
    #: leaves that could not be read (only with skip_unreadable): the answer is for the others
    unreadable: tuple[UnreadableNode, ...] = ()

    def hits(self, query: int) -> tuple[SearchHit, ...]:
        keep = self.ids[query] >= 0
        return tuple(SearchHit(int(i), float(s), int(leaf), int(r)) for i, s, leaf, r in zip(
            self.ids[query][keep], self.scores[query][keep], self.leaves[query][keep], self.rows[query][keep],
            strict=True))


@dataclass(frozen=True)
class _Scoring:
    """What every block needs to rank and score its items."""

    q: np.ndarray  # (queries, dim) float32
    q_sq: np.ndarray  # (queries,) float32
    metric: str
    is_normalized: bool
    keep: int
    own: np.ndarray | None  # per query, an item id left out of that query's list (-1: none)
    excluded: np.ndarray | None  # item ids never returned


@dataclass(frozen=True)
class _Candidates:
    """Flat candidate entries: query row, ranking key, item id, exact score, leaf and row."""

    query: np.ndarray
    key: np.ndarray
    ids: np.ndarray
    scores: np.ndarray
    leaves: np.ndarray
    rows: np.ndarray

    @staticmethod
    def padding(queries: int, keep: int) -> _Candidates:
        """`keep` entries per query that sort after every real one."""
        n = queries * keep
        return _Candidates(np.repeat(np.arange(queries), keep), np.full(n, np.inf, np.float32),
                           np.full(n, _NO_ID, np.int64), np.full(n, np.inf, np.float32),
                           np.full(n, -1, np.int64), np.full(n, -1, np.int64))

    @staticmethod
    def concat(parts: Sequence[_Candidates]) -> _Candidates:
        return _Candidates(*(np.concatenate([getattr(p, f) for p in parts])
                             for f in ("query", "key", "ids", "scores", "leaves", "rows")))

    def take(self, order: np.ndarray) -> _Candidates:
        return _Candidates(self.query[order], self.key[order], self.ids[order], self.scores[order],
                           self.leaves[order], self.rows[order])


def exact_knn(index: LeafSource, queries: Any, k: int, exclude: frozenset[int] = frozenset(),
              self_ids: Sequence[int | None] | None = None, progress: ProgressCallback | None = None,
              cancel: threading.Event | None = None, *, skip_unreadable: bool = False) -> ExactNeighbours:
    """Exact top-k for each query row over every stored item, streaming the leaves in blocks.

    ``exclude`` is never returned; ``self_ids[i]`` (when given and not None) is left out of query
    i's list only, for queries that are stored items. The item ids read are handed to the
    index's locator, so locating an item afterwards reads nothing. With ``skip_unreadable``, a
    leaf that cannot be read is left out and named in the answer's ``unreadable``.
    """
    if k < 1:
        raise QueryError(f"k must be at least 1 (got {k})")
    q = index.prepare_queries(queries)
    if self_ids is not None and len(self_ids) != len(q):
        raise QueryError(f"{len(self_ids)} self ids for {len(q)} queries")
    reporter = Reporter(progress, cancel)
    scoring = _Scoring(q, squared_norms(q), index.metric, index.is_normalized, k + RESCORE_MARGIN,
                       np.array([-1 if s is None else s for s in self_ids], np.int64) if self_ids is not None else None,
                       np.fromiter(exclude, np.int64, len(exclude)) if exclude else None)
    unreadable: list[UnreadableNode] | None = [] if skip_unreadable else None
    with one_blas_thread():
        best = _scan(index, scoring, reporter, cancel, unreadable)
    reporter.report("exact search", 1, 1)
    return replace(_final(best, len(q), scoring.keep, k), unreadable=tuple(unreadable or ()))


@dataclass(frozen=True)
class _LeafIds:
    """Each leaf's item_ids in row order, from a complete item map (the locator's leaf order): the
    leaves' embeddings are then all that is left to read."""

    leaves: np.ndarray  # ascending, each leaf that holds items once
    ends: np.ndarray  # where each leaf's ids end in ids
    sizes: np.ndarray
    ids: np.ndarray  # leaf after leaf, in row order

    @staticmethod
    def of(order: tuple[np.ndarray, np.ndarray, np.ndarray] | None) -> _LeafIds | None:
        if order is None:
            return None
        ids, leaves, sizes = order
        return _LeafIds(leaves, np.cumsum(sizes), sizes, ids)

    def of_leaves(self, leaves: Sequence[int]) -> list[np.ndarray]:
        if not len(self.leaves):
            return [self.ids[:0] for _ in leaves]
        wanted = np.asarray(leaves, np.int64)
        at = np.minimum(np.searchsorted(self.leaves, wanted), len(self.leaves) - 1)
        held = (self.leaves[at] == wanted).tolist()
        stops = self.ends[at].tolist()
        starts = (self.ends[at] - self.sizes[at]).tolist()
        return [self.ids[a:b] if h else self.ids[:0] for a, b, h in zip(starts, stops, held, strict=True)]


def _blocks(index: LeafSource, leaves: list[int]) -> list[list[int]]:
    """Runs of leaves of about BLOCK_BYTES of embeddings each (from the mean leaf size when known)."""
    per_leaf = (index.total_items or 0) / max(1, len(leaves)) or 50.0
    size = int(min(MAX_BLOCK_LEAVES, max(1, BLOCK_BYTES // max(1.0, per_leaf * index.dim * 4))))
    return [leaves[i:i + size] for i in range(0, len(leaves), size)]


def _scan(index: LeafSource, scoring: _Scoring, reporter: Reporter, cancel: threading.Event | None,
          unreadable: list[UnreadableNode] | None = None) -> _Candidates:
    """The best `keep` candidates of each query over every leaf, blocks read and scored by one
    worker per core (but the helper's) and merged here in leaf order; the far end of many blocks of a local index
    scored by a helper process (model/storage/far_end.py), its blocks merged in the same order.

    At most one block per worker waits beyond those being scored, so memory is bounded; a block
    is pruned with the running best as it was when the block was handed out (a bound that only
    gets tighter, so it never drops an item that belongs)."""
    leaves = index.leaf_ids()
    blocks = _blocks(index, leaves)
    known = _LeafIds.of(index.scan_leaf_order())
    nq, keep = len(scoring.q), scoring.keep
    best = _Candidates.padding(nq, keep)
    reporter.report("reading leaves", 0, len(leaves))
    helper = _start_helper(index, blocks, scoring, known, unreadable is not None)
    before = np.concatenate(([0], np.cumsum([len(block) for block in blocks]))).tolist()  # leaves before each block
    workers = max(1, (os.cpu_count() or 1) - (helper is not None))  # the helper has a core of its own
    pending: deque[Future[tuple[list[NodeData | None], _Candidates, list[UnreadableNode]]]] = deque()
    submitted = done = 0
    with ThreadPoolExecutor(workers, thread_name_prefix="exact-search") as pool:
        try:
            for at, block in enumerate(blocks):
                if helper is not None and at >= helper.low():
                    taken = helper.take(at)
                    helper = None
                    if taken is not None:  # every block left, scored by the helper
                        for found, failed in taken:
                            if unreadable is not None:
                                unreadable.extend(failed)
                            best = _merge(best, found, nq, keep)
                        reporter.report("reading leaves", len(leaves), len(leaves))
                        break
                while submitted < len(blocks) and len(pending) <= workers and (
                        helper is None or submitted < helper.low() or submitted == at):
                    bound = best.key.reshape(nq, keep)[:, -1].copy()  # the worst kept: nothing above it enters
                    pending.append(pool.submit(contextvars.copy_context().run, _score_block, index,
                                               blocks[submitted], scoring, bound, known, cancel,
                                               unreadable is not None))
                    submitted += 1
                nodes, found, failed = pending.popleft().result()
                if unreadable is not None:
                    unreadable.extend(failed)
                if index.learn_from_scans and not failed:  # an unreadable leaf is no leaf without items
                    index.locator.learn(block, [None if node is None else node.ids for node in nodes])
                best = _merge(best, found, nq, keep)
                done += len(block)
                reporter.report("reading leaves", done + (0 if helper is None else len(leaves) - before[helper.low()]),
                                len(leaves))
        finally:
            for future in pending:
                future.cancel()
            if helper is not None:
                helper.stop()
    return best


def _start_helper(index: LeafSource, blocks: list[list[int]], scoring: _Scoring, known: _LeafIds | None,
                  skip_unreadable: bool) -> FarEnd | None:
    """A helper scoring the far end of the blocks of a local index, when there are enough of them."""
    store = getattr(index, "store", None)
    root = None if store is None else local_root(store)
    if root is None or not worth_a_helper(len(blocks), HELPER_MIN_BLOCKS):
        return None

    def accept(first: int, end: int, value: Any) -> bool:
        found, failed = value
        asked = np.asarray([leaf for block in blocks[first:end] for leaf in block], np.int64)
        return (isinstance(found, _Candidates) and bool(np.isin(found.leaves, asked).all())
                and all(isinstance(f, UnreadableNode) for f in failed))

    setup = (*root, blocks, scoring, known, skip_unreadable)
    return FarEnd(_JOB, setup, len(blocks), 0, 1, accept)


def scan_job(folder: str, root_key: str, blocks: list[list[int]], scoring: _Scoring, known: _LeafIds | None,
             skip_unreadable: bool) -> Callable[[int, int], tuple[_Candidates, list[UnreadableNode]]]:
    """In the helper: the scoring of blocks ``blocks[low:high]``, each pruned by the best of the
    helper's blocks so far (a bound that only gets tighter, as in :func:`_scan`)."""
    from ecpfs_viewer.model.search.reader import NodeReader

    index = NodeReader(open_local(folder, root_key))
    nq, keep = len(scoring.q), scoring.keep
    best = [_Candidates.padding(nq, keep)]

    def batch(low: int, high: int) -> tuple[_Candidates, list[UnreadableNode]]:
        founds, failures = [], []
        for block in blocks[low:high]:
            bound = best[0].key.reshape(nq, keep)[:, -1].copy()
            with one_blas_thread():
                _nodes, found, failed = _score_block(index, block, scoring, bound, known, None,  # type: ignore[arg-type]
                                                     skip_unreadable)
            best[0] = _merge(best[0], found, nq, keep)
            founds.append(found)
            failures.extend(failed)
        return _Candidates.concat(founds) if len(founds) != 1 else founds[0], failures

    return batch


def _read_block(index: LeafSource, leaves: list[int], known: _LeafIds | None, skip_unreadable: bool
                ) -> tuple[list[NodeData | None], list[UnreadableNode]]:
    """A block's leaves in one batch; when that fails and unreadable leaves are to be skipped, leaf
    by leaf, each that fails named (a batch's failure does not say which of its leaves failed).
    No leaf's documents are kept in the hierarchy: a pass over every leaf held them all for as long
    as the index stayed open (10M items: 200,000 embeddings documents, most of an explain's memory)."""
    try:
        return index.read_nodes(index.levels, leaves, known_ids=None if known is None else known.of_leaves(leaves),
                                keep_documents=False), []
    except UserError:
        if not skip_unreadable:
            raise
    nodes: list[NodeData | None] = []
    failed: list[UnreadableNode] = []
    for leaf in leaves:
        try:
            nodes.extend(index.read_nodes(index.levels, [leaf], known_ids=None if known is None else
                                          known.of_leaves([leaf]), keep_documents=False))
        except UserError as exc:
            failed.append(unreadable_node(index.levels, leaf, exc))
            nodes.append(None)
    return nodes, failed


def _score_block(index: LeafSource, leaves: list[int], s: _Scoring, bound: np.ndarray, known: _LeafIds | None,
                 cancel: threading.Event | None, skip_unreadable: bool = False
                 ) -> tuple[list[NodeData | None], _Candidates, list[UnreadableNode]]:
    """Read one block of leaves and keep, per query, the items ranked within its best `keep`."""

    def check() -> None:
        if cancel is not None and cancel.is_set():
            raise SearchCancelled()

    check()
    nodes, failed = _read_block(index, leaves, known, skip_unreadable)
    check()
    present = [(leaf, node) for leaf, node in zip(leaves, nodes, strict=True) if node is not None]
    if not present:
        return nodes, _Candidates.padding(0, 0), failed
    vectors = np.concatenate([node.vectors for _, node in present])
    sq_norms = squared_norms(vectors)  # one call for the block, as exact_dask does; row by row the same values
    ids = np.concatenate([node.ids for _, node in present])
    sizes = [len(node.ids) for _, node in present]
    leaf_of = np.repeat(np.asarray([leaf for leaf, _ in present], np.int64), sizes)
    row_of = np.concatenate([np.arange(n, dtype=np.int64) for n in sizes])
    dropped = np.isin(ids, s.excluded) if s.excluded is not None else None
    step = max(1, KEY_BYTES // max(1, 4 * len(ids)))
    parts = []
    for start in range(0, len(s.q), step):
        stop = min(start + step, len(s.q))
        key = _ranking_keys(s, s.q[start:stop], vectors, sq_norms)
        if dropped is not None:
            key[:, dropped] = np.inf
        if s.own is not None:
            key[ids[None, :] == s.own[start:stop, None]] = np.inf
        limit = bound[start:stop].copy()
        filling = np.nonzero(~np.isfinite(limit))[0]  # fewer than `keep` kept so far: the block's own cut
        if len(filling) and key.shape[1] > s.keep:
            limit[filling] = np.partition(key[filling], s.keep - 1, axis=1)[:, s.keep - 1]
        rows, cols = np.nonzero((key <= limit[:, None]) & np.isfinite(key))
        scores = np.empty(len(rows), np.float32)
        edges = np.searchsorted(rows, np.arange(stop - start + 1)).tolist()  # nonzero gives rows in order
        for i in range(stop - start):
            lo, hi = edges[i], edges[i + 1]
            if hi > lo:
                picked = cols[lo:hi]
                scores[lo:hi] = score_block(s.metric, s.is_normalized, row_dots(vectors[picked], s.q[start + i]),
                                            sq_norms[picked], s.q_sq[start + i])
        parts.append(_Candidates(rows + start, key[rows, cols], ids[cols], scores, leaf_of[cols], row_of[cols]))
    return nodes, _Candidates.concat(parts), failed


def _ranking_keys(s: _Scoring, q: np.ndarray, vectors: np.ndarray, sq_norms: np.ndarray) -> np.ndarray:
    """Per (query, item) a float32 key ordered like the score (lower is better), without the sqrt."""
    key: np.ndarray = q @ vectors.T
    if s.metric == "IP" or s.is_normalized:
        np.negative(key, out=key)  # larger dot product, smaller score
    else:
        key *= np.float32(-2.0)
        key += sq_norms[None, :]  # |e|^2 - 2 e.q: the squared distance less the per-query |q|^2
    return key


def _merge(best: _Candidates, found: _Candidates, queries: int, keep: int) -> _Candidates:
    """The best `keep` (key, then item id) of each query among the kept ones and a block's candidates;
    kept ones come first, so equal entries stay in leaf order."""
    if not len(found.query):
        return best
    both = _Candidates.concat([best, found])
    order = np.lexsort((both.ids, both.key, both.query))
    sorted_query = both.query[order]
    rank = np.arange(len(order)) - np.searchsorted(sorted_query, np.arange(queries))[sorted_query]
    return both.take(order[rank < keep])  # `keep` per query (padding included), queries in order


def _final(best: _Candidates, queries: int, keep: int, k: int) -> ExactNeighbours:
    """Order each query's kept candidates by (exact score, item id), keep k, pad the rest."""
    scores = best.scores.reshape(queries, keep)
    valid = (best.ids.reshape(queries, keep) != _NO_ID) & np.isfinite(scores)
    ids = np.where(valid, best.ids.reshape(queries, keep), _NO_ID)
    order = np.lexsort((ids, np.where(valid, scores, np.inf)), axis=-1)[:, :k]  # keep > k columns
    ids, scores, valid = (np.take_along_axis(a, order, 1) for a in (ids, scores, valid))
    leaves, rows = (np.take_along_axis(a.reshape(queries, keep), order, 1) for a in (best.leaves, best.rows))
    return ExactNeighbours(np.where(valid, ids, -1), np.where(valid, scores, np.inf).astype(np.float32),
                           np.where(valid, leaves, -1), np.where(valid, rows, -1))
