"""What every view of the plot pane is: a page that says how well it fits the data, then draws it.

Like silx's DataViewer, the pane does not decide which views suit a subset: it asks each view for
its :meth:`PlotView.priority` (0 = cannot show this data), shows the views that can, and opens the
one that fits best. Adding a view means adding a class, not another branch in the pane.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QWidget

from ecpfs_viewer.model.views.plot_data import PlotData

AXIS_WIDTH = 64  # fixed left-axis width so the heatmap and its row profile share x positions
BEST = 100  # the view made for this kind of data
ALSO = 10  # a view that can show the data but is not the first one to open


class PlotView(QWidget):
    """One page of the plot pane (a tab). Subclasses set ``title`` and draw one kind of picture."""

    title: ClassVar[str] = ""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._data: PlotData | None = None
        self._stale = False  # data set but not drawn yet

    def priority(self, data: PlotData) -> int:
        """How well this view fits the data: 0 = cannot show it; the highest opens first."""
        raise NotImplementedError(type(self).__name__)

    def set_data(self, data: PlotData) -> None:
        """Keep the data (only called when :meth:`priority` is above 0); it is drawn by
        :meth:`ensure_drawn` when the page is shown, so the pages behind other tabs cost nothing."""
        self._data = data
        self._stale = True

    def ensure_drawn(self) -> None:
        """Draw the data kept by :meth:`set_data` unless that was done already."""
        if self._stale and self._data is not None:
            self._stale = False
            self.draw(self._data)

    def draw(self, data: PlotData) -> None:
        """Draw data (the data kept by :meth:`set_data`) into the page's items."""
        raise NotImplementedError(type(self).__name__)

    def clear(self) -> None:
        """Forget the data and empty the page."""
        self._data = None
        self._stale = False

    def apply_palette(self) -> None:
        """Restyle plot items from the widget palette (light or dark); plain widgets follow it alone."""

    def export_png(self, path: str) -> None:
        """Save a picture of the page."""
        self.ensure_drawn()
        self.grab().save(path)

    def offset(self, axis: int) -> int:
        """Where the subset starts along an axis of the array (0 when no data or no such axis)."""
        offsets = self._data.subset.offsets if self._data is not None else ()
        return int(offsets[axis]) if axis < len(offsets) else 0

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self.apply_palette()
        super().changeEvent(event)


def export_plot(item: object, width: int, path: str) -> None:
    """Save a pyqtgraph plot item or scene as PNG, at least 200 pixels wide."""
    exporter = pg.exporters.ImageExporter(item)
    exporter.parameters()["width"] = max(int(width), 200)
    exporter.export(path)


class IndexAxis(pg.AxisItem):  # type: ignore[misc]
    """An axis of array indexes: ticks only on whole numbers, no SI prefix."""

    def __init__(self, orientation: str) -> None:
        super().__init__(orientation)
        self.enableAutoSIPrefix(False)

    def tickSpacing(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, float]]:
        levels = [(spacing, offset) for spacing, offset in super().tickSpacing(minVal, maxVal, size) if spacing >= 1]
        return levels or [(1.0, 0.0)]


def index_axes(*names: str) -> dict[str, pg.AxisItem]:
    """Index axes for the named sides of a plot ('left', 'bottom')."""
    return {name: IndexAxis(name) for name in names}


def fit_constant_y(plot: pg.PlotItem, values: Any) -> None:
    """Give a constant curve a y range around its value (autorange alone picks a far too wide one)."""
    data = np.asarray(values, dtype=np.float64)
    data = data[np.isfinite(data)]
    if data.size and float(data.min()) == float(data.max()):
        value = float(data[0])
        pad = max(abs(value) * 0.1, 1.0)
        plot.enableAutoRange(axis="y", enable=False)
        plot.setYRange(value - pad, value + pad, padding=0)
