"""What a node of an ecpfs index holds: its facts, its children or items, and its spread.

The node page's values (built on :mod:`ecpfs_viewer.model.ecpfs.nodes`, which finds where a node
sits). :func:`node_info` reads metadata and one ``rep_item_ids`` element; :func:`children_of`
and :func:`leaf_items` decode the node's ids array; :func:`node_spread` decodes its embeddings
chunk by chunk (progress and cancel). A missing or broken child or member is listed in place with
the finding that explains it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ecpfs_viewer.model.ecpfs import (
    ROOT_EMBEDDINGS,
    Finding,
    IndexSummary,
    LevelStats,
    held_level_stats,
    nodes_stats,
    shared_level_stats,
)
from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.nodes import (
    NodeError,
    NodeRef,
    index_summary,
    parent_of,
)
from ecpfs_viewer.model.ecpfs.paths import level_path
from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.histogram import SPREAD_BINS_CAP, Figures, figures, freedman_diaconis_bins
from ecpfs_viewer.model.tasks import Counted, ProgressCallback, checkpoint
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.read_guard import ReadTooLarge, check_allocation

#: Member problems listed one by one (the count is always exact).
MAX_LISTED_PROBLEMS = 1000


def _node_findings(stats: LevelStats, node_id: int) -> list[Finding]:
    """The level's findings about one node; a generic one for a broken node whose own finding was
    folded into a '... and N more like' line."""
    path = stats.node_path(node_id)
    found = [f for f in stats.findings if f.path == path or f.path.startswith(path + "/")]
    if not found and node_id in stats.broken_ids:
        found.append(Finding(fc.NODE_INCOMPLETE, path, "an array is missing or unreadable (see the level's findings)"))
    return found


def _stats_for(h: Hierarchy, level: int, node_ids: list[int], summary: IndexSummary, whole_level: bool) -> LevelStats:
    """The level's statistics (whole_level, or already computed), else those of the named nodes
    only: a page shows at once on a level of 40,000 nodes, whose statistics take seconds."""
    if whole_level:
        return shared_level_stats(h, level, summary)
    return held_level_stats(h, level, summary) or nodes_stats(h, level, node_ids, summary)


def _sized(stats: LevelStats, node_id: int) -> tuple[bool, int]:
    """Whether the node has usable embeddings (a size), and where its size is in stats.sizes."""
    at = int(np.searchsorted(stats.node_ids, node_id))
    return at < stats.node_ids.size and int(stats.node_ids[at]) == node_id, at


# -- node facts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChunkUse:
    """Rows a node stores against the rows its chunks hold (reading it decodes whole chunks)."""

    rows: int
    chunk_rows: int
    chunks: int

    @property
    def capacity(self) -> int:
        return self.chunks * self.chunk_rows

    @property
    def fraction(self) -> float | None:
        return self.rows / self.capacity if self.capacity else None


@dataclass(frozen=True)
class Representative:
    """The row that leads a node: in its parent's embeddings, and in rep_item_ids."""

    parent: NodeRef
    row: int  # row in the parent's embeddings
    rep_row: int  # row of rep_embeddings / rep_item_ids (= the node id)
    item_id: int | None  # rep_item_ids[rep_row] when that row exists and is readable
    note: str = ""


@dataclass(frozen=True)
class NodeInfo:
    """The facts on a node page; exists False (with findings) for a referenced node that is absent.

    A node that exists without usable embeddings has ``embeddings`` 'unreadable' or 'missing' (no
    rows, no chunk use); its ids can still be listed."""

    ref: NodeRef
    exists: bool
    is_leaf: bool | None
    rows: int | None
    dim: int | None
    dtype: str | None
    level_nodes: int
    level_median: float | None
    representative: Representative | None
    chunk_use: ChunkUse | None
    findings: tuple[Finding, ...] = ()
    embeddings: str = "readable"  # or 'unreadable' / 'missing' for a node that exists without them

    @property
    def path(self) -> str:
        return self.ref.path

    @property
    def relative_size(self) -> float | None:
        """Rows over the level's median node size (1.0 = a typical node)."""
        if self.rows is None or not self.level_median:
            return None
        return self.rows / self.level_median

    @property
    def ids_name(self) -> str | None:
        if self.ref.is_root or self.is_leaf is None:
            return None
        return "item_ids" if self.is_leaf else "node_ids"


def node_info(h: Hierarchy, ref: NodeRef, *, progress: ProgressCallback | None = None,
              cancel: threading.Event | None = None, whole_level: bool = True) -> NodeInfo:
    """Everything the node page header shows; the first call for a level decodes the level above's
    node_ids (progress, cancel), later calls read metadata and one rep_item_ids element.

    whole_level False: the level's statistics only if computed already, else the node's own
    documents (level_median None and level_nodes 0: the comparison with the level comes later)."""
    summary = index_summary(h)
    findings: list[Finding] = []
    if ref.is_root:
        chunk_use = _chunk_use(h, ROOT_EMBEDDINGS, findings)
        return NodeInfo(ref, summary.fan_out is not None, summary.levels == 0 if summary.levels is not None else None,
                        summary.fan_out, summary.dim, summary.dtype, 1, None, None, chunk_use, tuple(findings))
    stats = _stats_for(h, ref.level, [ref.node_id], summary, whole_level)
    sized, at = _sized(stats, ref.node_id)
    embeddings = stats.sizeless.get(ref.node_id, "readable")
    exists = sized or ref.node_id in stats.sizeless
    findings += _node_findings(stats, ref.node_id)
    if not exists and not findings:
        why = "has no arrays" if ref.path in stats.empty_nodes else "does not exist"
        findings.append(Finding(fc.CHILD_MISSING, ref.path, f"{why} (search skips it)"))
    link = parent_of(h, ref, progress=progress, cancel=cancel)
    if link.finding is not None:
        findings.append(link.finding)
    representative = None
    if link.parent is not None and link.row is not None:
        item_id, note = rep_item_id(h, ref.node_id, summary.representatives)
        representative = Representative(link.parent, link.row, ref.node_id, item_id, note)
    return NodeInfo(
        ref, exists, None if summary.levels is None else ref.level == summary.levels,
        int(stats.sizes[at]) if sized else None, summary.dim, summary.dtype, 0 if stats.subset else stats.node_count,
        None if stats.subset else stats.median_size, representative,
        _chunk_use(h, f"{ref.path}/embeddings", findings) if sized else None, tuple(findings), embeddings)


def rep_item_id(h: Hierarchy, rep_row: int, representatives: int | None) -> tuple[int | None, str]:
    """rep_item_ids[rep_row], or None with the reason (missing array, no such row, unreadable)."""
    if representatives is None:
        return None, "rep_item_ids is missing"
    if rep_row >= representatives:
        return None, f"rep_item_ids has {representatives:,} rows; no row {rep_row}"
    try:
        return int(h.read_array("rep_item_ids", rep_row)), ""
    except Exception as exc:  # shown next to the representative, the page still works
        return None, describe_exception(exc)


def _chunk_use(h: Hierarchy, path: str, findings: list[Finding]) -> ChunkUse | None:
    try:
        details = h.array_details(path)
    except Exception as exc:
        findings.append(Finding(fc.UNREADABLE_DATA, path, describe_exception(exc)))
        return None
    if not details.shape or not details.chunk_shape or details.chunk_shape[0] <= 0:
        return None
    rows, chunk_rows = details.shape[0], details.chunk_shape[0]
    return ChunkUse(rows, chunk_rows, -(-rows // chunk_rows))


# -- children and items -------------------------------------------------------------------------


@dataclass(frozen=True)
class ChildRow:
    """One row of an internal node: the child it leads, its size, or why it is missing/broken."""

    row: int
    ref: NodeRef
    rows: int | None  # None when the child has no embeddings
    finding: Finding | None = None


@dataclass(frozen=True)
class Children:
    ref: NodeRef
    rows: tuple[ChildRow, ...]
    findings: tuple[Finding, ...] = ()  # about the node's own ids (unreadable...)

    @property
    def missing(self) -> int:
        return sum(1 for r in self.rows if r.rows is None)


def _ids_of(h: Hierarchy, ref: NodeRef, name: str) -> np.ndarray | Finding:
    path = f"{ref.path}/{name}"
    try:
        return np.asarray(h.read_array(path)).astype(np.int64, copy=False).ravel()
    except Exception as exc:
        return Finding(fc.UNREADABLE_DATA, path, f"unreadable: {describe_exception(exc)}")


#: What one child row of a page holds in memory, about: the ChildRow and its NodeRef.
_CHILD_ROW_BYTES = 256


def _root_ids(rows: int) -> np.ndarray | Finding:
    """The children of index_root, one per row it declares, within the read caps (a declared 10^9
    rows would be 8 GB of ids and a billion rows on the page)."""
    try:
        check_allocation(ROOT_EMBEDDINGS, rows, "rows", _CHILD_ROW_BYTES)
    except ReadTooLarge as exc:
        return Finding(fc.UNREADABLE_DATA, ROOT_EMBEDDINGS, str(exc))
    return np.arange(rows, dtype=np.int64)


def children_of(h: Hierarchy, ref: NodeRef, whole_level: bool = True) -> Children:
    """The child of each row of an internal node (index_root included), with its row count
    (whole_level False: from the children's own documents unless their level's statistics are held)."""
    summary = index_summary(h)
    if summary.levels is not None and ref.level >= summary.levels:
        raise NodeError(f"{ref.path} is a leaf (level {ref.level} of {summary.levels}): it has items, not children")
    ids = _root_ids(summary.fan_out or 0) if ref.is_root else _ids_of(h, ref, "node_ids")
    if isinstance(ids, Finding):
        return Children(ref, (), (ids,))
    stats = _stats_for(h, ref.level + 1, ids.tolist(), summary, whole_level)
    rows: list[ChildRow] = []
    for row, child_id in enumerate(ids.tolist()):
        child = NodeRef(ref.level + 1, child_id)
        sized, at = _sized(stats, child_id)
        exists = sized or child_id in stats.sizeless
        finding: Finding | None = None
        if summary.representatives is not None and child_id >= summary.representatives:
            finding = Finding(fc.NOT_A_REPRESENTATIVE, child.path,
                              f"node id {child_id} is not below the {summary.representatives:,} representatives")
        elif not exists or child_id in stats.broken_ids:
            found = _node_findings(stats, child_id)
            finding = found[0] if found else Finding(
                fc.CHILD_MISSING, child.path,
                f"referenced by {ref.path} row {row} but does not exist (search skips it)")
        rows.append(ChildRow(row, child, int(stats.sizes[at]) if sized else None, finding))
    return Children(ref, tuple(rows))


@dataclass(frozen=True, eq=False)
class LeafItems:
    """The item ids of a leaf, their range, and the members that are wrong (in row order)."""

    ref: NodeRef
    ids: np.ndarray  # int64, row order
    problems: tuple[MemberProblem, ...] = ()
    problem_count: int = 0
    findings: tuple[Finding, ...] = ()

    @property
    def count(self) -> int:
        return int(self.ids.size)

    @property
    def id_range(self) -> tuple[int, int] | None:
        return (int(self.ids.min()), int(self.ids.max())) if self.ids.size else None


@dataclass(frozen=True)
class MemberProblem:
    """A leaf member that is wrong, with the finding shown in its row."""

    row: int
    item_id: int
    finding: Finding


def leaf_items(h: Hierarchy, ref: NodeRef, whole_level: bool = True) -> LeafItems:
    """A leaf's item ids; ids at or above next_item_id and repeated ids are flagged in place
    (whole_level: see :func:`node_info`)."""
    summary = index_summary(h)
    if summary.levels is not None and ref.level != summary.levels:
        raise NodeError(f"{ref.path} is not a leaf (the leaves are {level_path(summary.levels)})")
    ids = _ids_of(h, ref, "item_ids")
    if isinstance(ids, Finding):
        return LeafItems(ref, np.zeros(0, dtype=np.int64), findings=(ids,))
    bad: dict[int, tuple[str, str]] = {}
    if summary.next_item_id is not None:
        for row in np.flatnonzero(ids >= summary.next_item_id)[:MAX_LISTED_PROBLEMS].tolist():
            bad[row] = (fc.ITEM_ID_BEYOND_NEXT,
                        f"item id {ids[row]} is not below next_item_id ({summary.next_item_id:,})")
    order = np.argsort(ids, kind="stable")
    repeats = np.flatnonzero(ids[order][1:] == ids[order][:-1]) + 1
    for at in repeats[:MAX_LISTED_PROBLEMS].tolist():
        first, row = int(order[at - 1]), int(order[at])
        bad.setdefault(row, (fc.DUPLICATE_ITEM_ID, f"item id {ids[row]} also at row {first} of this leaf"))
    problems = tuple(MemberProblem(row, int(ids[row]), Finding(code, f"{ref.path}/item_ids", text))
                     for row, (code, text) in sorted(bad.items())[:MAX_LISTED_PROBLEMS])
    beyond = int((ids >= summary.next_item_id).sum()) if summary.next_item_id is not None else 0
    findings = tuple(_node_findings(_stats_for(h, ref.level, [ref.node_id], summary, whole_level), ref.node_id))
    return LeafItems(ref, ids, problems, beyond + int(repeats.size), findings)


# -- spread -------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Spread:
    """How far a node's rows lie from its representative: the 'radius' of a large leaf."""

    ref: NodeRef
    measure: str  # 'L2 distance' or 'negated inner product' (the search score, lower = closer)
    distances: np.ndarray  # float64, one per row
    counts: np.ndarray  # histogram counts (Freedman-Diaconis bins, capped)
    edges: np.ndarray
    farthest: tuple[tuple[int, int | None], ...]  # (row, id) of the farthest rows, farthest first
    representative: tuple[NodeRef, int]  # (parent, row) whose vector is the centre

    @cached_property
    def _figures(self) -> Figures:
        return figures(self.distances)

    count = property(lambda self: self._figures.count, doc="How many distances (rows).")
    minimum = property(lambda self: self._figures.minimum, doc="The smallest distance.")
    median = property(lambda self: self._figures.median, doc="The median distance.")
    maximum = property(lambda self: self._figures.maximum, doc="The largest distance.")


def distances_to(rows: np.ndarray, centre: np.ndarray, metric: str | None) -> np.ndarray:
    """Distance of each row to centre under the index metric (IP: negated dot, as search scores)."""
    x = np.asarray(rows, dtype=np.float64).reshape(len(rows), -1)
    c = np.asarray(centre, dtype=np.float64).ravel()
    if metric == "IP":
        return np.asarray(-(x @ c))
    return np.asarray(np.sqrt(np.square(x - c).sum(axis=1)))


def node_spread(h: Hierarchy, ref: NodeRef, *, bins_cap: int = SPREAD_BINS_CAP, farthest: int = 5,
                progress: ProgressCallback | None = None, cancel: threading.Event | None = None) -> Spread:
    """Distances of every row of ref to its representative vector (the parent's row), read chunk by
    chunk; raises NodeError when the node or its representative cannot be read, Cancelled on cancel."""
    metric = index_summary(h).metric
    link = parent_of(h, ref, cancel=cancel)
    if link.parent is None or link.row is None:
        reason = link.finding.message if link.finding else "the index root has no representative"
        raise NodeError(f"{ref.path}: no representative to measure from ({reason})")
    parent_path = ROOT_EMBEDDINGS if link.parent.is_root else f"{link.parent.path}/embeddings"
    path = f"{ref.path}/embeddings"
    details = h.array_details(path, NodeError)
    try:
        centre = h.read_array(parent_path, link.row)
    except Exception as exc:
        raise NodeError(describe_exception(exc)) from exc
    rows = details.shape[0] if details.shape else 0
    if rows == 0:
        raise NodeError(f"{path} has no rows")
    step = max(details.chunk_shape[0] if details.chunk_shape else rows, 1)
    parts: list[np.ndarray] = []
    for start in range(0, rows, step):
        checkpoint(cancel)
        stop = min(rows, start + step)
        try:
            block = h.read_array(path, slice(start, stop))
        except Exception as exc:
            raise NodeError(describe_exception(exc)) from exc
        parts.append(distances_to(block, centre, metric))
        if progress is not None:
            progress(Counted(stop, rows, "rows measured"))
    values = np.concatenate(parts)
    counts, edges = np.histogram(values, bins=freedman_diaconis_bins(values, bins_cap))
    far = np.argsort(-values, kind="stable")[:farthest]
    name = "item_ids" if index_summary(h).levels == ref.level else "node_ids"
    ids = _ids_of(h, ref, name)
    far_ids = [int(ids[r]) if isinstance(ids, np.ndarray) and r < ids.size else None for r in far.tolist()]
    return Spread(ref, "negated inner product" if metric == "IP" else "L2 distance", values,
                  counts.astype(np.int64), edges, tuple(zip(far.tolist(), far_ids, strict=True)),
                  (link.parent, link.row))
