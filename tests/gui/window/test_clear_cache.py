"""File > Clear Cache…: the question says what the cache holds, Yes empties it, the answer says what was freed."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMenu, QMessageBox

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.model.storage.disk_cache import StoreCache, cache_usage


def _box(win, qtbot, words: str) -> QMessageBox:
    flow = win.commands.clear_cache
    qtbot.waitUntil(lambda: flow.box is not None and flow.box.isVisible() and words in flow.box.text(), timeout=5000)
    assert flow.box is not None
    return flow.box


def test_clear_cache_asks_with_the_size_then_empties_the_folder_and_says_what_it_freed(qtbot) -> None:
    StoreCache("local:/some/index", "fp").write("item_map.npz", bytes(3000))
    StoreCache("remote:http://host/idx", "fp").write("documents.pack", bytes(2000))
    win = create_main_window(None)
    qtbot.addWidget(win)
    win.show()
    file_menu = next(m for m in win.menuBar().findChildren(QMenu) if m.title() == "&File")
    assert "Clear &Cache…" in [a.text() for a in file_menu.actions()]
    win.commands.clear_cache_action.trigger()
    question = _box(win, qtbot, "Delete it?")
    assert "4.9 KiB in 2 file(s) for 2 index(es)" in question.text()
    qtbot.mouseClick(question.button(QMessageBox.StandardButton.Yes), Qt.MouseButton.LeftButton)
    answer = _box(win, qtbot, "Freed")
    assert answer.text() == "Freed 4.9 KiB in 2 file(s) for 2 index(es)."
    assert cache_usage().files == 0
    answer.close()
    win.close()


def test_cancel_keeps_the_cache_and_an_empty_cache_says_so(qtbot) -> None:
    StoreCache("local:/some/index", "fp").write("item_map.npz", bytes(100))
    win = create_main_window(None)
    qtbot.addWidget(win)
    win.show()
    win.commands.clear_cache_action.trigger()
    question = _box(win, qtbot, "Delete it?")
    qtbot.mouseClick(question.button(QMessageBox.StandardButton.Cancel), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not question.isVisible(), timeout=3000)
    assert cache_usage().files == 1
    StoreCache("local:/some/index", "other").read("x")  # another fingerprint: the entry goes
    win.commands.clear_cache_action.trigger()
    _box(win, qtbot, "The cache is empty.")
    win.close()
