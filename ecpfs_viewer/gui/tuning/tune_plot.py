"""Recall@k against cost: one curve per tuned variant, the Pareto frontier over them, the target line.

The cost axis is logarithmic (the variants' costs span orders of magnitude); the recommended point
is ringed. Colours follow the palette (light and dark themes), the frontier is a thick dashed line.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QWidget

from ecpfs_viewer.gui.widgets.categorical import line_colors
from ecpfs_viewer.gui.widgets.colormaps import plot_colors, style_plot
from ecpfs_viewer.gui.widgets.log_axis import set_log_ticks
from ecpfs_viewer.model.tuning.tune import COST_AXES, TuneReport


def variant_colors(count: int, background: QColor) -> list[QColor]:
    """One colour per variant, told apart and standing out from the plot's background (a ramp of
    viridis drew its first variant indigo on the dark theme's black)."""
    return line_colors(count, background)


class TunePlot(pg.PlotWidget):  # type: ignore[misc]
    """The recall-vs-cost plot of a tune report on one cost axis."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMinimumSize(360, 200)  # the whole dialog fits 1280 x 800 at 1.5x (533 px high)
        self.report: TuneReport | None = None
        self.curves: dict[str, pg.PlotDataItem] = {}  # by variant name
        self.frontier: pg.PlotDataItem | None = None
        self._style()

    def show_report(self, report: TuneReport | None) -> None:
        """Draw every variant's curve, the frontier and the recommendation on the report's cost axis."""
        self.report = report
        plot = self.getPlotItem()
        plot.clear()
        if plot.legend is not None:
            plot.legend.scene().removeItem(plot.legend)
            plot.legend = None
        self.curves = {}
        self.frontier = None
        if report is None:
            return
        background, text, accent = plot_colors(self.palette())
        behind = QColor(background)
        behind.setAlpha(210)  # curves under the legend stay visible, its words readable
        plot.addLegend(offset=(-8, -8), labelTextColor=text, brush=pg.mkBrush(behind))  # bottom right
        axis = report.cost_axis
        plot.setLogMode(x=True, y=False)
        for v, color in zip(report.variants, variant_colors(len(report.variants), background), strict=True):
            xs = [max(p.cost(axis), 1e-9) for p in v.points]
            self.curves[v.name] = plot.plot(xs, [p.recall for p in v.points], pen=pg.mkPen(color, width=2),
                                            symbol="o", symbolSize=6, symbolBrush=color, symbolPen=None, name=v.name)
        front = report.frontier()
        self.frontier = plot.plot([max(p.cost(axis), 1e-9) for p in front], [p.recall for p in front],
                                  pen=pg.mkPen(text, width=3, style=Qt.PenStyle.DashLine), name="Pareto frontier")
        target = pg.InfiniteLine(pos=report.recall_target, angle=0,
                                 pen=pg.mkPen(accent, width=1, style=Qt.PenStyle.DotLine))
        plot.addItem(target)
        rec = report.recommendation
        if rec is not None:
            ring = pg.ScatterPlotItem([math.log10(max(rec.cost, 1e-9))], [rec.recall], size=16,
                                      pen=pg.mkPen(accent, width=2), brush=None, symbol="o")
            plot.addItem(ring)
        set_log_ticks(plot.getAxis("bottom"), [p.cost(axis) for v in report.variants for p in v.points])
        plot.setLabel("bottom", f"{COST_AXES[axis]} per query (mean, log scale)")
        plot.setLabel("left", f"recall@{report.k}")
        plot.getAxis("left").enableAutoSIPrefix(False)  # a recall of 0.2-0.8 is not "200-800 (x0.001)"
        plot.setTitle(f"recall@{report.k} against cost: {len(report.variants)} variants")
        self._style()

    def _style(self) -> None:
        background, text, _ = plot_colors(self.palette())
        self.setBackground(background)
        plot = self.getPlotItem()
        plot.showGrid(x=True, y=True, alpha=0.25)
        style_plot(plot, self.palette())
        for name in ("left", "bottom"):
            plot.getAxis(name).label.setDefaultTextColor(text)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange and "curves" in self.__dict__:  # not during __init__
            self.show_report(self.report)
        super().changeEvent(event)
