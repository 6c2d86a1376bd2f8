"""The Search dock resets with the index: nothing of the previous index is shown once another opens."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.gui.window.main_window import MainWindow
from ecpfs_viewer.model.build.builder import BuildParams, build_index


@pytest.fixture(scope="module")
def ip_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-level inner-product index of 400 unit 4-D vectors."""
    tmp = tmp_path_factory.mktemp("search_reset")
    vectors = np.random.default_rng(8).standard_normal((400, 4)).astype(np.float32)
    np.save(tmp / "vectors.npy", vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    build_index(tmp / "vectors.npy", tmp / "ip.zarr", BuildParams(levels=2, target_cluster_items=20, metric="IP",
                                                                   is_normalized=True))
    return tmp / "ip.zarr"


def headers(model) -> list[str]:
    return [model.headerData(c, Qt.Orientation.Horizontal) for c in range(model.columnCount())]


def test_opening_another_index_clears_headers_queries_results_path_and_recall(
        qtbot, show, tmp_path: Path, ip_index: Path, two_clusters_path: Path) -> None:
    app_settings.use_settings_dir(tmp_path / "settings")
    win: MainWindow = show(create_main_window(str(ip_index)), 1280, 900)
    qtbot.waitUntil(lambda: win.session.hierarchy is not None and not win.is_busy(), timeout=15000)
    win.search.show_panel()
    panel = win.search.panel
    panel.form.item_edit.setText("7")
    panel.form.exclude_edit.setText("8, 9")
    with qtbot.waitSignal(panel.finished, timeout=20000):
        qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not win.is_busy(), timeout=20000)
    assert "inner product" in headers(panel.results_model) and panel.results_model.rowCount() > 0
    recall = panel.recall_view
    recall.n_spin.setValue(5)
    recall.exps_edit.setText("1, 2")
    with qtbot.waitSignal(recall.finished, timeout=60000):
        qtbot.mouseClick(recall.run_button, Qt.MouseButton.LeftButton)
    assert recall.outcome is not None and recall.numbers_model.rowCount() == 2
    assert "shown of" in recall.misses_label.text()
    assert "inner product" in headers(recall.misses_model) or recall.misses_model.rowCount() == 0
    panel.tabs.setCurrentIndex(panel.TAB_PATH)  # drawn when on screen
    qtbot.waitUntil(lambda: panel.path_view.leaves_model.rowCount() > 0, timeout=10000)

    win.open_location(str(two_clusters_path))
    qtbot.waitUntil(lambda: win.session.hierarchy is not None and not win.is_busy(), timeout=15000)
    assert "inner product" not in headers(panel.results_model) + headers(panel.misses_model)
    assert headers(panel.results_model) == list(panel.RESULT_HEADERS)
    assert panel.results_model.rowCount() == 0 and panel.misses_model.rowCount() == 0
    assert panel.form.item_edit.text() == "" and panel.form.exclude_edit.text() == ""
    assert panel.status_text().startswith("Type an item id")
    assert panel.path_view.leaves_model.rowCount() == 0
    assert panel.path_view.summary.text() == "Run a search to see its path through the tree."
    assert recall.outcome is None and recall.numbers_model.rowCount() == 0
    assert recall.misses_label.text() == "True neighbours missed"  # issue 37: "416 shown of 1,291" stayed
    assert headers(recall.numbers_model) == list(recall.NUMBER_HEADERS)
    assert headers(recall.misses_model) == list(recall.MISS_HEADERS)
    assert not recall.csv_button.isEnabled()
    assert win.tree_model.marks_at("lvl_1") == []  # the old search's marks are gone
