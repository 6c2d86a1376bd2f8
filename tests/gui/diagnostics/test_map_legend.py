"""The Index map's legend: its scale labels readable at any width the panel gives it."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ecpfs_viewer.gui.diagnostics.map_view import MapLegend
from ecpfs_viewer.model.diagnostics.index_map import findings_overlay, size_overlay
from ecpfs_viewer.model.diagnostics.index_map_layout import LevelInput, map_layout


def _index_map():
    leaves = np.array([1, 8, 100, 800, 6400], np.int64)
    return map_layout("t", [LevelInput(np.array([0]), np.array([5]), [np.arange(5)], np.zeros(1, np.int8)),
                            LevelInput(np.arange(5), leaves, [None] * 5, np.zeros(5, np.int8))])


@pytest.mark.parametrize("width", [200, 420, 650, 1100])
@pytest.mark.parametrize("kind", ["size", "findings"])
def test_no_two_scale_labels_overlap_and_each_lies_within_the_legend(qtbot, width: int, kind: str) -> None:
    """At 650 pixels (the map's legend at 1280x800) "0.12 x median", "1.00 x median" and "8.00 x
    median" were drawn over each other."""
    index_map = _index_map()
    legend = MapLegend()
    qtbot.addWidget(legend)
    legend.resize(width, legend.minimumHeight())
    legend.set_overlay(size_overlay(index_map) if kind == "size" else findings_overlay(index_map, []))
    bar, placed = legend.scale_geometry()
    assert len(placed) >= 2 and bar.right() <= width
    if width >= 650:
        assert [text for _, text in placed] == legend.labels()  # every label shown when there is room
    for (a, _), (b, _) in itertools.combinations(placed, 2):
        assert not a.intersects(b), (a, b)
    for rect, text in placed:
        assert rect.left() >= 0 and rect.right() <= width, text
        assert rect.width() >= legend.fontMetrics().horizontalAdvance(text) or width < 420
    legend.show()
    legend.grab()  # it paints what it measured


@pytest.mark.parametrize("width", [200, 420, 650, 1100])
def test_the_title_names_the_colouring_beside_the_bar_or_under_it(qtbot, width: int) -> None:
    """At 1.5x the title beside a bar as wide as its labels was elided to "s…"."""
    legend = MapLegend()
    qtbot.addWidget(legend)
    legend.resize(width, legend.minimumHeight())
    overlay = size_overlay(_index_map())
    legend.set_overlay(overlay)
    bar, placed = legend.scale_geometry()
    rect, title = legend.title_geometry()
    assert title.startswith(f"{overlay.name}:")
    assert rect.left() >= 0 and rect.right() <= width and rect.bottom() <= legend.height()
    assert not rect.intersects(bar) and not any(rect.intersects(label) for label, _ in placed)
    if width >= 1100:
        assert title == f"{overlay.name}: {overlay.legend}" and rect.left() > bar.right()  # room beside the bar
