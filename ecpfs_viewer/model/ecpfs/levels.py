"""Statistics of one ``lvl_N``: node count, gaps and node sizes, from metadata only (no chunk reads)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.findings import Finding, cap_findings
from ecpfs_viewer.model.ecpfs.node_arrays import NodeList
from ecpfs_viewer.model.ecpfs.node_measure import EarlyHelper, measure_nodes
from ecpfs_viewer.model.ecpfs.paths import level_path, node_name, parse_node_name
from ecpfs_viewer.model.ecpfs.summary import IndexSummary, summarize
from ecpfs_viewer.model.errors import describe_exception, transport_failure
from ecpfs_viewer.model.formatting import count_noun
from ecpfs_viewer.model.histogram import histogram
from ecpfs_viewer.model.interpreter import release_gradually
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import Node, NodeKind

#: At most this many gap ids are kept (the count is always exact).
MAX_LISTED_IDS = 1000


@dataclass(frozen=True)
class NodeSize:
    node_id: int
    path: str
    rows: int


@dataclass(frozen=True, eq=False)
class LevelStats:
    """Node count, gaps and node sizes of one ``lvl_N``, from metadata only (no chunk decoding)."""

    level: int
    path: str
    is_leaf: bool | None
    node_ids: np.ndarray  # int64, ascending; nodes that have an embeddings array
    sizes: np.ndarray  # int64 rows of each node's embeddings, same order
    max_nodes: int | None  # min(ns^N, R)
    gap_count: int  # ids below max_nodes with no node
    gap_ids: tuple[int, ...]  # the first MAX_LISTED_IDS of them
    out_of_range_ids: tuple[int, ...]  # node ids >= max_nodes
    chunk_rows: int | None  # declared chunk rows of the node arrays (most common value)
    total_items: int | None
    empty_nodes: tuple[str, ...] = ()  # node groups without arrays
    other_entries: tuple[str, ...] = ()  # names that are not node_<id>
    findings: tuple[Finding, ...] = ()
    seconds: float = 0.0
    broken_ids: frozenset[int] = frozenset()  # nodes with a missing or unreadable array
    #: nodes that hold arrays but no usable embeddings (so no size): id -> 'unreadable' or 'missing';
    #: they exist (a reference to one is not a reference to nothing), broken
    sizeless: dict[int, str] = field(default_factory=dict)
    #: nodes whose metadata could not be read on the way (no answer): left out of the statistics,
    #: never counted as gaps, empty or broken
    unread_ids: frozenset[int] = frozenset()
    #: why something could not be read on the way (the first such failure); None when all was read
    unread: str | None = None
    #: statistics of a few named nodes (:func:`nodes_stats`), not of the whole level
    subset: bool = False
    #: read back from the cache folder (model/ecpfs/leaf_stats_cache.py), computed by an earlier process
    kept: bool = False

    @property
    def complete(self) -> bool:
        """False when some of the level could not be read on the way: the figures lack those nodes."""
        return self.unread is None

    def lacking(self) -> str | None:
        """What the figures lack, for a user ('lack 12 nodes that could not be read'); None when complete."""
        if self.unread is None:
            return None
        if not self.unread_ids:
            return "lack the whole level, which could not be read"
        return f"lack {count_noun(len(self.unread_ids), 'node')} that could not be read"

    def present_ids(self) -> np.ndarray:
        """Ids of the nodes that exist, ascending: those with a size and the sizeless ones."""
        if not self.sizeless:
            return self.node_ids
        return np.union1d(self.node_ids, np.fromiter(self.sizeless, np.int64, len(self.sizeless)))

    @property
    def node_count(self) -> int:
        return int(self.node_ids.size)

    @property
    def min_size(self) -> int | None:
        return int(self.sizes.min()) if self.sizes.size else None

    @property
    def max_size(self) -> int | None:
        return int(self.sizes.max()) if self.sizes.size else None

    @property
    def median_size(self) -> float | None:
        return float(np.median(self.sizes)) if self.sizes.size else None

    @property
    def mean_size(self) -> float | None:
        return float(self.sizes.mean()) if self.sizes.size else None

    @property
    def total_rows(self) -> int:
        return int(self.sizes.sum())

    @property
    def leaf_sum(self) -> int | None:
        """Sum of leaf sizes, to compare with total_items (None above the leaf level)."""
        return self.total_rows if self.is_leaf else None

    def node_path(self, node_id: int) -> str:
        return f"{self.path}/{node_name(node_id)}"

    def histogram(self, max_bins: int = 40) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Counts and bin edges of node sizes; one bin per size when the sizes span few values."""
        return histogram(self.sizes, bins=max_bins, per_value_limit=max_bins)

    def largest(self, count: int = 5) -> list[NodeSize]:
        order = np.argsort(-self.sizes, kind="stable")[:count]
        return [
            NodeSize(int(self.node_ids[i]), self.node_path(int(self.node_ids[i])), int(self.sizes[i])) for i in order
        ]

    def smallest(self, count: int = 5) -> list[NodeSize]:
        order = np.argsort(self.sizes, kind="stable")[:count]
        return [
            NodeSize(int(self.node_ids[i]), self.node_path(int(self.node_ids[i])), int(self.sizes[i])) for i in order
        ]

    @property
    def underfill(self) -> float | None:
        """Mean fraction of the first chunk each node uses (rows / chunk rows, capped at 1)."""
        if not self.sizes.size or not self.chunk_rows:
            return None
        return float(np.minimum(self.sizes / self.chunk_rows, 1.0).mean())

    @property
    def nodes_in_one_chunk(self) -> int:
        """Nodes whose rows fit in a single chunk (reading them decodes one whole padded chunk)."""
        if not self.chunk_rows:
            return 0
        return int((self.sizes <= self.chunk_rows).sum())

    def to_dict(self) -> dict[str, Any]:
        counts, edges = self.histogram()
        return {
            "level": self.level,
            "path": self.path,
            "is_leaf": self.is_leaf,
            "node_count": self.node_count,
            "max_nodes": self.max_nodes,
            "gap_count": self.gap_count,
            "gap_ids": list(self.gap_ids[:100]),
            "out_of_range_ids": list(self.out_of_range_ids[:100]),
            "size_min": self.min_size,
            "size_median": self.median_size,
            "size_mean": self.mean_size,
            "size_max": self.max_size,
            "total_rows": self.total_rows,
            "leaf_sum": self.leaf_sum,
            "total_items": self.total_items,
            "chunk_rows": self.chunk_rows,
            "underfill": self.underfill,
            "histogram": {"counts": counts.tolist(), "edges": edges.tolist()},
            "largest": [n.__dict__ for n in self.largest()],
            "smallest": [n.__dict__ for n in self.smallest()],
            "empty_nodes": list(self.empty_nodes),
            "other_entries": list(self.other_entries),
            "findings": [f.to_dict() for f in self.findings],
        }


def level_stats(h: Hierarchy, level: int, summary: IndexSummary | None = None) -> LevelStats:
    """Statistics of ``lvl_{level}`` from the metadata of its nodes; never raises.

    Reads the level listing through the Hierarchy (cached, shared with the tree) and each node's
    ``embeddings`` / ids ``zarr.json`` in one batch; a node whose arrays are not the expected ones
    is listed to explain what it holds.
    """
    started = time.perf_counter()
    summary = summary if summary is not None else summarize(h)
    path = level_path(level)
    try:
        stats = _level_stats(h, level, path, summary)
    except Exception as exc:  # never let a bad store escape to the caller
        if transport_failure(exc) is not None:
            stats = replace(_empty_level(level, path, summary, (Finding(fc.LEVEL_UNREAD, path, _unread_message(exc)),)),
                            unread=describe_exception(exc))
        else:
            stats = _empty_level(
                level, path, summary, (Finding(fc.STATISTICS_FAILED,
                                               path, f"cannot compute statistics: {describe_exception(exc)}"),)
            )
    return replace(stats, seconds=time.perf_counter() - started)


def _unread_message(exc: BaseException) -> str:
    return f"could not be read: {describe_exception(exc)}; no statistics (not a fact about the index: retry)"


def _gaps(node_ids: np.ndarray, limit: int) -> tuple[int, tuple[int, ...]]:
    """Ids below limit with no node, counted exactly and listed up to MAX_LISTED_IDS.

    Works from the ids that exist: limit is a declared number (min(ns^N, R)) that a hostile store
    can make 10^10, so nothing of that size is allocated.
    """
    inside = np.unique(node_ids[(node_ids >= 0) & (node_ids < limit)])
    candidates = np.arange(min(limit, inside.size + MAX_LISTED_IDS), dtype=np.int64)
    listed = np.setdiff1d(candidates, inside, assume_unique=True)[:MAX_LISTED_IDS]
    return limit - int(inside.size), tuple(int(g) for g in listed)


@dataclass(frozen=True)
class LevelPlan:
    """Which levels to examine, from what is stored: never a loop up to a declared info/levels.

    ``info/levels`` may say 4,294,967,295, or be unreadable; the levels worth reading are the
    stored ``lvl_N`` folders. ``missing`` lists declared levels that are not stored.
    """

    declared: int | None
    stored: tuple[int, ...]  # stored lvl_N with 1 <= N <= declared (every N >= 1 when undeclared)
    missing: tuple[int, ...]  # declared but not stored, the first MAX_LISTED_LEVELS
    missing_count: int
    extra: tuple[str, ...]  # stored lvl_N outside 1..declared

    @property
    def shown(self) -> tuple[int, ...]:
        """Stored levels and the first missing ones, ascending: what a level table lists."""
        return tuple(sorted({*self.stored, *self.missing}))


#: Missing levels listed by LevelPlan (the count is exact).
MAX_LISTED_LEVELS = 10
#: Node ids above this are not ids of an index (numpy and zarr index with int64).
MAX_NODE_ID = 2**63 - 1


def level_plan(summary: IndexSummary) -> LevelPlan:
    """The levels to examine for summary, derived from its stored level paths; cheap for any L."""
    numbers = {int(p[4:]): p for p in summary.level_paths}
    declared = summary.levels
    if declared is None:
        stored = tuple(sorted(n for n in numbers if n >= 1))
        extra = tuple(numbers[n] for n in sorted(numbers) if n < 1)
        return LevelPlan(None, stored, (), 0, extra)
    stored = tuple(sorted(n for n in numbers if 1 <= n <= declared))
    extra = tuple(numbers[n] for n in sorted(numbers) if not 1 <= n <= declared)
    have = set(stored)
    missing: list[int] = []
    for level in range(1, declared + 1):  # ends within len(stored) + MAX_LISTED_LEVELS steps
        if level not in have:
            missing.append(level)
            if len(missing) == MAX_LISTED_LEVELS:
                break
    missing_count = max(declared, 0) - len(stored)
    return LevelPlan(declared, stored, tuple(missing), missing_count, extra)


def _empty_level(level: int, path: str, summary: IndexSummary, findings: tuple[Finding, ...]) -> LevelStats:
    empty = np.zeros(0, dtype=np.int64)
    return LevelStats(
        level,
        path,
        None,
        empty,
        empty,
        summary.max_nodes(level),
        0,
        (),
        (),
        None,
        summary.total_items,
        findings=findings,
    )


def nodes_stats(h: Hierarchy, level: int, node_ids: list[int], summary: IndexSummary | None = None) -> LevelStats:
    """The statistics of a few named nodes of ``lvl_{level}`` (``subset`` set; no gaps, no level
    totals): what one node's page needs without parsing every node of a 40,000-node level."""
    summary = summary if summary is not None else summarize(h)
    path = level_path(level)
    leaf: bool | None = None if summary.levels is None else level == summary.levels
    nodes = NodeList.of([(node_id, f"{path}/{node_name(node_id)}") for node_id in dict.fromkeys(node_ids)])
    findings: list[Finding] = []
    try:
        ids, sizes, chunk_rows, empty, broken, sizeless, unread = measure_nodes(h, nodes, leaf, summary, findings)
    except Exception as exc:
        return replace(_empty_level(level, path, summary, (Finding(fc.LEVEL_UNREAD, path, _unread_message(exc)),)),
                       subset=True, unread=describe_exception(exc))
    empty = [node for node in empty if h.node(node).kind is not NodeKind.ERROR]  # absent: no empty group
    order = np.argsort(np.asarray(ids, dtype=np.int64), kind="stable")
    common_rows = max(chunk_rows, key=chunk_rows.__getitem__) if chunk_rows else None
    return LevelStats(level, path, leaf, np.asarray(ids, dtype=np.int64)[order],
                      np.asarray(sizes, dtype=np.int64)[order], None, 0, (), (), common_rows, summary.total_items,
                      tuple(empty), (), cap_findings(findings), broken_ids=frozenset(broken), sizeless=sizeless,
                      unread_ids=frozenset(unread), unread=next(iter(unread.values()), None), subset=True)


def _level_stats(h: Hierarchy, level: int, path: str, summary: IndexSummary) -> LevelStats:
    findings: list[Finding] = []
    leaf: bool | None = None if summary.levels is None else level == summary.levels
    early = EarlyHelper.start(h, path, leaf, summary)  # measuring while the Hierarchy lists the level
    try:
        try:
            if path not in {n.name for n in h.children("")}:
                return _empty_level(level, path, summary, (Finding(fc.LEVEL_MISSING, path, "level does not exist"),))
            listed = h.children(path)
        except OSError as exc:
            if transport_failure(exc) is not None:
                raise
            return _empty_level(level, path, summary, (Finding(fc.CANNOT_LIST,
                                                               path, f"cannot list: {describe_exception(exc)}"),))
        return _listed_level_stats(h, level, path, summary, listed, leaf, findings, early)
    finally:
        if early is not None:
            early.helper.stop()


def _listed_level_stats(h: Hierarchy, level: int, path: str, summary: IndexSummary, listed: list[Node],
                        leaf: bool | None, findings: list[Finding], early: EarlyHelper | None) -> LevelStats:
    listed_nodes: list[tuple[int, str]] = []
    unread_nodes: dict[int, str | None] = {}
    others: list[str] = []
    for child in listed:
        node_id = parse_node_name(child.name)
        if node_id is not None and node_id > MAX_NODE_ID:
            findings.append(Finding(fc.NODE_ID_TOO_LARGE,
                                    child.path, f"node id is larger than {MAX_NODE_ID:,}; not part of the index"))
            node_id = None
        if node_id is not None and child.unread:
            unread_nodes[len(listed_nodes)] = child.error
            listed_nodes.append((node_id, child.path))
            continue
        if node_id is None or not child.kind.is_container:
            others.append(child.name)
            if child.kind is NodeKind.ERROR:
                findings.append(Finding(fc.UNREADABLE_METADATA, child.path, f"unreadable metadata: {child.error}"))
            continue
        if child.kind is NodeKind.ERROR:
            findings.append(Finding(fc.UNREADABLE_METADATA, child.path, f"unreadable group metadata: {child.error}"))
        listed_nodes.append((node_id, child.path))
    nodes = NodeList.of(listed_nodes, unread_nodes)
    release_gradually(listed_nodes)  # 200,000 pairs: freed at once they hold the GUI up
    ids, sizes, chunk_rows, empty, broken, sizeless, unread = measure_nodes(h, nodes, leaf, summary, findings,
                                                                            early)
    if unread:
        first = min(unread)
        findings.append(Finding(fc.NODES_UNREAD,
                                path, f"{count_noun(len(unread), 'node')} of {len(nodes):,} could not be read "
                                    f"(e.g. {path}/node_{first}: {unread[first]}); the statistics lack them"))
    if empty:
        findings.append(
            Finding(
                fc.NODES_WITHOUT_ARRAYS, path,
                f"{count_noun(len(empty), 'node group')} without arrays (search skips them), e.g. {empty[0]}"
            )
        )
    order = np.argsort(np.asarray(ids, dtype=np.int64), kind="stable")
    node_ids = np.asarray(ids, dtype=np.int64)[order]
    size_arr = np.asarray(sizes, dtype=np.int64)[order]
    limit = summary.max_nodes(level)
    gap_count, gap_ids, out_of_range = 0, tuple[int, ...](), tuple[int, ...]()
    if limit is not None:  # a node that could not be read is there, not a gap
        there = [node_ids, np.fromiter(unread, np.int64, len(unread)), np.fromiter(sizeless, np.int64, len(sizeless))]
        gap_count, gap_ids = _gaps(np.concatenate(there), limit)
        out_of_range = tuple(int(i) for i in node_ids[node_ids >= limit][:MAX_LISTED_IDS])
        if node_ids.size > limit:
            findings.append(Finding(fc.TOO_MANY_NODES,
                                    path, f"{node_ids.size} nodes, more than the possible min(ns^N, R) = {limit}"))
        if out_of_range:
            findings.append(
                Finding(
                    fc.NODE_ID_OUT_OF_RANGE, path,
                    f"{count_noun(len(out_of_range), 'node id')} at or above min(ns^N, R) = {limit}, "
                    f"e.g. {path}/node_{out_of_range[0]}",
                )
            )
    common_rows = max(chunk_rows, key=chunk_rows.__getitem__) if chunk_rows else None
    return LevelStats(
        level,
        path,
        leaf,
        node_ids,
        size_arr,
        limit,
        gap_count,
        gap_ids,
        out_of_range,
        common_rows,
        summary.total_items,
        tuple(empty),
        tuple(others),
        cap_findings(findings),
        broken_ids=frozenset(broken),
        sizeless=sizeless,
        unread_ids=frozenset(unread),
        unread=next(iter(unread.values()), None),
    )

