"""eCP search exactly as spec §4.3: one best-first heap over the whole tree.

Leaf and internal entries compete in one heap on their own score (not accumulated); a node that
does not exist is skipped and not counted; a node that cannot be read is, when asked, left out
with everything below it and named in the result (one bad node spoils only itself);
``search_exp`` leaves, doubled up to ``max_increments`` times while fewer than k items were
found; ``exclude`` is applied while scanning leaves. The trace records every node popped with
the rank it had among its siblings.
"""

from __future__ import annotations

import heapq
import time
from itertools import repeat
from typing import Any

import numpy as np

from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.search.reader import LevelReads, NodeReader
from ecpfs_viewer.model.search.results import (
    QueryError,
    SearchCost,
    SearchHit,
    SearchParams,
    SearchResult,
    UnreadableNode,
    VisitedNode,
    unreadable_node,
)

# heap entry: (score, push counter, is_leaf, level 1-based, node id, rank, siblings, parent id or -1)
_Entry = tuple[float, int, bool, int, int, int, int, int]
_UNREAD = (0, 0)


def sibling_ranks(scores: np.ndarray) -> np.ndarray:
    """1-based rank of each score among its siblings (1 = best; equal scores share a rank)."""
    ordered = np.sort(scores)
    ranks: np.ndarray = np.searchsorted(ordered, scores, side="left") + 1
    return ranks


def ecp_search(index: NodeReader, query: Any, params: SearchParams | None = None, counted: bool = True, *,
               skip_unreadable: bool = False) -> SearchResult:
    """One incremental_search pass of a new query: the first k items, the trace and its cost.

    With ``skip_unreadable`` (one search a user reads: `search`, the window's), a node that cannot
    be read is left out and named in the result's ``unreadable``; without it (recall, workload,
    reachability: figures over many searches, which must not quietly lose a leaf) its read fails the run.

    ``counted=False`` leaves the cost empty; only benchmarks/bench_search_cost.py uses it, to measure
    what counting adds to a search.
    """
    params = params or SearchParams()
    problems = params.problems()
    if problems:
        raise QueryError("; ".join(problems))
    t0 = time.perf_counter()
    q, q_sq = index.prepare_query(query)
    levels = index.levels
    heap: list[_Entry] = []
    root_scores = index.scores(index.root, q, q_sq)
    counter = _push_children(heap, 0, root_scores, index.root.ids.tolist(), levels == 1, 1, -1)
    scored = [len(root_scores)] + [0] * max(levels - 1, 0)  # representatives scored per level
    reads = LevelReads(levels) if counted else None
    excluded = np.fromiter(params.exclude, dtype=np.int64, count=len(params.exclude)) if params.exclude else None
    parts: list[tuple[np.ndarray, np.ndarray, int, np.ndarray]] = []  # scores, item ids, leaf, rows
    trace: list[VisitedNode] = []
    skipped: list[VisitedNode] = []
    unreadable: list[UnreadableNode] = []
    n_items = items_scored = leaves = increments = 0
    expected = params.search_exp
    while heap:
        score, _, is_leaf, level, node_id, rank, siblings, parent = heapq.heappop(heap)
        visit = VisitedNode(level, node_id, score, is_leaf, rank, siblings, None if parent < 0 else parent)
        try:
            node = index.node(level, node_id, reads)
        except UserError as exc:  # a damaged node: named, the rest still searched (a cancel is raised)
            if not skip_unreadable:
                raise
            unreadable.append(unreadable_node(level, node_id, exc))
            continue
        if node is None:
            skipped.append(visit)  # missing node: skipped, not counted (§4.3)
            continue
        trace.append(visit)
        scores = index.scores(node, q, q_sq)
        if is_leaf:
            rows = np.arange(len(scores))
            if excluded is not None:
                keep = ~np.isin(node.ids, excluded)
                scores, rows = scores[keep], rows[keep]
            parts.append((scores, node.ids[rows], node_id, rows))
            n_items += len(rows)
            if counted:
                items_scored += len(node.ids)
            leaves += 1
        else:
            if counted:
                scored[level] += len(scores)
            counter = _push_children(heap, counter, scores, node.ids.tolist(), level + 1 == levels, level + 1,
                                     node_id)
        if leaves == expected:
            if n_items >= params.k:
                break
            if increments < params.max_increments or params.max_increments == -1:
                increments += 1
                expected *= 2
            else:
                break
    cost = SearchCost() if reads is None else SearchCost(
        tuple(scored), items_scored, len(trace), leaves, tuple(reads.bytes_read), tuple(reads.requests),
        *_cold_reads(index, trace))
    return SearchResult(_best(parts, params.k), tuple(trace), leaves, tuple(skipped), time.perf_counter() - t0,
                        cost, tuple(unreadable))


def _cold_reads(index: NodeReader, trace: list[VisitedNode]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Bytes and requests per level that reading index_root and every visited node costs with nothing cached."""
    cost_of = index.read_costs.get
    nbytes, requests = [0] * (index.levels + 1), [0] * (index.levels + 1)
    nbytes[0], requests[0] = cost_of((0, 0), _UNREAD)
    for visit in trace:
        level = visit.level
        b, r = cost_of((level, visit.node_id), _UNREAD)
        nbytes[level] += b
        requests[level] += r
    return tuple(nbytes), tuple(requests)


def _push_children(heap: list[_Entry], counter: int, scores: np.ndarray, ids: list[int], is_leaf: bool,
                   level: int, parent: int) -> int:
    """Push a node's children. Entries are totally ordered (the push counter is unique), so the pop
    order does not depend on the heap's layout: many children at once are added and re-heapified
    (linear) instead of pushed one by one (an index_root of thousands of rows on every search)."""
    n = len(ids)
    entries = list(zip(scores.tolist(), range(counter, counter + n), repeat(is_leaf, n), repeat(level, n), ids,
                       sibling_ranks(scores).tolist(), repeat(n, n), repeat(parent, n), strict=True))
    if n > len(heap):
        heap.extend(entries)
        heapq.heapify(heap)
    else:
        for entry in entries:
            heapq.heappush(heap, entry)
    return counter + n


def _best(parts: list[tuple[np.ndarray, np.ndarray, int, np.ndarray]], k: int) -> tuple[SearchHit, ...]:
    """The k best scanned items, ascending by score, ties by item id (the spec leaves ties open)."""
    if not parts:
        return ()
    scores = np.concatenate([p[0] for p in parts])
    ids = np.concatenate([p[1] for p in parts])
    leaves = np.concatenate([np.full(len(p[0]), p[2], np.int64) for p in parts])
    rows = np.concatenate([p[3] for p in parts])
    order = np.lexsort((ids, scores))[:k]
    return tuple(SearchHit(int(ids[j]), float(scores[j]), int(leaves[j]), int(rows[j])) for j in order)
