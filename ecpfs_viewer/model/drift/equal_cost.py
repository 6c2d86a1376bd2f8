"""The fresh build's recall at the grown index's cost: what a rebuild gives for the same work.

A grown index's leaves are larger, so at the user's search_exp it scores more items, and its recall
there may even be higher than a fresh build's; the price is cost. Compared at equal cost (mean
distance computations a search), the loss shows: the fresh build is searched at a few more
search_exp values on the same queries, and its recall is interpolated at the index's cost.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ecpfs_viewer.model.search.index import IndexReader
from ecpfs_viewer.model.search.queries import QuerySet
from ecpfs_viewer.model.search.recall import recall_sweep
from ecpfs_viewer.model.search.results import ProgressCallback
from ecpfs_viewer.model.tuning.compare import CostPoint

#: at most this many more search_exp values are measured on the fresh build
LADDER = 6


@dataclass(frozen=True)
class EqualCost:
    """The fresh build's recall at ``cost`` (the index's), and the points it was read from."""

    cost: float
    fresh_recall: float
    bound: str  # "" exact (interpolated); "at least"/"at most": the cost lies beyond the points measured
    points: tuple[tuple[int, float, float], ...]  # (search_exp, recall, distance computations) of the fresh build

    def to_dict(self) -> dict[str, Any]:
        return {"distance_computations": self.cost, "fresh_recall": self.fresh_recall, "bound": self.bound,
                "fresh_points": [{"search_exp": e, "recall": r, "distance_computations": c} for e, r, c in self.points]}


def ladder(search_exp: int, ratio: float) -> list[int]:
    """search_exp values around ``search_exp × ratio`` (the one measured left out)."""
    if ratio >= 1:
        top = max(search_exp + 1, math.ceil(search_exp * ratio * 1.6))
        values = np.geomspace(search_exp, top, LADDER + 1)
    else:
        values = np.geomspace(max(1.0, search_exp * ratio * 0.7), search_exp, LADDER + 1)
    return sorted({int(float(v) + 0.5) for v in values} - {search_exp} - {0})


def equal_cost_recall(fresh: IndexReader, queries: QuerySet, k: int, at: CostPoint, index_cost: float, *,
                      progress: ProgressCallback | None = None,
                      cancel: threading.Event | None = None) -> EqualCost:
    """The fresh build's recall at ``index_cost``, from ``at`` (its point at the user's search_exp) and more."""
    points = [(at.search_exp, at.recall, at.distance_computations)]
    ratio = index_cost / at.distance_computations if at.distance_computations > 0 else 1.0
    exps = ladder(at.search_exp, ratio) if abs(ratio - 1) > 0.02 else []
    if exps:
        report = recall_sweep(fresh, queries, k, exps, exclude_self=queries.self_ids[0] is not None,
                              progress=progress, cancel=cancel)
        points += [(row.search_exp, row.recall, row.distance_computations_mean) for row in report.rows]
    points.sort(key=lambda p: p[2])
    costs = np.array([p[2] for p in points])
    recalls = np.maximum.accumulate(np.array([p[1] for p in points]))  # recall does not fall with more work
    bound = "at least" if index_cost > costs[-1] else "at most" if index_cost < costs[0] else ""
    return EqualCost(index_cost, float(np.interp(index_cost, costs, recalls)), bound, tuple(points))
