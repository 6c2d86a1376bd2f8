"""Driving the main window as a user does, for the window tests: open one, wait, select a node."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.search.recall_view import RecallView
from ecpfs_viewer.gui.window.main_window import MainWindow


def open_window(qtbot, location: str | Path | None = None, width: int = 1280, height: int = 800) -> MainWindow:
    """A shown, active main window (shortcuts reach only the active window), its store opened."""
    win = create_main_window(str(location) if location is not None else None)
    qtbot.addWidget(win)
    win.resize(width, height)
    win.show()
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=2000)
    if location is not None:
        wait_idle(qtbot, win)
    return win


def wait_idle(qtbot, win: MainWindow, timeout: int = 8000) -> None:
    qtbot.waitUntil(lambda: not win.is_busy(), timeout=timeout)


def selected_path(win: MainWindow) -> str | None:
    item = win.current_item()
    return None if item is None else item.path


def select(qtbot, win: MainWindow, path: str) -> None:
    """Select a node as a link or Go to does (its ancestors listed on the way)."""
    win.reveal_path(path)
    qtbot.waitUntil(lambda: selected_path(win) == path, timeout=10_000)
    wait_idle(qtbot, win, timeout=10_000)


def run_recall(qtbot, win: MainWindow, queries: int, search_exps: str) -> RecallView:
    """Run a recall sweep from the Search panel's Recall tab, as a user does; its view once done."""
    win.search.show_panel()
    panel = win.search.panel
    panel.tabs.setCurrentIndex(panel.TAB_RECALL)
    recall = panel.recall_view
    recall.n_spin.setValue(queries)
    recall.exps_edit.setText(search_exps)
    with qtbot.waitSignal(recall.finished, timeout=60000):
        qtbot.mouseClick(recall.run_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, win)
    return recall


def click_map_button(qtbot, win: MainWindow) -> None:
    """Click Index map on the index page of the open index (the layout starts; nothing waited for)."""
    select(qtbot, win, "")
    win.tabs.setCurrentIndex(win.TAB_OVERVIEW)  # the root may have been selected already, with a panel's tab on top
    button = win.overview.index_page.map_button
    qtbot.waitUntil(button.isVisible, timeout=10_000)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def open_index_map(qtbot, win: MainWindow):
    """Open the Index map from the index page of the open index and wait for its layout; the panel."""
    click_map_button(qtbot, win)
    panel = win.index_map.panel
    qtbot.waitUntil(lambda: panel.index_map is not None and not panel.busy, timeout=30_000)
    assert win.index_map.dock.isVisible()
    return panel
