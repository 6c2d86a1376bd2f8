"""Tune: build every variant of a parameter grid on one .npy and measure recall against cost (issue 23 §3).

The input is opened once (memory-mapped). Held-out query rows are left out of every build: the
remaining rows are written once to a work folder and each variant is built from that file, so
item ids are row numbers of the remaining rows in every variant, and the exact neighbours are
computed once from that array for all of them. Each variant is built exactly as ``ecpfs-viewer
build`` builds (:func:`build_index` with the CLI's parameters), measured (time, disk, balance,
a recall sweep with the search costs), and removed unless it is kept. A cancelled or failed run
leaves nothing behind: the work folder and every variant this run wrote are removed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ecpfs_viewer.model.build.builder import BuildParams, BuildProgress, build_index
from ecpfs_viewer.model.build.replaceable import remove_index
from ecpfs_viewer.model.ecpfs.levels import level_stats
from ecpfs_viewer.model.ecpfs.opened_index import open_index
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.formatting import format_bytes
from ecpfs_viewer.model.search import index_reader, queries_from_array, recall_sweep
from ecpfs_viewer.model.search.cluster import run_tasks, stop_watch
from ecpfs_viewer.model.search.explore import map_npy
from ecpfs_viewer.model.search.recall import SweepSearch
from ecpfs_viewer.model.tasks import Cancelled, checkpoint
from ecpfs_viewer.model.tuning.balance import LevelBalance
from ecpfs_viewer.model.tuning.grid_sizes import GridError, VariantSize, grid_sizes, left_out_text, split_grid
from ecpfs_viewer.model.tuning.truth import exact_neighbours
from ecpfs_viewer.model.tuning.tune_report import (
    COST_AXES,
    DEFAULT_COST,
    CostFigures,
    Recommendation,
    TunePoint,
    TuneReport,
    VariantResult,
    build_command,
    folder_name,
    variant_name,
    with_axis,
)
from ecpfs_viewer.model.tuning.workdir import (
    REMAINING,
    make_work_folder,
    ram_folder,
    remove_stale_work,
    search_places,
)
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

__all__ = ["COST_AXES", "DEFAULT_COST", "CostFigures", "LevelBalance", "Recommendation", "TuneCancelled",
           "TuneError", "TuneGrid", "TunePoint", "TuneProgress", "TuneReport", "TuneSettings", "VariantResult",
           "VariantSize", "build_command", "check_space", "folder_name", "runnable_variants", "tune", "variant_name"]


class TuneError(UserError):
    """A tune that cannot start or run (the message names the input, the variant or the folder)."""


class TuneCancelled(Cancelled):
    """The caller stopped the tune; every folder it wrote was removed."""

    def __init__(self, message: str = "tune cancelled; nothing was left behind") -> None:
        super().__init__(message)


@dataclass(frozen=True)
class TuneGrid:
    """The build parameters to try: every combination of levels, targets and representative selections."""

    levels: tuple[int, ...] = (1, 2, 3)
    target_cluster_items: tuple[int, ...] = (25, 50, 100, 200)
    rep_selections: tuple[str, ...] = ("offset",)
    metric: str = "L2"
    seed: int | None = 0  # for rep_selection random, as `build --seed`
    include_oversize: bool = False  # build the variants over `build`'s size guard too (left out otherwise)

    def variants(self) -> list[BuildParams]:
        """The grid's BuildParams, in the order levels, target, selection; each as `build` would make it."""
        return [BuildParams(levels=lv, target_cluster_items=t, metric=self.metric, rep_selection=rs,
                            seed=self.seed if rs == "random" else None)
                for lv in self.levels for t in self.target_cluster_items for rs in self.rep_selections]


@dataclass(frozen=True)
class TuneSettings:
    """How variants are measured: the queries, k, the search_exp sweep, the target and where kept builds go."""

    k: int = 10
    search_exps: tuple[int, ...] = (1, 2, 4, 8, 16)
    holdout: int = 200  # rows left out of the builds and used as queries (when no query file)
    queries: str | None = None  # a .npy of queries instead of held-out rows
    recall_target: float = 0.9
    seed: int = 0  # which rows are held out
    keep: str | None = None  # folder that keeps every variant; None: removed at the end


@dataclass(frozen=True)
class TuneProgress:
    """Progress of a tune: overall (done/total in thousandths) and of the current variant."""

    variant: int  # 0-based; == variants while preparing the queries
    variants: int
    step: str  # "exact neighbours", "build", "search"
    step_done: int
    step_total: int
    done: int
    total: int = 1000

    @property
    def message(self) -> str:
        if self.variant >= self.variants:
            return self.step
        return f"variant {self.variant + 1} of {self.variants}: {self.step}"


# ---------------------------------------------------------------------------------------------
# the run


Progress = Callable[[TuneProgress], None]


class _Steps:
    """Maps each step's done/total onto the overall thousandths: queries first, then build+search per variant."""

    EXACT_SHARE = 0.05
    BUILD_SHARE = 0.6  # of a variant

    def __init__(self, variants: int, progress: Progress | None, cancel: threading.Event | None) -> None:
        self.variants = variants
        self.progress = progress
        self.cancel = cancel
        self.reached = 0  # a build restarts done/total in each of its phases: overall only goes forward

    def report(self, variant: int, step: str, done: int, total: int) -> None:
        checkpoint(self.cancel, TuneCancelled)
        if self.progress is None:
            return
        part = done / total if total else 1.0
        if variant >= self.variants:
            overall = self.EXACT_SHARE * part
        else:
            within = self.BUILD_SHARE * part if step == "build" else self.BUILD_SHARE + (1 - self.BUILD_SHARE) * part
            overall = self.EXACT_SHARE + (1 - self.EXACT_SHARE) * (variant + within) / self.variants
        self.reached = max(self.reached, int(min(1.0, overall) * 1000))
        self.progress(TuneProgress(variant, self.variants, step, done, total, self.reached))


def _load(path: str) -> np.ndarray:
    """The input as a read-only memory map (the one load of a tune), checked for shape and type."""
    data = map_npy(path, TuneError)
    if data.ndim != 2 or data.shape[0] < 2 or data.shape[1] < 1:
        raise TuneError(f"{path}: expected a 2-D array of at least 2 rows, got shape {data.shape}")
    if data.dtype.kind not in "fiu":
        raise TuneError(f"{path}: unsupported element type {data.dtype}")
    return data


def _queries(data: np.ndarray, settings: TuneSettings) -> tuple[np.ndarray, np.ndarray, str]:
    """(query vectors, held-out row numbers, description); no held-out rows with a query file."""
    if settings.queries is not None:
        q = _load(settings.queries)
        if q.shape[1] != data.shape[1]:
            raise TuneError(f"{settings.queries}: queries have {q.shape[1]} dimensions, the input {data.shape[1]}")
        return np.asarray(q, dtype=np.float32), np.empty(0, np.int64), settings.queries
    n = settings.holdout
    if n < 1 or n >= len(data):
        raise TuneError(f"--holdout must be between 1 and {len(data) - 1} (got {n})")
    held = np.sort(np.random.default_rng(settings.seed).choice(len(data), size=n, replace=False))
    return np.asarray(data[held], dtype=np.float32), held, f"{n} held-out rows (seed {settings.seed})"


def _write_remaining(data: np.ndarray, held: np.ndarray, target: Path, cancel: threading.Event | None) -> None:
    """The input without the held-out rows, written in batches (the file every variant is built from)."""
    keep = np.ones(len(data), bool)
    keep[held] = False
    rows = int(keep.sum())
    out = np.lib.format.open_memmap(target, mode="w+", dtype=data.dtype, shape=(rows, data.shape[1]))
    at = 0
    step = max(1, (32 << 20) // max(1, data.shape[1] * data.dtype.itemsize))
    for start in range(0, len(data), step):
        checkpoint(cancel, TuneCancelled)
        block = np.asarray(data[start:start + step])[keep[start:start + step]]
        out[at:at + len(block)] = block
        at += len(block)
    out.flush()
    del out


def _folder_usage(path: Path) -> tuple[int, int]:
    """Bytes on disk (blocks) and files of a folder tree."""
    total = files = 0
    for root, _dirs, names in os.walk(path):
        total += os.stat(root).st_blocks * 512
        for name in names:
            total += os.stat(os.path.join(root, name)).st_blocks * 512
            files += 1
    return total, files


def _balance(h: Hierarchy, levels: int) -> tuple[LevelBalance, ...]:
    """Node sizes per level from the nodes' metadata, as the comparison reports them."""
    out = []
    for level in range(1, levels + 1):
        stats = level_stats(h, level)
        sizes = np.asarray(stats.sizes, dtype=np.int64)
        if sizes.size:
            out.append(LevelBalance(level, level == levels, sizes, stats.chunk_rows, stats.underfill))
    return tuple(out)


def runnable_variants(source: str, grid: TuneGrid) -> tuple[list[VariantSize], list[VariantSize]]:
    """(the variants to build with their estimates, those the size guard leaves out); TuneError for a
    variant `build` would refuse for another reason, or when the guard leaves none."""
    variants = grid.variants()
    try:
        sizes = grid_sizes(source, variants)
    except GridError as exc:
        raise TuneError(str(exc)) from None
    run, left_out = split_grid(sizes, grid.include_oversize)
    if not run:
        raise TuneError(f"{left_out_text(left_out, len(variants))}. Nothing is left to build: include them "
                        "anyway (--force), or give fewer levels or larger target cluster sizes")
    return run, left_out


def check_space(work: Path, estimates: Sequence[int], keep: bool, extra_bytes: int) -> None:
    """TuneError when the estimates (all variants when kept, the largest one otherwise, plus
    ``extra_bytes``, the remaining-rows copy) exceed the free space of the work folder."""
    need = (sum(estimates) if keep else max(estimates)) + extra_bytes
    free = shutil.disk_usage(work).free
    if need > free:
        raise TuneError(f"{work}: the grid's builds would take about {format_bytes(need)} on disk "
                        f"({'all ' + str(len(estimates)) + ' kept' if keep else 'the largest at a time'}), "
                        f"only {format_bytes(free)} is free; fewer or smaller variants, or another folder")


def _work_parent(keep_dir: Path | None, estimates: Sequence[int], extra_bytes: int) -> Path:
    """The kept folder, else a RAM filesystem with room for two variants at once (one is being removed
    while the next builds) and the remaining-rows copy, else the temporary folder."""
    if keep_dir is not None:
        return keep_dir
    return ram_folder(sum(sorted(estimates)[-2:]) + extra_bytes) or Path(tempfile.gettempdir())


def _remove_timed(path: Path, spent: list[float]) -> None:
    t = time.perf_counter()
    shutil.rmtree(path, ignore_errors=True)
    spent.append(time.perf_counter() - t)


def tune(source: str | os.PathLike[str], grid: TuneGrid, settings: TuneSettings | None = None,
         progress: Progress | None = None, cancel: threading.Event | None = None,
         cost_axis: str = DEFAULT_COST, on_variant: Callable[[VariantResult], None] | None = None,
         scheduler: str | None = None) -> TuneReport:
    """Build and measure every variant of ``grid`` on ``source``; TuneError / TuneCancelled leave nothing.

    TuneError comes before anything is built; a BuildError means the input's data cannot be built.
    ``on_variant`` sees each variant as soon as it is measured (a terminal prints a line).
    ``scheduler`` (``tcp://HOST:PORT``) builds and measures each variant as a task of that
    dask.distributed cluster, whose workers read ``source`` by its path (so it must be one they
    share) and each work in a folder of their own that they remove; the exact neighbours are
    computed here once and sent with the tasks.
    """
    settings = settings or TuneSettings()
    started = time.perf_counter()
    source = os.fspath(source)
    variants = grid.variants()
    if not variants:
        raise TuneError("the grid is empty: give at least one level, target and selection")
    if cost_axis not in COST_AXES:
        raise TuneError(f"unknown cost axis {cost_axis!r}; one of {', '.join(COST_AXES)}")
    if not 0 < settings.recall_target <= 1:
        raise TuneError(f"the recall target must be in (0, 1] (got {settings.recall_target})")
    data = _load(source)
    queries, held, query_source = _queries(data, settings)
    sizes, left_out = runnable_variants(source, grid)
    variants = [s.params for s in sizes]
    estimates = [s.estimated_bytes for s in sizes]
    keep_dir = Path(settings.keep).expanduser() if settings.keep else None
    if keep_dir is not None:
        clash = [folder_name(p) for p in variants if (keep_dir / folder_name(p)).exists()]
        if clash:
            raise TuneError(f"{keep_dir}: already holds {', '.join(clash)}; choose an empty folder")
    if scheduler is not None and keep_dir is not None:
        raise TuneError("variants built on a cluster are not kept (each worker removes its own); "
                        "leave out --keep or --scheduler")
    steps = _Steps(len(variants), progress, cancel)
    extra = data.nbytes if held.size else 0
    remove_stale_work(search_places(keep_dir))
    work_parent = _work_parent(keep_dir, estimates, extra)
    made_keep = False
    if keep_dir is not None and not keep_dir.exists():
        keep_dir.mkdir(parents=True)
        made_keep = True
    written: list[Path] = []
    work = make_work_folder(work_parent)
    # removing a measured variant (thousands of folders) is slow on a disk that discards blocks:
    # one thread does it while the next variant builds, and the tune waits for it before returning
    remover = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tune-remove")
    removing: list[float] = []
    try:
        check_space(work_parent, [0] if scheduler is not None else estimates, keep_dir is not None, extra)
        build_source = source
        if held.size:
            build_source = str(work / REMAINING)
            _write_remaining(data, held, Path(build_source), cancel)
            base = map_npy(build_source, TuneError)
        else:
            base = data
        t = time.perf_counter()
        truth = exact_neighbours(base, queries, settings.k, grid.metric,
                                 lambda p: steps.report(len(variants), "exact neighbours", p.done, p.total), cancel)
        exact_seconds = time.perf_counter() - t
        results = []
        if scheduler is not None:
            # the workers open the input by its absolute path
            results = _on_cluster(scheduler, variants, os.path.abspath(source), held, queries, query_source, truth,
                                  settings, [e + extra for e in estimates], steps, cancel, on_variant)
        for i, params in enumerate(variants if scheduler is None else ()):
            out = (keep_dir / folder_name(params)) if keep_dir is not None else work / folder_name(params)
            written.append(out)
            results.append(_measure(i, params, build_source, out, queries, query_source, truth, settings, steps,
                                    cancel))
            if keep_dir is None:
                remover.submit(_remove_timed, out, removing)
            if on_variant is not None:
                on_variant(results[-1])
        del base
        remover.shutdown(wait=True)
    except BaseException as exc:
        remover.shutdown(wait=True)
        for path in written:
            remove_index(path)  # only what this tune built: never a folder that holds anything else
        shutil.rmtree(work, ignore_errors=True)  # this tune's own folder (in keep_dir when one is kept)
        if made_keep:
            with contextlib.suppress(OSError):  # something was put in it meanwhile: it stays
                os.rmdir(keep_dir)  # type: ignore[arg-type]
        if isinstance(exc, Cancelled) and not isinstance(exc, TuneCancelled):
            raise TuneCancelled() from None
        raise
    _remove_timed(work, removing)
    report = TuneReport(input=source, rows=len(data) - len(held), dim=int(data.shape[1]), queries=len(queries),
                        query_source=query_source, k=settings.k, recall_target=settings.recall_target,
                        variants=tuple(results), cost_axis=cost_axis, recommendation=None,
                        seconds=time.perf_counter() - started, exact_seconds=exact_seconds,
                        kept=str(keep_dir) if keep_dir is not None else None, work_folder=str(work_parent),
                        remove_seconds=sum(removing), left_out=tuple(left_out),
                        held_out=tuple(int(h) for h in held))
    return with_axis(report, cost_axis)


def _measure(i: int, params: BuildParams, build_source: str, out: Path, queries: np.ndarray, query_source: str,
             truth: Any, settings: TuneSettings, steps: _Steps, cancel: threading.Event | None) -> VariantResult:
    """Build one variant as `build` does, then its balance, disk and sweep."""
    def on_build(p: BuildProgress) -> None:
        steps.report(i, "build", p.done, p.total)

    t = time.perf_counter()
    built = build_index(build_source, out, params, progress=on_build, cancel=cancel)
    build_seconds = time.perf_counter() - t
    disk, files = _folder_usage(out)
    costs: dict[int, dict[str, list[int]]] = {e: {name: [] for name in COST_AXES} for e in settings.search_exps}

    def observe(s: SweepSearch) -> None:
        into = costs[s.search_exp]
        c = s.result.cost
        into["distance_computations"].append(c.distance_computations)
        into["leaves_scanned"].append(c.leaves_scanned)
        into["nodes_visited"].append(c.nodes_visited)
        into["bytes_cold"].append(c.total_cold_bytes)

    t = time.perf_counter()
    reader = index_reader(open_index(str(out)))
    try:
        balance = _balance(reader.hierarchy, params.levels)
        query_set = queries_from_array(reader, queries, query_source)
        sweep = recall_sweep(reader, query_set, settings.k, settings.search_exps, exclude_self=False,
                             progress=lambda p: steps.report(i, "search", p.done, p.total), cancel=cancel,
                             exact=lambda *_args: truth, observe=observe)
    finally:
        reader.close()
    search_seconds = time.perf_counter() - t
    points = tuple(TunePoint(i, row.search_exp, row.recall,
                             {name: CostFigures.of(values) for name, values in costs[row.search_exp].items()},
                             row.ms_mean) for row in sweep.rows)
    return VariantResult(i, params, nodes_per_level=tuple(built.nodes_per_level), balance=balance, disk_bytes=disk,
                         files=files, path=str(out) if settings.keep else None, build_seconds=build_seconds,
                         search_seconds=search_seconds, points=points)



def _on_cluster(scheduler: str, variants: Sequence[BuildParams], source: str, held: np.ndarray, queries: np.ndarray,
                query_source: str, truth: Any, settings: TuneSettings, needs: Sequence[int], steps: _Steps,
                cancel: threading.Event | None,
                on_variant: Callable[[VariantResult], None] | None) -> list[VariantResult]:
    """Every variant measured as one task of the cluster; progress and ``on_variant`` as each arrives."""
    arrived = [0]

    def done(_i: int, result: VariantResult) -> None:
        steps.report(arrived[0], "search", 1, 1)
        arrived[0] += 1
        if on_variant is not None:
            on_variant(result)

    calls = [(i, params, source, held, queries, query_source, truth, settings, needs[i])
             for i, params in enumerate(variants)]
    results: list[VariantResult] = run_tasks(scheduler, _measure_on_worker, calls, name="ecpfs-tune", cancel=cancel,
                                             on_done=done, cancelled=TuneCancelled)
    return results


def _measure_on_worker(i: int, params: BuildParams, source: str, held: np.ndarray, queries: np.ndarray,
                       query_source: str, truth: Any, settings: TuneSettings, need_bytes: int, *,
                       stop: str | None = None) -> VariantResult:
    """One variant built and measured in a task on a dask worker, in a work folder of its own (with its
    own copy of the rows not held out) that it removes whatever happens; the result as a value."""
    with stop_watch(stop) as cancel:
        checkpoint(cancel, TuneCancelled)
        remove_stale_work(search_places(None))  # what a worker killed earlier left behind
        work = make_work_folder(ram_folder(need_bytes) or Path(tempfile.gettempdir()))
        try:
            build_source = source
            if held.size:
                build_source = str(work / REMAINING)
                _write_remaining(_load(source), held, Path(build_source), cancel)
            return _measure(i, params, build_source, work / folder_name(params), queries, query_source, truth,
                            settings, _Steps(i + 1, None, cancel), cancel)
        finally:
            shutil.rmtree(work, ignore_errors=True)
