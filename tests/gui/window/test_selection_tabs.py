"""Each tab shows the selection: an array's node on Overview, a node's embeddings on Data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from window_driver import select

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.gui.window.main_window import MainWindow
from ecpfs_viewer.gui.window.selection_tabs import TAB_DATA, TAB_METADATA, TAB_OVERVIEW, tab_for, targets
from ecpfs_viewer.model.ecpfs.nodes import NodeRef


@pytest.fixture
def win(qtbot, tmp_path: Path, two_clusters_path: Path):
    app_settings.use_settings_dir(tmp_path / "settings")
    window = create_main_window(str(two_clusters_path))
    qtbot.addWidget(window)
    window.resize(1280, 800)
    window.show()
    qtbot.waitUntil(lambda: window.session.hierarchy is not None and not window.is_busy(), timeout=15000)
    yield window
    window.close()


def click_tab(qtbot, win: MainWindow, tab: int) -> None:
    bar = win.tabs.tabBar()
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(tab).center())
    assert win.tabs.currentIndex() == tab


def test_what_each_tab_shows_for_a_selection() -> None:
    embeddings = targets("lvl_2/node_1/embeddings", is_array=True, is_index=True, broken=False)
    assert (embeddings.overview, embeddings.data) == ("lvl_2/node_1", "lvl_2/node_1/embeddings")
    node = targets("lvl_2/node_1", is_array=False, is_index=True, broken=False)
    assert (node.overview, node.data, node.own_page) == ("lvl_2/node_1", "lvl_2/node_1/embeddings", True)
    root = targets("index_root", is_array=False, is_index=True, broken=False)
    assert (root.overview, root.data) == ("index_root", "index_root/embeddings")
    rep = targets("rep_embeddings", is_array=True, is_index=True, broken=False)
    assert (rep.overview, rep.data) == ("", "rep_embeddings")  # an array at the root: the index page
    level = targets("lvl_2", is_array=False, is_index=True, broken=False)
    assert (level.overview, level.data) == ("lvl_2", None)
    plain = targets("group", is_array=False, is_index=False, broken=False)
    assert (plain.overview, plain.data) == (None, None)
    assert tab_for(node, TAB_DATA) == TAB_OVERVIEW and tab_for(embeddings, TAB_OVERVIEW) == TAB_METADATA
    assert tab_for(embeddings, TAB_DATA) == TAB_DATA and tab_for(level, TAB_DATA) == TAB_OVERVIEW
    assert tab_for(plain, TAB_DATA) == TAB_METADATA


def test_overview_shows_the_node_of_the_selected_array(qtbot, win: MainWindow) -> None:
    select(qtbot, win, "lvl_2/node_3/embeddings")
    assert win.tabs.currentIndex() == TAB_METADATA
    click_tab(qtbot, win, TAB_OVERVIEW)
    page = win.node_page
    assert win.overview_stack.currentWidget() is page
    qtbot.waitUntil(lambda: page.data is not None and page.data.info.ref == NodeRef(2, 3), timeout=10000)
    assert page.crumb_text() == "index > lvl_1/node_1 > lvl_2/node_3"
    select(qtbot, win, "rep_embeddings")  # an array of the root: the index page
    click_tab(qtbot, win, TAB_OVERVIEW)
    assert win.overview_stack.currentWidget() is win.overview
    assert win.overview.stack.currentWidget() is win.overview.index_page


def test_data_shows_the_embeddings_of_the_selected_node(qtbot, win: MainWindow, two_clusters_path: Path) -> None:
    select(qtbot, win, "lvl_2/node_3")
    assert win.tabs.currentIndex() == TAB_OVERVIEW
    assert win.plot.current_data() is None  # not read until the Data tab is opened
    click_tab(qtbot, win, TAB_DATA)
    qtbot.waitUntil(lambda: win.plot.current_data() is not None, timeout=10000)
    assert win.plot.current_data().subset.path == "lvl_2/node_3/embeddings"
    assert "Select an array" not in win.plot.message_text()
    assert win.plot.path_label.text() == "<b>lvl_2/node_3/embeddings</b>"  # it says which array it shows
    np.testing.assert_allclose(win.plot.image_item.image, [[11.0, 11.0], [11.4, 11.4]])
    select(qtbot, win, "lvl_2/node_3/item_ids")  # an array on Data stays on Data
    assert win.tabs.currentIndex() == TAB_DATA
    qtbot.waitUntil(lambda: win.plot.current_data() is not None
                    and win.plot.current_data().subset.path == "lvl_2/node_3/item_ids", timeout=10000)
