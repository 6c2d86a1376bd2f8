"""The drift simulation: build on the first N % of the rows, add the rest as upstream's insert
does (model/build/insert.py), and measure the grown index against a build of all the rows with
the drift report — at a few N, so a user sees before production how recall, cost and balance
decay as inserts accumulate.

Everything is made in one hidden ``.ecpfs-drift-PID-…`` folder of the temporary folder (or of
``work_dir``) and removed at the end, cancelled or not. Each grown index gets a folder of its own,
so no cached fact about one answers for another.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ecpfs_viewer.model.build.builder import BuildParams, BuildProgress, build_index, preview_build
from ecpfs_viewer.model.build.insert import add_rows
from ecpfs_viewer.model.drift.fresh import PREFIX, DriftCancelled, DriftError
from ecpfs_viewer.model.drift.report import DriftReport, DriftSettings, drift_report
from ecpfs_viewer.model.drift.stale import remove_stale_drift
from ecpfs_viewer.model.ecpfs.opened_index import open_index
from ecpfs_viewer.model.formatting import format_bytes
from ecpfs_viewer.model.search.explore import map_npy
from ecpfs_viewer.model.search.index import index_reader
from ecpfs_viewer.model.search.results import ProgressCallback, SearchProgress
from ecpfs_viewer.model.tasks import Cancelled, checkpoint

DEFAULT_BUILT = (20, 40, 60, 80, 100)


@dataclass(frozen=True)
class DriftPoint:
    """One grown index: built on ``built_rows`` rows, ``inserted_rows`` added, against the full build."""

    built_percent: float
    built_rows: int
    inserted_rows: int
    report: DriftReport

    @property
    def inserted_percent(self) -> float:
        return 100.0 * self.inserted_rows / max(1, self.built_rows + self.inserted_rows)

    def to_dict(self) -> dict[str, Any]:
        f = self.report.figures
        leaf = self.report.levels[-1]
        return {"built_percent": self.built_percent, "inserted_percent": self.inserted_percent,
                "built_rows": self.built_rows, "inserted_rows": self.inserted_rows, "recall": f.recall,
                "fresh_recall": f.fresh_recall, "fresh_recall_same_cost": f.equal_cost_recall,
                "same_cost_bound": f.equal_cost_bound, "distance_computations": f.cost, "fresh_distance_computations":
                f.fresh_cost, "leaves": f.leaves, "fresh_leaves": f.fresh_leaves, "over_2x_target": leaf.over(2),
                "over_4x_target": f.over_4x, "fresh_over_4x_target": f.fresh_over_4x,
                "leaf_cv": leaf.index.coefficient_of_variation,
                "fresh_leaf_cv": leaf.fresh.coefficient_of_variation if leaf.fresh else None,
                "imbalance_factor": f.imbalance, "fresh_imbalance_factor": f.fresh_imbalance,
                "reach_inserted": f.reach_inserted, "reach_built": f.reach_built,
                "rebuild": self.report.verdict.rebuild, "reasons": list(self.report.verdict.reasons)}


@dataclass(frozen=True)
class DriftSimulation:
    input: str
    rows: int
    dim: int
    params: BuildParams
    search_exp: int
    k: int
    points: tuple[DriftPoint, ...]

    def to_dict(self) -> dict[str, Any]:
        p = self.params
        return {"input": self.input, "rows": self.rows, "dim": self.dim, "levels": p.levels,
                "target_cluster_items": p.target_cluster_items, "metric": p.metric, "search_exp": self.search_exp,
                "k": self.k, "thresholds": self.points[0].report.thresholds.to_dict() if self.points else None,
                "points": [pt.to_dict() for pt in self.points]}


def _percents(built: Sequence[float]) -> list[float]:
    out = sorted({float(b) for b in built})
    if not out or out[0] <= 0 or out[-1] > 100:
        raise DriftError(f"built percentages must be in (0, 100] (got {', '.join(str(b) for b in built) or 'none'})")
    return out


def simulate_drift(source: str | os.PathLike[str], params: BuildParams, built: Sequence[float] = DEFAULT_BUILT,
                   settings: DriftSettings | None = None, *, work_dir: str | os.PathLike[str] | None = None,
                   progress: ProgressCallback | None = None,
                   cancel: threading.Event | None = None) -> DriftSimulation:
    """Grow an index from each share of ``source``'s rows in ``built`` (percent) to all of them, and
    report each against a build of all rows; DriftError before anything is built, DriftCancelled."""
    source = os.fspath(source)
    percents = _percents(built)
    data = map_npy(source, DriftError)
    if data.ndim != 2 or data.shape[0] < 2:
        raise DriftError(f"{source}: expected a 2-D array of at least 2 rows, got shape {data.shape}")
    preview = preview_build(source, params, None)
    if preview.problems:
        raise DriftError("; ".join(str(p) for p in preview.problems))
    parent = Path(work_dir) if work_dir else Path(tempfile.gettempdir())
    remove_stale_drift(parent)
    need = 2 * preview.estimated_bytes + data.nbytes
    free = shutil.disk_usage(parent).free
    if need > free:
        raise DriftError(f"{parent}: the simulation needs about {format_bytes(need)} at a time, only "
                         f"{format_bytes(free)} is free")
    base = replace(settings or DriftSettings(), target=params.target_cluster_items, built_items=None, force=True)
    rows = int(data.shape[0])
    work = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent))
    try:
        full = work / "all.zarr"
        build_index(source, full, params, progress=_named(progress, "build of all rows"), cancel=cancel)
        full_reader = index_reader(open_index(full))
        points = []
        for percent in percents:
            checkpoint(cancel, DriftCancelled)
            n = min(rows, max(1, math.ceil(rows * percent / 100.0)))
            name = f"built on {percent:g}%"
            first, grown = work / f"first-{percent:g}.npy", work / f"grown-{percent:g}.zarr"
            np.save(first, np.asarray(data[:n]))
            build_index(first, grown, params, progress=_named(progress, name), cancel=cancel)
            first.unlink()
            if n < rows:
                add_rows(grown, np.asarray(data[n:]), progress=_named(progress, f"{name}, adding the rest"),
                         cancel=cancel)
            report = drift_report(index_reader(open_index(grown)), full_reader,
                                  replace(base, built_items=n), progress=_named(progress, name), cancel=cancel)
            points.append(DriftPoint(percent, n, rows - n, report))
        return DriftSimulation(source, rows, int(data.shape[1]), params, base.search_exp, base.k, tuple(points))
    except Cancelled:
        raise DriftCancelled("drift simulation cancelled; its temporary folder was removed") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _named(progress: ProgressCallback | None, name: str) -> Any:
    """A build's, an add's or a report's progress, as one phase of the simulation."""
    if progress is None:
        return None

    def on(p: BuildProgress | SearchProgress) -> None:
        progress(SearchProgress(f"{name}: {p.phase}", p.done, p.total))

    return on
