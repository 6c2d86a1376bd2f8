"""A level of many nodes in the window: its node pages do not wait for the tree, its rows come in ranges."""

from __future__ import annotations

from pathlib import Path

import pytest
from index_factory import build_clustered_index

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.window.main_window import MainWindow


@pytest.fixture(scope="module")
def three_levels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 levels, 2,000 vectors of 8 dimensions, about 10 items per leaf (a hundred-odd leaves)."""
    return build_clustered_index(tmp_path_factory.mktemp("large"), 2000, 8, clusters=6, seed=3,
                                 levels=3, target_cluster_items=10)


@pytest.fixture
def window(qtbot, three_levels: Path) -> MainWindow:
    win = create_main_window(remember_recent=False)
    qtbot.addWidget(win)
    win.tree_model.large_group = 20  # the leaf level is over it: shown in ranges
    win.resize(1280, 800)
    win.show()
    win.open_location(str(three_levels))
    qtbot.waitUntil(lambda: win.tree_model.is_loaded("lvl_3") and not win.is_busy(), timeout=20_000)
    yield win
    win.close()


def test_a_leaf_page_shows_before_its_level_is_listed_and_is_not_read_twice(qtbot, window: MainWindow) -> None:
    """Go to lvl_3/node_7 while lvl_3 is unlisted: its page starts at once, then the tree selects it."""
    leaf = "lvl_3/node_7"
    assert not window.tree_model.is_loaded(leaf)
    window.reveal_path(leaf)
    page = window.node_page
    assert page.shown is not None and page.shown[1].path == leaf  # asked for at once, not after the listing
    assert window.overview_stack.currentWidget() is page and window.tabs.currentIndex() == window.TAB_OVERVIEW
    qtbot.waitUntil(lambda: page.data is not None and page.data.info.path == leaf, timeout=20_000)
    loaded = page.data
    qtbot.waitUntil(lambda: window.current_item() is not None and window.current_item().path == leaf, timeout=20_000)
    qtbot.waitUntil(lambda: not window.is_busy(), timeout=20_000)
    # the tree's selection read it no second time (the level's median came on top of what was loaded)
    assert page.data is not None and page.data.items is loaded.items and page.data.crumbs is loaded.crumbs
    assert window.metadata.is_busy() is False and window.current_item().path == leaf


def test_going_to_a_node_in_a_range_expands_that_range_and_selects_it(qtbot, window: MainWindow) -> None:
    window.reveal_path("lvl_3")
    qtbot.waitUntil(lambda: window.current_item() is not None and window.current_item().path == "lvl_3",
                    timeout=20_000)
    tree, model = window.tree_panel.tree, window.tree_model
    tree.expand(window.tree_panel.view_index(model.index_for_path("lvl_3")))
    qtbot.waitUntil(lambda: model.is_loaded("lvl_3/node_7"), timeout=20_000)
    level = model.index_for_path("lvl_3")
    span = model.index(0, 0, level)
    assert model.item(span).ranged and model.rowCount(level) == 1 and not tree.isExpanded(span)
    window.reveal_path("lvl_3/node_7")
    qtbot.waitUntil(lambda: window.current_item() is not None and window.current_item().path == "lvl_3/node_7",
                    timeout=20_000)
    assert tree.isExpanded(span) and tree.currentIndex().parent() == span
    tree.setCurrentIndex(span)  # a range row stands for its level: the level's page
    qtbot.waitUntil(lambda: window.overview_stack.currentWidget() is window.overview, timeout=20_000)
    assert window.current_item().path == "lvl_3"
