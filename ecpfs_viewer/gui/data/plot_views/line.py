"""1-D numbers as a line (markers on every value when there are few), or as steps."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import QCheckBox, QVBoxLayout, QWidget

from ecpfs_viewer.gui.data.plot_views.base import BEST, PlotView, export_plot, fit_constant_y, index_axes
from ecpfs_viewer.gui.widgets.colormaps import plot_colors, style_plot
from ecpfs_viewer.model.views.plot_data import PlotData

MARKER_LIMIT = 200  # 1-D subsets up to this length draw a marker on every value


class LineView(PlotView):
    """Values against their array index; clipped to view and peak-downsampled for long subsets."""

    title = "Line"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.view = pg.PlotWidget(axisItems=index_axes("bottom"))
        self.plot: pg.PlotItem = self.view.getPlotItem()
        self.plot.setLabel("bottom", "index")
        self.plot.setLabel("left", "value")
        self.plot.setClipToView(True)
        self.plot.setDownsampling(auto=True, mode="peak")
        self.curve = self.plot.plot()
        layout.addWidget(self.view, 1)
        self.step_check = QCheckBox("Steps")
        self.step_check.setToolTip("Draw each value as a flat step instead of joining points with lines")
        self.step_check.toggled.connect(self._redraw)
        layout.addWidget(self.step_check)
        self.apply_palette()

    def priority(self, data: PlotData) -> int:
        return BEST if data.values is not None and data.values.ndim == 1 else 0

    def draw(self, data: PlotData) -> None:
        assert data.values is not None
        values = data.values
        x0 = self.offset(0)
        steps = self.step_check.isChecked()
        if values.shape[0] <= MARKER_LIMIT and not steps:  # few points: show each one
            accent = plot_colors(self.palette())[2]
            self.curve.setSymbol("o")
            self.curve.setSymbolSize(5)
            self.curve.setSymbolBrush(pg.mkBrush(accent))
            self.curve.setSymbolPen(pg.mkPen(accent))
        else:
            self.curve.setSymbol(None)
        if steps:
            x = np.arange(values.shape[0] + 1, dtype=np.float64) + x0 - 0.5
            self.curve.setData(x=x, y=values, stepMode="center")
        else:
            self.curve.setData(x=np.arange(x0, x0 + values.shape[0]), y=values, stepMode=None, connect="finite")
        self.plot.enableAutoRange()
        fit_constant_y(self.plot, values)

    def clear(self) -> None:
        super().clear()
        self.curve.setData([], [])

    def apply_palette(self) -> None:
        background, _, accent = plot_colors(self.palette())
        self.view.setBackground(background)
        style_plot(self.plot, self.palette())
        self.curve.setPen(pg.mkPen(accent, width=1.5))

    def export_png(self, path: str) -> None:
        export_plot(self.plot, self.width(), path)

    def _redraw(self, _checked: bool) -> None:
        if self._data is not None:
            self.draw(self._data)
