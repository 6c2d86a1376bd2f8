"""The sampled checks of §10 that decode data: node_ids and item_ids values, duplicate item ids,
rows that must equal ``rep_embeddings`` rows, and unit length."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import zarr

from ecpfs_viewer.model.ecpfs import ROOT_EMBEDDINGS, ChildReferences, IndexSummary, LevelStats, cap_findings, spread
from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.paths import level_path, node_name
from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.formatting import count_noun
from ecpfs_viewer.model.storage import event_loop
from ecpfs_viewer.model.storage.read_scope import drained_reads
from ecpfs_viewer.model.validation.report import Check
from ecpfs_viewer.model.zarrtree.array_batch import read_whole_arrays
from ecpfs_viewer.model.zarrtree.read_guard import check_rows, chunks_touched

#: Tolerance on vector norms when is_normalized is set.
NORM_TOLERANCE = 1e-2
#: Vectors a sample needs before "all are unit length" is said of an index without is_normalized.
MIN_UNIT_SAMPLE = 16
#: Nodes decoded together, and the declared bytes their arrays may hold at once.
BATCH_NODES = 64
BATCH_BYTES = 64 << 20
#: rep_embeddings up to this size is read whole once, not once per compared node.
WHOLE_REP_BYTES = 64 << 20
#: ... and spread over at most this many chunks (a grid of 100,000 tiny chunks is read row by row).
WHOLE_REP_CHUNKS = 4096


def check_data(
    check: Check, summary: IndexSummary, levels: list[LevelStats], max_node_reads: int, max_vectors: int
) -> None:
    """§10 item 7 and the sampled warnings: decode node_ids, item_ids and some vectors."""
    by_level = {s.level: s for s in levels}
    internal = [s for s in levels if s.is_leaf is False]
    leaves = next((s for s in levels if s.is_leaf), None)
    internal_budget = max_node_reads // 2 if leaves is not None else max_node_reads
    internal_total = sum(s.node_count for s in internal)
    per_level = max(1, internal_budget // max(1, len(internal)))
    # Nodes whose metadata is already reported broken are not decoded again.
    plan = {s.level: spread(_usable_ids(s), per_level) for s in internal}
    leaf_plan = spread(_usable_ids(leaves), max_node_reads - sum(map(len, plan.values()))) if leaves is not None else []
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
                check.add(fc.ROOT_DIFFERS_FROM_REPS,
                    ROOT_EMBEDDINGS,
                    f"row {bad} differs from rep_embeddings[{bad}] (the root must be the first ns representatives)",
                )
    for level, ids in plan.items():
        _check_internal_level(check, summary, by_level[level], ids, by_level.get(level + 1), rep_rows, vectors)
    if summary.fan_out is not None and 1 in by_level:
        root_refs = ChildReferences.of_root(summary.fan_out)
        present = by_level[1].present_ids()
        missing_first = root_refs.missing(present)
        if missing_first:
            count = root_refs.missing_count(present)
            check.add(fc.ROOT_ENTRY_LEADS_NOWHERE,
                      level_path(1), f"{count} root entries lead to no node (e.g. {node_name(missing_first[0])})")
    if internal_total == 0 and not internal:
        check.checked.append("no internal levels to decode")
    if leaves is not None:
        _check_leaves(check, summary, leaves, leaf_plan, vectors)

    check.step("checking vector norms")
    if summary.is_normalized:
        bad_row = vectors.non_unit(NORM_TOLERANCE)
        what = f"{vectors.count:,} vectors from {len(vectors.sources):,} arrays"
        if bad_row is not None:
            path, row, norm = bad_row
            off = vectors.count_non_unit(NORM_TOLERANCE)
            check.add(fc.NOT_UNIT_LENGTH,
                      path, f"is_normalized is true but row {row} has length {norm:.4f} ({off:,} of "
                            f"{vectors.count:,} sampled vectors are not unit length): distances are wrong",
                      f"checked {what}")
        check.checked.append(f"unit length (is_normalized): {what}")
    elif vectors.count >= MIN_UNIT_SAMPLE and vectors.non_unit(NORM_TOLERANCE) is None:
        check.add(fc.UNIT_BUT_NOT_NORMALIZED, "info/is_normalized",
                  f"all {vectors.count:,} sampled vectors have length 1 (within {NORM_TOLERANCE:g}) but "
                  "is_normalized is not set", f"checked {vectors.count:,} vectors from {len(vectors.sources):,} arrays")
    if rep_rows.compared:
        check.checked.append(rep_rows.describe())
    check.findings[:] = list(cap_findings(check.findings))


def _usable_ids(stats: LevelStats) -> list[int]:
    return [int(i) for i in stats.node_ids if int(i) not in stats.broken_ids]


def _sampled(stats: LevelStats, decoded: int, what: str) -> tuple[int, str]:
    """Usable nodes of a level and the note for findings from a sample ('' when all were decoded).

    Counted like the plan is drawn (listed nodes not broken): a broken node may have no
    embeddings, so it is not among the listed ones and must not be subtracted twice."""
    usable = len(_usable_ids(stats))
    return usable, "" if decoded == usable else f"decoded {decoded:,} of {usable:,} {what}"


def _read_nodes(
    check: Check, stats: LevelStats, ids: list[int], first: str, more: Callable[[], tuple[str, ...]]
) -> Iterator[tuple[str, dict[str, np.ndarray | Exception]]]:
    """(node path, {array name: array or failure}) for each planned node; one progress step each.

    Nodes are read in batches (their documents in one multi-key read, their chunks together), so
    a remote store answers a batch in a few round trips instead of two per array; a batch holds
    at most BATCH_NODES nodes and BATCH_BYTES declared bytes. ``more()`` names the arrays read
    besides ``first``, asked at the start of each batch.
    """
    paths = [stats.node_path(node_id) for node_id in ids]
    start = 0
    while start < len(paths):
        wanted = (first, *more())
        window = paths[start : start + BATCH_NODES]
        check.h.prefetch([f"{path}/{name}" for path in window for name in wanted])
        batch: list[str] = []
        held = 0
        for path in window:
            size = sum(_declared_bytes(check, f"{path}/{name}") for name in wanted)
            if batch and held + size > BATCH_BYTES:
                break
            batch.append(path)
            held += size
        values = read_whole_arrays(check.h, [f"{path}/{name}" for path in batch for name in wanted])
        for j, path in enumerate(batch):
            check.step(f"decoding {path}")
            yield path, dict(zip(wanted, values[j * len(wanted) : (j + 1) * len(wanted)], strict=True))
        start += len(batch)


def _declared_bytes(check: Check, path: str) -> int:
    try:
        return check.h.array_details(path).logical_bytes or 0
    except Exception:  # reported when the array is read
        return 0


def _value(check: Check, path: str, found: np.ndarray | Exception) -> np.ndarray | None:
    """The array read at path, or None with the failure reported (as Check.read reports it)."""
    if isinstance(found, Exception):
        check.read_failed(path, found)
        return None
    return found


def _check_internal_level(
    check: Check,
    summary: IndexSummary,
    stats: LevelStats,
    ids: list[int],
    child: LevelStats | None,
    rep_rows: _RepRows,
    vectors: _VectorSample,
) -> None:
    """node_ids values, referenced-but-missing children, rows == rep_embeddings rows."""
    refs = ChildReferences(summary.representatives, 3)
    mismatched: list[str] = []
    for path, arrays in _read_nodes(check, stats, ids, "node_ids", lambda: ("embeddings",)):
        stored = _value(check, f"{path}/node_ids", arrays["node_ids"])
        if stored is None:
            continue
        node_ids = refs.add(path, stored)
        embeddings = _value(check, f"{path}/embeddings", arrays["embeddings"])
        if embeddings is None:
            continue
        vectors.add(path, embeddings)
        if summary.has_rep_embeddings and len(node_ids) == len(embeddings) and rep_rows.budget_left():
            valid = node_ids[node_ids < (summary.representatives or 0)]
            reps = rep_rows.rows(valid)
            if reps is not None and len(reps) == len(valid) and not _same_rows(embeddings[: len(valid)], reps):
                mismatched.append(path)
    usable, sampled = _sampled(stats, len(ids), "nodes")
    for path, value in refs.invalid[:10]:
        check.add(fc.NOT_A_REPRESENTATIVE,
            f"{path}/node_ids", f"value {value} is not a representative (R = {summary.representatives})", sampled
        )
    for path in mismatched[:10]:
        check.add(fc.NODE_ROWS_DIFFER_FROM_REPS,
                  f"{path}/embeddings", "rows differ from rep_embeddings[node_ids[j]]", sampled)
    if child is not None:
        present = child.present_ids()  # a node with unreadable embeddings exists: its own finding says so
        missing = refs.missing(present)
        if missing:
            examples = ", ".join(node_name(m) for m in missing[:5])
            check.add(fc.CHILD_MISSING,
                child.path,
                f"{refs.missing_count(present):,} of {count_noun(refs.referenced, 'referenced child node')} "
                f"do not exist "
                f"(e.g. {examples}); search skips them",
                sampled,
            )
    check.checked.append(
        f"{stats.path} node_ids and embeddings: {len(ids):,} of {usable:,} usable nodes "
        f"decoded{' (sampled)' if sampled else ''}"
    )


def _check_leaves(
    check: Check, summary: IndexSummary, leaves: LevelStats, plan: list[int], vectors: _VectorSample
) -> None:
    """Item ids below next_item_id, no duplicates."""
    seen: dict[int, str] = {}
    duplicates: list[tuple[int, str, str]] = []
    too_big: list[tuple[str, int]] = []
    for path, arrays in _read_nodes(
        check, leaves, plan, "item_ids", lambda: ("embeddings",) if vectors.wants_more() else ()
    ):
        stored = _value(check, f"{path}/item_ids", arrays["item_ids"])
        if stored is None:
            continue
        items = stored.astype(np.int64).ravel()
        if summary.next_item_id is not None:
            too_big += [(path, int(v)) for v in items[items >= summary.next_item_id][:3]]
        for value in items.tolist():
            first = seen.setdefault(value, path)
            if first is not path and len(duplicates) < 20:
                duplicates.append((value, first, path))
        if vectors.wants_more() and "embeddings" in arrays:  # asked for while the sample wanted more
            embeddings = _value(check, f"{path}/embeddings", arrays["embeddings"])
            if embeddings is not None:
                vectors.add(path, embeddings)
    usable, sampled = _sampled(leaves, len(plan), "leaves")
    for path, value in too_big[:10]:
        check.add(fc.ITEM_ID_BEYOND_NEXT,
                  f"{path}/item_ids", f"item id {value} is not below next_item_id ({summary.next_item_id})", sampled)
    for value, first, second in duplicates[:10]:
        where = f"twice in {first}" if first == second else f"in {first} and {second}"
        check.add(fc.DUPLICATE_ITEM_ID, f"{second}/item_ids", f"item id {value} appears {where}", sampled)
    check.checked.append(
        f"{leaves.path} item_ids: {len(plan):,} of {usable:,} usable leaves decoded "
        f"({len(seen):,} distinct item ids){' (sampled)' if sampled else ''}"
    )


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
    """Reads rows of rep_embeddings, bounded by a total row budget; counts distinct rows compared.

    The same representative is stored in the root and again on each level whose node holds it, so
    the copies compared outnumber the rows; the report counts both, the rows distinct."""

    def __init__(self, check: Check, summary: IndexSummary, budget: int) -> None:
        self.check, self.summary, self.budget, self.read = check, summary, budget, 0
        self.compared: set[int] = set()
        self._array: zarr.AsyncArray[Any] | None = None
        self._failed = False
        self._rows: np.ndarray | None = None
        self._whole_failed = False

    def budget_left(self) -> bool:
        return self.read < self.budget and not self._failed

    def describe(self) -> str:
        """The 'Checked' line: distinct rows of all R, and the stored copies compared with them."""
        total = self.summary.representatives
        rows = f"{len(self.compared):,}" + (f" of {total:,}" if total is not None else "")
        copies = "" if self.read == len(self.compared) else \
            f" ({self.read:,} stored copies in index_root and internal nodes)"
        return f"rep_embeddings rows compared: {rows}{copies}"

    def _open(self) -> zarr.AsyncArray[Any] | None:
        if self._array is None and not self._failed:
            try:
                self._array = self.check.h.open_async_array("rep_embeddings")
            except Exception as exc:
                self._failed = True
                self.check.add(fc.UNREADABLE_DATA, "rep_embeddings", f"cannot open: {describe_exception(exc)}")
        return self._array

    def _whole(self) -> np.ndarray | None:
        """rep_embeddings read once when small enough (None: read rows per call instead)."""
        if self._rows is None and not self._whole_failed:
            try:
                details = self.check.h.array_details("rep_embeddings")
                if (details.logical_bytes or 0) <= WHOLE_REP_BYTES and \
                        (chunks_touched(details) or 0) <= WHOLE_REP_CHUNKS:
                    self._rows = self.check.h.read_array("rep_embeddings")
                else:
                    self._whole_failed = True
            except Exception:  # per-call reads below report the failure where it matters
                self._whole_failed = True
        return self._rows

    def first(self, count: int) -> np.ndarray | None:
        return self.rows(np.arange(count, dtype=np.int64))

    def rows(self, ids: np.ndarray) -> np.ndarray | None:
        array = self._open()
        if array is None or not len(ids):
            return None
        whole = self._whole()
        try:
            inside = whole is not None and whole.ndim == 2 and 0 <= int(ids.min()) <= int(ids.max()) < len(whole)
            if whole is not None and inside:
                result = np.asarray(whole[ids])
            else:
                check_rows("", self.check.h.array_details("rep_embeddings"), ids.tolist())  # the error names it
                with drained_reads():
                    result = np.asarray(event_loop.run(array.get_orthogonal_selection((ids, slice(None)))))
        except Exception as exc:
            self._failed = True
            self.check.read_failed("rep_embeddings", exc)
            return None
        self.read += len(ids)
        self.compared.update(ids.tolist())
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

    def count_non_unit(self, tolerance: float) -> int:
        return sum(int(np.count_nonzero(np.abs(np.linalg.norm(rows.astype(np.float64), axis=1) - 1.0) > tolerance))
                   for _, rows in self.sources)

    def non_unit(self, tolerance: float) -> tuple[str, int, float] | None:
        for path, rows in self.sources:
            norms = np.linalg.norm(rows.astype(np.float64), axis=1)
            bad = np.flatnonzero(np.abs(norms - 1.0) > tolerance)
            if bad.size:
                return path, int(bad[0]), float(norms[bad[0]])
        return None
