"""Statistics of the values read for the plot pane: range, mean, percentiles, NaN and infinities.

A subset of embeddings is judged by its spread as much as by its range (a single outlier makes
min/max useless), so the pane shows percentiles beside them, as silx view's statistics do. Every
number is computed from the values already read for the picture (the subset is capped there),
in one ``np.percentile`` pass (a partition, not a sort) that also yields the heatmap's robust colour levels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

#: The percentiles shown to the user.
SHOWN_PERCENTILES = (1.0, 5.0, 50.0, 95.0, 99.0)
#: The percentiles a float heatmap's colours span by default (robust to a few outliers).
LEVEL_PERCENTILES = (0.5, 99.5)


@dataclass(frozen=True)
class ValueStats:
    """What the values of a subset look like; ``minimum`` ... ``percentiles`` are None without a
    finite value. Values keep their numpy type, so integers print exactly."""

    size: int  # values read
    nan: int
    pos_inf: int
    neg_inf: int
    minimum: Any = None
    maximum: Any = None
    mean: float | None = None
    percentiles: dict[float, float] | None = None  # SHOWN_PERCENTILES and LEVEL_PERCENTILES

    @property
    def finite(self) -> int:
        return self.size - self.nan - self.pos_inf - self.neg_inf

    @property
    def inf(self) -> int:
        return self.pos_inf + self.neg_inf

    def percentile(self, q: float) -> float | None:
        return None if self.percentiles is None else self.percentiles.get(q)

    def range_text(self) -> str:
        """'min 0 · max 10 · mean 5 · 1 NaN · 2 inf' (the counts only when there are some)."""
        parts = []
        if self.minimum is not None:
            parts += [f"min {format_value(self.minimum)}", f"max {format_value(self.maximum)}",
                      f"mean {format_value(self.mean)}"]
        if self.nan:
            parts.append(f"{self.nan:,} NaN")
        if self.inf:
            signs = "+inf" if not self.neg_inf else "-inf" if not self.pos_inf else "inf"
            parts.append(f"{self.inf:,} {signs}")
        return " · ".join(parts)

    def percentiles_text(self) -> str:
        """'p1 -2.3 · p5 -1.6 · p50 0.01 · p95 1.6 · p99 2.3', or '' without a finite value."""
        if self.percentiles is None:
            return ""
        return " · ".join(f"p{q:g} {format_value(self.percentiles[q])}" for q in SHOWN_PERCENTILES)


def value_stats(values: NDArray[Any], finite: NDArray[Any]) -> ValueStats:
    """Statistics of values (numeric, any shape) given their finite ones (``finite_values``)."""
    size = int(np.size(values))
    nan = pos_inf = neg_inf = 0
    if np.asarray(values).dtype.kind == "f" and finite.size < size:
        flat = np.asarray(values).reshape(-1)
        nan = int(np.count_nonzero(np.isnan(flat)))
        pos_inf = int(np.count_nonzero(flat == np.inf))
        neg_inf = size - finite.size - nan - pos_inf
    if not finite.size:
        return ValueStats(size, nan, pos_inf, neg_inf)
    with np.errstate(over="ignore", invalid="ignore"):
        mean = finite.mean(dtype=np.float64)  # float16 or int8 sums would overflow in their own type
    if not np.isfinite(mean):  # values near the float64 limits: their sum overflowed, not their mean
        mean = np.sum(finite / finite.size, dtype=np.float64)
    wanted = sorted(SHOWN_PERCENTILES + LEVEL_PERCENTILES)
    with np.errstate(over="ignore", invalid="ignore"):
        found = np.percentile(finite, wanted).astype(np.float64)
        if not np.isfinite(found).all():  # interpolating across the whole float64 range overflowed
            found = np.percentile(finite / 2, wanted).astype(np.float64) * 2
    return ValueStats(size, nan, pos_inf, neg_inf, finite.min(), finite.max(), float(mean),
                      {q: float(v) for q, v in zip(wanted, found, strict=True)})


def format_value(value: Any) -> str:
    """A value as the summary prints it: integers exactly, other numbers to 6 significant digits."""
    if isinstance(value, np.integer | np.bool_):
        return str(int(value))  # exact: 2**63 - 1 is no 9.22337e+18
    number = float(value)
    return str(int(number)) if number.is_integer() and abs(number) < 1e15 else f"{number:.6g}"
