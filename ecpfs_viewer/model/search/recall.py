"""Recall@k of eCP search against exact search, swept over search_exp values.

The exact neighbours are computed once per query set; then every query is searched once per
search_exp, timing each search and counting the leaves it visited.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ecpfs_viewer.model.search.queries import QuerySet, queries_from_array
from ecpfs_viewer.model.search.results import (
    ProgressCallback,
    QueryError,
    Reporter,
    SearchCost,
    SearchParams,
    SearchResult,
)

if TYPE_CHECKING:
    from ecpfs_viewer.model.search.exact import ExactNeighbours
    from ecpfs_viewer.model.search.index import IndexReader


@dataclass(frozen=True)
class RecallRow:
    """One search_exp of a sweep: recall@k and what the searches cost (mean and 95th percentile).

    Bytes and requests are cold figures (``SearchCost.total_cold_bytes``): what each search would
    read with nothing cached, so rows compare however much the sweep had cached before them.
    """

    search_exp: int
    recall: float
    leaves_mean: float
    leaves_p95: float
    ms_mean: float
    ms_p95: float
    queries: int
    distance_computations_mean: float = 0.0
    distance_computations_p95: float = 0.0
    nodes_visited_mean: float = 0.0
    nodes_visited_p95: float = 0.0
    bytes_mean: float = 0.0
    bytes_p95: float = 0.0
    requests_mean: float = 0.0
    requests_p95: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


#: The costs a RecallRow sums up, as (column label, attribute prefix): each has ``_mean`` and ``_p95``.
RECALL_COSTS = (("distance computations", "distance_computations"), ("nodes visited", "nodes_visited"),
                ("leaves", "leaves"), ("bytes", "bytes"), ("requests", "requests"))


def _cost_figures(costs: list[SearchCost]) -> dict[str, float]:
    """Mean and p95 of each per-search cost, keyed like RecallRow's fields (leaves are already there)."""
    table = np.array([(c.distance_computations, c.nodes_visited, c.total_cold_bytes, c.total_cold_requests)
                      for c in costs],
                     dtype=np.float64).reshape(-1, 4)
    means, p95s = table.mean(axis=0), np.percentile(table, 95, axis=0)
    names = ("distance_computations", "nodes_visited", "bytes", "requests")
    out = {f"{n}_mean": float(m) for n, m in zip(names, means, strict=True)}
    out.update({f"{n}_p95": float(p) for n, p in zip(names, p95s, strict=True)})
    return out


@dataclass(frozen=True)
class SweepSearch:
    """One search of a recall sweep, as ``recall_sweep(observe=...)`` hands it over."""

    query: int  # row in the query set
    search_exp: int
    result: SearchResult
    true_ids: frozenset[int]  # the exact top-k (after exclusions)

    @property
    def missed(self) -> frozenset[int]:
        return self.true_ids - {h.item_id for h in self.result.hits}


SearchObserver = Callable[[SweepSearch], None]


@dataclass(frozen=True)
class RecallReport:
    """A sweep over search_exp values on one query set."""

    k: int
    rows: tuple[RecallRow, ...]
    source: str
    exclude_self: bool


def recall_sweep(
    index: IndexReader,
    queries: QuerySet,
    k: int = 10,
    search_exps: Sequence[int] = (1, 2, 4, 8),
    max_increments: int = -1,
    exclude: frozenset[int] = frozenset(),
    exclude_self: bool = True,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    exact: Callable[..., ExactNeighbours] | None = None,
    observe: SearchObserver | None = None,
) -> RecallReport:
    """Recall@k, leaves visited, time and the other costs per query for each search_exp.

    When a query is a stored item and ``exclude_self`` is set, that item is left out of both the
    exact and the eCP result lists (it would otherwise always be found at distance 0).
    ``exact`` computes the ground truth instead of ``index.exact`` (same arguments), e.g. with dask.
    ``observe`` sees every search with its true neighbours (the miss map, per-query costs).
    """
    if not search_exps:
        raise QueryError("give at least one search_exp")
    for problem in (p for exp in search_exps for p in SearchParams(k, exp, max_increments).problems()):
        raise QueryError(problem)
    if len(queries) == 0:
        raise QueryError("recall needs at least one query")
    reporter = Reporter(progress, cancel)
    own = list(queries.self_ids) if exclude_self else [None] * len(queries)
    truth = (exact or index.exact)(queries.vectors, k, exclude, own, progress, cancel)
    index.preload_internal(reporter)
    params = [SearchParams(k, 0, max_increments, exclude if i is None else exclude | {i}) for i in own]
    rows = []
    total = len(search_exps) * len(queries)
    for e, exp in enumerate(search_exps):
        hits = expected = 0
        leaves, seconds = [], []
        costs: list[SearchCost] = []
        for j, q in enumerate(queries.vectors):
            if j % 16 == 0:
                reporter.report("searching", e * len(queries) + j, total)
            p = params[j]
            t = time.perf_counter()
            result = index.search(q, SearchParams(p.k, exp, p.max_increments, p.exclude))
            seconds.append(time.perf_counter() - t)
            leaves.append(result.leaves_visited)
            costs.append(result.cost)
            true_ids = {int(i) for i in truth.ids[j] if i >= 0}
            hits += len(true_ids & {h.item_id for h in result.hits})
            expected += len(true_ids)
            if observe is not None:
                observe(SweepSearch(j, exp, result, frozenset(true_ids)))
        ms = np.asarray(seconds) * 1e3
        rows.append(RecallRow(exp, hits / expected if expected else 1.0, float(np.mean(leaves)),
                              float(np.percentile(leaves, 95)), float(ms.mean()), float(np.percentile(ms, 95)),
                              len(queries), **_cost_figures(costs)))
    reporter.report("searching", total, total)
    return RecallReport(k, tuple(rows), queries.source, exclude_self)


def recall_at_k(
    reader: IndexReader,
    queries: Any,
    k: int,
    search_exp: int,
    max_increments: int = -1,
    exclude: frozenset[int] = frozenset(),
) -> float:
    """Mean fraction of the exact top-k ids that eCP search returns, over the given query rows."""
    query_set = queries_from_array(reader, np.asarray(queries, dtype=np.float32), "queries")
    report = recall_sweep(reader, query_set, k, (search_exp,), max_increments, exclude, exclude_self=False)
    return report.rows[0].recall
