"""Colours shared by the plot pane and the chunk map: one perceptual map, palette-aware plot styling.

Both views colour values with the same map (viridis: perceptually uniform, readable by most
colour-blind users, and legible on light and dark palettes alike), and style pyqtgraph plots from
the Qt palette instead of pyqtgraph's fixed black background, so dark mode follows the system.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QWidget

COLORMAP_NAME = "viridis"
#: The heatmap's colour maps, (label, pyqtgraph name): perceptually uniform sequential maps (gray is
#: colorcet's linear grey, black to white), and one diverging map (blue, white, red) for signed data
#: centred on 0. Each can be reversed (:func:`colormap`).
HEATMAP_COLORMAPS = (("viridis", "viridis"), ("magma", "magma"), ("inferno", "inferno"), ("plasma", "plasma"),
                     ("cividis", "cividis"), ("gray", "CET-L1"), ("diverging (signed data)", "CET-D1A"))
DIVERGING = frozenset({"CET-D1A"})
MISSING_RGB = (128, 128, 128)  # a missing chunk (reads as fill): neutral grey, hatched darker
MISSING_HATCH_RGB = (88, 88, 88)


@lru_cache(maxsize=4)
def lookup_table(name: str = COLORMAP_NAME, n: int = 256) -> np.ndarray:
    """An (n, 3) uint8 lookup table of a pyqtgraph colour map (cached; at most 256 entries)."""
    table = pg.colormap.get(name).getLookupTable(nPts=n, alpha=False)
    return np.ascontiguousarray(table[:, :3], dtype=np.uint8)


def colormap(name: str = COLORMAP_NAME, reverse: bool = False) -> pg.ColorMap:
    """A pyqtgraph colour map by name, reversed on request (a copy: pyqtgraph caches the maps it
    loads, and reversing one in place would reverse it for every view)."""
    cmap = pg.colormap.get(name)
    if not reverse:
        return cmap
    positions, colors = cmap.getStops()
    return pg.ColorMap(1.0 - positions[::-1], colors[::-1], name=f"{name} reversed")


def plot_colors(palette: QPalette) -> tuple[QColor, QColor, QColor]:
    """(background, foreground text, accent) colours for plots, taken from the palette."""
    return (palette.color(QPalette.ColorRole.Base), palette.color(QPalette.ColorRole.Text),
            palette.color(QPalette.ColorRole.Highlight))


def style_plot(plot: pg.PlotItem, palette: QPalette) -> None:
    """Axis lines, tick labels, axis labels, title and legend in the palette's text colour."""
    _, text, _ = plot_colors(palette)
    for name in ("left", "bottom", "right", "top"):
        axis = plot.getAxis(name)
        axis.setPen(pg.mkPen(text))
        axis.setTextPen(pg.mkPen(text))
        axis.label.setDefaultTextColor(text)
    plot.titleLabel.setAttr("color", text.name())
    if plot.titleLabel.text:
        plot.titleLabel.setText(plot.titleLabel.text)
    if plot.legend is not None:
        style_legend(plot.legend, palette)


def plain_numbers(plot: pg.PlotItem, sides: tuple[str, ...] = ("left", "bottom")) -> None:
    """Ticks of a fraction axis as the numbers they are: pyqtgraph's SI scaling would write a recall
    of 0.2-0.8 as 200-800 under "recall@10 (x0.001)"."""
    for side in sides:
        plot.getAxis(side).enableAutoSIPrefix(False)


def style_legend(legend: pg.LegendItem, palette: QPalette) -> None:
    """A legend's words in the text colour over a backdrop of the plot's background (curves under it
    stay visible), framed faintly: readable on light and dark (pyqtgraph's default is grey on none)."""
    background, text, _ = plot_colors(palette)
    legend.setLabelTextColor(text)
    behind = QColor(background)
    behind.setAlpha(170)  # points under it show through, its words stay readable
    legend.setBrush(pg.mkBrush(behind))
    frame = QColor(text)
    frame.setAlpha(90)
    legend.setPen(pg.mkPen(frame))


def style_filled_steps(view: pg.PlotWidget, plot: pg.PlotItem, item: pg.PlotDataItem, palette: QPalette) -> None:
    """A plot of filled steps (a histogram, a spread of sizes) in the palette: one look for all of them."""
    background, _, accent = plot_colors(palette)
    view.setBackground(background)
    style_plot(plot, palette)
    fill = pg.mkColor(accent)
    fill.setAlpha(110)
    item.setPen(pg.mkPen(accent, width=1))
    item.setBrush(pg.mkBrush(fill))


def is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Window).lightness() < 128


def warning_color(widget: QWidget) -> str:
    """Amber text that reads on the widget's palette: something to know, not an error."""
    return "#e3b341" if is_dark(widget.palette()) else "#9a6700"


def error_color(widget: QWidget) -> str:
    """Red text that reads on the widget's palette (light or dark)."""
    return "#ff7b72" if is_dark(widget.palette()) else "#c62828"
