"""Reading an index for search: info scalars, decoded nodes (cached), scores (§4.1).

Everything is read through one :class:`OpenedStore` (folder, zip, http(s), s3, memory) and its
:class:`Hierarchy`, so every request is counted like the rest of the app's I/O. Vectors are
widened to float32. Thread-safe: a GUI may run searches in worker threads on one reader.
The search algorithms (ecp, locate, exact) read through a :class:`NodeReader`;
:class:`~ecpfs_viewer.model.search.index.IndexReader` adds them on top, so arrows go one way.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

import numpy as np

from ecpfs_viewer.model.ecpfs.opened_index import OpenedIndex, open_index
from ecpfs_viewer.model.ecpfs.paths import level_path, node_array_path, node_path
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.search.results import (
    QueryError,
    Reporter,
    SearchError,
)
from ecpfs_viewer.model.storage.opening import OpenedStore
from ecpfs_viewer.model.storage.remote import ListingUnavailableError
from ecpfs_viewer.model.zarrtree.array_batch import ArrayBatchReader, BeforeChunks
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

#: Nodes read per batch when many are wanted at once (preloading, sampling).
NODE_BATCH = 256
#: Missing nodes at one level after which the level is listed once and nodes it does not hold are
#: answered missing without a read: an index root declaring 100,000 children of which two exist
#: had every search probe all of them (800,000 file opens, 7 s).
MISSING_BEFORE_LISTING = 64


class NodeData:
    """One decoded node: float32 rows, their squared norms, and the ids (item or node) per row.

    The norms are computed when first asked for (scores ask, the embedding map never does: at 200,000
    items they were a twentieth of its placement); two threads that ask at once compute the same."""

    __slots__ = ("_sq_norms", "ids", "vectors")

    def __init__(self, vectors: np.ndarray, sq_norms: np.ndarray | None, ids: np.ndarray) -> None:
        self.vectors = vectors  # (n, dim) float32, C-contiguous
        self._sq_norms = sq_norms  # (n,) float32, None until asked for
        self.ids = ids  # (n,) int64

    @property
    def sq_norms(self) -> np.ndarray:
        norms = self._sq_norms
        if norms is None:
            norms = self._sq_norms = squared_norms(self.vectors)
        return norms

    @staticmethod
    def make(vectors: np.ndarray, ids: np.ndarray) -> NodeData:
        return NodeData(np.ascontiguousarray(vectors, dtype=np.float32), None, np.asarray(ids, dtype=np.int64))


class LevelReads:
    """Bytes and requests one search read, per level (0 = index_root), counted on cache misses only."""

    __slots__ = ("bytes_read", "requests")

    def __init__(self, levels: int) -> None:
        self.bytes_read = [0] * (levels + 1)
        self.requests = [0] * (levels + 1)


class NodeReader:
    """An opened index's info and nodes, every decoded node cached; what the search algorithms read."""

    def __init__(self, source: str | os.PathLike[str] | OpenedStore | Hierarchy | OpenedIndex) -> None:
        self.opened = source if isinstance(source, OpenedIndex) else open_index(source)
        self.hierarchy = self.opened.hierarchy
        self.store = self.hierarchy.store
        self.label = self.store.label
        self.arrays = ArrayBatchReader(self.hierarchy)
        self._lock = threading.RLock()
        self.levels = int(self._scalar("info/levels"))
        if self.levels < 1:
            raise SearchError(f"{self.label}: info/levels is {self.levels}, an index has at least 1 level")
        metric = self._scalar("info/metric")
        if metric not in ("L2", "IP"):
            raise SearchError(f"{self.label}: info/metric must be L2 or IP, found {metric!r}")
        self.metric: str = str(metric)
        normalized = self._scalar("info/is_normalized", required=False)
        self.is_normalized = bool(normalized) if normalized is not None else False  # absent means false
        total = self._scalar("info/total_items", required=False)
        self.total_items: int | None = None if total is None else int(total)
        with self.store.counter.action() as tally:
            root = self.arrays.read(["index_root/embeddings"])[0]
        if root is None or root.ndim != 2:
            what = "missing" if root is None else f"of shape {root.shape}, expected (rows, dim)"
            raise SearchError(f"{self.label}: index_root/embeddings is {what}")
        self.root = NodeData.make(root, np.arange(root.shape[0]))
        self.dim = int(root.shape[1])
        self.stored_dtype = str(root.dtype)
        self._nodes: dict[tuple[int, int], NodeData | None] = {}
        #: what reading each node cost, (bytes, requests) by (level, node id), index_root as (0, 0): exact for
        #: a node read alone (a search's cache miss), a share by decoded size of its batch's reads otherwise
        self.read_costs: dict[tuple[int, int], tuple[int, int]] = {(0, 0): (tally.bytes_read, tally.requests)}
        self._level_ids: dict[int, list[int]] = {}
        self._missing: dict[int, int] = {}  # missing nodes read so far, by level
        self._listed: dict[int, frozenset[int] | None] = {}  # see MISSING_BEFORE_LISTING

    def _scalar(self, path: str, required: bool = True) -> Any:
        info = self.hierarchy.details(path)
        if info.array is None:
            if not required and info.node.missing:
                return None
            raise SearchError(f"{self.label}: cannot open index ({info.error or path + ' is not an array'})")
        return self.hierarchy.read_scalar(path)

    # -- nodes ----------------------------------------------------------------------------------
    def node(self, level: int, node_id: int, reads: LevelReads | None = None) -> NodeData | None:
        """Decoded node ``lvl_{level}/node_{node_id}``, or None when it does not exist (a gap).

        With ``reads``, what reading it now cost is added there at its level (nothing for a cached
        node: the counting is only on the way to the store)."""
        key = (level, node_id)
        cached = self._nodes.get(key, False)
        if cached is not False:
            return cached  # type: ignore[return-value]
        if reads is None:
            return self.nodes(level, [node_id])[0]
        with self.store.counter.action() as tally:
            node = self.nodes(level, [node_id])[0]
        reads.bytes_read[level] += tally.bytes_read
        reads.requests[level] += tally.requests
        return node

    def nodes(self, level: int, node_ids: Sequence[int], reporter: Reporter | None = None) -> list[NodeData | None]:
        """Several nodes of one level, read in batches; cached like :meth:`node`."""
        out: dict[int, NodeData | None] = {}
        wanted = []
        for node_id in node_ids:
            cached = self._nodes.get((level, node_id), False)
            if cached is not False:
                out[node_id] = cached  # type: ignore[assignment]
            else:
                wanted.append(node_id)
        for start in range(0, len(wanted), NODE_BATCH):
            part = self._drop_unlisted(level, wanted[start:start + NODE_BATCH], out)
            read: list[NodeData | None] = []
            if part:
                with self.store.counter.action() as tally:
                    read = self.read_nodes(level, part, reporter)
                self._remember_costs(level, part, read, tally.bytes_read, tally.requests)
            with self._lock:
                for node_id, node in zip(part, read, strict=True):
                    self._nodes[(level, node_id)] = node
                    out[node_id] = node
                self._missing[level] = self._missing.get(level, 0) + sum(node is None for node in read)
            if reporter is not None:
                reporter.report("reading nodes", min(start + NODE_BATCH, len(wanted)), len(wanted))
        return [out[n] for n in node_ids]

    def _drop_unlisted(self, level: int, node_ids: list[int], out: dict[int, NodeData | None]) -> list[int]:
        """node_ids less those the level's listing does not hold, once the level has had
        MISSING_BEFORE_LISTING missing nodes; those are answered missing (in out and the cache)
        without a read. Without a listing (a failed one; a derived one holds every declared node)
        every node is read."""
        if self._missing.get(level, 0) < MISSING_BEFORE_LISTING:
            return node_ids
        if level not in self._listed:
            try:
                listed: frozenset[int] | None = frozenset(self.level_node_ids(level))
            except (OSError, UserError):
                listed = None  # read each node, as before
            self._listed[level] = listed
        listed = self._listed[level]
        if listed is None:
            return node_ids
        with self._lock:
            for node_id in node_ids:
                if node_id not in listed:
                    self._nodes[(level, node_id)] = out[node_id] = None
        return [node_id for node_id in node_ids if node_id in listed]

    def _remember_costs(self, level: int, node_ids: Sequence[int], read: Sequence[NodeData | None], nbytes: int,
                        requests: int) -> None:
        """Share what one batch read among its nodes, by decoded size (a missing node weighs 1)."""
        weights = np.array([1 if n is None else n.vectors.nbytes + n.ids.nbytes for n in read], dtype=np.float64)
        share = weights / weights.sum()
        costs = zip(np.rint(share * nbytes).astype(np.int64).tolist(),
                    np.rint(share * requests).astype(np.int64).tolist(), strict=True)
        with self._lock:
            for node_id, cost in zip(node_ids, costs, strict=True):
                self.read_costs[(level, node_id)] = cost

    def read_nodes(self, level: int, node_ids: Sequence[int], reporter: Reporter | None = None,
                   known_ids: Sequence[np.ndarray] | None = None, *, keep_documents: bool = True,
                   before_chunks: BeforeChunks | None = None) -> list[NodeData | None]:
        """Read nodes of one level in one batch, bypassing the cache (exact search streams every leaf);
        with ``known_ids`` (each node's ids, from a complete item map) only the embeddings are read.
        Without ``keep_documents`` their arrays' documents are not kept either (see ArrayBatchReader).
        ``before_chunks`` as :meth:`ArrayBatchReader.read_each` takes it (what to stamp first)."""
        ids_name = "item_ids" if level == self.levels else "node_ids"
        names = ("embeddings",) if known_ids is not None else ("embeddings", ids_name)
        paths = [node_array_path(level, n, name) for n in node_ids for name in names]
        arrays = self.arrays.read(paths, None if reporter is None else reporter.check, keep_documents=keep_documents,
                                  before_chunks=before_chunks)
        if known_ids is not None:
            return [self._make_node(level, n, ids_name, arrays[j], known_ids[j]) for j, n in enumerate(node_ids)]
        return [self._make_node(level, n, ids_name, arrays[2 * j], arrays[2 * j + 1])
                for j, n in enumerate(node_ids)]

    def _make_node(self, level: int, node_id: int, ids_name: str, vectors: np.ndarray | None,
                   ids: np.ndarray | None) -> NodeData | None:
        base = node_path(level, node_id)
        if vectors is None:
            return None  # missing node: search skips it (§4.3)
        if ids is None:
            raise SearchError(f"{base}: has embeddings but no {ids_name} (corrupt node)")
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise SearchError(f"{base}/embeddings: shape {vectors.shape}, expected (rows, {self.dim})")
        if ids.shape != (vectors.shape[0],):
            raise SearchError(f"{base}: {ids_name} has shape {ids.shape}, embeddings {vectors.shape[0]} rows")
        return NodeData.make(vectors, ids)

    def level_node_ids(self, level: int) -> list[int]:
        """Node ids present at a level, from one directory listing, ascending."""
        with self._lock:
            if level in self._level_ids:
                return self._level_ids[level]
        try:
            entries = self.store.list_dir(level_path(level))
        except FileNotFoundError:
            entries = []
        except ListingUnavailableError:  # a static web server: the hierarchy derives the level
            entries = [(node.name, True) for node in self.hierarchy.children(level_path(level))]
        found = sorted(int(name[5:]) for name, is_dir in entries
                       if is_dir is not False and name.startswith("node_") and name[5:].isdigit())
        with self._lock:
            self._level_ids[level] = found
        return found

    def leaf_ids(self) -> list[int]:
        """Node ids present at the leaf level."""
        return self.level_node_ids(self.levels)

    def preload_internal(self, reporter: Reporter | None = None) -> None:
        """Read every internal node now (few and small), so timed searches do not pay for them."""
        for level in range(1, self.levels):
            self.nodes(level, self.level_node_ids(level), reporter)

    # -- queries and scores (§4.1) ----------------------------------------------------------------
    def prepare_query(self, query: Any) -> tuple[np.ndarray, np.float32]:
        """The query as a float32 vector and its squared norm; QueryError when it cannot be one."""
        q = self.prepare_queries(np.asarray(query).reshape(1, -1) if np.ndim(query) <= 1 else query)
        if q.shape[0] != 1:
            raise QueryError(f"expected one query vector, got {q.shape[0]}")
        return q[0], squared_norms(q)[0]

    def prepare_queries(self, queries: Any) -> np.ndarray:
        """Queries as a C-contiguous float32 (n, dim) matrix, checked for dimension and finiteness."""
        raw = np.asarray(queries)
        if raw.dtype.kind not in "fiub":
            raise QueryError(f"a query must be numeric, got {raw.dtype}")
        if raw.ndim == 1:
            raw = raw[None, :]
        if raw.ndim != 2:
            raise QueryError(f"queries must be a vector or a 2-D array, got shape {raw.shape}")
        if raw.shape[1] != self.dim:
            raise QueryError(f"query has {raw.shape[1]} dimensions, the index has {self.dim}")
        with np.errstate(over="ignore", invalid="ignore"):  # too large for float32: caught just below
            q = np.ascontiguousarray(raw, dtype=np.float32)
        bad = ~np.isfinite(q).all(axis=1)
        if bad.any():
            raise QueryError(f"query row {int(np.argmax(bad))} has NaN or Inf values (after conversion to float32)")
        return q

    def scores(self, node: NodeData, q: np.ndarray, q_sq: np.float32) -> np.ndarray:
        """Lower-is-better scores of a node's rows: L2 distance, or the negated dot product for IP."""
        return score_block(self.metric, self.is_normalized, row_dots(node.vectors, q), node.sq_norms, q_sq)

    def close(self) -> None:
        self.store.close()


_P = ParamSpec("_P")
_R = TypeVar("_R")


def stored_arithmetic() -> np.errstate:
    """Arithmetic on stored vectors: a NaN or a value past float32's range (a damaged chunk that
    still decodes) gives NaN or inf, scored +inf as upstream's search would, never a warning."""
    return np.errstate(over="ignore", invalid="ignore", divide="ignore")


def on_stored_vectors(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run fn under :func:`stored_arithmetic` (diagnostics that compute on many stored vectors)."""

    @functools.wraps(fn)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with stored_arithmetic():
            return fn(*args, **kwargs)

    return run


def as_float32(values: np.ndarray) -> np.ndarray:
    """float64 sums rounded to float32, as upstream scores them: a stored value past float32's range
    gives inf (then +inf scores, never a warning on stderr)."""
    with stored_arithmetic():
        rounded: np.ndarray = np.asarray(values).astype(np.float32)
    return rounded


def row_dots(vectors: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Dot products of float32 rows with a query, accumulated in float64 and rounded to float32.

    Products of float32 values are exact in float64, so the rounded result does not depend on the
    summation order BLAS picks for a given matrix shape: search (one node at a time) and exact
    search (candidates from anywhere) give the same score to the same item, bit for bit.
    """
    with stored_arithmetic():
        return as_float32(vectors.astype(np.float64) @ q.astype(np.float64))


def squared_norms(vectors: np.ndarray) -> np.ndarray:
    """Squared norm of each row, computed like :func:`row_dots` (float64 sum, float32 result)."""
    with stored_arithmetic():
        v = vectors.astype(np.float64)
        return as_float32(np.einsum("ij,ij->i", v, v))


def score_block(metric: str, is_normalized: bool, dots: np.ndarray, sq_norms: np.ndarray,
                q_sq: np.float32 | np.ndarray) -> np.ndarray:
    """Scores from dot products (§4.1), lower is better; the L2 radicand is clamped at 0 (a
    documented divergence: upstream aborts on the NaN), and NaN from stored NaN rows becomes +inf.

    ``dots`` is (n,) for one query or (queries, n) with ``q_sq`` of shape (queries, 1).
    """
    with np.errstate(over="ignore", invalid="ignore"):  # inf - inf from stored extremes: NaN, made +inf below
        if metric == "IP":
            scores = -dots
        else:
            base = np.float32(1.0) if is_normalized else sq_norms
            scores = np.sqrt(np.maximum(base - np.float32(2.0) * dots + q_sq, np.float32(0.0)))
    if np.isnan(scores).any():
        scores = np.where(np.isnan(scores), np.float32(np.inf), scores)
    return scores
