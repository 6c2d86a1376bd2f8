"""The comparison view's two charts: node sizes per level (histogram or CDF, log x) and recall against cost.

Index A takes the palette's accent, index B an orange that reads on light and dark palettes.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor, QPalette

from ecpfs_viewer.gui.widgets.colormaps import is_dark, plain_numbers, plot_colors, style_plot
from ecpfs_viewer.gui.widgets.log_axis import set_log_ticks
from ecpfs_viewer.model.tuning.compare import COST_AXES, RecallComparison, SideBySide
from ecpfs_viewer.model.tuning.compare_tables import size_histogram


def colours(palette: QPalette) -> tuple[QColor, QColor]:
    """(index A, index B) colours for this palette."""
    _, _, accent = plot_colors(palette)
    return accent, QColor("#ffa657" if is_dark(palette) else "#d35400")


def draw_balance(widget: pg.PlotWidget, sides: SideBySide | None, level: int | None, cdf: bool) -> None:
    """Both indexes' node sizes of one level on one log-x chart, titled with their imbalance figures."""
    plot = widget.getPlotItem()
    plot.clear()
    if sides is None or level is None:
        return
    _legend(widget)
    empty = np.zeros(0, np.int64)
    sizes = [s.balance[level - 1].sizes if level <= len(s.balance) else empty for s in (sides.a, sides.b)]
    pair = colours(widget.palette())
    figures = []
    for name, side, values, colour in zip("AB", (sides.a, sides.b), sizes, pair, strict=True):
        lv = side.balance[level - 1] if level <= len(side.balance) else None
        if lv is not None and lv.imbalance_factor is not None:
            figures.append(f"{name}: imbalance {lv.imbalance_factor:.3f}, max/median "
                           f"{lv.max_over_median or 0:.2f}, CV {lv.coefficient_of_variation or 0:.3f}")
        if cdf and values.size:
            ordered = np.sort(np.maximum(values, 1)).astype(np.float64)
            plot.plot(np.log10(ordered), np.arange(1, len(ordered) + 1) / len(ordered),
                      name=f"{name} ({len(ordered):,} nodes)", pen=pg.mkPen(colour, width=2))
    if not cdf:
        edges, counts_a, counts_b = size_histogram(sizes[0], sizes[1])
        for name, counts, colour in (("A", counts_a, pair[0]), ("B", counts_b, pair[1])):
            fill = QColor(colour)
            fill.setAlpha(90)
            plot.plot(np.log10(edges), counts, stepMode="center", fillLevel=0, brush=fill,
                      pen=pg.mkPen(colour, width=2), name=f"{name} ({int(counts.sum()):,} nodes)")
    plot.setLabel("bottom", "rows per node (log scale)")
    plot.setLabel("left", "share of nodes at or below" if cdf else "nodes")
    plain_numbers(plot)
    set_log_ticks(plot.getAxis("bottom"), np.concatenate(sizes).tolist() if sizes else [])
    plot.setTitle(f"lvl_{level}: " + ("; ".join(figures) or "no nodes"))
    _style(widget)


def draw_recall(widget: pg.PlotWidget, recall: RecallComparison | None, axis: str) -> None:
    """recall@k against the mean cost on ``axis`` (a COST_AXES key), one curve per index, points labelled."""
    plot = widget.getPlotItem()
    plot.clear()
    if recall is None:
        return
    _legend(widget)
    for name, curve, colour in zip("AB", (recall.curve_a, recall.curve_b), colours(widget.palette()), strict=True):
        xs = [p.cost(axis) for p in curve]
        plot.plot(xs, [p.recall for p in curve], pen=pg.mkPen(colour, width=2), symbol="o", symbolBrush=colour,
                  symbolPen=None, name=name)
        for p, x in zip(curve, xs, strict=True):
            label = pg.TextItem(f"{p.search_exp}", color=colour, anchor=(0, 1))
            label.setPos(x, p.recall)
            plot.addItem(label)
    plot.setLabel("bottom", f"mean {COST_AXES[axis]} per search")
    plot.setLabel("left", f"recall@{recall.k}")
    plain_numbers(plot)
    plot.setTitle(f"recall@{recall.k} against cost (points labelled with search_exp)")
    _style(widget)


def _legend(widget: pg.PlotWidget) -> None:
    """The legend, its labels in the palette's text colour (set before the curves, which take it)."""
    plot = widget.getPlotItem()
    if plot.legend is None:
        plot.addLegend(offset=(8, 8))
    plot.legend.setLabelTextColor(plot_colors(widget.palette())[1])


def _style(widget: pg.PlotWidget) -> None:
    background, text, _ = plot_colors(widget.palette())
    widget.setBackground(background)
    plot = widget.getPlotItem()
    style_plot(plot, widget.palette())
    if plot.legend is not None:
        plot.legend.setLabelTextColor(text)
