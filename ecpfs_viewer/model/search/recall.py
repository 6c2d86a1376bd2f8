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
from ecpfs_viewer.model.search.results import ProgressCallback, QueryError, Reporter, SearchParams, SearchResult

if TYPE_CHECKING:
    from ecpfs_viewer.model.search.exact import ExactNeighbours
    from ecpfs_viewer.model.search.index import IndexReader


@dataclass(frozen=True)
class RecallRow:
    """One search_exp of a sweep: recall@k and what the searches cost."""

    search_exp: int
    recall: float
    leaves_mean: float
    leaves_p95: float
    ms_mean: float
    ms_p95: float
    queries: int

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


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
    """Recall@k, leaves visited and time per query for each search_exp.

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
        for j, q in enumerate(queries.vectors):
            if j % 16 == 0:
                reporter.report("searching", e * len(queries) + j, total)
            p = params[j]
            t = time.perf_counter()
            result = index.search(q, SearchParams(p.k, exp, p.max_increments, p.exclude))
            seconds.append(time.perf_counter() - t)
            leaves.append(result.leaves_visited)
            true_ids = {int(i) for i in truth.ids[j] if i >= 0}
            hits += len(true_ids & {h.item_id for h in result.hits})
            expected += len(true_ids)
            if observe is not None:
                observe(SweepSearch(j, exp, result, frozenset(true_ids)))
        ms = np.asarray(seconds) * 1e3
        rows.append(RecallRow(exp, hits / expected if expected else 1.0, float(np.mean(leaves)),
                              float(np.percentile(leaves, 95)), float(ms.mean()), float(np.percentile(ms, 95)),
                              len(queries)))
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
