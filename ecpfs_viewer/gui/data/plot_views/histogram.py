"""The histogram of a numeric subset's finite values (computed in the worker)."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QVBoxLayout, QWidget

from ecpfs_viewer.gui.data.plot_views.base import ALSO, PlotView, export_plot
from ecpfs_viewer.gui.widgets.colormaps import style_filled_steps
from ecpfs_viewer.model.views.plot_data import PlotData

_EMPTY = (np.array([0.0, 1.0]), np.zeros(1))  # what an empty histogram draws: one flat bin


class HistogramView(PlotView):
    """Counts per bin as filled steps; offered beside the heatmap or line, never opened first."""

    title = "Histogram"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.view = pg.PlotWidget()
        self.plot: pg.PlotItem = self.view.getPlotItem()
        self.plot.setLabel("bottom", "value")
        self.plot.setLabel("left", "count")
        self.item = pg.PlotDataItem(stepMode="center", fillLevel=0)
        self.plot.addItem(self.item)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)
        self.apply_palette()
        self.clear()

    def priority(self, data: PlotData) -> int:
        return ALSO if data.hist_counts is not None else 0

    def draw(self, data: PlotData) -> None:
        assert data.hist_counts is not None and data.hist_edges is not None
        if data.hist_counts.size:
            self.item.setData(data.hist_edges, data.hist_counts)
        else:  # no finite value: nothing to count
            self.item.setData(*_EMPTY)
        self.plot.enableAutoRange()

    def clear(self) -> None:
        super().clear()
        self.item.setData(*_EMPTY)

    def apply_palette(self) -> None:
        style_filled_steps(self.view, self.plot, self.item, self.palette())

    def export_png(self, path: str) -> None:
        export_plot(self.plot, self.width(), path)
