"""Back and Forward through the selections (keys, mouse side buttons, the Go menu) and Go to Path
keeping the target's parent in view."""

from __future__ import annotations

from index_factory import build_clustered_index
from PySide6.QtCore import QRect, Qt, QTimer
from PySide6.QtWidgets import QApplication, QMenu
from window_driver import open_window, select, selected_path, wait_idle

from ecpfs_viewer.gui.window.go_to import GoToPathDialog
from ecpfs_viewer.gui.window.main_window import MainWindow

ALT = Qt.KeyboardModifier.AltModifier
TARGET = "lvl_2/node_30/embeddings"


def nav_enabled(win: MainWindow) -> tuple[bool, bool]:
    navigation = win.commands.navigation
    return navigation.back_action.isEnabled(), navigation.forward_action.isEnabled()


def go_menu(win: MainWindow) -> QMenu:
    return next(m for m in win.menuBar().findChildren(QMenu) if m.title() == "&Go")


def test_alt_left_and_right_walk_the_selections_and_disable_at_the_ends(qtbot, two_clusters_path):
    win = open_window(qtbot, two_clusters_path)
    assert selected_path(win) == "" and nav_enabled(win) == (False, False)
    for path in ("lvl_1", "lvl_2/node_3", "lvl_2/node_3/embeddings"):
        select(qtbot, win, path)
    assert nav_enabled(win) == (True, False)
    win.tree_panel.tree.setFocus()

    qtbot.keyClick(win.tree_panel.tree, Qt.Key.Key_Left, ALT)
    qtbot.waitUntil(lambda: selected_path(win) == "lvl_2/node_3", timeout=5000)
    assert nav_enabled(win) == (True, True)
    qtbot.keyClick(win.tree_panel.tree, Qt.Key.Key_Left, ALT)
    qtbot.keyClick(win.tree_panel.tree, Qt.Key.Key_Left, ALT)
    qtbot.waitUntil(lambda: selected_path(win) == "", timeout=5000)
    assert nav_enabled(win) == (False, True)
    qtbot.keyClick(win.tree_panel.tree, Qt.Key.Key_Left, ALT)  # at the start: nothing happens
    assert selected_path(win) == ""

    # going back selected those rows without making them new entries: forward still leads on
    qtbot.keyClick(win.tree_panel.tree, Qt.Key.Key_Right, ALT)
    qtbot.waitUntil(lambda: selected_path(win) == "lvl_1", timeout=5000)
    assert win.commands.navigation.history.entries == ("", "lvl_1", "lvl_2/node_3", "lvl_2/node_3/embeddings")
    wait_idle(qtbot, win)

    # a selection of the user's own after going back drops what lay ahead
    select(qtbot, win, "rep_item_ids")
    assert nav_enabled(win) == (True, False)
    assert win.commands.navigation.history.entries == ("", "lvl_1", "rep_item_ids")
    win.close()


def test_mouse_side_buttons_and_the_go_menu(qtbot, two_clusters_path):
    win = open_window(qtbot, two_clusters_path)
    select(qtbot, win, "lvl_1")
    select(qtbot, win, "info")
    # pressed as the window system delivers it: to the native window, at a point over the tree
    viewport = win.tree_panel.tree.viewport()
    qtbot.mouseClick(win.windowHandle(), Qt.MouseButton.BackButton,
                     pos=viewport.mapTo(win, viewport.rect().center()))
    qtbot.waitUntil(lambda: selected_path(win) == "lvl_1", timeout=5000)
    wait_idle(qtbot, win)
    qtbot.mouseClick(win.windowHandle(), Qt.MouseButton.ForwardButton,  # anywhere in the window
                     pos=win.metadata.mapTo(win, win.metadata.rect().center()))
    qtbot.waitUntil(lambda: selected_path(win) == "info", timeout=5000)
    wait_idle(qtbot, win)

    menu = go_menu(win)
    texts = [a.text() for a in menu.actions() if not a.isSeparator()]
    assert texts == ["&Back", "&Forward", "&Go to Path…"]
    back = next(a for a in menu.actions() if a.text() == "&Back")
    assert back.isEnabled() and not next(a for a in menu.actions() if a.text() == "&Forward").isEnabled()
    back.trigger()
    qtbot.waitUntil(lambda: selected_path(win) == "lvl_1", timeout=5000)
    win.close()


def test_the_history_starts_again_with_each_index(qtbot, two_clusters_path, two_clusters_copy):
    win = open_window(qtbot, two_clusters_path)
    select(qtbot, win, "lvl_1")
    select(qtbot, win, "lvl_2")
    win.open_location(str(two_clusters_copy))
    qtbot.waitUntil(lambda: win.session.current is not None and selected_path(win) == "", timeout=8000)
    wait_idle(qtbot, win)
    assert win.commands.navigation.history.entries == ("",)
    assert nav_enabled(win) == (False, False)
    win.close_store()
    assert win.commands.navigation.history.entries == () and nav_enabled(win) == (False, False)
    win.close()


def test_go_to_path_keeps_the_parent_row_in_view(qtbot, tmp_path):
    """Going up to a row above the view puts its parent above it, not the row alone at the top edge."""
    win = open_window(qtbot, build_clustered_index(tmp_path, 2000, 8), height=520)
    tree = win.tree_panel.tree
    select(qtbot, win, "lvl_2/node_60")  # the user is far down a level of 80 nodes

    def type_path() -> None:  # the user types the path into Go to Path and presses Enter
        dialog = QApplication.activeModalWidget()
        assert isinstance(dialog, GoToPathDialog)
        dialog.edit.setText(TARGET)
        qtbot.keyClick(dialog.edit, Qt.Key.Key_Return)

    QTimer.singleShot(0, type_path)
    qtbot.keyClick(win, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: selected_path(win) == TARGET, timeout=10_000)
    wait_idle(qtbot, win)
    target = win.tree_panel.view_index(win.tree_model.index_for_path(TARGET))
    shown = QRect(0, 0, tree.viewport().width(), tree.viewport().height())
    assert tree.verticalScrollBar().value() > 0  # scrolled: the level's first rows are out of view
    assert shown.contains(tree.visualRect(target))
    parent = tree.visualRect(target.parent())
    assert shown.contains(parent), "the parent row lies above the viewport"
    assert parent.top() < tree.visualRect(target).top()
    win.close()


def test_back_and_forward_restore_the_tab_the_selection_was_seen_on(qtbot, two_clusters_path):
    """Issue 37 §11: Back returns to the node and to the tab (Overview, Data, Metadata) it was on."""
    win = open_window(qtbot, two_clusters_path)
    select(qtbot, win, "lvl_2/node_3")
    assert win.tabs.currentIndex() == win.TAB_OVERVIEW
    win.tabs.setCurrentIndex(win.TAB_DATA)  # the user looks at its embeddings
    select(qtbot, win, "lvl_1")
    assert win.tabs.currentIndex() == win.TAB_OVERVIEW
    win.tabs.setCurrentIndex(win.TAB_METADATA)
    select(qtbot, win, "lvl_2/node_1")
    assert win.tabs.currentIndex() == win.TAB_OVERVIEW
    win.commands.navigation.back_action.trigger()
    qtbot.waitUntil(lambda: selected_path(win) == "lvl_1" and win.tabs.currentIndex() == win.TAB_METADATA,
                    timeout=5000)
    win.commands.navigation.back_action.trigger()
    qtbot.waitUntil(lambda: selected_path(win) == "lvl_2/node_3" and win.tabs.currentIndex() == win.TAB_DATA,
                    timeout=5000)
    win.commands.navigation.forward_action.trigger()
    qtbot.waitUntil(lambda: selected_path(win) == "lvl_1" and win.tabs.currentIndex() == win.TAB_METADATA,
                    timeout=5000)
    win.commands.navigation.forward_action.trigger()
    qtbot.waitUntil(lambda: selected_path(win) == "lvl_2/node_1" and win.tabs.currentIndex() == win.TAB_OVERVIEW,
                    timeout=5000)
    wait_idle(qtbot, win)
    win.close()


def test_go_to_path_takes_a_completion_with_one_return(qtbot, two_clusters_path):
    """Issue 37 §11: Return on a completion goes there (it took a second Return)."""
    win = open_window(qtbot, two_clusters_path)
    select(qtbot, win, "lvl_2/node_3")  # lvl_2 is listed: its nodes complete

    def answer() -> None:
        dialog = next(w for w in QApplication.topLevelWidgets() if isinstance(w, GoToPathDialog) and w.isVisible())
        dialog.edit.clear()
        qtbot.keyClicks(dialog.edit, "lvl_2/node_1")
        popup = dialog.completer.popup()
        qtbot.waitUntil(popup.isVisible, timeout=3000)
        wanted = dialog.completer.completionModel().index(0, 0).data()
        answer.wanted = wanted  # type: ignore[attr-defined]
        qtbot.keyClick(popup, Qt.Key.Key_Down)
        qtbot.keyClick(popup, Qt.Key.Key_Return)  # once

    QTimer.singleShot(0, answer)
    win.commands.go_to_action.trigger()  # runs the dialog until it closes
    assert selected_path(win) == answer.wanted  # type: ignore[attr-defined]
    assert answer.wanted.startswith("lvl_2/node_1")  # type: ignore[attr-defined]
    win.close()
