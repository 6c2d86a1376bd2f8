"""The §10 validation checklist of the format document, as a report of findings with paths.

Metadata checks (arrays, data types, counters, every node's shapes) are complete. Checks that
must decode data (node_ids and item_ids values, duplicate item ids, unit length, rows that must
equal ``rep_embeddings`` rows) read a bounded, evenly spread sample of nodes; each such finding
and :attr:`ValidationReport.checked` say how much was read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ecpfs_viewer.model.ecpfs import (
    INFO_INTEGERS,
    REQUIRED_ARRAYS,
    ROOT_EMBEDDINGS,
    Finding,
    Generation,
    IndexSummary,
    LevelStats,
    MetadataReader,
    Severity,
    cap_findings,
    shared_level_stats,
    summarize,
)
from ecpfs_viewer.model.formatting import count_noun
from ecpfs_viewer.model.hierarchy import Hierarchy, NodeKind, describe_exception
from ecpfs_viewer.model.sizing import STORED_DTYPES

#: A leaf this many times the median size (and at least 100 rows above it) suggests insert drift.
DRIFT_FACTOR = 10
#: Tolerance on vector norms when is_normalized is set.
NORM_TOLERANCE = 1e-2

__all__ = ["CheckProgress", "Finding", "Severity", "ValidationReport", "validate"]


@dataclass(frozen=True)
class CheckProgress:
    done: int
    total: int
    message: str


@dataclass(frozen=True)
class ValidationReport:
    """Findings (errors first) plus what the sampled checks actually read."""

    findings: tuple[Finding, ...]
    summary: IndexSummary | None = None
    levels: tuple[LevelStats, ...] = ()
    checked: tuple[str, ...] = ()
    cancelled: bool = False

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.WARNING]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "cancelled": self.cancelled, "errors": len(self.errors),
                "warnings": len(self.warnings), "checked": list(self.checked),
                "findings": [f.to_dict() for f in self.findings]}


class _Cancelled(Exception):
    pass


class _Check:
    """State of one validation run: findings, the work budget and progress reporting."""

    def __init__(self, h: Hierarchy, progress: Callable[[CheckProgress], None] | None,
                 cancel: threading.Event | None) -> None:
        self.h = h
        self.findings: list[Finding] = []
        self.checked: list[str] = []
        self.progress = progress
        self.cancel = cancel
        self.done = 0
        self.total = 1

    def error(self, path: str, message: str, sampled: str = "") -> None:
        self.findings.append(Finding(Severity.ERROR, path, message, sampled))

    def warning(self, path: str, message: str, sampled: str = "") -> None:
        self.findings.append(Finding(Severity.WARNING, path, message, sampled))

    def step(self, message: str) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise _Cancelled()
        self.done += 1
        if self.progress is not None:
            self.progress(CheckProgress(min(self.done, self.total), self.total, message))

    def read(self, path: str) -> np.ndarray | None:
        try:
            return self.h.read_array(path)
        except Exception as exc:  # ArrayReadError names the path; anything else is reported likewise
            self.error(path, f"cannot read data: {describe_exception(exc)}")
            return None


def validate(h: Hierarchy, *, max_node_reads: int = 256, max_vectors: int = 4096,
             progress: Callable[[CheckProgress], None] | None = None,
             cancel: threading.Event | None = None) -> ValidationReport:
    """Run the §10 checklist; decodes at most max_node_reads nodes. Never raises."""
    check = _Check(h, progress, cancel)
    summary: IndexSummary | None = None
    levels: list[LevelStats] = []
    cancelled = False
    try:
        summary = summarize(h)
        check.findings += summary.findings
        if _check_layout(check, summary):
            reader = MetadataReader(h)
            _check_types(check, reader, summary)
            _check_counters(check, summary)
            levels = _check_levels(check, reader, summary)
            _check_data(check, summary, levels, max_node_reads, max_vectors)
    except _Cancelled:
        cancelled = True
        check.findings.append(Finding(Severity.INFO, "", "check cancelled; the report is incomplete"))
    except Exception as exc:  # a bug must still produce a readable report
        check.error("", f"validation stopped: {describe_exception(exc)}")
    order = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
    findings = sorted(_dedupe(check.findings), key=lambda f: order[f.severity])
    return ValidationReport(tuple(findings), summary, tuple(levels), tuple(check.checked), cancelled)


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[Any, ...]] = set()
    unique = []
    for f in findings:
        key = (f.severity, f.path, f.message)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique


def _check_layout(check: _Check, summary: IndexSummary) -> bool:
    """§10 items 1 and 2 plus the §7 generations; False when nothing more can be checked."""
    layout = summary.layout
    generation = layout.generation
    if generation is Generation.NOT_INDEX:
        check.error("", layout.reason)
        for path in layout.missing:
            check.error(path, "missing (required by format version 1)")
        return False
    if generation is Generation.NEWER:
        check.error("info/format_version", layout.reason)
        return False
    if layout.is_legacy:
        check.error("", layout.reason)
        return False
    if generation is Generation.UNSTAMPED:
        check.warning("info/format_version", "missing; every other version 1 array is present, so it is read "
                                             "as version 1 (upstream's Index::load would stamp it)")
    for path in layout.missing:
        check.error(path, "missing (required by format version 1)")
    return True


def _check_types(check: _Check, reader: MetadataReader, summary: IndexSummary) -> None:
    """§10 item 3: data types and ranks of the info scalars and the top-level arrays."""
    for path in INFO_INTEGERS:
        meta = reader.array(path)
        if meta is None:
            continue
        if meta.data_type != "uint32":
            check.error(path, f"must be uint32, found {meta.data_type}")
        if meta.shape != ():
            check.error(path, f"must be a scalar (shape []), found shape {list(meta.shape)}")
    metric = reader.array("info/metric")
    if metric is not None and (metric.data_type != "string" or metric.shape != ()):
        check.error("info/metric", f"must be a variable-length string scalar, found {metric.data_type} "
                                   f"with shape {list(metric.shape)}")
    normalized = reader.array("info/is_normalized")
    if normalized is not None and (normalized.data_type != "bool" or normalized.shape != ()):
        check.error("info/is_normalized", f"must be a bool scalar, found {normalized.data_type} "
                                          f"with shape {list(normalized.shape)}")
    rep_ids = reader.array("rep_item_ids")
    if rep_ids is not None:
        if rep_ids.data_type != "uint32":
            check.error("rep_item_ids", f"must be uint32, found {rep_ids.data_type}")
        if len(rep_ids.shape) != 1:
            check.error("rep_item_ids", f"must be 1-D, found shape {list(rep_ids.shape)}")
    if summary.dtype is not None and summary.dtype not in STORED_DTYPES:
        check.error(ROOT_EMBEDDINGS, f"data type {summary.dtype} is not one of {', '.join(STORED_DTYPES)}")
    rep_emb = reader.array("rep_embeddings")
    if rep_emb is not None:
        if summary.dtype is not None and rep_emb.data_type != summary.dtype:
            check.error("rep_embeddings", f"data type {rep_emb.data_type} differs from {ROOT_EMBEDDINGS} "
                                          f"({summary.dtype})")
        if len(rep_emb.shape) != 2 or (summary.dim is not None and rep_emb.shape[1] != summary.dim):
            check.error("rep_embeddings", f"shape {list(rep_emb.shape)} does not match dimension {summary.dim}")
        elif summary.representatives is not None and rep_emb.rows != summary.representatives:
            check.error("rep_embeddings", f"{rep_emb.rows} rows but rep_item_ids has {summary.representatives}")
    if summary.levels is not None and summary.levels < 1:
        check.error("info/levels", f"must be at least 1, found {summary.levels}")
    if summary.fan_out is not None and summary.representatives is not None and \
            summary.fan_out > summary.representatives:
        check.error(ROOT_EMBEDDINGS, f"{summary.fan_out} rows but there are only {summary.representatives} "
                                     "representatives")
    implicit = [p or "/" for p in ("", "info", "index_root") if _is_implicit(reader, p)]
    implicit += [p for p in summary.level_paths if _is_implicit(reader, p)]
    if implicit:
        check.warning("", "no group metadata (zarr.json) at " + ", ".join(implicit)
                      + " (written before 0.9.99); zarr-python cannot open these as groups")


def _is_implicit(reader: MetadataReader, path: str) -> bool:
    node = reader.h.root() if not path else reader.node(path)
    return node is not None and node.kind is NodeKind.IMPLICIT_GROUP


def _check_counters(check: _Check, summary: IndexSummary) -> None:
    gap = summary.gap
    if gap is not None and gap > 0:
        check.warning("info/next_item_id", f"{count_noun(gap, 'item id')} reserved but never written "
                                           f"(next_item_id {summary.next_item_id} > total_items "
                                           f"{summary.total_items}); likely a crash during insert")
    elif gap is not None and gap < 0:
        check.warning("info/next_item_id", f"next_item_id {summary.next_item_id} is below total_items "
                                           f"{summary.total_items}; impossible upstream, likely corruption")
    expected = summary.expected_fan_out
    if expected is not None and summary.fan_out is not None and summary.fan_out != expected:
        check.warning(ROOT_EMBEDDINGS, f"fan-out {summary.fan_out} differs from ceil(R^(1/L)) = {expected} "
                                       f"(R = {summary.representatives}, L = {summary.levels}); "
                                       "fine for custom or hand-made indexes")


def _check_levels(check: _Check, reader: MetadataReader, summary: IndexSummary) -> list[LevelStats]:
    """§10 items 4-6 (from metadata) and the level warnings, for every lvl_N."""
    count = summary.levels or 0
    check.total = count + 1
    present = set(summary.level_paths)
    if count >= 1 and "lvl_1" not in present:
        check.error("lvl_1", "missing; an index needs at least level 1")
    extra = sorted(p for p in present if not 1 <= int(p[4:]) <= count)
    if extra:
        check.warning(extra[0], f"{', '.join(extra)} not part of an index with {count_noun(count, 'level')}; ignored")
    stats: list[LevelStats] = []
    for level in range(1, count + 1):
        check.step(f"reading metadata of lvl_{level}")
        path = f"lvl_{level}"
        if path not in present:
            if level > 1:
                check.warning(path, "missing level group; every node at this level is absent")
            continue
        level_result = shared_level_stats(check.h, level, summary)
        stats.append(level_result)
        check.findings += level_result.findings
    node_total = sum(s.node_count for s in stats)
    check.checked.append(f"metadata of all {node_total:,} nodes on {count_noun(len(stats), 'level')}")
    if stats and stats[-1].is_leaf:
        leaves = stats[-1]
        if summary.total_items is not None and leaves.leaf_sum != summary.total_items:
            check.warning(
                leaves.path, f"leaf sizes sum to {leaves.leaf_sum:,} but total_items is {summary.total_items:,}"
            )
        if leaves.sizes.size >= 3:
            median = float(np.median(leaves.sizes))
            big = leaves.largest(1)[0]
            if big.rows > DRIFT_FACTOR * max(median, 1) and big.rows - median >= 100:
                check.warning(
                    big.path,
                    f"{big.rows:,} rows, {big.rows / max(median, 1):.0f}x the median leaf "
                    f"({median:g}); big leaves slow search (eCP does not balance clusters "
                    "and inserts only add to them)",
                )
    return stats


def _spread(items: list[Any], count: int) -> list[Any]:
    """At most count items, evenly spread and always including the first and the last."""
    if len(items) <= count:
        return items
    picks = np.linspace(0, len(items) - 1, count).round().astype(int)
    return [items[i] for i in sorted(set(picks.tolist()))]


def _check_data(
    check: _Check, summary: IndexSummary, levels: list[LevelStats], max_node_reads: int, max_vectors: int
) -> None:
    """§10 item 7 and the sampled warnings: decode node_ids, item_ids and some vectors."""
    by_level = {s.level: s for s in levels}
    internal = [s for s in levels if s.is_leaf is False]
    leaves = next((s for s in levels if s.is_leaf), None)
    internal_budget = max_node_reads // 2 if leaves is not None else max_node_reads
    internal_total = sum(s.node_count for s in internal)
    per_level = max(1, internal_budget // max(1, len(internal)))
    # Nodes whose metadata is already reported broken are not decoded again.
    plan = {s.level: _spread([int(i) for i in s.node_ids if int(i) not in s.broken_ids], per_level) for s in internal}
    leaf_plan = (
        _spread(
            [int(i) for i in leaves.node_ids if int(i) not in leaves.broken_ids],
            max_node_reads - sum(map(len, plan.values())),
        )
        if leaves is not None
        else []
    )
    check.total = check.done + 2 + sum(map(len, plan.values())) + len(leaf_plan)
    rep_rows = _RepRows(check, summary, max_vectors)
    vectors = _VectorSample(max_vectors)

    check.step("reading index_root/embeddings")
    root = check.read(ROOT_EMBEDDINGS)
    if root is not None:
        vectors.add(ROOT_EMBEDDINGS, root)
        if summary.has_rep_embeddings:
            reps = rep_rows.first(len(root))
            if reps is not None and not _same_rows(root, reps):
                bad = _first_different(root, reps)
                check.warning(
                    ROOT_EMBEDDINGS,
                    f"row {bad} differs from rep_embeddings[{bad}] (the root must be the first ns representatives)",
                )

    # Internal levels: node_ids values, referenced-but-missing children, rows == rep_embeddings rows.
    for level, ids in plan.items():
        stats = by_level[level]
        refs: set[int] = set()
        invalid: list[tuple[str, int]] = []
        mismatched: list[str] = []
        for node_id in ids:
            path = stats.node_path(node_id)
            check.step(f"decoding {path}")
            node_ids = check.read(f"{path}/node_ids")
            if node_ids is None:
                continue
            node_ids = node_ids.astype(np.int64).ravel()
            refs.update(node_ids.tolist())
            if summary.representatives is not None:
                invalid += [(path, int(v)) for v in node_ids[node_ids >= summary.representatives][:3]]
            embeddings = check.read(f"{path}/embeddings")
            if embeddings is None:
                continue
            vectors.add(path, embeddings)
            if summary.has_rep_embeddings and len(node_ids) == len(embeddings) and rep_rows.budget_left():
                valid = node_ids[node_ids < (summary.representatives or 0)]
                reps = rep_rows.rows(valid)
                if reps is not None and len(reps) == len(valid) and not _same_rows(embeddings[: len(valid)], reps):
                    mismatched.append(path)
        usable = stats.node_count - len(stats.broken_ids)
        sampled = "" if len(ids) == usable else f"decoded {len(ids):,} of {usable:,} nodes"
        for path, value in invalid[:10]:
            check.error(
                f"{path}/node_ids", f"value {value} is not a representative (R = {summary.representatives})", sampled
            )
        for path in mismatched[:10]:
            check.warning(f"{path}/embeddings", "rows differ from rep_embeddings[node_ids[j]]", sampled)
        child = by_level.get(level + 1)
        if child is not None:
            missing = sorted(refs - set(child.node_ids.tolist()))
            if missing:
                examples = ", ".join(f"node_{m}" for m in missing[:5])
                check.warning(
                    child.path,
                    f"{len(missing):,} of {count_noun(len(refs), 'referenced child node')} do not exist "
                    f"(e.g. {examples}); search skips them",
                    sampled,
                )
        check.checked.append(
            f"lvl_{level} node_ids and embeddings: {len(ids):,} of {usable:,} usable nodes "
            f"decoded{' (sampled)' if sampled else ''}"
        )
    if summary.fan_out is not None and 1 in by_level:
        missing_first = sorted(set(range(summary.fan_out)) - set(by_level[1].node_ids.tolist()))
        if missing_first:
            check.warning("lvl_1", f"{len(missing_first)} root entries lead to no node (e.g. node_{missing_first[0]})")
    if internal_total == 0 and not internal:
        check.checked.append("no internal levels to decode")

    # Leaves: item ids below next_item_id, no duplicates.
    if leaves is not None:
        seen: dict[int, str] = {}
        duplicates: list[tuple[int, str, str]] = []
        too_big: list[tuple[str, int]] = []
        for node_id in leaf_plan:
            path = leaves.node_path(node_id)
            check.step(f"decoding {path}")
            items = check.read(f"{path}/item_ids")
            if items is None:
                continue
            items = items.astype(np.int64).ravel()
            if summary.next_item_id is not None:
                too_big += [(path, int(v)) for v in items[items >= summary.next_item_id][:3]]
            for value in items.tolist():
                first = seen.setdefault(value, path)
                if first is not path and len(duplicates) < 20:
                    duplicates.append((value, first, path))
            if vectors.wants_more():
                embeddings = check.read(f"{path}/embeddings")
                if embeddings is not None:
                    vectors.add(path, embeddings)
        usable = leaves.node_count - len(leaves.broken_ids)
        sampled = "" if len(leaf_plan) == usable else f"decoded {len(leaf_plan):,} of {usable:,} leaves"
        for path, value in too_big[:10]:
            check.error(
                f"{path}/item_ids", f"item id {value} is not below next_item_id ({summary.next_item_id})", sampled
            )
        for value, first, second in duplicates[:10]:
            where = f"twice in {first}" if first == second else f"in {first} and {second}"
            check.error(f"{second}/item_ids", f"item id {value} appears {where}", sampled)
        check.checked.append(
            f"{leaves.path} item_ids: {len(leaf_plan):,} of {usable:,} usable leaves decoded "
            f"({len(seen):,} distinct item ids){' (sampled)' if sampled else ''}"
        )

    check.step("checking vector norms")
    if summary.is_normalized:
        bad = vectors.non_unit(NORM_TOLERANCE)
        what = f"{vectors.count:,} vectors from {len(vectors.sources):,} arrays"
        if bad is not None:
            path, row, norm = bad
            check.warning(path, f"is_normalized is true but row {row} has length {norm:.4f}", f"checked {what}")
        check.checked.append(f"unit length (is_normalized): {what}")
    if rep_rows.read:
        check.checked.append(f"rep_embeddings rows compared: {rep_rows.read:,}")
    check.findings[:] = list(cap_findings(check.findings))


def _same_rows(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))


def _first_different(a: np.ndarray, b: np.ndarray) -> int:
    if a.shape != b.shape:
        return min(len(a), len(b))
    rows = np.flatnonzero(~np.all(a == b, axis=tuple(range(1, a.ndim))))
    return int(rows[0]) if rows.size else 0


class _RepRows:
    """Reads rows of rep_embeddings, bounded by a total row budget."""

    def __init__(self, check: _Check, summary: IndexSummary, budget: int) -> None:
        self.check, self.summary, self.budget, self.read = check, summary, budget, 0
        self._array = None
        self._failed = False

    def budget_left(self) -> bool:
        return self.read < self.budget and not self._failed

    def _open(self):
        if self._array is None and not self._failed:
            try:
                self._array = self.check.h.open_array("rep_embeddings")
            except Exception as exc:
                self._failed = True
                self.check.error("rep_embeddings", f"cannot open: {describe_exception(exc)}")
        return self._array

    def first(self, count: int) -> np.ndarray | None:
        return self.rows(np.arange(count, dtype=np.int64))

    def rows(self, ids: np.ndarray) -> np.ndarray | None:
        array = self._open()
        if array is None or not len(ids):
            return None
        try:
            result = np.asarray(array.get_orthogonal_selection((ids, slice(None))))
        except Exception as exc:
            self._failed = True
            self.check.error("rep_embeddings", f"cannot read data: {describe_exception(exc)}")
            return None
        self.read += len(ids)
        return result


class _VectorSample:
    """Keeps up to a number of vectors (with where they came from) for the unit-length check."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0
        self.sources: list[tuple[str, np.ndarray]] = []

    def wants_more(self) -> bool:
        return self.count < self.limit

    def add(self, path: str, rows: np.ndarray) -> None:
        if self.count >= self.limit or rows.ndim != 2 or not len(rows):
            return
        take = rows[: self.limit - self.count]
        self.sources.append((path, take))
        self.count += len(take)

    def non_unit(self, tolerance: float) -> tuple[str, int, float] | None:
        for path, rows in self.sources:
            norms = np.linalg.norm(rows.astype(np.float64), axis=1)
            bad = np.flatnonzero(np.abs(norms - 1.0) > tolerance)
            if bad.size:
                return path, int(bad[0]), float(norms[bad[0]])
        return None


def required_paths() -> tuple[str, ...]:
    """The arrays a v1 index must hold, for messages that list them."""
    return ("info/format_version", *REQUIRED_ARRAYS)
