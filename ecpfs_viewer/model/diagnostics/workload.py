"""Query workload and hubness: replay a query set with eCP search and count what it visits.

The replay is batched: every entry of the tree is scored for a block of queries at once (BLAS) and
each query's pops are its entries in pop-key order (:mod:`pop_order`), cut where ecp_search stops
(search_exp leaves, doubled while fewer than k items). A query whose cut is decided by exactly
equal keys is searched with ecp_search itself, so every trace is ecp_search's.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ecpfs_viewer.model.blas import one_blas_thread
from ecpfs_viewer.model.diagnostics.pop_order import EntryTree, append_score, entry_tree, first_keys, lex_order
from ecpfs_viewer.model.search.ecp import ecp_search
from ecpfs_viewer.model.search.index import IndexReader
from ecpfs_viewer.model.search.queries import QuerySet
from ecpfs_viewer.model.search.reader import squared_norms
from ecpfs_viewer.model.search.results import ProgressCallback, Reporter, SearchParams

BATCH = 64
HOT = 20


@dataclass(frozen=True)
class NodeVisits:
    """Visits and size of every stored node of one level (size: children, or items for a leaf)."""

    level: int
    node_ids: np.ndarray
    sizes: np.ndarray
    visits: np.ndarray

    def top_share(self, fraction: float = 0.01) -> float:
        """Share of this level's visits that go to its busiest ``fraction`` of nodes (at least one)."""
        total = int(self.visits.sum())
        if total == 0 or len(self.visits) == 0:
            return 0.0
        top = max(1, math.ceil(fraction * len(self.visits)))
        return float(np.sort(self.visits)[::-1][:top].sum()) / total


@dataclass(frozen=True)
class Workload:
    """What a query set made the search read: per node, per query, and how skewed it is."""

    source: str
    queries: int
    params: SearchParams
    levels: tuple[NodeVisits, ...]
    leaves_per_query: np.ndarray
    nodes_per_query: np.ndarray
    searched: int = 0  # queries settled by ecp_search (exactly equal keys at the cut)
    notes: tuple[str, ...] = ()  # what the source could not tell, or how it was read (a search log)

    def hot_leaves(self, n: int = HOT) -> list[dict[str, Any]]:
        """The most visited leaves, with the share of queries that scanned each."""
        leaf = self.levels[-1]
        order = np.lexsort((leaf.node_ids, -leaf.visits))[:n]
        return [{"leaf": int(leaf.node_ids[j]), "path": f"lvl_{leaf.level}/node_{int(leaf.node_ids[j])}",
                 "visits": int(leaf.visits[j]), "items": int(leaf.sizes[j]),
                 "share_of_queries": float(leaf.visits[j]) / max(1, self.queries)} for j in order if leaf.visits[j]]

    def skew(self) -> dict[int, float]:
        """Per level, the share of visits that go to the top 1% of its nodes."""
        return {lv.level: lv.top_share() for lv in self.levels}

    def leaves_histogram(self) -> tuple[np.ndarray, np.ndarray]:
        """(leaves scanned, queries that scanned that many), for every count that occurs."""
        values, counts = np.unique(self.leaves_per_query, return_counts=True)
        return values, counts

    def visits_rows(self) -> list[dict[str, Any]]:
        """One row per stored node: level, node, size, visits (the visits-against-size chart, CSV)."""
        return [{"level": lv.level, "node_id": int(n), "size": int(s), "visits": int(v)}
                for lv in self.levels for n, s, v in zip(lv.node_ids, lv.sizes, lv.visits, strict=True)]

    def sentence(self) -> str:
        lpq = self.leaves_per_query
        mean, top = (float(lpq.mean()), int(lpq.max())) if len(lpq) else (0.0, 0)
        skew = ", ".join(f"lvl_{lv} {100 * s:.0f}%" for lv, s in self.skew().items())
        return (f"{self.queries:,} queries ({self.source}) at search_exp {self.params.search_exp}: "
                f"{mean:.1f} leaves per query (max {top}); "
                f"share of visits to the top 1% of nodes: {skew}")

    def to_dict(self) -> dict[str, Any]:
        values, counts = self.leaves_histogram()
        return {"source": self.source, "queries": self.queries, "search_exp": self.params.search_exp,
                "k": self.params.k, "text": self.sentence(),
                "leaves_per_query": {"mean": float(self.leaves_per_query.mean()) if self.queries else 0.0,
                                     "histogram": {str(int(v)): int(c) for v, c in zip(values, counts, strict=True)}},
                "skew_top_1_percent": {f"lvl_{lv}": s for lv, s in self.skew().items()},
                "hot_leaves": self.hot_leaves(), "settled_by_search": self.searched,
                "notes": list(self.notes), "nodes": self.visits_rows()}


@dataclass(frozen=True)
class Trace:
    """The nodes one query popped and read, in order, as (level, node id); and its leaves scanned."""

    nodes: tuple[tuple[int, int], ...]
    leaves: int


def replay(index: IndexReader, queries: QuerySet, params: SearchParams | None = None, *,
           progress: ProgressCallback | None = None, cancel: threading.Event | None = None) -> Workload:
    """Visits per node and leaves per query of a query set (each trace equals ecp_search's)."""
    params = params or SearchParams()
    reporter = Reporter(progress, cancel)
    tree, levels = _tree(index, reporter)
    counts = [np.zeros(len(ids), np.int64) for ids, _ in levels]
    positions = [{int(n): j for j, n in enumerate(ids.tolist())} for ids, _ in levels]
    leaves = np.zeros(len(queries), np.int64)
    nodes = np.zeros(len(queries), np.int64)
    searched = 0
    for start, traces, fallback in _traces(index, tree, queries.vectors, params, reporter):
        searched += fallback
        for j, trace in enumerate(traces):
            leaves[start + j] = trace.leaves
            nodes[start + j] = len(trace.nodes)
            for level, node_id in trace.nodes:
                at = positions[level - 1].get(node_id)
                if at is not None:
                    counts[level - 1][at] += 1
    visits = tuple(NodeVisits(lv + 1, ids, sizes, counts[lv]) for lv, (ids, sizes) in enumerate(levels))
    return Workload(queries.source, len(queries), params, visits, leaves, nodes, searched)


def traces(index: IndexReader, vectors: np.ndarray, params: SearchParams | None = None) -> list[Trace]:
    """Every query's trace (for tests and per-query views)."""
    tree, _ = _tree(index, Reporter())
    out: list[Trace] = []
    for _, part, _ in _traces(index, tree, index.prepare_queries(vectors), params or SearchParams(), Reporter()):
        out.extend(part)
    return out


def stored_levels(index: IndexReader, reporter: Reporter) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per level, the stored node ids and their sizes (children, or items for a leaf)."""
    return _tree(index, reporter)[1]


def _tree(index: IndexReader, reporter: Reporter) -> tuple[EntryTree, list[tuple[np.ndarray, np.ndarray]]]:
    """The entry tree and, per level, the stored node ids with their sizes."""
    item_map = index.locator.read_everything(reporter)
    assert item_map is not None
    ids, counts = np.unique(item_map.leaves, return_counts=True)
    present = dict.fromkeys(index.leaf_ids(), 0)
    present.update({int(a): int(c) for a, c in zip(ids, counts, strict=True)})
    tree = entry_tree(index, present)
    levels: list[tuple[np.ndarray, np.ndarray]] = []
    for lv in tree.levels:
        if lv.level == tree.depth:
            node_ids = np.array(sorted(present), np.int64)
            sizes = np.array([present[int(n)] for n in node_ids], np.int64)
        else:
            stored = lv.exists
            node_ids, first = np.unique(lv.node[stored], return_index=True)
            sizes = (lv.child_stop - lv.child_start)[stored][first]
        levels.append((node_ids, sizes))
    return tree, levels


def _traces(index: IndexReader, tree: EntryTree, vectors: np.ndarray, params: SearchParams, reporter: Reporter
            ) -> Any:
    """(start, traces, queries searched by ecp_search) per batch of queries."""
    level_of = np.concatenate([np.full(len(lv.node), lv.level, np.int64) for lv in tree.levels])
    node_of = np.concatenate([lv.node for lv in tree.levels])
    exists = np.concatenate([lv.exists for lv in tree.levels])
    is_leaf = (level_of == tree.depth) & exists
    items = np.zeros(len(level_of), np.int64)
    items[level_of == tree.depth] = tree.leaf_items
    excluded = params.exclude
    for start in range(0, len(vectors), BATCH):
        q = vectors[start:start + BATCH]
        q_sq = squared_norms(q)
        with one_blas_thread():  # small products: waking BLAS threads costs more than they give
            keys = _all_keys(tree, q, q_sq)
        out: list[Trace] = []
        fallback = 0
        for j in range(len(q)):
            if j % 16 == 0:
                reporter.check()  # a late GUI thread goes first
            plain = not excluded and params.search_exp >= 1
            trace = _cut(keys[j], level_of, node_of, exists, is_leaf, items, params) if plain else None
            if trace is None:
                result = ecp_search(index, q[j], params)
                trace = Trace(tuple((v.level, v.node_id) for v in result.trace), result.leaves_visited)
                fallback += 1
            out.append(trace)
        yield start, out, fallback
        reporter.report("replaying queries", min(start + BATCH, len(vectors)), len(vectors))


def _all_keys(tree: EntryTree, q: np.ndarray, q_sq: np.ndarray) -> np.ndarray:
    """(queries, all entries, depth) pop keys, levels concatenated."""
    keys = first_keys(len(q), tree.depth)[:, None, :]
    parts = []
    for lv in tree.levels:
        scores = tree.scores(lv.level, q, q_sq)
        parent = keys if lv.level == 1 else keys[:, lv.parent, :]
        if lv.level == 1:
            parent = np.broadcast_to(keys, (len(q), len(lv.node), tree.depth))
        n, e = scores.shape
        keys = append_score(np.ascontiguousarray(parent).reshape(n * e, tree.depth), scores.reshape(-1))
        keys = keys.reshape(n, e, tree.depth)
        parts.append(keys)
    return np.concatenate(parts, axis=1)


def _cut(keys: np.ndarray, level_of: np.ndarray, node_of: np.ndarray, exists: np.ndarray, is_leaf: np.ndarray,
         items: np.ndarray, params: SearchParams) -> Trace | None:
    """One query's pops up to where ecp_search stops; None when exactly equal keys decide the cut."""
    order = lex_order(keys)
    leaves_cum = np.cumsum(is_leaf[order])
    items_cum = np.cumsum(items[order] * is_leaf[order])
    expected, increments = params.search_exp, 0
    stop = len(order) - 1
    while True:
        at = int(np.searchsorted(leaves_cum, expected)) if expected > 0 else 0
        if expected == 0 or at >= len(order):
            stop = len(order) - 1
            break
        if items_cum[at] >= params.k:
            stop = at
            break
        if increments < params.max_increments or params.max_increments == -1:
            increments += 1
            expected *= 2
        else:
            stop = at
            break
    head = order[:stop + 2]
    ks = keys[head]
    if len(ks) > 1 and (ks[1:] == ks[:-1]).all(axis=1).any():
        return None
    popped = order[:stop + 1]
    popped = popped[exists[popped]]
    return Trace(tuple(zip(level_of[popped].tolist(), node_of[popped].tolist(), strict=True)),
                 int(leaves_cum[stop]))
