"""The plot pane's view settings and messages as met in the main window: colours per array across
the tree, old global settings ignored, a bad subset explained under the field with the tabs kept."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from window_driver import open_window, select

from ecpfs_viewer.gui.data.plot_views.heatmap_look import DEFAULT_LOOK, HeatmapLook
from ecpfs_viewer.gui.runtime.settings import settings


def test_heatmap_colours_belong_to_their_array_and_old_settings_are_ignored(qtbot, two_clusters_path) -> None:
    store = settings()
    for key, value in (("heatmap/colormap", "CET-D1A"), ("heatmap/scale", "log"), ("heatmap/range", "full")):
        store.setValue(key, value)  # what an earlier version left behind
    store.sync()
    win = open_window(qtbot, two_clusters_path)
    heat = win.plot.heatmap
    select(qtbot, win, "lvl_2/node_3/embeddings")
    qtbot.waitUntil(lambda: win.plot.current_view() == "Heatmap" and heat.scale is not None, timeout=10_000)
    assert heat.look() == DEFAULT_LOOK and heat.scale.scale == "linear"
    assert not np.isnan(win.plot.image_item.image).any()
    with qtbot.waitSignal(heat.recoloured, timeout=10_000):
        heat.set_choice("colormap", "magma")
    heat.reverse_box.setChecked(True)
    select(qtbot, win, "lvl_2/node_2/embeddings")  # the next array: the default look, not magma
    qtbot.waitUntil(lambda: win.plot.current_view() == "Heatmap", timeout=10_000)
    assert heat.look() == DEFAULT_LOOK and heat.colorbar.colorMap().name == "viridis"
    select(qtbot, win, "lvl_2/node_3/embeddings")  # back: its own look
    qtbot.waitUntil(lambda: win.plot.current_view() == "Heatmap", timeout=10_000)
    assert heat.look() == HeatmapLook(colormap="magma", reverse=True)
    qtbot.mouseClick(heat.reset_button, Qt.MouseButton.LeftButton)
    assert heat.look() == DEFAULT_LOOK
    assert store.value("heatmap/scale") == "log"  # the user's file is left alone, just not read


def test_a_bad_subset_is_explained_under_the_field_in_the_window(qtbot, two_clusters_path) -> None:
    win = open_window(qtbot, two_clusters_path)
    select(qtbot, win, "lvl_2/node_3/embeddings")
    pane = win.plot
    qtbot.waitUntil(lambda: pane.current_view() == "Heatmap", timeout=10_000)
    win.tabs.setCurrentWidget(next(w for i in range(win.tabs.count()) if (w := win.tabs.widget(i)).isAncestorOf(pane)))
    qtbot.waitUntil(pane.isVisible, timeout=5000)
    offered = pane.offered_views()
    pane.subset_edit.setText("0:5, nope")
    with qtbot.waitSignal(pane.shown, timeout=10_000):
        qtbot.keyClick(pane.subset_edit, Qt.Key.Key_Return)
    assert pane.subset_error_text().startswith("Cannot read [0:5, nope]: ")
    assert pane.subset_error.isVisible() and pane.tabs.isVisible()
    assert pane.current_view() == "Heatmap" and pane.offered_views() == offered
