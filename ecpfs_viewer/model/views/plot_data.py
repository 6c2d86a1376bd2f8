"""A subset made ready to draw, computed off the GUI thread (plain numpy, no Qt).

Reading the subset, converting it for pyqtgraph (row-major, C-contiguous float32 images), colour
levels, the histogram and the one-line summary all happen here, in the worker; the plot pane only
hands ready arrays to pyqtgraph. Which views can show the result is the pane's business: they look
at ``values``, ``image`` and ``ndim``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ecpfs_viewer.model.formatting import format_shape
from ecpfs_viewer.model.histogram import finite_values, histogram
from ecpfs_viewer.model.views.table_data import RowIds, TableWindow, row_ids, table_window
from ecpfs_viewer.model.views.value_stats import LEVEL_PERCENTILES, ValueStats, value_stats
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.subset import Subset, default_selection, format_selection, parse_selection, read_subset

DEFAULT_MAX_ELEMENTS = 4_000_000
#: An array of at most this many elements, in at most SMALL_ARRAY_CHUNKS chunks, is shown whole by
#: default (a 3x3x3 array in 1x1x1 chunks is not one pixel); larger ones start inside one chunk.
SMALL_ARRAY_ELEMENTS = 1024
SMALL_ARRAY_CHUNKS = 64
_PERCENTILE_MIN_SIZE = 1000  # below this many floats, the exact range is as robust and cheaper


@dataclass(frozen=True)
class PlotData:
    """A subset ready to draw: numbers for pyqtgraph, colour levels, histogram, summary text."""

    subset: Subset
    values: NDArray[Any] | None  # numeric data (bool as uint8, complex as magnitude); None for text
    image: NDArray[np.float32] | None  # row-major, C-contiguous float32 (2-D and higher only)
    levels: tuple[float, float] | None  # colour levels of the image
    hist_counts: NDArray[np.int64] | None  # histogram of numeric subsets of rank 1 and more
    hist_edges: NDArray[np.float64] | None
    summary: str
    note: str = ""
    row_ids: RowIds | None = None  # ids beside the rows (item ids of a leaf's embeddings...)
    window: TableWindow | None = None  # a selection too large to read: only the table shows it
    stats: ValueStats | None = None  # of numeric subsets of rank 1 and more

    @property
    def ndim(self) -> int:
        """Rank of the subset as read (before trailing axes are flattened for the image)."""
        return int(np.ndim(self.subset.data))


def prepare_plot(hierarchy: Hierarchy, path: str, text: str | None,
                 max_elements: int = DEFAULT_MAX_ELEMENTS) -> PlotData:
    """Read a subset (the default one, reading at most one chunk, when text is None) and prepare it.

    A small array is shown whole by default, whatever its chunks; an embeddings array gets the ids
    of its rows (item ids of a leaf, child node ids of an internal node) for the table."""
    details = hierarchy.array_details(path)
    if text is None:
        chunks = math.prod(-(-n // max(c, 1)) for n, c in zip(details.shape, details.chunk_shape, strict=False))
        small = bool(details.shape) and 0 < math.prod(details.shape) <= SMALL_ARRAY_ELEMENTS \
            and chunks <= SMALL_ARRAY_CHUNKS
        whole = tuple(slice(0, n, 1) for n in details.shape)
        text = format_selection(whole, details.shape) if small else default_selection(details)
    data = plot_data(read_subset(hierarchy, path, text, max_elements=max_elements))
    first = parse_selection(text, details.shape)[:1]
    if first and isinstance(first[0], slice) and data.ndim >= 1:
        ids = row_ids(hierarchy, path, first[0])
        if ids is not None:
            data = replace(data, row_ids=ids)
    return data


def prepare_table(hierarchy: Hierarchy, path: str, text: str) -> PlotData:
    """A selection too large to read at once, described for the table view (which reads the rows it
    shows); raises SelectionError unless it keeps 1 or 2 axes."""
    window = table_window(hierarchy, path, text)
    empty = Subset(window.path, window.text, np.empty((0,) * window.ndim), window.offsets[:window.ndim],
                   window.rows * window.cols, window.steps[:window.ndim], window.dtype)
    summary = f"{window.rows:,} x {window.cols:,} {window.dtype}" if window.ndim == 2 else \
        f"{window.rows:,} {window.dtype}"
    return PlotData(empty, None, None, None, None, None, summary,
                    "too large to read at once: the table reads the rows it shows", window=window)


def plot_data(subset: Subset) -> PlotData:
    """Compute what the views of a subset need (numbers, image, levels, histogram, summary)."""
    data = np.asarray(subset.data)
    note = ""
    values: NDArray[Any] | None
    if data.dtype.kind == "b":
        values = data.astype(np.uint8)
    elif data.dtype.kind in "iuf":
        values = data
    elif data.dtype.kind == "c":
        values, note = np.abs(data), "complex values: showing the magnitude"
    else:
        values = None
    shape_text = format_shape(data.shape)
    if values is None or data.ndim == 0:
        dtype_text = "string" if data.dtype.kind in "UTO" else str(data.dtype)
        return PlotData(subset, values, None, None, None, None, f"{shape_text} {dtype_text}", note)
    image = None
    levels = None
    finite = finite_values(values)
    stats = value_stats(values, finite)
    if values.ndim >= 2:
        if values.ndim > 2:
            note = join_notes(note, f"axes after the first are flattened: {values.shape} shown as "
                                    f"{values.shape[0]} x {int(np.prod(values.shape[1:]))}")
            values = values.reshape(values.shape[0], -1)
        image, levels = _drawable(values, image_levels(values, finite, stats))
    counts, edges = histogram(finite)
    summary = " · ".join(part for part in (f"{shape_text} {data.dtype}", stats.range_text()) if part)
    return PlotData(subset, values, image, levels, counts, edges, summary, note, stats=stats)


#: Half float32's range: pyqtgraph subtracts the lower level from each value in float32.
_DRAW_MAX = float(np.finfo(np.float32).max) / 2


def _drawable(values: NDArray[Any], levels: tuple[float, float]) -> tuple[NDArray[np.float32], tuple[float, float]]:
    """The float32 image pyqtgraph draws and its levels: float64 values past what float32 draws are
    drawn at its ends (integers, even uint64, always fit); the data itself keeps them."""
    if values.dtype.kind == "f" and values.dtype.itemsize > 4:
        values = np.clip(values, -_DRAW_MAX, _DRAW_MAX)
    lo, hi = (min(max(level, -_DRAW_MAX), _DRAW_MAX) for level in levels)
    if not hi > lo:  # both past one end: still a range pyqtgraph can divide by
        lo = hi - abs(hi) * 1e-6 - 1.0
    return np.ascontiguousarray(values, dtype=np.float32), (lo, hi)


def join_notes(*parts: str) -> str:
    """Join the non-empty parts of a message with '; '."""
    return "; ".join(p for p in parts if p)


def image_levels(values: NDArray[Any], finite: NDArray[Any], stats: ValueStats | None = None) -> tuple[float, float]:
    """Colour levels: percentiles for floats (robust to outliers), exact range for integers."""
    if finite.size == 0:
        return 0.0, 1.0
    if values.dtype.kind == "f" and finite.size > _PERCENTILE_MIN_SIZE:
        found = (stats or value_stats(values, finite)).percentiles
        assert found is not None  # there are finite values
        lo, hi = (found[q] for q in LEVEL_PERCENTILES)
    else:
        lo, hi = float(finite.min()), float(finite.max())
    if not hi > lo:
        hi = lo + 1.0
    return lo, hi
