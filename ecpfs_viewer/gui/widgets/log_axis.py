"""Readable ticks on a logarithmic axis: 1, 2 and 5 times each power of ten, written out.

pyqtgraph labels every minor tick of a log axis ("8·10 9·10 10²"), which collide on a narrow plot.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pyqtgraph as pg


def log_ticks(values: Iterable[float]) -> list[tuple[float, str]]:
    """(log10 position, label) of 1, 2, 5 x 10^k spanning the positive values (only 10^k over more
    than three decades, where the others would crowd)."""
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    if not positive:
        return []
    low, high = math.floor(math.log10(min(positive))), math.ceil(math.log10(max(positive)))
    ticks = []
    steps = (1, 2, 5) if high - low <= 3 else (1,)
    for power in range(low, high + 1):
        for step in steps:
            value = step * 10.0**power
            if min(positive) / 2 <= value <= max(positive) * 2:
                ticks.append((math.log10(value), f"{value:,.0f}" if value >= 1 else f"{value:g}"))
    return ticks


def set_log_ticks(axis: pg.AxisItem, values: Iterable[float]) -> None:
    """Label a log-mode axis with :func:`log_ticks` of the values it shows."""
    axis.setTicks([log_ticks(values)])
