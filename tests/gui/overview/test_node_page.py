"""The node page as a user meets it: select a node, read its facts, follow children and the
breadcrumb, see broken children in place, jump with Go to Path and --select, and the projection."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt, QTimer
from PySide6.QtWidgets import QApplication
from window_driver import select

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.overview.node_page import NodePage
from ecpfs_viewer.gui.overview.projection_view import ProjectionView
from ecpfs_viewer.gui.window.go_to import GoToPathDialog
from ecpfs_viewer.gui.window.main_window import MainWindow
from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.ecpfs.nodes import NodeRef
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.views.projection import ProjectionKind
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 3-level index of 3,000 Gaussian vectors (8 dimensions, about 10 items per leaf)."""
    folder = tmp_path_factory.mktemp("nodepage")
    rng = np.random.default_rng(5)
    centres = rng.normal(0, 8, size=(6, 8))
    data = (centres[rng.integers(0, 6, 3000)] + rng.normal(0, 1, size=(3000, 8))).astype(np.float32)
    np.save(folder / "data.npy", data)
    build_index(folder / "data.npy", folder / "index.zarr", BuildParams(levels=3, target_cluster_items=10))
    return folder / "index.zarr"


@pytest.fixture
def window(qtbot):
    made: list[MainWindow] = []

    def make(location: Path, select: str | None = None) -> MainWindow:
        win = create_main_window(str(location), select=select)
        qtbot.addWidget(win)
        win.resize(1280, 800)
        win.show()
        made.append(win)
        qtbot.waitUntil(lambda: win.session.hierarchy is not None, timeout=10_000)
        return win

    yield make
    for win in made:
        win.close()


def wait_page(qtbot, win: MainWindow, path: str) -> NodePage:
    page = win.node_page
    qtbot.waitUntil(lambda: page.data is not None and page.data.info.ref.path == path, timeout=10_000)
    return page


def test_selecting_a_node_shows_its_page_in_the_overview_tab(qtbot, window, two_clusters_path) -> None:
    win = window(two_clusters_path)
    select(qtbot, win, "lvl_2/node_1")
    page = wait_page(qtbot, win, "lvl_2/node_1")
    assert win.tabs.currentIndex() == win.TAB_OVERVIEW and win.overview_stack.currentWidget() is page
    assert page.crumb_text() == "index > lvl_1/node_1 > lvl_2/node_1"
    facts = page.facts_text()
    assert "leaf (holds items)" in facts and "2 rows" in facts
    assert "row 0 of lvl_1/node_1/embeddings · item id 2 (rep_item_ids[1])" in facts
    assert page.tabs.tabText(0) == "Items"
    assert page.listing_label.text().startswith("2 items, ids 2 … 3")
    model = page.listing_model
    assert [model.index(r, 1).data() for r in range(model.rowCount())] == ["2", "3"]
    qtbot.waitUntil(lambda: page.spread is not None, timeout=10_000)
    assert page.spread.count == 2 and "median" in page.spread_label.text()


def test_double_clicking_a_child_and_a_crumb_select_those_nodes(qtbot, window, two_clusters_path) -> None:
    win = window(two_clusters_path)
    select(qtbot, win, "lvl_1/node_1")
    page = wait_page(qtbot, win, "lvl_1/node_1")
    model = page.listing_model
    assert [model.index(r, 1).data() for r in range(3)] == ["lvl_2/node_1", "lvl_2/node_2", "lvl_2/node_3"]
    rect = page.listing.visualRect(model.index(1, 1))
    page.tabs.setCurrentIndex(0)
    qtbot.mouseClick(page.listing.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())  # a view only
    qtbot.mouseDClick(page.listing.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())  # takes pressed rows
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == "lvl_2/node_2",
                    timeout=10_000)
    wait_page(qtbot, win, "lvl_2/node_2")
    page.open_crumb("lvl_1/node_1")  # the breadcrumb's link, as clicked
    qtbot.waitUntil(lambda: win.current_item().path == "lvl_1/node_1", timeout=10_000)
    page.open_crumb("/")
    qtbot.waitUntil(lambda: win.current_item().path == "", timeout=10_000)
    assert win.overview_stack.currentWidget() is win.overview


def test_missing_and_broken_children_are_listed_in_place(qtbot, show, two_clusters_copy) -> None:
    shutil.rmtree(two_clusters_copy / "lvl_2/node_3")
    page: NodePage = show(NodePage(), 900, 600)
    with qtbot.waitSignal(page.loaded, timeout=10_000):
        page.show_node(Hierarchy(open_store(two_clusters_copy)), NodeRef(1, 1))
    model = page.listing_model
    assert model.index(2, 2).data() == "—"
    assert model.index(2, 4).data() == "referenced by lvl_1/node_1 row 2 but does not exist (search skips it)"
    assert model.data(model.index(2, 1), Qt.ItemDataRole.ForegroundRole) is not None  # drawn as a problem
    assert "1 missing or broken" in page.listing_label.text()


def test_a_leaf_with_unreadable_embeddings_says_so_and_lists_its_items(qtbot, window, two_clusters_copy) -> None:
    (two_clusters_copy / "lvl_2/node_1/embeddings/zarr.json").write_text("{not json")
    win = window(two_clusters_copy)
    select(qtbot, win, "lvl_2/node_1")
    page = wait_page(qtbot, win, "lvl_2/node_1")
    facts = page.facts_text()
    assert "Exists: exists; embeddings unreadable: see the findings" in facts and "Exists: no" not in facts
    assert page.tabs.tabText(0) == "Items" and page.listing_label.text().startswith("2 items, ids 2 … 3")
    model = page.listing_model
    assert [model.index(r, 1).data() for r in range(model.rowCount())] == ["2", "3"]
    [(path, message)] = page.findings.row_texts()
    assert path == "lvl_2/node_1" and message.startswith("lvl_2/node_1/embeddings/zarr.json: not valid JSON")
    assert page.spread_label.text() == "No spread: the embeddings are unreadable (see the findings)."
    select(qtbot, win, "lvl_1/node_1")  # its parent lists it as a broken child, not a missing one
    parent = wait_page(qtbot, win, "lvl_1/node_1")
    rows = [parent.listing_model.index(r, 1).data() for r in range(parent.listing_model.rowCount())]
    assert "lvl_2/node_1" in rows
    assert "does not exist" not in parent.listing_model.index(rows.index("lvl_2/node_1"), 4).data()


def test_listing_columns_fit_the_widest_child_and_item_id(qtbot, show, built) -> None:
    """As wide as Qt's own fitting would make them (which asks the model for every cell)."""
    page: NodePage = show(NodePage(), 900, 600)
    h = Hierarchy(open_store(built))
    header = page.listing.horizontalHeader()

    def widths_then_qts() -> tuple[list[int], list[int]]:
        ours = [header.sectionSize(c) for c in range(3)]
        for column in range(3):
            page.listing.resizeColumnToContents(column)
        return ours, [header.sectionSize(c) for c in range(3)]

    leaf = next(n.name for n in h.children("lvl_3") if n.name.startswith("node_"))
    for ref in (NodeRef(1, 0), NodeRef(3, int(leaf.removeprefix("node_")))):
        with qtbot.waitSignal(page.loaded, timeout=10_000):
            page.show_node(h, ref)
        assert page.listing_model.rowCount() > 0
        ours, qts = widths_then_qts()
        assert all(abs(a - b) <= 2 for a, b in zip(ours, qts, strict=True)), (ref, ours, qts)


def test_go_to_path_completes_from_listed_paths_and_selects(qtbot, window, two_clusters_path) -> None:
    win = window(two_clusters_path)
    select(qtbot, win, "lvl_2/node_3")
    dialog = GoToPathDialog(i.path for i in win.tree_model.loaded_items())
    qtbot.addWidget(dialog)
    dialog.completer.setCompletionPrefix("node_3")
    assert dialog.completer.completionCount() == 1 and dialog.completer.currentCompletion() == "lvl_2/node_3"
    opened_on: list[str] = []

    def type_path() -> None:  # the user types a path and presses Enter
        dialog = QApplication.activeModalWidget()
        assert isinstance(dialog, GoToPathDialog)
        opened_on.append(dialog.edit.text())  # it opens on the current selection
        dialog.edit.setText("/lvl_1/node_0/embeddings ")
        qtbot.keyClick(dialog.edit, Qt.Key.Key_Return)

    QTimer.singleShot(0, type_path)
    win.commands.go_to_action.trigger()
    assert opened_on == ["lvl_2/node_3"]
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == "lvl_1/node_0/embeddings",
                    timeout=10_000)
    assert win.commands.go_to_action.shortcut().toString() == "Ctrl+L"


def test_go_to_path_says_why_a_path_cannot_be_gone_to_and_stays_open(qtbot, window, two_clusters_path) -> None:
    """'../..' and a path naming no node are refused in the dialog itself (where the user is typing),
    the dialog staying open; '//lvl_1//node_1' is a path, and the dialog closes once it is selected."""
    win = window(two_clusters_path)
    seen: list[str] = []

    def type_into_dialog() -> None:
        dialog = QApplication.activeModalWidget()
        assert isinstance(dialog, GoToPathDialog)
        dialog.edit.setText("../..")
        qtbot.keyClick(dialog.edit, Qt.Key.Key_Return)
        seen.append(dialog.problem.text() if dialog.isVisible() and dialog.problem.isVisible() else "closed")
        dialog.edit.setText("lvl_2/node_9")
        qtbot.keyClick(dialog.edit, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: dialog.problem_text() == "lvl_2/node_9: no such node", timeout=10_000)
        seen.append("open" if dialog.isVisible() else "closed")
        dialog.edit.setText("//lvl_1//node_1")
        qtbot.keyClick(dialog.edit, Qt.Key.Key_Return)

    QTimer.singleShot(0, type_into_dialog)  # runs inside the dialog's own event loop
    win.commands.go_to_action.trigger()
    assert seen == ["'../..': '..' is not a node name; a path goes down from the root, e.g. lvl_1/node_2", "open"]
    assert win.current_item() is not None and win.current_item().path == "lvl_1/node_1"  # selected, then closed
    assert QApplication.activeModalWidget() is None


def test_select_option_opens_the_store_with_that_node_selected(qtbot, window, built) -> None:
    win = window(built, select="lvl_3/node_40")
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == "lvl_3/node_40",
                    timeout=15_000)
    page = wait_page(qtbot, win, "lvl_3/node_40")
    assert page.crumb_text().startswith("index > lvl_1/node_") and page.crumb_text().endswith(" > lvl_3/node_40")


def test_projection_hover_names_a_point_and_click_opens_its_node(qtbot, show, built) -> None:
    h = Hierarchy(open_store(built))
    page: NodePage = show(NodePage(), 1000, 760)
    with qtbot.waitSignal(page.loaded, timeout=10_000):
        page.show_node(h, NodeRef(2, 5))
    with qtbot.waitSignal(page.projection.shown, timeout=15_000):
        page.tabs.setCurrentWidget(page.projection)
    view: ProjectionView = page.projection
    projection = view.projection
    assert projection is not None and projection.kind is ProjectionKind.NODE_ROWS
    assert "PC1 (" in view.plot.getAxis("bottom").labelText and "% of variance" in view.plot.getAxis("left").labelText
    children = [r.ref.path for r in page.data.children.rows]
    point = 0
    target = view.plot_widget.mapFromScene(view.scene_pos_of(point))
    qtbot.mouseMove(view.plot_widget.viewport(), target)
    qtbot.waitUntil(lambda: view.hover_text() != "", timeout=5000)
    assert view.hover_text().startswith(f"node {int(projection.ids[point])} (")
    with qtbot.waitSignal(page.node_requested, timeout=5000) as opened:
        qtbot.mouseClick(view.plot_widget.viewport(), Qt.MouseButton.LeftButton, pos=target)
    assert opened.args == [f"lvl_3/node_{int(projection.ids[point])}"] and opened.args[0] in children


def test_projection_modes_members_level_and_sampling(qtbot, show, built) -> None:
    h = Hierarchy(open_store(built))
    view: ProjectionView = show(ProjectionView(), 800, 600)
    view.set_node(h, NodeRef(2, 5), leaf=False)
    with qtbot.waitSignal(view.shown, timeout=15_000):
        view.members_check.setChecked(True)
    assert view.projection.kind is ProjectionKind.NODE_MEMBERS and view.projection.marked.any()
    with qtbot.waitSignal(view.shown, timeout=15_000):
        view.mode.setCurrentIndex(1)
    level = view.projection
    assert level.kind is ProjectionKind.LEVEL and len(level.class_names) > 1
    assert view.point_path(0) == f"lvl_2/node_{int(level.ids[0])}"
    view.set_node(h, NodeRef(3, 40), leaf=True)
    with qtbot.waitSignal(view.shown, timeout=15_000):
        view.start()
    leaf = view.projection
    assert leaf.kind is ProjectionKind.LEAF and leaf.marked.sum() == 1
    assert view.point_path(int(np.flatnonzero(~leaf.marked)[0])) is None  # items are not nodes


def test_changing_the_node_cancels_the_projection_running(qtbot, show, built) -> None:
    h = Hierarchy(open_store(built))
    view: ProjectionView = show(ProjectionView(), 800, 600)
    view.set_node(h, NodeRef(1, 0), leaf=False)
    view.mode.setCurrentIndex(1)  # a whole level: the slowest
    assert view.busy
    view.set_node(h, NodeRef(2, 5), leaf=False)  # the user moved on
    assert not view.busy and view.projection is None
    with qtbot.waitSignal(view.shown, timeout=15_000):
        view.start()
    assert view.projection is not None and view.projection.title.startswith("lvl_2/node_5")


def test_hover_outside_every_point_says_nothing(qtbot, show, built) -> None:
    view: ProjectionView = show(ProjectionView(), 800, 600)
    view.set_node(Hierarchy(open_store(built)), NodeRef(2, 5), leaf=False)
    with qtbot.waitSignal(view.shown, timeout=15_000):
        view.start()
    view.hover(QPointF(-50.0, -50.0))
    assert view.hover_text() == ""
