"""The level page's node-size histogram on a linear or a log axis, the choice remembered."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt

from ecpfs_viewer.gui.overview.level_page import LevelPage
from ecpfs_viewer.model.histogram import log_histogram
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def show_level(qtbot, page: LevelPage, store: Path, level: int) -> None:
    with qtbot.waitSignal(page.view_ready, timeout=10_000):
        page.show_level(Hierarchy(open_store(store)), level)


def test_log_size_axis_bins_sizes_on_a_log_scale_and_is_remembered(qtbot, show, two_clusters_path) -> None:
    page: LevelPage = show(LevelPage(), 1000, 700)
    show_level(qtbot, page, two_clusters_path, 2)
    axis = page.histogram_plot.getAxis("bottom")
    assert not page.log_check.isChecked() and not axis.logMode
    linear = list(page.histogram_bars.opts["height"])
    qtbot.mouseClick(page.log_check, Qt.MouseButton.LeftButton)
    assert page.log_check.isChecked() and axis.logMode
    sizes = page.view.stats.sizes
    counts, edges, left_out = log_histogram(sizes, 40)
    assert left_out == 0 and list(page.histogram_bars.opts["height"]) == counts.tolist()
    np.testing.assert_allclose(page.histogram_bars.opts["x0"], np.log10(edges[:-1]))
    assert page.median_line.value() == pytest.approx(np.log10(np.median(sizes)))
    again: LevelPage = show(LevelPage(), 600, 500)
    assert again.log_check.isChecked()  # remembered for the next page
    qtbot.mouseClick(page.log_check, Qt.MouseButton.LeftButton)
    assert not axis.logMode and list(page.histogram_bars.opts["height"]) == linear
    assert page.median_line.value() == pytest.approx(np.median(sizes))
    assert page.histogram_title() == "Node sizes"
