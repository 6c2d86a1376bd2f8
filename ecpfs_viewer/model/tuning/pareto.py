"""The Pareto frontier of (cost, recall) points: the settings no other setting beats on both.

A point is on the frontier when every cheaper point has a lower recall; of points with equal
cost only the best recall stays. Tune draws this line and picks its recommendation from it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def pareto_front(costs: Sequence[float], recalls: Sequence[float]) -> list[int]:
    """Indices of the non-dominated points (lower cost, higher recall), in ascending cost."""
    if len(costs) != len(recalls):
        raise ValueError(f"{len(costs)} costs for {len(recalls)} recalls")
    if not len(costs):
        return []
    c = np.asarray(costs, dtype=np.float64)
    r = np.asarray(recalls, dtype=np.float64)
    order = np.lexsort((-r, c))  # by cost, then best recall first among equal costs
    front: list[int] = []
    best = -np.inf
    for i in order:
        if r[i] > best:
            front.append(int(i))
            best = r[i]
    return front


def cheapest_reaching(costs: Sequence[float], recalls: Sequence[float], target: float) -> int | None:
    """The index of the cheapest point whose recall reaches ``target`` (best recall on a tie); None if none."""
    best: int | None = None
    for i, (cost, recall) in enumerate(zip(costs, recalls, strict=True)):
        if recall + 1e-12 < target:
            continue
        if best is None or (cost, -recall) < (costs[best], -recalls[best]):
            best = i
    return best
