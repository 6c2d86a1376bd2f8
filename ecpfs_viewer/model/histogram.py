"""One histogram rule for the whole application: the plot pane's value histogram and node sizes.

Integer data spanning few values gets one bin per value (edges at half-integers, so every bar is
centred on its value); anything else gets ``bins`` equal bins, by default as many as the
Freedman-Diaconis rule asks for (so 160 values do not get 100 nearly empty bins). NaN and
infinities are left out: they have no place on a value axis, and callers report how many there were.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

DEFAULT_BINS = 100  # the cap of the Freedman-Diaconis bin count when no bin count is given
PER_VALUE_LIMIT = 256  # integer data spanning at most this many values gets one bin per value
#: Default cap of freedman_diaconis_bins (the node page's spread histogram).
SPREAD_BINS_CAP = 50


@dataclass(frozen=True)
class Figures:
    """How many values, the smallest, the median and the largest (None for no values); the smallest
    and largest are ints for integer values."""

    count: int
    minimum: float | None
    median: float | None
    maximum: float | None


def figures(values: NDArray[Any]) -> Figures:
    """The count, minimum, median and maximum of node sizes, distances or any other values."""
    if not values.size:
        return Figures(0, None, None, None)
    return Figures(int(values.size), values.min().item(), float(np.median(values)), values.max().item())


def freedman_diaconis_bins(values: ArrayLike, cap: int = SPREAD_BINS_CAP) -> int:
    """Histogram bins by the Freedman-Diaconis rule (width 2 IQR / n^(1/3)), between 1 and cap.

    Falls back to Sturges (log2 n + 1) when the IQR is 0 but the values are not all equal.
    """
    data = np.asarray(values, dtype=np.float64).ravel()
    data = data[np.isfinite(data)]
    if data.size == 0:
        return 1
    span = float(np.max(data)) / 2 - float(np.min(data)) / 2  # halved: a span of the whole float64 range is finite
    if span <= 0:
        return 1
    with np.errstate(over="ignore", invalid="ignore"):  # interpolating across the float64 range: handled below
        q75, q25 = np.percentile(data, [75, 25])
    iqr = float(q75) / 2 - float(q25) / 2
    ratio = span / (2 * iqr / data.size ** (1 / 3)) if iqr > 0 else math.log2(data.size) + 1
    return max(1, min(max(1, cap), math.ceil(ratio) if math.isfinite(ratio) else cap))


def finite_values(values: ArrayLike) -> NDArray[Any]:
    """The values as a flat array without NaN and infinities (no copy when there are none)."""
    flat = np.asarray(values).reshape(-1)
    if flat.dtype.kind not in "fc":
        return flat
    mask = np.isfinite(flat)
    return flat if mask.all() else flat[mask]


def histogram(values: ArrayLike, bins: int | None = None, *, per_value_limit: int = PER_VALUE_LIMIT,
              span: tuple[float, float] | None = None) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """(counts, edges) of the finite values; ``len(edges) == len(counts) + 1``.

    Integers (and booleans) spanning at most ``per_value_limit`` values: one bin per value, edges at
    ``v - 0.5``. Without ``bins``, the Freedman-Diaconis count capped at DEFAULT_BINS is used for the
    rest. Wider integers: ``bins`` equal bins over ``[min, max + 1]`` so the top value is not
    squeezed into the last bin's closed edge. Floats: ``bins`` equal bins over ``[min, max]``, or one
    bin of width 1 around a constant. No finite value: no bins (``counts`` empty, ``edges == [0.0]``).
    With ``span`` (low, high): only the values in it are counted, and the bins cover it (the user's
    range; integers keep whole-value bins over the whole numbers in it).
    """
    data = np.asarray(values)
    finite = finite_values(data.astype(np.uint8) if data.dtype.kind == "b" else data)
    if span is not None:
        finite = finite[(finite >= span[0]) & (finite <= span[1])]
    if finite.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.float64)
    if bins is None:
        bins = freedman_diaconis_bins(finite, DEFAULT_BINS)
    if data.dtype.kind in "iub":
        low, high = int(np.min(finite)), int(np.max(finite))
        if span is not None:
            low, high = math.ceil(span[0]), math.floor(span[1])
        if high - low + 1 <= per_value_limit:
            edges = np.arange(low, high + 2, dtype=np.float64) - 0.5
        else:  # as floats: high + 1 of a uint64 is no numpy integer
            edges = np.linspace(float(low), float(high) + 1.0, bins + 1)
    else:
        low_f, high_f = (float(np.min(finite)), float(np.max(finite))) if span is None else span
        if not high_f > low_f:
            low_f, high_f = low_f - 0.5, high_f + 0.5
        edges = np.linspace(low_f / 2, high_f / 2, bins + 1) * 2  # finite even over the whole float64 range
    counts, _ = np.histogram(finite, bins=edges)
    return counts.astype(np.int64, copy=False), edges


def log_histogram(values: ArrayLike, bins: int = 40) -> tuple[NDArray[np.int64], NDArray[np.float64], int]:
    """(counts, edges, left_out): ``bins`` bins of equal width on a log axis over the positive
    finite values; left_out counts the rest (zero or negative sizes have no place on that axis).

    Integers get edges at half-integers (each bin holds whole values, so small sizes leave no
    empty slivers between them); fewer bins than asked when the sizes span few values.
    """
    data = finite_values(values)
    positive = data[data > 0]
    left_out = int(np.size(values)) - int(positive.size)
    if positive.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.float64), left_out
    low, high = float(np.min(positive)), float(np.max(positive))
    if np.asarray(values).dtype.kind in "iub":
        edges = np.unique(np.round(np.geomspace(low, high + 1.0, max(1, bins) + 1))) - 0.5
    else:
        edges = np.geomspace(low, high, max(1, bins) + 1) if high > low else np.array([low / 2, low * 2])
    counts, _ = np.histogram(positive, bins=edges)
    return counts.astype(np.int64, copy=False), edges.astype(np.float64, copy=False), left_out
