"""How a heatmap's values become colours: linear or log, robust or full range, and what is clipped.

A robust range (the 0.5th to 99.5th percentile) keeps one outlier from washing out the picture,
but it hides that values lie beyond it: the colour bar of embeddings from -4.7 to 4.8 read
"±2.5". So every scale says how many values its colours clip and how many it cannot colour at all
(non-positive values on a log scale, NaN and infinities), and a log scale over data with no
positive value is refused with the reason instead of drawing an empty picture. Plain numpy on
the image already in memory: the default scale only counts (:func:`fixed_scale`, on the GUI
thread), the others take percentiles or logarithms of up to millions of values (in a worker).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ecpfs_viewer.model.views.value_stats import LEVEL_PERCENTILES

LINEAR, LOG = "linear", "log"
ROBUST, FULL = "robust", "full"
_PERCENTILE_MIN_SIZE = 1000  # below this many values the exact range is as robust (as plot_data)


@dataclass(frozen=True)
class ColorScale:
    """The image to colour (log10 of the values on a log scale), its levels, and what they leave out."""

    image: NDArray[np.float32]
    levels: tuple[float, float]  # in the image's units (log10 on a log scale)
    scale: str  # LINEAR or LOG: the scale in use (LINEAR when LOG was refused)
    data_range: tuple[float, float] | None  # finite values coloured, in the image's units
    below: int  # coloured values under the lower level (drawn in the first colour)
    above: int  # ... and over the upper one
    coloured: int  # finite values that have a colour
    not_positive: int = 0  # finite values a log scale cannot colour (drawn blank)
    refusal: str = ""  # why the scale asked for is not the one in use ('' when it is)

    @property
    def clipped(self) -> int:
        return self.below + self.above

    def clip_text(self) -> str:
        """What the colours do not show, for the line under the heatmap ('' when they show it all)."""
        parts = [self.refusal] if self.refusal else []
        if self.clipped and self.coloured and self.data_range is not None:
            share = self.clipped / self.coloured
            shown = "< 0.1%" if share < 0.001 else f"{share:.1%}"
            lo, hi = (self._value(v) for v in self.levels)
            data_lo, data_hi = (self._value(v) for v in self.data_range)
            parts.append(f"Colours clip {shown} of values ({self.clipped:,}): the bar spans {lo} … {hi}, "
                         f"the data {data_lo} … {data_hi}")
        if self.not_positive:
            parts.append(f"{self.not_positive:,} values ≤ 0 have no place on a log scale (drawn blank)")
        return ". ".join(parts)

    def _value(self, level: float) -> str:
        value = 10.0 ** level if self.scale == LOG else level
        return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:.4g}"


def color_scale(image: NDArray[Any], scale: str = LINEAR, span: str = ROBUST, *,
                symmetric: bool = False, exact: bool = False) -> ColorScale:
    """Levels of image for a scale (LINEAR or LOG) and span (ROBUST percentiles or the FULL range);
    symmetric (a diverging map) centres a linear range of signed data on 0; exact (integer data)
    always spans the full range, as the default levels of :mod:`.plot_data` do."""
    values = np.asarray(image, dtype=np.float32)
    finite_mask = np.isfinite(values)
    refusal = ""
    not_positive = 0
    if scale == LOG:
        positive = finite_mask & (values > 0)
        finite_count = int(np.count_nonzero(finite_mask))
        if positive.any():
            not_positive = finite_count - int(np.count_nonzero(positive))
            logs = np.full(values.shape, np.nan, dtype=np.float32)
            values = np.log10(values, out=logs, where=positive)
            finite_mask = positive
        else:
            scale = LINEAR
            refusal = (f"No log scale: none of the {finite_count:,} finite values is above 0 (linear shown)"
                       if finite_count else "No log scale: no finite value (linear shown)")
    finite = values[finite_mask] if not finite_mask.all() else values.reshape(-1)
    if not finite.size:
        return ColorScale(np.ascontiguousarray(values), (0.0, 1.0), scale, None, 0, 0, 0, not_positive, refusal)
    data_range = (float(finite.min()), float(finite.max()))
    if span == ROBUST and not exact and finite.size > _PERCENTILE_MIN_SIZE:
        lo, hi = (float(v) for v in np.percentile(finite, LEVEL_PERCENTILES))
    else:
        lo, hi = data_range
    if symmetric and scale == LINEAR and lo < 0 < hi:
        lo, hi = -max(-lo, hi), max(-lo, hi)
    if not hi > lo:
        hi = lo + 1.0
    below, above = _clipped(finite, lo, hi)
    return ColorScale(np.ascontiguousarray(values), (lo, hi), scale, data_range, below, above, int(finite.size),
                      not_positive, refusal)


def fixed_scale(image: NDArray[np.float32], levels: tuple[float, float], data_range: tuple[float, float] | None,
                coloured: int) -> ColorScale:
    """A linear scale whose levels and data range are known (the worker's defaults and statistics):
    only the clipping is counted, two comparisons over the image."""
    below, above = _clipped(image, *levels)
    return ColorScale(image, levels, LINEAR, data_range, below, above, coloured)


def with_levels(current: ColorScale, levels: tuple[float, float]) -> ColorScale:
    """The same scale with levels the user chose (dragging the colour bar): clipping counted again."""
    lo, hi = float(min(levels)), float(max(levels))
    below, above = _clipped(current.image, lo, hi)
    return ColorScale(current.image, (lo, hi), current.scale, current.data_range, below, above, current.coloured,
                      current.not_positive, current.refusal)


def _clipped(image: NDArray[Any], lo: float, hi: float) -> tuple[int, int]:
    """How many finite values lie below lo and above hi."""
    finite = np.isfinite(image)
    return int(np.count_nonzero((image < lo) & finite)), int(np.count_nonzero((image > hi) & finite))
