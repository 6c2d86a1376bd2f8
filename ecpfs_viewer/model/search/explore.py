"""What the query explorer shows: one search with its path through the tree, and recall sweeps with
the true neighbours each search_exp missed and why.

Qt-free and run in workers: every function here reads through an :class:`IndexReader` and returns
frozen values a panel only renders.
"""

from __future__ import annotations

import csv
import io
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ecpfs_viewer.model.ecpfs.paths import node_path
from ecpfs_viewer.model.search.exact_dask import exact_with
from ecpfs_viewer.model.search.explain import MissedNeighbour, explain_misses
from ecpfs_viewer.model.search.queries import (
    QuerySet,
    queries_from_array,
    sample_items,
    saved_queries,
    saved_query_ids,
)
from ecpfs_viewer.model.search.recall import RECALL_COSTS, RecallReport, SearchObserver, recall_sweep
from ecpfs_viewer.model.search.results import (
    ProgressCallback,
    QueryError,
    Reporter,
    SearchHit,
    SearchParams,
    SearchResult,
    UnreadableNode,
)
from ecpfs_viewer.model.storage.npy_file import NpyFileError, map_npy_file
from ecpfs_viewer.model.zarrtree.subset import read_subset

if TYPE_CHECKING:
    from ecpfs_viewer.model.search.index import IndexReader

#: Most missed neighbours a recall run keeps for its table (the numbers always count all of them).
MAX_RECALL_MISSES = 20_000
# the costs of a recall row past the leaves and milliseconds its CSV always had
_EXTRA_COSTS = tuple(name for _, name in RECALL_COSTS if name != "leaves")


# -- queries ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuerySpec:
    """Where one query vector comes from: a stored item, a row of a .npy file, a saved query, or a
    row of an array in the store (e.g. the heatmap row the user picked)."""

    kind: str  # "item" | "file" | "saved" | "array"
    item_id: int = 0
    file: str = ""
    row: int = 0
    saved_id: str = ""
    path: str = ""

    @property
    def label(self) -> str:
        if self.kind == "item":
            return f"item {self.item_id}"
        if self.kind == "file":
            return f"{self.file} row {self.row}"
        if self.kind == "saved":
            return f"saved query {self.saved_id}"
        return f"{self.path} row {self.row}"


def map_npy(path: str, error: type[Exception] = QueryError) -> np.ndarray:
    """A .npy file memory-mapped, of any shape (:func:`map_npy_file`); ``error`` saying why when it
    cannot be (a folder, a pipe or device, which would block, not a .npy, a header that lies, not there)."""
    try:
        return map_npy_file(path)
    except NpyFileError as exc:
        raise error(str(exc)) from None


def load_npy(path: str) -> np.ndarray:
    """A .npy of queries, memory-mapped (1-D is one query); QueryError when it is not one."""
    q = map_npy(path)
    if q.ndim == 1:
        q = q[None, :]
    if q.ndim != 2 or q.dtype.kind not in "fiu":
        raise QueryError(f"{path}: expected a 2-D numeric array, got shape {q.shape} {q.dtype}")
    return q


def query_vector(reader: IndexReader, spec: QuerySpec) -> np.ndarray:
    """The query vector a spec names, read from the index or the file (checked by the search)."""
    if spec.kind == "item":
        return reader.vector_for_item(spec.item_id)
    if spec.kind == "saved":
        vectors: np.ndarray = saved_queries(reader, [spec.saved_id]).vectors[0]
        return vectors
    if spec.kind == "file":
        matrix = load_npy(spec.file)
        if not 0 <= spec.row < len(matrix):
            raise QueryError(f"row {spec.row} is outside {spec.file} ({len(matrix)} rows)")
        return np.asarray(matrix[spec.row])
    if spec.kind == "array":
        if spec.row < 0:
            raise QueryError(f"row {spec.row} of {spec.path} is negative")
        return np.asarray(read_subset(reader.hierarchy, spec.path, f"{spec.row}, :").data).reshape(-1)
    raise QueryError(f"unknown query source {spec.kind!r}")


# -- one search and its path ----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class OpenedNode:
    """A node the search expanded: its children's scores, and which of them it went into.

    ``level`` 0 is index_root (its children are level 1); ``visit`` is the node's place in the
    trace (0 for index_root). ``entered`` maps child id -> visit number.
    """

    level: int
    node_id: int
    visit: int
    child_ids: np.ndarray
    child_scores: np.ndarray
    entered: dict[int, int] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return "index_root" if self.level == 0 else node_path(self.level, self.node_id)


@dataclass(frozen=True)
class LeafVisit:
    """A leaf the search scanned: when, its own score and rank, and the best item found in it."""

    visit: int
    leaf: int
    score: float
    rank: int
    siblings: int
    items: int  # rows scanned (after exclusions)
    best: float | None  # best item score in the leaf, None when every row was excluded
    kept: int  # how many of the returned hits come from this leaf


@dataclass(frozen=True, eq=False)
class Exploration:
    """One search (the hits and the trace), the path views, and optionally the exact comparison."""

    label: str
    query: np.ndarray  # the query vector as given (checked and widened by the search)
    params: SearchParams
    metric: str
    levels: int
    result: SearchResult
    opened: tuple[OpenedNode, ...]
    leaves: tuple[LeafVisit, ...]
    exact: tuple[SearchHit, ...] | None = None  # None when not compared with exact search
    misses: tuple[MissedNeighbour, ...] = ()
    #: nodes the search or the exact comparison could not read (left out of both, each with why)
    unreadable: tuple[UnreadableNode, ...] = ()

    @property
    def recall(self) -> float | None:
        """Fraction of the exact top-k the search returned (None without the comparison)."""
        if self.exact is None:
            return None
        if not self.exact:
            return 1.0
        found = {h.item_id for h in self.result.hits}
        return sum(h.item_id in found for h in self.exact) / len(self.exact)


def explore(reader: IndexReader, spec: QuerySpec, params: SearchParams, compare: bool = False,
            progress: ProgressCallback | None = None, cancel: threading.Event | None = None) -> Exploration:
    """Search once and gather what the explorer shows; with ``compare``, also the exact neighbours
    (reads every leaf once) and why each missed one was missed."""
    reporter = Reporter(progress, cancel)
    query = query_vector(reader, spec)
    result = reader.search(query, params, skip_unreadable=True)
    reporter.check()
    q, q_sq = reader.prepare_query(query)
    opened = _opened_nodes(reader, result, q, q_sq)
    leaves = _leaf_visits(reader, result, params, q, q_sq)
    found = Exploration(spec.label, query, params, reader.metric, reader.levels, result, opened, leaves,
                        unreadable=result.unreadable)
    return compare_exact(reader, found, progress, cancel) if compare else found


def compare_exact(reader: IndexReader, found: Exploration, progress: ProgressCallback | None = None,
                  cancel: threading.Event | None = None) -> Exploration:
    """The same search with the exact neighbours (every leaf is read once, then cached) and why each
    missed one was missed; a separate step so a GUI can show the search's own results first."""
    truth = reader.exact(found.query, found.params.k, found.params.exclude, progress=progress, cancel=cancel,
                         skip_unreadable=True)
    exact = truth.hits(0)
    unreadable = (*found.unreadable, *(u for u in truth.unreadable if u not in found.unreadable))
    return replace(found, exact=exact, misses=explain_misses(reader, found.query, found.result, exact),
                   unreadable=unreadable)


def _opened_nodes(reader: IndexReader, result: SearchResult, q: np.ndarray, q_sq: np.float32
                  ) -> tuple[OpenedNode, ...]:
    entered: dict[tuple[int, int], dict[int, int]] = {}  # (parent level, parent id) -> child -> visit
    for visit, v in enumerate(result.trace, 1):
        parent = (0, 0) if v.parent is None else (v.level - 1, v.parent)
        entered.setdefault(parent, {}).setdefault(v.node_id, visit)
    opened = [OpenedNode(0, 0, 0, reader.root.ids, reader.scores(reader.root, q, q_sq), entered.get((0, 0), {}))]
    for visit, v in enumerate(result.trace, 1):
        if v.is_leaf:
            continue
        node = reader.node(v.level, v.node_id)
        if node is not None:
            opened.append(OpenedNode(v.level, v.node_id, visit, node.ids, reader.scores(node, q, q_sq),
                                     entered.get((v.level, v.node_id), {})))
    return tuple(opened)


def _leaf_visits(reader: IndexReader, result: SearchResult, params: SearchParams, q: np.ndarray,
                 q_sq: np.float32) -> tuple[LeafVisit, ...]:
    kept: dict[int, int] = {}
    for hit in result.hits:
        kept[hit.leaf] = kept.get(hit.leaf, 0) + 1
    excluded = np.fromiter(params.exclude, np.int64, len(params.exclude))
    visits = []
    for visit, v in enumerate(result.trace, 1):
        if not v.is_leaf:
            continue
        node = reader.node(v.level, v.node_id)
        if node is None:
            continue
        scores = reader.scores(node, q, q_sq)
        if len(excluded):
            scores = scores[~np.isin(node.ids, excluded)]
        best = float(scores.min()) if len(scores) else None
        visits.append(LeafVisit(visit, v.node_id, v.score, v.rank, v.siblings, len(scores), best,
                                kept.get(v.node_id, 0)))
    return tuple(visits)


# -- recall -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecallSpec:
    """The queries of a recall run: N sampled stored items, rows of a .npy file, or the saved queries."""

    kind: str = "sample"  # "sample" | "file" | "saved"
    n: int = 50
    seed: int = 0
    file: str = ""


@dataclass(frozen=True)
class RecallMiss:
    """One true neighbour a query's search missed at one search_exp."""

    search_exp: int
    query: str  # the query, for the user: 'item 17', 'q.npy row 3'
    miss: MissedNeighbour
    text: str = ""  # miss.describe(), written in the worker so a table of thousands fills at once


@dataclass(frozen=True)
class RecallOutcome:
    """A recall sweep and the misses behind its numbers."""

    report: RecallReport
    misses: tuple[RecallMiss, ...]
    missed_total: int  # all misses, also those past MAX_RECALL_MISSES

    def csv_text(self) -> str:
        """The sweep's numbers, one line per search_exp (what the plot shows)."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        extra = [f"{name}_{stat}" for name in _EXTRA_COSTS for stat in ("mean", "p95")]
        writer.writerow(["search_exp", f"recall@{self.report.k}", "leaves_mean", "leaves_p95", "ms_mean", "ms_p95",
                         "queries", *extra])
        for row in self.report.rows:
            writer.writerow([row.search_exp, f"{row.recall:.6f}", f"{row.leaves_mean:.3f}", f"{row.leaves_p95:.3f}",
                             f"{row.ms_mean:.4f}", f"{row.ms_p95:.4f}", row.queries,
                             *(f"{getattr(row, name):.3f}" for name in extra)])
        return out.getvalue()

    def misses_csv_text(self, metric: str = "L2") -> str:
        """Every kept miss, one line each with why it was missed (the CSV beside :meth:`csv_text`).

        ``score`` is the score the search ranks by (lower is better), as in the JSON; for an IP
        index the ``inner_product`` column gives the dot product itself. ``left_at`` is the first
        node on the item's path the search never opened, ranked ``rank`` of ``siblings`` under
        ``parent``.
        """
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["search_exp", "query", "exact_rank", "item_id", "score",
                         *(["inner_product"] if metric == "IP" else []), "leaf", "row", "reason", "left_at", "parent",
                         "rank", "siblings", "leaves_visited", "why"])
        for m in self.misses:
            miss = m.miss
            writer.writerow([m.search_exp, m.query, miss.true_rank, miss.item_id, f"{miss.score:.6g}",
                             *([f"{-miss.score:.6g}"] if metric == "IP" else []), miss.location.leaf_path,
                             miss.location.row, miss.reason, _node_or_blank(miss.left_at), _node_or_blank(miss.parent),
                             "" if miss.rank is None else miss.rank, "" if miss.siblings is None else miss.siblings,
                             miss.leaves_visited, m.text or miss.describe()])
        return out.getvalue()

    def to_dict(self) -> dict[str, Any]:
        """The numbers and every kept miss with its explanation, for JSON export."""
        return {"k": self.report.k, "source": self.report.source, "exclude_self": self.report.exclude_self,
                "rows": [row.to_dict() for row in self.report.rows], "missed_total": self.missed_total,
                "missed": [{"search_exp": m.search_exp, "query": m.query, **m.miss.to_dict()} for m in self.misses]}


def misses_csv_path(path: str | os.PathLike[str]) -> str:
    """Where the misses of a recall CSV go: beside it, 'recall.csv' -> 'recall-misses.csv'."""
    base, ext = os.path.splitext(os.fspath(path))
    return f"{base}-misses{ext or '.csv'}"


def _node_or_blank(node: tuple[int, int] | None) -> str:
    if node is None:
        return ""
    return "index_root" if node[0] == 0 else node_path(*node)


def recall_queries(reader: IndexReader, spec: RecallSpec, progress: ProgressCallback | None = None,
                   cancel: threading.Event | None = None) -> tuple[QuerySet, tuple[str, ...]]:
    """The query set of a recall run and a label for each query."""
    if spec.kind == "saved":
        queries = saved_queries(reader)
        return queries, tuple(f"saved query {q}" for q in saved_query_ids(reader))
    if spec.kind == "file":
        matrix = load_npy(spec.file)
        if spec.n < 1:
            raise QueryError(f"the sample needs at least 1 query (got {spec.n})")
        rows = list(range(len(matrix)))
        if spec.n < len(matrix):
            rng = np.random.default_rng(spec.seed)
            rows = sorted(int(r) for r in rng.choice(len(matrix), size=spec.n, replace=False))
        queries = queries_from_array(reader, np.asarray(matrix[rows], np.float32), spec.file)
        return queries, tuple(f"row {r}" for r in rows)
    queries = sample_items(reader, spec.n, spec.seed, progress, cancel)
    return queries, tuple(f"item {i}" for i in queries.self_ids)


def recall_explore(reader: IndexReader, spec: RecallSpec, k: int, search_exps: Sequence[int],
                   exclude_self: bool = True, progress: ProgressCallback | None = None,
                   cancel: threading.Event | None = None, observe: SearchObserver | None = None,
                   scheduler: str | None = None) -> RecallOutcome:
    """Recall@k per search_exp (:func:`recall_sweep`, which hands each search to ``observe``), then
    for each search_exp and query the true neighbours missed and why. ``scheduler``: the exact
    neighbours with dask (:func:`exact_dask.exact_with`: ``threads`` or ``tcp://HOST:PORT``)."""

    reporter = Reporter(progress, cancel)
    queries, labels = recall_queries(reader, spec, progress, cancel)
    own = list(queries.self_ids) if exclude_self else [None] * len(queries)
    truth = exact_with(reader, scheduler)(queries.vectors, k, frozenset(), own, progress, cancel)  # one pass
    report = recall_sweep(reader, queries, k, search_exps, exclude_self=exclude_self, progress=progress,
                          cancel=cancel, exact=lambda *_: truth, observe=observe)
    misses: list[RecallMiss] = []
    total = 0
    steps = len(search_exps) * len(queries)
    for e, exp in enumerate(search_exps):
        for j, q in enumerate(queries.vectors):
            if j % 16 == 0:
                reporter.report("explaining misses", e * len(queries) + j, steps)
            self_id = own[j]
            exclude = frozenset() if self_id is None else frozenset({self_id})
            result = reader.search(q, SearchParams(k, exp, -1, exclude))
            found = explain_misses(reader, q, result, truth.hits(j))
            total += len(found)
            misses.extend(RecallMiss(exp, labels[j], m, m.describe())
                          for m in found[:max(0, MAX_RECALL_MISSES - len(misses))])
    reporter.report("explaining misses", steps, steps)
    return RecallOutcome(report, tuple(misses), total)
