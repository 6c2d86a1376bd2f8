"""What a tune measured: per variant its build, disk, balance and sweep points; the frontier and the recommendation.

Plain values (no files held open), so the CLI prints them, the GUI renders them and JSON carries
them; :meth:`TuneReport.on_axis` re-marks the frontier for another cost axis without measuring again.
"""

from __future__ import annotations

import csv
import io
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ecpfs_viewer.model.build.builder import BuildParams
from ecpfs_viewer.model.tuning.balance import LevelBalance
from ecpfs_viewer.model.tuning.grid_sizes import VariantSize
from ecpfs_viewer.model.tuning.grid_sizes import variant_name as variant_name  # named here as before
from ecpfs_viewer.model.tuning.pareto import cheapest_reaching, pareto_front

#: the cost axes a tune reports, by the name the CLI, JSON and GUI use
COST_AXES = {"distance_computations": "distance computations", "leaves_scanned": "leaves scanned",
             "nodes_visited": "nodes visited", "bytes_cold": "bytes read (cold)"}
DEFAULT_COST = "distance_computations"


@dataclass(frozen=True)
class CostFigures:
    """Mean and p95 of one cost over the searches of one search_exp."""

    mean: float
    p95: float

    @staticmethod
    def of(values: Sequence[int]) -> CostFigures:
        a = np.asarray(values, dtype=np.float64)
        return CostFigures(float(a.mean()), float(np.percentile(a, 95))) if a.size else CostFigures(0.0, 0.0)


@dataclass(frozen=True)
class TunePoint:
    """One (variant, search_exp): recall@k and what its searches cost."""

    variant: int
    search_exp: int
    recall: float
    costs: dict[str, CostFigures]  # by COST_AXES name
    ms_mean: float
    on_frontier: bool = False

    def cost(self, axis: str = DEFAULT_COST) -> float:
        return self.costs[axis].mean

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"variant": self.variant, "search_exp": self.search_exp, "recall": self.recall}
        for name, figures in self.costs.items():
            out[f"{name}_mean"] = figures.mean
            out[f"{name}_p95"] = figures.p95
        out["ms_mean"] = self.ms_mean
        out["on_frontier"] = self.on_frontier
        return out


@dataclass(frozen=True)
class VariantResult:
    """One built variant: its parameters, what was built (nodes, balance, disk), how long building
    and measuring took, and the sweep."""

    index: int
    params: BuildParams
    # what was built
    nodes_per_level: tuple[int, ...]
    balance: tuple[LevelBalance, ...]
    disk_bytes: int
    files: int
    path: str | None  # where it was kept; None when removed
    # how long it took, and what it measured
    build_seconds: float
    search_seconds: float
    points: tuple[TunePoint, ...]

    @property
    def name(self) -> str:
        return variant_name(self.params)

    def to_dict(self) -> dict[str, Any]:
        p = self.params
        return {"variant": self.index, "name": self.name, "levels": p.levels,
                "target_cluster_items": p.target_cluster_items, "rep_selection": p.rep_selection,
                "metric": p.metric, "seed": p.seed, "build_seconds": self.build_seconds,
                "search_seconds": self.search_seconds, "disk_bytes": self.disk_bytes, "files": self.files,
                "nodes_per_level": list(self.nodes_per_level), "balance": [b.to_dict() for b in self.balance],
                "points": [pt.to_dict() for pt in self.points], "path": self.path}


@dataclass(frozen=True)
class Recommendation:
    """The cheapest (variant, search_exp) reaching the recall target, and the command that builds it."""

    variant: int
    search_exp: int
    recall: float
    cost: float
    command: str

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class TuneReport:
    """Everything a tune measured, with the frontier and the recommendation on its cost axis."""

    input: str
    rows: int  # rows the variants were built from
    dim: int
    queries: int
    query_source: str
    k: int
    recall_target: float
    variants: tuple[VariantResult, ...]
    cost_axis: str
    recommendation: Recommendation | None
    seconds: float
    exact_seconds: float
    kept: str | None = None
    held_out: tuple[int, ...] = field(default=(), repr=False)
    work_folder: str = ""  # where the temporary folder was made (a RAM filesystem when it had room)
    remove_seconds: float = 0.0  # removing measured variants, mostly while the next one built
    left_out: tuple[VariantSize, ...] = ()  # variants of the grid over the size guard, not built

    @property
    def build_seconds(self) -> float:
        return sum(v.build_seconds for v in self.variants)

    @property
    def search_seconds(self) -> float:
        return sum(v.search_seconds for v in self.variants)

    def points(self) -> list[TunePoint]:
        return [pt for v in self.variants for pt in v.points]

    def frontier(self, axis: str | None = None) -> list[TunePoint]:
        """The Pareto frontier on ``axis`` (default: the report's), in ascending cost."""
        pts = self.points()
        axis = axis or self.cost_axis
        return [pts[i] for i in pareto_front([p.cost(axis) for p in pts], [p.recall for p in pts])]

    def on_axis(self, axis: str) -> TuneReport:
        """The same measurements with the frontier and recommendation for another cost axis."""
        return with_axis(self, axis)

    def point_rows(self) -> tuple[list[str], list[list[Any]]]:
        """Every point with its variant's parameters and build figures: the table the GUI shows and CSV holds."""
        header = ["variant", "levels", "target_cluster_items", "rep_selection", "search_exp", "recall"]
        header += [f"{name}_{stat}" for name in COST_AXES for stat in ("mean", "p95")]
        header += ["ms_mean", "on_frontier", "build_seconds", "disk_bytes", "files"]
        rows = []
        for v in self.variants:
            p = v.params
            for pt in v.points:
                costs = [x for name in COST_AXES for x in (pt.costs[name].mean, pt.costs[name].p95)]
                rows.append([v.name, p.levels, p.target_cluster_items, p.rep_selection, pt.search_exp, pt.recall,
                             *costs, pt.ms_mean, pt.on_frontier, v.build_seconds, v.disk_bytes, v.files])
        return header, rows

    def points_csv(self) -> str:
        """:meth:`point_rows` as CSV text."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        header, rows = self.point_rows()
        writer.writerow(header)
        writer.writerows(rows)
        return out.getvalue()

    def to_dict(self) -> dict[str, Any]:
        return {"input": self.input, "rows": self.rows, "dim": self.dim, "queries": self.queries,
                "query_source": self.query_source, "k": self.k, "recall_target": self.recall_target,
                "cost_axis": self.cost_axis, "seconds": self.seconds, "exact_seconds": self.exact_seconds,
                "build_seconds": self.build_seconds, "search_seconds": self.search_seconds, "kept": self.kept,
                "work_folder": self.work_folder, "remove_seconds": self.remove_seconds,
                "variants": [v.to_dict() for v in self.variants],
                "frontier": [{"variant": p.variant, "search_exp": p.search_exp} for p in self.frontier()],
                "recommendation": self.recommendation.to_dict() if self.recommendation else None,
                "left_out": [s.to_dict() for s in self.left_out]}


def folder_name(params: BuildParams) -> str:
    """The folder a kept variant goes to, e.g. 'l3_t50.zarr'."""
    rs = "_random" if params.rep_selection == "random" else ""
    return f"l{params.levels}_t{params.target_cluster_items}{rs}.zarr"


def build_command(source: str, params: BuildParams, output: str | None = None) -> str:
    """The `ecpfs-viewer build` command line that makes this variant from the whole input."""
    out = output or folder_name(params)
    parts = ["ecpfs-viewer", "build", source, out, "--levels", str(params.levels),
             "--target-cluster-items", str(params.target_cluster_items), "--metric", params.metric,
             "--rep-selection", params.rep_selection]
    if params.rep_selection == "random" and params.seed is not None:
        parts += ["--seed", str(params.seed)]
    return shlex.join(parts)


def with_axis(report: TuneReport, axis: str) -> TuneReport:
    """Mark the frontier and choose the recommendation on ``axis``."""
    pts = report.points()
    front = set(pareto_front([p.cost(axis) for p in pts], [p.recall for p in pts]))
    flags = iter(i in front for i in range(len(pts)))
    variants = tuple(replace(v, points=tuple(replace(p, on_frontier=next(flags)) for p in v.points))
                     for v in report.variants)
    best = cheapest_reaching([p.cost(axis) for p in pts], [p.recall for p in pts], report.recall_target)
    recommendation = None
    if best is not None:
        p = pts[best]
        params = report.variants[p.variant].params
        recommendation = Recommendation(p.variant, p.search_exp, p.recall, p.cost(axis),
                                        build_command(report.input, params))
    return replace(report, variants=variants, cost_axis=axis, recommendation=recommendation)
