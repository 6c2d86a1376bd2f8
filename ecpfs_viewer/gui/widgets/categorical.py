"""One categorical palette: 20 colours told apart on light and dark backgrounds.

Tableau 10, then ten more picked greedily for the largest CIELAB distance to those already chosen,
among colours that stand out from white and from the dark theme's base (contrast ratio at least
1.6 and 2.6). The projection colours children and parents with it; any view that colours classes
(the index map) takes its colours from here, so one class looks the same everywhere.
"""

from __future__ import annotations

from PySide6.QtGui import QColor

from ecpfs_viewer.gui.widgets.contrast import VISIBLE, contrast_ratio

CATEGORICAL = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
               "#9c755f", "#bab0ac", "#780fff", "#ff0fc3", "#7878ff", "#00d200", "#ff0000", "#f087f0",
               "#786900", "#96c300", "#c32d78", "#b43ce1")
MAX_CATEGORIES = len(CATEGORICAL)  # more classes than this cannot be coloured apart


def category_color(index: int) -> str:
    """The colour of class index (wrapping past MAX_CATEGORIES: callers with more classes draw a crowd)."""
    return CATEGORICAL[index % MAX_CATEGORIES]


def line_colors(count: int, background: QColor) -> list[QColor]:
    """``count`` colours for lines on ``background``: the palette's colours that stand out from it
    (3:1, WCAG's bar for graphics) first, in palette order, then the others; wrapping past 20."""
    colours = [QColor(c) for c in CATEGORICAL]
    ordered = sorted(colours, key=lambda c: contrast_ratio(c, background) < VISIBLE)  # stable: palette order kept
    return [ordered[i % len(ordered)] for i in range(count)]
