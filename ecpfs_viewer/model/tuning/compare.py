"""Two indexes side by side: their summaries, node-size balance, item migration and recall against cost.

Every figure is computed from the same calls the rest of the app uses (the summary, the level
statistics, the item maps, ``recall_sweep`` with each search's ``SearchResult.cost``), so a number
here matches the one the browser shows for either index alone. The exact neighbours are computed
once when both indexes hold the same vectors, once per index otherwise (``RecallComparison.note``).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ecpfs_viewer.model.ecpfs.summary import IndexSummary, summarize
from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.search.exact import ExactNeighbours
from ecpfs_viewer.model.search.exact_dask import exact_with
from ecpfs_viewer.model.search.index import IndexReader
from ecpfs_viewer.model.search.item_map import ItemMap
from ecpfs_viewer.model.search.queries import QuerySet, queries_from_array
from ecpfs_viewer.model.search.recall import SweepSearch, recall_sweep
from ecpfs_viewer.model.search.results import (
    ProgressCallback,
    QueryError,
    Reporter,
    SearchCancelled,
    SearchError,
    SearchParams,
    SearchProgress,
    SearchResult,
)
from ecpfs_viewer.model.tasks import checkpoint
from ecpfs_viewer.model.tuning.balance import LevelBalance, index_balance
from ecpfs_viewer.model.tuning.migration import Migration, compare_assignments

if TYPE_CHECKING:
    from ecpfs_viewer.model.storage.options import RemoteOptions

#: Queries whose recall differs most, listed.
TOP_QUERIES = 20
#: Items whose vectors are compared to decide whether both indexes hold the same data.
SAME_DATA_PROBE = 256
#: The cost axes a recall curve can be drawn against: key -> what a user reads.
COST_AXES = {
    "distance_computations": "distance computations",
    "leaves_scanned": "leaves scanned",
    "nodes_visited": "nodes visited",
    "items_scored": "items scored",
    "bytes_cold": "bytes read (cold)",
    "ms": "milliseconds (this machine)",
}


@dataclass(frozen=True)
class SummaryRow:
    """One fact of both indexes; ``differs`` marks the rows a user should look at."""

    name: str
    a: Any
    b: Any

    @property
    def differs(self) -> bool:
        return bool(self.a != self.b)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "a": self.a, "b": self.b, "differs": self.differs}


@dataclass(frozen=True)
class IndexSide:
    """What is compared of one index without searching it."""

    label: str
    summary: IndexSummary
    balance: tuple[LevelBalance, ...]
    disk_bytes: int | None
    disk_files: int | None
    disk_note: str = ""  # why the disk figures are missing


@dataclass(frozen=True)
class SideBySide:
    a: IndexSide
    b: IndexSide
    rows: tuple[SummaryRow, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a.label, "b": self.b.label, "rows": [r.to_dict() for r in self.rows],
                "balance_a": [lv.to_dict() for lv in self.a.balance],
                "balance_b": [lv.to_dict() for lv in self.b.balance]}


def index_side(reader: IndexReader, item_map: ItemMap | None = None) -> IndexSide:
    """Summary, per-level balance and disk footprint of one index (metadata and one listing); with the
    index's item map, the leaves' sizes are counted from it instead of read from every leaf's metadata."""
    summary = summarize(reader.hierarchy)
    leaf_sizes = None
    if item_map is not None:
        leaves = np.asarray(reader.leaf_ids(), np.int64)
        held, counts = np.unique(item_map.leaves, return_counts=True)
        leaf_sizes = np.zeros(len(leaves), np.int64)
        at = np.searchsorted(leaves, held)
        inside = at < len(leaves)
        inside[inside] = leaves[at[inside]] == held[inside]
        leaf_sizes[at[inside]] = counts[inside]
    balance = index_balance(reader.hierarchy, summary, leaf_sizes)
    try:
        sizes = reader.store.sizes_below("")
        return IndexSide(reader.label, summary, balance, sum(sizes.values()), len(sizes))
    except Exception as exc:  # a server that cannot list: everything else still compares
        return IndexSide(reader.label, summary, balance, None, None, describe_exception(exc))


def side_by_side(a: IndexReader, b: IndexReader, maps: tuple[ItemMap, ItemMap] | None = None) -> SideBySide:
    """The summaries of both indexes as rows, the differing ones marked (``maps``: see :func:`index_side`)."""
    sa, sb = index_side(a, maps and maps[0]), index_side(b, maps and maps[1])
    rows = [SummaryRow(name, getattr(sa.summary, key), getattr(sb.summary, key)) for name, key in (
        ("levels", "levels"), ("metric", "metric"), ("normalized", "is_normalized"), ("dim", "dim"),
        ("stored dtype", "dtype"), ("total items", "total_items"), ("representatives", "representatives"),
        ("fan-out (index_root rows)", "fan_out"), ("node chunk rows", "node_chunk_rows"))]
    rows += [SummaryRow("disk bytes", sa.disk_bytes, sb.disk_bytes), SummaryRow("files", sa.disk_files, sb.disk_files)]
    for level in range(1, max(len(sa.balance), len(sb.balance)) + 1):
        la = sa.balance[level - 1] if level <= len(sa.balance) else None
        lb = sb.balance[level - 1] if level <= len(sb.balance) else None
        rows.append(SummaryRow(f"lvl_{level} nodes", la.nodes if la else None, lb.nodes if lb else None))
        rows.append(SummaryRow(f"lvl_{level} chunk fill", _rounded(la.chunk_fill if la else None),
                               _rounded(lb.chunk_fill if lb else None)))
        rows.append(SummaryRow(f"lvl_{level} imbalance factor", _rounded(la.imbalance_factor if la else None),
                               _rounded(lb.imbalance_factor if lb else None)))
    return SideBySide(sa, sb, tuple(rows))


def _rounded(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.4g}")


# ------------------------------------------------------------------------------------ migration


def item_maps(a: IndexReader, b: IndexReader, progress: ProgressCallback | None = None,
              cancel: threading.Event | None = None) -> tuple[ItemMap, ItemMap]:
    """Every item's leaf in each index (item_ids arrays only; a saved map when a process kept one)."""
    maps = []
    for name, reader in (("A", a), ("B", b)):
        reporter = Reporter(_phased(progress, f"{name}: item ids"), cancel)
        found = reader.locator.read_everything(reporter)
        reader.keep_item_map()
        maps.append(found if found is not None else ItemMap.of_leaves([], []))
    return maps[0], maps[1]


def migration(a: IndexReader, b: IndexReader, progress: ProgressCallback | None = None,
              cancel: threading.Event | None = None) -> Migration:
    """How the items both indexes hold moved between their leaves (exact, O(items))."""
    map_a, map_b = item_maps(a, b, progress, cancel)
    return compare_assignments(map_a, map_b)


# ------------------------------------------------------------------------------------ recall against cost


@dataclass(frozen=True)
class CostPoint:
    """One search_exp of one index: recall@k and the mean cost of its searches."""

    search_exp: int
    recall: float
    distance_computations: float
    leaves_scanned: float
    nodes_visited: float
    items_scored: float
    bytes_cold: float  # what the search reads with nothing cached
    ms: float

    def cost(self, axis: str) -> float:
        return float(getattr(self, axis))

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class QueryDifference:
    """A query whose recall differs between the indexes, at the search_exp where it differs most."""

    query: int  # row in the query set
    item_id: int | None  # the stored item it is, for sampled queries
    search_exp: int
    recall_a: float
    recall_b: float

    @property
    def difference(self) -> float:
        return self.recall_b - self.recall_a

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "difference": self.difference}


@dataclass(frozen=True)
class RecallComparison:
    """Recall@k against cost of both indexes on the same queries."""

    k: int
    source: str
    shared_truth: bool  # the exact neighbours were computed once (both hold the same vectors)
    note: str
    curve_a: tuple[CostPoint, ...]
    curve_b: tuple[CostPoint, ...]
    differing: tuple[QueryDifference, ...]
    queries_a: QuerySet = field(repr=False)
    queries_b: QuerySet = field(repr=False)
    truth_a: tuple[frozenset[int], ...] = field(default=(), repr=False)  # each query's exact top-k in A
    truth_b: tuple[frozenset[int], ...] = field(default=(), repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"k": self.k, "source": self.source, "shared_truth": self.shared_truth, "note": self.note,
                "curve_a": [p.to_dict() for p in self.curve_a], "curve_b": [p.to_dict() for p in self.curve_b],
                "differing_queries": [d.to_dict() for d in self.differing]}


class _Collector:
    """Per query and search_exp: recall and cost, from ``recall_sweep(observe=...)``; a checkpoint after
    every search (the sweep itself checks every 16), so a GUI thread waiting for the interpreter gets it."""

    def __init__(self, cancel: threading.Event | None = None) -> None:
        self.cancel = cancel
        self.recall: dict[tuple[int, int], float] = {}
        self.costs: dict[int, list[tuple[int, int, int, int, int, float]]] = {}
        self.truth: dict[int, frozenset[int]] = {}

    def __call__(self, search: SweepSearch) -> None:
        checkpoint(self.cancel, SearchCancelled)
        found = {h.item_id for h in search.result.hits}
        truth = self.truth[search.query] = search.true_ids
        self.recall[(search.search_exp, search.query)] = len(truth & found) / len(truth) if truth else 1.0
        c = search.result.cost
        self.costs.setdefault(search.search_exp, []).append(
            (c.distance_computations, c.leaves_scanned, c.nodes_visited, c.items_scored, c.total_cold_bytes,
             search.result.seconds * 1e3))

    def curve(self, exps: Sequence[int], recalls: dict[int, float]) -> tuple[CostPoint, ...]:
        points = []
        for exp in exps:
            means = np.asarray(self.costs[exp], np.float64).mean(axis=0)
            points.append(CostPoint(exp, recalls[exp], *(float(m) for m in means)))
        return tuple(points)


def _phased(progress: ProgressCallback | None, name: str) -> ProgressCallback | None:
    if progress is None:
        return None
    return lambda p: progress(SearchProgress(f"{name}: {p.phase}" if p.phase else name, p.done, p.total))


def same_vectors(a: IndexReader, b: IndexReader, common_ids: np.ndarray, seed: int = 0) -> tuple[bool, str]:
    """Whether both indexes hold the same vector for a sample of their common items (and score alike)."""
    if (a.metric, a.is_normalized, a.dim) != (b.metric, b.is_normalized, b.dim):
        return False, (f"the indexes score differently ({a.metric}, normalized {a.is_normalized}, dim {a.dim} vs "
                       f"{b.metric}, normalized {b.is_normalized}, dim {b.dim})")
    if a.total_items != b.total_items or len(common_ids) != (a.total_items or 0):
        return False, "the indexes do not hold the same items"
    rng = np.random.default_rng(seed + 1)
    probe = np.sort(rng.choice(common_ids, size=min(SAME_DATA_PROBE, len(common_ids)), replace=False))
    if not np.array_equal(a.vectors_for_items(probe.tolist()), b.vectors_for_items(probe.tolist())):
        return False, "the same item ids hold different vectors"
    return True, "both hold the same items and vectors"


def compare_recall(a: IndexReader, b: IndexReader, *, queries: Any | None = None, query_source: str = "queries",
                   sample: int = 200, seed: int = 0, k: int = 10, search_exps: Sequence[int] = (1, 2, 4, 8),
                   common_ids: np.ndarray | None = None, progress: ProgressCallback | None = None,
                   cancel: threading.Event | None = None, scheduler: str | None = None,
                   remote: RemoteOptions | None = None) -> RecallComparison:
    """Recall@k against cost of both indexes on the same queries: rows of ``queries`` or ``sample``
    item ids both hold (each left out of its own result lists), exact neighbours computed once
    when both hold the same vectors; with ``scheduler``, by dask (see :func:`exact_with`; ``remote``:
    the options the workers open URLs with)."""
    if common_ids is None:
        map_a, map_b = item_maps(a, b, progress, cancel)
        common_ids = np.intersect1d(map_a.unique_ids(), map_b.unique_ids())
    if queries is not None:
        matrix = np.asarray(queries, np.float32)
        qa = queries_from_array(a, matrix, query_source)
        qb = queries_from_array(b, matrix, query_source)
    else:
        if sample < 1:
            raise QueryError(f"the sample needs at least 1 item (got {sample})")
        if not len(common_ids):
            raise SearchError("the indexes hold no item id in common to sample queries from (give a .npy)")
        rng = np.random.default_rng(seed)
        chosen = np.sort(rng.choice(common_ids, size=min(sample, len(common_ids)), replace=False)).tolist()
        label = f"{len(chosen)} sampled items held by both (seed {seed})"
        reporter = Reporter(_phased(progress, "query vectors"), cancel)
        qa = QuerySet(a.vectors_for_items(chosen, reporter), tuple(chosen), label)
        qb = QuerySet(b.vectors_for_items(chosen, reporter), tuple(chosen), label)
    shared, note = same_vectors(a, b, common_ids, seed)
    truth: ExactNeighbours | None = None
    if shared:
        own = list(qa.self_ids)
        truth = exact_with(a, scheduler, remote)(qa.vectors, k, frozenset(), own, _phased(progress, "exact neighbours"),
                                                 cancel)
        note += ": exact neighbours computed once"
    else:
        note += ": exact neighbours computed in each index"

    def given(*_args: Any) -> ExactNeighbours:
        assert truth is not None
        return truth

    curves = []
    collectors = []
    for name, reader, query_set in (("A", a, qa), ("B", b, qb)):
        collector = _Collector(cancel)
        report = recall_sweep(reader, query_set, k, search_exps, progress=_phased(progress, name), cancel=cancel,
                              exact=given if truth is not None else exact_with(reader, scheduler, remote),
                              observe=collector)
        curves.append(collector.curve(search_exps, {row.search_exp: row.recall for row in report.rows}))
        collectors.append(collector)
    truths = [tuple(c.truth[q] for q in range(len(qa))) for c in collectors]
    return RecallComparison(k, qa.source, shared, note, curves[0], curves[1],
                            _most_differing(collectors[0], collectors[1], qa, search_exps), qa, qb, *truths)


def _most_differing(ca: _Collector, cb: _Collector, queries: QuerySet, exps: Sequence[int],
                    top: int = TOP_QUERIES) -> tuple[QueryDifference, ...]:
    ra = np.array([[ca.recall[(e, q)] for e in exps] for q in range(len(queries))])
    rb = np.array([[cb.recall[(e, q)] for e in exps] for q in range(len(queries))])
    gap = np.abs(rb - ra)
    where = gap.argmax(axis=1)
    widest = gap[np.arange(len(queries)), where]
    order = [q for q in np.lexsort((np.arange(len(queries)), -widest)) if widest[q] > 0][:top]
    return tuple(QueryDifference(int(q), queries.self_ids[q], int(exps[where[q]]), float(ra[q, where[q]]),
                                 float(rb[q, where[q]])) for q in order)


def query_paths(a: IndexReader, b: IndexReader, comparison: RecallComparison,
                difference: QueryDifference) -> tuple[SearchResult, SearchResult]:
    """One listed query searched again in each index at its search_exp: the two traces to show."""
    results = []
    for reader, query_set in ((a, comparison.queries_a), (b, comparison.queries_b)):
        own = query_set.self_ids[difference.query]
        exclude = frozenset() if own is None else frozenset({own})
        results.append(reader.search(query_set.vectors[difference.query],
                                     SearchParams(comparison.k, difference.search_exp, -1, exclude)))
    return results[0], results[1]


# ------------------------------------------------------------------------------------ everything


@dataclass(frozen=True)
class Comparison:
    """Everything ``ecpfs-viewer compare`` prints and the comparison view shows."""

    sides: SideBySide
    migration: Migration | None
    migration_note: str
    recall: RecallComparison

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.sides.to_dict(),
                "migration": None if self.migration is None else self.migration.to_dict(),
                "migration_note": self.migration_note, "recall": self.recall.to_dict()}


def compare_indexes(a: IndexReader, b: IndexReader, *, queries: Any | None = None, query_source: str = "queries",
                    sample: int = 200, seed: int = 0, k: int = 10, search_exps: Sequence[int] = (1, 2, 4, 8),
                    progress: ProgressCallback | None = None, cancel: threading.Event | None = None,
                    scheduler: str | None = None, remote: RemoteOptions | None = None) -> Comparison:
    """Summaries, balance, migration and recall against cost of two indexes (the exact neighbours with
    dask when ``scheduler`` is given: see :func:`compare_recall`)."""
    for problem in (p for exp in search_exps for p in SearchParams(k, exp).problems()):
        raise QueryError(problem)
    map_a, map_b = item_maps(a, b, progress, cancel)
    sides = side_by_side(a, b, (map_a, map_b))
    moved = compare_assignments(map_a, map_b)
    note = "" if moved.common_items else "the indexes hold no item id in common: no migration"
    common = np.intersect1d(map_a.unique_ids(), map_b.unique_ids())
    recall = compare_recall(a, b, queries=queries, query_source=query_source, sample=sample, seed=seed, k=k,
                            search_exps=search_exps, common_ids=common, progress=progress, cancel=cancel,
                            scheduler=scheduler, remote=remote)
    return Comparison(sides, moved if moved.common_items else None, note, recall)
