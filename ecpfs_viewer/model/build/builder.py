"""Build an ecpfs v1 index from a .npy file or a Zarr array, as the upstream Rust builder does.

Qt-free: the GUI runs :func:`build_index` in a worker, passing a progress callback and a
cancel event. The tree is the upstream tree (spec §3): double-precision fan-out, level passes,
the nearest-row rule with "last maximum wins", routing on the values narrowed to the stored
dtype. The whole tree is routed before anything is written, so a tree upstream cannot build either
(a route into an internal node that no representative reached, §3.5) is refused with nothing on
disk. The store is written into a hidden sibling directory and renamed into place at the
end, so a failed, cancelled or killed build never leaves a half-written index under the
requested name.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ecpfs_viewer.model.blas import one_blas_thread
from ecpfs_viewer.model.build.checks import (
    BuildParams,
    BuildPreview,
    check_build,
    normalized_warning,
    output_problems,
    preview_build,
    shape_warnings,
)
from ecpfs_viewer.model.build.errors import PROBLEM_FIELDS, BuildCancelled, BuildError, BuildProblem, ProblemField
from ecpfs_viewer.model.build.output import (
    building_folder,
    commit_output,
    discard_output,
    prepare_output,
    remove_stale_builds,
)
from ecpfs_viewer.model.build.routing import MissingNodeError, NodeTable, Router, group_rows
from ecpfs_viewer.model.build.sources import EmbeddingSource, check_finite, narrow
from ecpfs_viewer.model.build.writer import IndexWriter
from ecpfs_viewer.model.ecpfs import sizing
from ecpfs_viewer.model.ecpfs.paths import level_path
from ecpfs_viewer.model.formatting import format_bytes
from ecpfs_viewer.model.tasks import checkpoint

__all__ = [
    "PROBLEM_FIELDS",
    "BuildCancelled",
    "BuildError",
    "BuildParams",
    "BuildPreview",
    "BuildProblem",
    "BuildProgress",
    "BuildResult",
    "ProblemField",
    "build_index",
    "check_build",
    "output_problems",
    "preview_build",
]

#: Narrowed input up to this size is kept in memory between passes; above it the input is
#: streamed again for each group of leaves (the path that keeps a huge build's memory bounded;
#: benchmarks/bench_build.py --big measures its peak).
DEFAULT_MEMORY_BUDGET = 256 * 1024 * 1024


@dataclass
class BuildProgress:
    """One progress report: a phase name and how far it got."""

    phase: str
    done: int
    total: int
    message: str = ""


@dataclass(frozen=True)
class BuildResult:
    """What was built, for the summary screen."""

    output: Path
    nodes_per_level: list[int]
    seconds: float
    warnings: list[str]
    rows: int = 0
    dim: int = 0
    stored_dtype: str = ""
    representatives: int = 0
    fan_out: int = 0
    levels: int = 0
    metric: str = "L2"
    is_normalized: bool = False
    phase_seconds: dict[str, float] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------
# the build


class _Reporter:
    """Progress, cancel checks and log lines of one build, each optional."""

    def __init__(self, progress: Callable[[BuildProgress], None] | None, cancel: threading.Event | None,
                 log: Callable[[str], None] | None) -> None:
        self._progress = progress
        self._cancel = cancel
        self._log = log

    def check(self) -> None:
        checkpoint(self._cancel, BuildCancelled)

    def report(self, phase: str, done: int, total: int, message: str = "") -> None:
        self.check()
        if self._progress is not None:
            self._progress(BuildProgress(phase, done, total, message))

    def log(self, text: str) -> None:
        if self._log is not None:
            self._log(text)


def _select_representatives(rows: int, params: BuildParams) -> np.ndarray:
    R = sizing.total_clusters(rows, params.target_cluster_items)
    if params.rep_selection == "offset":
        return np.arange(0, rows, params.target_cluster_items, dtype=np.int64)
    rng = np.random.default_rng(params.seed)
    return np.sort(rng.choice(rows, size=R, replace=False)).astype(np.int64)


def build_index(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    params: BuildParams,
    *,
    overwrite: bool = False,
    progress: Callable[[BuildProgress], None] | None = None,
    cancel: threading.Event | None = None,
    log: Callable[[str], None] | None = None,
    memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET,
    workers: int | None = None,
) -> BuildResult:
    """Build an index at ``output``; raises BuildError (bad input) or BuildCancelled, leaving nothing."""
    t0 = time.perf_counter()
    rep = _Reporter(progress, cancel, log)
    _, problems = check_build(source, params, output, overwrite=overwrite)
    if problems:
        raise BuildError(*problems)
    src = EmbeddingSource(source)
    info = src.info
    output = Path(output)
    stored = sizing.resolve_stored_dtype(info.dtype, params.dtype)
    R = sizing.total_clusters(info.rows, params.target_cluster_items)
    ns = sizing.fan_out(R, params.levels)
    rn = sizing.chunk_rows(info.dim, stored, params.node_chunk_bytes)
    rr = sizing.chunk_rows(info.dim, stored, params.rep_chunk_bytes)
    warnings = shape_warnings(ns, params.levels, R)
    if info.dtype == np.float64:
        msg = f"{info.label}: float64 input narrowed to float32"
        warnings.append(msg)
        rep.log(msg)
    native = sizing.resolve_stored_dtype(info.dtype, "native")
    if sizing.is_narrowing(native, stored):
        msg = f"narrowing {native} to {stored} (lossy)"
        warnings.append(msg)
        rep.log(msg)
    rep.log(f"{info.label}: {info.rows} x {info.dim} {info.dtype.name} -> {stored}; "
            f"R={R}, fan-out={ns}, levels={params.levels}, Rn={rn}, Rr={rr}")
    phases: dict[str, float] = {}
    # the whole tree is routed before anything is written: a tree upstream cannot build (a route into
    # an internal node no representative reached, §3.5) is refused with nothing on disk
    with one_blas_thread():
        plan = _plan_tree(src, params, stored, R, ns, rep, memory_budget_bytes, warnings, phases)
    warnings = _remove_stale(output, rep) + warnings
    tmp = building_folder(output)
    writer: IndexWriter | None = None
    try:  # a stop signal may land anywhere from here on, the making of the folder included
        prepare_output(tmp)
        writer = IndexWriter(tmp, info.dim, stored, rn, rr, workers=workers)
        with one_blas_thread():
            result_nodes = _write_tree(src, params, plan, writer, rep, memory_budget_bytes, phases)
        t = time.perf_counter()
        writer.close()
        writer = None
        rep.check()
        commit_output(tmp, output, overwrite)
        phases["finish"] = time.perf_counter() - t
    except BaseException:
        try:
            if writer is not None:
                writer.close(cancel=True)
        finally:
            discard_output(tmp)
        raise
    seconds = time.perf_counter() - t0
    rep.log(f"built {output} in {seconds:.2f} s")
    return BuildResult(
        output=output, nodes_per_level=result_nodes, seconds=seconds, warnings=warnings,
        rows=info.rows, dim=info.dim, stored_dtype=stored, representatives=R, fan_out=ns,
        levels=params.levels, metric=params.metric, is_normalized=params.is_normalized,
        phase_seconds=phases,
    )


def _remove_stale(output: Path, rep: _Reporter) -> list[str]:
    """Remove what killed builds left in the output's folder; the line that says so (if any)."""
    removed, freed = remove_stale_builds(output.expanduser().absolute().parent)
    if not removed:
        return []
    names = ", ".join(s.path.name for s in removed[:3]) + (", …" if len(removed) > 3 else "")
    msg = (f"removed {len(removed)} unfinished build folder{'s' if len(removed) > 1 else ''} left by killed "
           f"builds ({names}), freeing {format_bytes(freed)}")
    rep.log(msg)
    return [msg]


@dataclass
class _TreePlan:
    """The routed tree, held in memory until it is written: every node's rows are known."""

    stored: str
    ns: int
    rep_ids: np.ndarray  # (R,) ascending item ids of the representatives
    rep_stored: np.ndarray  # (R, dim) representatives narrowed to the stored dtype
    cache: np.ndarray | None  # the whole narrowed input, when it fits the memory budget
    internal: list[list[tuple[int, np.ndarray]]]  # internal[t-1] = (node id, representative rows) of lvl_t
    leaf_of_row: np.ndarray  # (N,) the leaf of every row
    batch_rows: int


def _plan_tree(src: EmbeddingSource, params: BuildParams, stored: str, R: int, ns: int,
               rep: _Reporter, budget: int, warnings: list[str], phases: dict[str, float]) -> _TreePlan:
    """Read the input and route every representative and row (spec §3.3-3.6); nothing is written."""
    info = src.info
    N, dim, L = info.rows, info.dim, params.levels
    row_bytes = dim * sizing.itemsize(stored)
    keep_all = N * row_bytes <= budget
    batch_rows = max(1, min(src.default_batch_rows(), (budget // 4) // max(1, dim * 8)))

    # pass 1: validate every row, collect representatives, keep the data if it fits
    t = time.perf_counter()
    rep_ids = _select_representatives(N, params)
    rep_stored = np.empty((R, dim), dtype=stored)
    cache = np.empty((N, dim), dtype=stored) if keep_all else None
    for start, batch in src.batches(batch_rows):
        check_finite(batch, start, info.label)
        stop = start + batch.shape[0]
        lo, hi = np.searchsorted(rep_ids, [start, stop])
        narrowed = narrow(batch, stored)
        if stored == "float16" and batch.dtype != np.float16:
            check_finite(narrowed, start, f"{info.label} (narrowed to float16, max 65504)")
        if hi > lo:
            rep_stored[lo:hi] = narrowed[rep_ids[lo:hi] - start]
        if cache is not None:
            cache[start:stop] = narrowed
        rep.report("reading", stop, N, info.label)
    if params.is_normalized:
        w = normalized_warning(rep_stored[: min(R, 256)], info.label)
        if w:
            warnings.append(w)
            rep.log(w)
    phases["read"] = time.perf_counter() - t

    # level passes over the representatives; routing uses the narrowed values widened back (§3.3)
    t = time.perf_counter()
    rep_wide = rep_stored.astype(np.float64)
    router = Router(NodeTable.from_rows(rep_wide[:ns], np.arange(ns)),
                    params.metric == "IP" or params.is_normalized)
    internal: list[list[tuple[int, np.ndarray]]] = []
    for target in range(1, L):
        count = sizing.reps_placed_at_level(target, ns, R)
        try:
            assign = router.route(rep_wide[:count], target)
        except MissingNodeError as exc:
            raise _unbuildable(exc, params, info.label, f"representative {exc.row}") from exc
        groups = group_rows(assign)
        router.add_level({node_id: NodeTable(rep_wide[rows], np.einsum("ij,ij->i", rep_wide[rows], rep_wide[rows]),
                                             rows) for node_id, rows in groups})
        internal.append(groups)
        rep.report(f"level {target}", count, count, f"{len(groups)} nodes")
    phases["internal"] = time.perf_counter() - t

    # the last pass: route every row to its leaf
    t = time.perf_counter()
    leaf_of_row = np.empty(N, dtype=np.int64)
    for start, narrowed in _narrowed_batches(src, cache, stored, batch_rows):
        stop = start + narrowed.shape[0]
        try:
            leaf_of_row[start:stop] = router.route(narrowed, L)
        except MissingNodeError as exc:
            raise _unbuildable(exc, params, info.label, f"row {start + exc.row}") from exc
        rep.report(f"level {L}", stop, N, "routing items to leaves")
    phases["route"] = time.perf_counter() - t
    return _TreePlan(stored, ns, rep_ids, rep_stored, cache, internal, leaf_of_row, batch_rows)


def _unbuildable(exc: MissingNodeError, params: BuildParams, label: str, who: str) -> BuildError:
    """The refusal of a tree upstream's builder cannot build either (spec §3.5), said in the user's terms."""
    scores = ("dot-product (IP)" if params.metric == "IP" else
              "dot-product (L2 with is_normalized)" if params.is_normalized else "L2")
    return BuildError(BuildProblem("input", (
        f"cannot be built with these settings: with {scores} scores no representative is routed into {exc.path}, "
        f"not even representative {exc.node_id} itself, so that node is never created, yet {who} is routed "
        f"through it. Upstream's builder stops on this input too, with a Corrupt error naming the node "
        f"(spec §3.5). Nothing was written. With levels 1 there are no internal nodes to miss; with L2 "
        f"(without is_normalized) every representative is nearest to itself"), label))


def _write_tree(src: EmbeddingSource, params: BuildParams, plan: _TreePlan, writer: IndexWriter,
                rep: _Reporter, budget: int, phases: dict[str, float]) -> list[int]:
    """Write the planned tree: scalars, groups, representatives, root, internal nodes, leaves."""
    N, L, ns = src.info.rows, params.levels, plan.ns
    t = time.perf_counter()
    writer.group("")
    writer.group("info")
    writer.scalar("info/format_version", "uint32", 1)
    writer.scalar("info/levels", "uint32", L)
    writer.scalar("info/metric", "string", params.metric)
    writer.scalar("info/is_normalized", "bool", bool(params.is_normalized))
    writer.scalar("info/total_items", "uint32", N)
    writer.scalar("info/next_item_id", "uint32", N)
    writer.group("index_root")
    for level in range(1, L + 1):
        writer.group(level_path(level))
    writer.pair_array("rep_embeddings", plan.rep_stored, writer.rep_emb)
    writer.pair_array("rep_item_ids", plan.rep_ids.astype("<u4"), writer.rep_ids)
    writer.pair_array("index_root/embeddings", plan.rep_stored[:ns], writer.node_emb)
    nodes_per_level: list[int] = []
    for target, groups in enumerate(plan.internal, start=1):
        for node_id, rows in groups:
            writer.node(target, node_id, plan.rep_stored[rows], rows.astype("<u4"), leaf=False)
        nodes_per_level.append(len(groups))
        rep.check()
    phases["internal"] = phases.get("internal", 0.0) + time.perf_counter() - t

    t = time.perf_counter()
    leaves = _write_leaves(src, plan.cache, plan.stored, plan.leaf_of_row, writer, rep, budget,
                           plan.batch_rows, L)
    nodes_per_level.append(leaves)
    phases["leaves"] = time.perf_counter() - t
    return nodes_per_level


def _narrowed_batches(src: EmbeddingSource, cache: np.ndarray | None, stored: str,
                      batch_rows: int) -> Iterator[tuple[int, np.ndarray]]:
    if cache is not None:
        for start in range(0, cache.shape[0], batch_rows):
            yield start, cache[start:start + batch_rows]
    else:
        for start, batch in src.batches(batch_rows):
            yield start, narrow(batch, stored)


def _write_leaves(src: EmbeddingSource, cache: np.ndarray | None, stored: str,
                  leaf_of_row: np.ndarray, writer: IndexWriter, rep: _Reporter, budget: int,
                  batch_rows: int, L: int) -> int:
    N = leaf_of_row.shape[0]
    groups = group_rows(leaf_of_row)
    total = len(groups)
    if cache is not None:
        for i, (leaf, rows) in enumerate(groups):
            writer.node(L, leaf, cache[rows], rows.astype("<u4"), leaf=True)
            if i % 64 == 0:
                rep.report("writing", i, total, "leaves")
        rep.report("writing", total, total, "leaves")
        return total

    # streaming: gather groups of leaves that fit the budget, re-reading the input per group
    dim = src.info.dim
    row_bytes = dim * np.dtype(stored).itemsize
    budget_rows = max(1, budget // row_bytes)
    order = np.concatenate([rows for _, rows in groups])
    position = np.empty(N, dtype=np.int64)
    position[order] = np.arange(N)
    written = 0
    gi = 0
    while gi < total:
        gj, rows_in = gi, 0
        while gj < total and (gj == gi or rows_in + len(groups[gj][1]) <= budget_rows):
            rows_in += len(groups[gj][1])
            gj += 1
        first = int(position[groups[gi][1][0]])
        buf = np.empty((rows_in, dim), dtype=stored)
        wanted = np.zeros(N, dtype=bool)
        for _, rows in groups[gi:gj]:
            wanted[rows] = True
        for start, batch in src.batches(batch_rows):
            stop = start + batch.shape[0]
            sel = np.flatnonzero(wanted[start:stop])
            if sel.size:
                buf[position[start + sel] - first] = narrow(batch[sel], stored)
            rep.report("writing", written, total, f"gathering leaves {gi}..{gj - 1}")
        offset = 0
        for leaf, rows in groups[gi:gj]:
            n = len(rows)
            writer.node(L, leaf, buf[offset:offset + n], rows.astype("<u4"), leaf=True)
            offset += n
            written += 1
            if written % 64 == 0:
                rep.report("writing", written, total, "leaves")
        writer.flush()  # release this group's buffer before the next one
        del buf
        gi = gj
    rep.report("writing", total, total, "leaves")
    return total
