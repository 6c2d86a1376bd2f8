"""Issue 37, item 4: the main pages at real screen sizes, with the sizes the user needs asserted.

Three window sizes: 1280 x 800 at 1x, the same screen at QT_SCALE_FACTOR=1.5 (the window then has
a logical 1280/1.5 x 800/1.5 screen, and opens at 95% of it: 810 x 506 logical pixels, which is
what its layouts work in) and 1920 x 1080. The Search panel, the index map and the diagnostics are
tabs of the central area (or windows of their own), never a strip that takes the plots' height.
Screenshots of every page go to ECPFS_SHOTS when it is set.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QFormLayout, QStyle

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.gui.tree.tree_item import LoadState
from ecpfs_viewer.gui.widgets.panel_places import Placement, saved_placement
from ecpfs_viewer.gui.window.main_window import MainWindow
from ecpfs_viewer.gui.window.window_layout import FIRST_SIZE, tree_width
from ecpfs_viewer.model.build.builder import BuildParams, build_index

SIZES = {"1280x800": (1280, 800), "1280x800@1.5": (810, 506), "1920x1080": (1920, 1080)}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A three-level index of 3,000 clustered 16-D vectors: levels with enough nodes to chart."""
    tmp = tmp_path_factory.mktemp("layout")
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((12, 16)) * 4
    vectors = (centres[rng.integers(0, 12, 3000)] + rng.standard_normal((3000, 16))).astype(np.float32)
    np.save(tmp / "vectors.npy", vectors)
    build_index(tmp / "vectors.npy", tmp / "layout.zarr", BuildParams(levels=3, target_cluster_items=30))
    return tmp / "layout.zarr"


def opened(qtbot, show, index: Path, size: tuple[int, int]) -> MainWindow:
    win: MainWindow = show(create_main_window(str(index)), *size)
    idle(qtbot, win)
    return win


def idle(qtbot, win: MainWindow) -> None:
    qtbot.waitUntil(lambda: not win.is_busy(), timeout=30_000)


def shot(win: MainWindow, name: str) -> None:
    folder = os.environ.get("ECPFS_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        QApplication.processEvents()  # a tab just added is laid out on the next pass
        win.grab().save(str(Path(folder) / f"{name}.png"))


def select(qtbot, win: MainWindow, path: str) -> None:
    win.reveal_path(path)
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == path, timeout=10_000)
    idle(qtbot, win)


@pytest.mark.parametrize("name", list(SIZES))
def test_the_tree_never_elides_a_node_s_array_names(qtbot, show, index, name):
    win = opened(qtbot, show, index, SIZES[name])
    select(qtbot, win, "lvl_3/node_0/embeddings")
    tree = win.tree_panel.tree
    metrics = tree.fontMetrics()
    icon = tree.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize)
    for leaf in ("embeddings", "item_ids"):
        rect = tree.visualRect(win.tree_panel.view_index(win.tree_model.index_for_path(f"lvl_3/node_0/{leaf}")))
        assert rect.width() >= icon + metrics.horizontalAdvance(leaf) + 4, (name, leaf, rect.width())
    root = tree.visualRect(win.tree_panel.view_index(win.tree_model.index_for_path("")))
    assert root.width() >= icon + metrics.horizontalAdvance("layout.zarr") + 4
    assert win.tree_panel.width() < win.width() // 2  # the central area keeps the larger part
    shot(win, f"tree-{name}")


@pytest.mark.parametrize("name", list(SIZES))
def test_the_heatmap_keeps_its_height_with_the_search_panel_open(qtbot, show, index, name):
    """The issue's user saw the heatmap and the row plot collapse to 0 px with the Search dock open at 1.5x."""
    win = opened(qtbot, show, index, SIZES[name])
    win.search.show_panel()
    idle(qtbot, win)
    assert win.search.dock.isVisible() and win.places.placement is Placement.TABS
    assert win.tabs.currentWidget() is win.search.panel  # a tab of the central area
    shot(win, f"search-{name}")
    select(qtbot, win, "lvl_3/node_0/embeddings")
    win.tabs.setCurrentIndex(win.TAB_DATA)
    qtbot.waitUntil(lambda: win.plot.heatmap.isVisible(), timeout=10_000)
    idle(qtbot, win)
    view = win.plot.heatmap.view
    assert view.height() >= (260 if name != "1280x800@1.5" else 200), (name, view.height())
    assert win.search.dock.isVisible()  # still open, in its tab
    shot(win, f"data-{name}")


@pytest.mark.parametrize("name", ["1280x800", "1280x800@1.5"])
def test_the_recall_table_shows_a_sweep_of_eight_search_exps(qtbot, show, index, name):
    """At 1280 x 800 the recall table showed one or two rows in the Search dock."""
    win = opened(qtbot, show, index, SIZES[name])
    win.search.show_panel()
    panel = win.search.panel
    panel.tabs.setCurrentIndex(panel.TAB_RECALL)
    recall = panel.recall_view
    recall.n_spin.setValue(10)
    recall.exps_edit.setText("1, 2, 3, 4, 6, 8, 12, 16")
    with qtbot.waitSignal(recall.finished, timeout=60_000):
        qtbot.mouseClick(recall.run_button, Qt.MouseButton.LeftButton)
    idle(qtbot, win)
    table = recall.numbers_view
    assert recall.numbers_model.rowCount() == 8
    rows_shown = table.viewport().height() // table.verticalHeader().defaultSectionSize()
    wanted = 8 if name == "1280x800" else 4
    assert rows_shown >= wanted, (name, rows_shown)
    assert recall.misses_view.viewport().height() >= 3 * recall.misses_view.verticalHeader().defaultSectionSize()
    graphics = recall.graphics  # both plots whole inside their pane (side by side, the second was cut off)
    for plot in (recall.recall_plot, recall.leaves_plot):
        box = graphics.mapFromScene(plot.sceneBoundingRect()).boundingRect()
        assert graphics.viewport().rect().contains(box), (name, box, graphics.viewport().rect())
        assert box.width() >= 100 and box.height() >= 100, (name, box)
        title = plot.titleLabel.item.boundingRect().width()  # its title whole, not cut at the plot's edge
        assert title <= plot.boundingRect().width(), (name, title, plot.boundingRect().width())
    check, exps = recall.self_check, recall.exps_edit  # the sweep's row: its texts whole
    assert check.width() >= check.sizeHint().width(), (name, check.width(), check.sizeHint().width())
    assert exps.width() >= exps.fontMetrics().horizontalAdvance("1, 2, 4, 8, 16, 32") + 8, (name, exps.width())
    form = recall.form.layout()  # and the rows' names
    for row in range(form.rowCount()):
        label = form.itemAt(row, QFormLayout.ItemRole.LabelRole)
        if label is not None and label.widget() is not None and label.widget().text():
            assert label.widget().width() >= label.widget().sizeHint().width(), (name, label.widget().text())
    shot(win, f"recall-{name}")


@pytest.mark.parametrize("name", list(SIZES))
def test_the_level_page_charts_keep_their_titles_and_height_inside_the_window(qtbot, show, index, name):
    """The level page's chart title was cut; at 1.5x its charts ran below the window's edge."""
    win = opened(qtbot, show, index, SIZES[name])
    select(qtbot, win, "lvl_2")
    page = win.overview.level_page
    qtbot.waitUntil(lambda: page.histogram_view.isVisible() and not page.busy and page.view is not None,
                    timeout=10_000)
    idle(qtbot, win)
    central = win.tabs.currentWidget()
    for view in (page.histogram_view, page.profile_view):
        plot = view.getPlotItem()
        title = plot.titleLabel
        assert title.isVisible() and title.item.boundingRect().width() <= view.width() - 20, (name, view.width())
        assert view.height() >= 150, (name, view.height())
        assert plot.vb.sceneBoundingRect().top() >= title.sceneBoundingRect().bottom() - 1  # plot below its title
        bottom = view.mapTo(central, view.rect().bottomLeft()).y()
        assert bottom <= central.height(), (name, bottom, central.height())  # not cut by the window's edge
    shot(win, f"level-{name}")


@pytest.mark.parametrize("name", ["1280x800", "1280x800@1.5"])
def test_the_embedding_map_keeps_its_status_short_and_the_map_large(qtbot, show, index, name):
    """The status line after a placement (its figures) beside the progress bar, laid out as the
    Index map's was when a wrapped line took five to eleven lines of its height."""
    win = opened(qtbot, show, index, SIZES[name])
    panel = win.embedding_map.panel
    win.embedding_map.show_action.trigger()
    qtbot.waitUntil(lambda: panel.data is not None and not panel.data.placement.sample and not panel.busy
                    and panel.view.frame is not None, timeout=30_000)
    idle(qtbot, win)
    status = panel.status  # as high as its text needs at the width it has, not at a narrower one
    needed = max(status.heightForWidth(status.width()), panel.controls.cancel_button.sizeHint().height())
    assert status.text() and status.height() <= needed + 4, (name, status.height(), needed, status.width())
    assert panel.view.height() >= (300 if name == "1280x800" else 180), (name, panel.view.height())
    for button in (panel.marks_button, panel.box_button, panel.lasso_button, panel.all_button, panel.export_button,
                   panel.placement_choice, panel.colour_combo):  # every control whole: at 1.5x "Re…es"
        assert button.isVisible() and button.height() >= button.sizeHint().height() - 2, (name, button.height())
        assert button.width() >= button.sizeHint().width(), (name, button.width(), button.sizeHint().width())
        assert button.mapTo(panel, button.rect().topRight()).x() <= panel.width()
    assert panel.controls_row.wrapped or name == "1280x800"  # at 1.5x on two lines
    for label in (panel.legend, panel.hover_label):  # the side's texts whole, none over another
        assert label.height() >= label.heightForWidth(label.width()), (name, label.height())
    shot(win, f"embedding-map-{name}")


@pytest.mark.parametrize("name", ["1280x800", "1280x800@1.5"])
def test_the_index_map_has_the_central_area(qtbot, show, index, name):
    """The map docked at about 430 x 300, with "Where recall is lost" 60 px wide."""
    win = opened(qtbot, show, index, SIZES[name])
    win.index_map.show_map()
    qtbot.waitUntil(lambda: win.index_map.panel.index_map is not None, timeout=30_000)
    idle(qtbot, win)
    panel = win.index_map.panel
    assert win.tabs.currentWidget() is panel
    assert panel.view.height() >= (300 if name == "1280x800" else 200)
    assert panel.view.width() >= win.tabs.width() // 2
    # its status line wraps over the panel's width, not beside the controls (4 to 11 lines there at 1.5x)
    assert panel.status.height() <= 2 * panel.status.fontMetrics().lineSpacing() + 4
    header = panel.lost_view.horizontalHeader()  # "Where recall is lost": every header whole
    visible = [header.sectionViewportPosition(i) + header.sectionSize(i) for i in range(header.count())]
    assert max(visible) <= header.viewport().width()
    assert all(header.sectionSize(i) >= header.sectionSizeFromContents(i).width() for i in range(header.count()))
    shot(win, f"map-{name}")


def test_panels_open_in_their_own_windows_when_the_user_chooses_so(qtbot, show, index):
    win = opened(qtbot, show, index, SIZES["1280x800"])
    win.search.show_panel()
    assert win.tabs.indexOf(win.search.panel) >= 0
    win.places.windows_action.trigger()  # View ▸ Panels ▸ Open Panels in Their Own Windows
    assert saved_placement() is Placement.WINDOWS
    assert win.tabs.indexOf(win.search.panel) < 0 and win.tabs.count() == 3
    panel_window = win.search.panel.window()
    assert panel_window is not win and panel_window.isVisible() and win.search.dock.isVisible()
    qtbot.keyClick(win.search.panel.form.item_edit, Qt.Key.Key_Escape)  # Escape closes it
    qtbot.waitUntil(lambda: not panel_window.isVisible(), timeout=2000)
    assert not win.search.dock.isVisible()
    win.places.action("search").trigger()  # View ▸ Panels ▸ Search shows it again
    assert win.search.panel.window().isVisible()
    win.index_map.show_map()
    map_window = win.index_map.panel.window()
    assert map_window not in (win, win.search.panel.window()) and map_window.isVisible()
    win.close()  # the panels' windows close with the main window (they would keep the application running)
    assert not map_window.isVisible() and not win.search.panel.window().isVisible()
    win.show()
    win.places.reset_action.trigger()  # View ▸ Reset Layout: tabs again, panels closed
    assert saved_placement() is Placement.TABS and win.tabs.count() == 3
    assert not win.search.dock.isVisible() and not win.index_map.dock.isVisible()


def test_the_placement_is_remembered(qtbot, show, index, tmp_path):
    app_settings.use_settings_dir(tmp_path / "settings")
    first = opened(qtbot, show, index, SIZES["1280x800"])
    first.places.windows_action.trigger()
    first.close()
    second = opened(qtbot, show, index, SIZES["1280x800"])
    assert second.places.placement is Placement.WINDOWS and second.places.windows_action.isChecked()


def test_a_diagnostics_panel_is_a_closable_tab_and_escape_leaves_it(qtbot, show, index):
    win = opened(qtbot, show, index, SIZES["1280x800"])
    dialog = win.diagnostics.open_workload()
    assert win.tabs.currentWidget() is dialog and not dialog.isWindow()
    qtbot.keyClick(dialog.count, Qt.Key.Key_Escape)  # a dialog's Escape would leave an empty tab
    assert win.tabs.indexOf(dialog) >= 0 and dialog.isVisible()
    win.tabs.tabCloseRequested.emit(win.tabs.indexOf(dialog))  # its tab's close button
    assert win.tabs.indexOf(dialog) < 0 and win.tabs.count() == 3
    win.places.action("workload").trigger()  # View ▸ Panels ▸ Query workload
    assert win.tabs.currentWidget() is dialog


def test_reset_layout_brings_back_the_first_window_and_tree_sizes(qtbot, show, index):
    win = opened(qtbot, show, index, SIZES["1280x800"])
    assert 330 <= win.splitter.sizes()[0] <= 400  # about a quarter of the window
    win.splitter.setSizes([700, win.splitter.width() - 700])  # the user dragged the tree wide
    assert win.splitter.sizes()[0] > 600
    win.places.reset_action.trigger()
    screen = win.screen().availableGeometry()
    fitted = app_settings.fitted_size(FIRST_SIZE, screen).expandedTo(win.minimumSize())
    assert win.size() == fitted  # the first-start size, fitted to the screen
    assert 240 <= win.splitter.sizes()[0] <= tree_width(win.width())  # the tree's share again
    assert win.tree_model.item(win.tree_model.index_for_path("")).state is LoadState.LISTED
