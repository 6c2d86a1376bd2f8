"""eCP search over a stored index (spec §4), exact search for ground truth, and recall@k.

Read-only and Qt-free: arrays are opened by full path with zarr-python (indexes without group
metadata work too), decoded nodes are cached, vectors are widened to float32. The search
returns the visited-node trace so the GUI can draw the path a query took.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import zarr
from zarr.abc.store import Store
from zarr.storage import LocalStore

from ecpfs_viewer.model.remote import read_arrays


@dataclass(frozen=True)
class SearchParams:
    """The knobs of one eCP search pass (CLI defaults)."""

    k: int = 10
    search_exp: int = 4
    max_increments: int = -1
    exclude: frozenset[int] = field(default_factory=frozenset)


@dataclass(frozen=True)
class VisitedNode:
    """One node the search opened, in visiting order; score is lower-is-better like item scores."""

    level: int  # 1-based, as lvl_N
    node_id: int
    score: float
    is_leaf: bool


@dataclass(frozen=True)
class SearchResult:
    """Items ascending by score, plus the trace of visited nodes."""

    items: list[tuple[int, float]]
    trace: list[VisitedNode]
    leaves_visited: int


@dataclass
class _Node:
    vectors: np.ndarray  # (n, dim) float32
    sq_norms: np.ndarray  # (n,) float32
    ids: np.ndarray  # (n,) int64


class IndexReader:
    """Read-only access to one index directory; caches every decoded node."""

    def __init__(self, path: str | os.PathLike[str], store: Store | None = None) -> None:
        self.path = Path(path)
        self._remote = store is not None  # a URL opened by model/stores.py: read nodes concurrently
        if store is None and not self.path.is_dir():
            raise FileNotFoundError(f"{self.path}: index not found")
        self._store: Store = store if store is not None else LocalStore(str(self.path), read_only=True)
        self.levels = int(self._scalar("info/levels"))
        self.metric = str(self._scalar("info/metric"))
        if self.metric not in ("L2", "IP"):
            raise ValueError(f"{self.path}: info/metric must be L2 or IP, found {self.metric!r}")
        try:
            self.is_normalized = bool(self._scalar("info/is_normalized"))
        except FileNotFoundError:
            self.is_normalized = False  # absent means false (§4.1)
        self.total_items = int(self._scalar("info/total_items"))
        root = self._open("index_root/embeddings")
        self._root = self._make_node(root[:], np.arange(root.shape[0]))
        self.dim = int(root.shape[1])
        self.stored_dtype = str(root.dtype)
        self._cache: dict[tuple[int, int], _Node | None] = {}
        self._all: tuple[np.ndarray, np.ndarray] | None = None
        self._item_pos: dict[int, int] | None = None

    # -- reading ------------------------------------------------------------------------
    def _open(self, path: str) -> zarr.Array:
        try:
            return zarr.open_array(self._store, path=path, mode="r", zarr_format=3)
        except (FileNotFoundError, KeyError) as exc:
            raise FileNotFoundError(f"{self.path}/{path}: missing") from exc
        except Exception as exc:  # zarr raises its own not-found types
            if type(exc).__name__ in ("ArrayNotFoundError", "NodeNotFoundError", "GroupNotFoundError"):
                raise FileNotFoundError(f"{self.path}/{path}: missing") from exc
            raise

    def _scalar(self, path: str):
        return self._open(path)[()]

    @staticmethod
    def _make_node(vectors: np.ndarray, ids: np.ndarray) -> _Node:
        v = np.ascontiguousarray(vectors, dtype=np.float32)
        return _Node(v, np.einsum("ij,ij->i", v, v), np.asarray(ids, dtype=np.int64))

    def node(self, level: int, node_id: int) -> _Node | None:
        """Decoded node ``lvl_{level}/node_{node_id}`` or None when it does not exist (a gap)."""
        key = (level, node_id)
        if key in self._cache:
            return self._cache[key]
        node = self._read_node(level, node_id)
        self._cache[key] = node
        return node

    def _read_node(self, level: int, node_id: int) -> _Node | None:
        base = f"lvl_{level}/node_{node_id}"
        ids_name = "item_ids" if level == self.levels else "node_ids"
        if self._remote:
            vectors, ids = read_arrays(self._store, [f"{base}/embeddings", f"{base}/{ids_name}"])
            return None if vectors is None or ids is None else self._make_node(vectors, ids)
        if not (self.path / base / "embeddings").is_dir():
            return None
        return self._make_node(self._open(f"{base}/embeddings")[:], self._open(f"{base}/{ids_name}")[:])

    def leaf_ids(self) -> list[int]:
        """Node ids present at the leaf level, by listing the directory."""
        if self._remote:  # one delimiter listing (s3, gs, az); a static web server raises: no listings
            from zarr.core.sync import sync

            async def listed() -> list[str]:
                return [name.rstrip("/") async for name in self._store.list_dir(f"lvl_{self.levels}")]

            names = sync(listed())
        else:
            names = os.listdir(self.path / f"lvl_{self.levels}")
        out = []
        for name in names:
            if name.startswith("node_") and name[5:].isdigit():
                out.append(int(name[5:]))
        return sorted(out)

    # -- distances (§4.1) ------------------------------------------------------------------
    def _distances(self, node: _Node, q: np.ndarray, q_sq: np.float32) -> np.ndarray:
        dots = node.vectors @ q
        if self.metric == "IP":
            return dots
        if self.is_normalized:
            rad = np.float32(1.0) - np.float32(2.0) * dots + q_sq
        else:
            rad = node.sq_norms - np.float32(2.0) * dots + q_sq
        return np.sqrt(np.maximum(rad, np.float32(0.0)))  # clamp: divergence from upstream, see §4.1

    def _prepare(self, query: np.ndarray) -> tuple[np.ndarray, np.float32]:
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"query has {q.shape[0]} dimensions, the index has {self.dim}")
        return q, np.float32(q @ q)

    # -- eCP search (§4.3) ---------------------------------------------------------------
    def search(self, query: np.ndarray, params: SearchParams = SearchParams()) -> SearchResult:
        """One incremental_search pass of a new query, returning the first k items and the trace."""
        q, q_sq = self._prepare(query)
        sign = -1.0 if self.metric == "L2" else 1.0
        L = self.levels
        heap: list[tuple[float, int, bool, int, int]] = []
        counter = 0
        for i, d in enumerate(self._distances(self._root, q, q_sq).tolist()):
            heapq.heappush(heap, (-(sign * d), counter, L == 1, 0, i))
            counter += 1
        items: list[tuple[float, int]] = []
        trace: list[VisitedNode] = []
        leaves = inc = 0
        exp = params.search_exp
        exclude = params.exclude
        while heap:
            neg_prio, _, is_leaf, lv, node_id = heapq.heappop(heap)
            node = self.node(lv + 1, node_id)
            if node is None:
                continue
            trace.append(VisitedNode(lv + 1, node_id, float(neg_prio), is_leaf))
            d = self._distances(node, q, q_sq)
            if is_leaf:
                scores = (-sign) * d
                for s, item in zip(scores.tolist(), node.ids.tolist(), strict=False):
                    if item not in exclude:
                        items.append((s, item))
                leaves += 1
            else:
                child_leaf = lv + 1 == L - 1
                for di, child in zip(d.tolist(), node.ids.tolist(), strict=False):
                    heapq.heappush(heap, (-(sign * di), counter, child_leaf, lv + 1, child))
                    counter += 1
            if leaves == exp:
                if len(items) >= params.k:
                    break
                if inc < params.max_increments or params.max_increments == -1:
                    inc += 1
                    exp *= 2
                else:
                    break
        items.sort(key=lambda t: t[0])
        return SearchResult([(item, score) for score, item in items[: params.k]], trace, leaves)

    # -- exact search ----------------------------------------------------------------------
    def _load_all(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._all is None:
            vecs, ids = [], []
            leaves = self.leaf_ids()
            # zarr-python's sync API is thread-safe; reads overlap on a small pool (~2x faster)
            with ThreadPoolExecutor(max_workers=8, thread_name_prefix="ecpfs-read") as pool:
                nodes = list(pool.map(lambda leaf: self._read_node(self.levels, leaf), leaves))
            for leaf, node in zip(leaves, nodes, strict=False):
                self._cache[(self.levels, leaf)] = node
                if node is not None:
                    vecs.append(node.vectors)
                    ids.append(node.ids)
            v = np.concatenate(vecs) if vecs else np.empty((0, self.dim), np.float32)
            i = np.concatenate(ids) if ids else np.empty(0, np.int64)
            self._all = (v, np.einsum("ij,ij->i", v, v), i)
        return self._all

    def exact_search(self, query: np.ndarray, k: int, exclude: Iterable[int] = ()) -> list[tuple[int, float]]:
        """Best k items over every leaf, scored like eCP search: the ground truth for recall."""
        q, q_sq = self._prepare(query)
        v, sq, ids = self._load_all()
        d = self._distances(_Node(v, sq, ids), q, q_sq)
        scores = d if self.metric == "L2" else -d
        excl = np.fromiter(exclude, dtype=np.int64)
        if excl.size:
            scores = np.where(np.isin(ids, excl), np.inf, scores)
        k = min(k, int(np.isfinite(scores).sum()))
        if k <= 0:
            return []
        part = np.argpartition(scores, k - 1)[:k]
        part = part[np.argsort(scores[part], kind="stable")]
        return [(int(ids[j]), float(scores[j])) for j in part]

    def vector_for_item(self, item_id: int) -> np.ndarray:
        """The stored vector of an item, widened to float32 (KeyError if no leaf holds it)."""
        v, _, ids = self._load_all()
        if self._item_pos is None:
            self._item_pos = {int(i): p for p, i in enumerate(ids.tolist())}
        try:
            return v[self._item_pos[int(item_id)]].copy()
        except KeyError:
            raise KeyError(f"item {item_id} is not in any leaf of {self.path}") from None


def recall_at_k(
    reader: IndexReader,
    queries: np.ndarray | Sequence[np.ndarray],
    k: int,
    search_exp: int,
    max_increments: int = -1,
    exclude: frozenset[int] = frozenset(),
) -> float:
    """Mean fraction of the exact top-k ids that eCP search returns, over the given queries."""
    queries = np.asarray(queries, dtype=np.float32)
    if queries.ndim == 1:
        queries = queries[None, :]
    if len(queries) == 0:
        raise ValueError("recall needs at least one query")
    params = SearchParams(k=k, search_exp=search_exp, max_increments=max_increments, exclude=exclude)
    hits = total = 0
    for q in queries:
        truth = {i for i, _ in reader.exact_search(q, k, exclude)}
        got = {i for i, _ in reader.search(q, params).items}
        hits += len(truth & got)
        total += len(truth)
    return hits / total if total else 1.0
