"""A seeded monkey for the main window: random user actions drawn from the window's own actions and
widgets, over good and hostile stores built in code (tests/gui/test_monkey.py, test_soak.py).

Every action draws its random numbers before it looks at the window, so the same seed gives the
same sequence of draws whatever the timing: a failing run is replayed with its seed and length.
Dialogs the monkey opens are driven through their own widgets (a path typed into the file
dialog's name field, Return or Escape) by a timer that runs inside their event loops; nothing of
the application is patched.
"""

from __future__ import annotations

import faulthandler
import itertools
import random
import shutil
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

import numpy as np
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QTimer, QUrl
from PySide6.QtGui import QAction, QDragEnterEvent, QDropEvent, QKeySequence
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QDialog,
    QFileDialog,
    QInputDialog,
    QLineEdit,
    QMenu,
    QTabBar,
    QWidget,
)

from ecpfs_viewer.gui.window.go_to import GoToPathDialog
from ecpfs_viewer.gui.window.main_window import WINDOW_TITLE, MainWindow
from ecpfs_viewer.gui.window.session import display_label


def build_stores(folder: Path, two_clusters: Path, hostile: bool = True) -> dict[str, Path]:
    """name -> store for the monkey: good indexes (folder, zip, a built one) and, with hostile, every
    broken copy and hostile file of tests/hostile_builders.py, a missing path and an empty folder."""
    from hostile_builders import BROKEN_COPIES, OTHER_STORES
    from index_factory import build_clustered_index

    stores: dict[str, Path] = {}
    good = folder / "good" / "two_clusters.zarr"
    shutil.copytree(two_clusters, good)
    stores["two_clusters"] = good
    built = folder / "built"
    built.mkdir()
    stores["built"] = build_clustered_index(built, items=600, dim=8)
    stores["built-zip"] = Path(shutil.make_archive(str(folder / "built-zip"), "zip", stores["built"]))
    np.save(folder / "vectors.npy", np.random.default_rng(1).random((40, 4), dtype=np.float32))
    stores["vectors.npy"] = folder / "vectors.npy"  # dropped: the Build dialog opens prefilled
    if not hostile:
        return stores
    for name, breaks in BROKEN_COPIES.items():
        copy = folder / "broken" / name / "two_clusters.zarr"
        shutil.copytree(two_clusters, copy)
        breaks(copy)
        stores[name] = copy
    for name, make in OTHER_STORES.items():
        place = folder / "other" / name
        place.mkdir(parents=True)
        stores[name] = make(two_clusters, place)
    stores["missing"] = folder / "no-such-store.zarr"
    (folder / "empty.zarr").mkdir()
    stores["empty-folder"] = folder / "empty.zarr"
    return stores


# -- what the monkey types -----------------------------------------------------------------------------
_PATH_PARTS = ("lvl_1", "lvl_2", "lvl_3", "node_0", "node_1", "node_2", "node_3", "node_99", "embeddings",
               "item_ids", "node_ids", "info", "levels", "index_root", "..", ".", "", " ", "ü", "x" * 300,
               "\x00", "node_-1", "*", "node_9223372036854775808")
_ITEMS = ("5", "0", "1", "-1", "9223372036854775808", "18446744073709551616", "4294967295", "4294967296",
          "1e5", "abc", "", "  7 ", "0x10", "10" * 40, "١٢")
_TEXTS = ("0:10, :", ":", "::-1", "5", "[", "1e400", "-1:", "0:4, 0:2", "node_1", "=node_2", "*ids",
          "node_?", "", "a" * 500, "\u202e", "lvl_2/node_3", ":, 999999999999999999999", "0:1:0")
_KEYS = (Qt.Key.Key_Up, Qt.Key.Key_Down, Qt.Key.Key_Left, Qt.Key.Key_Right, Qt.Key.Key_Home, Qt.Key.Key_End,
         Qt.Key.Key_PageDown, Qt.Key.Key_PageUp, Qt.Key.Key_Return, Qt.Key.Key_Space, Qt.Key.Key_Asterisk,
         Qt.Key.Key_Minus, Qt.Key.Key_Plus, Qt.Key.Key_Tab, Qt.Key.Key_Escape, Qt.Key.Key_N, Qt.Key.Key_Delete)
#: stores never typed into Qt's own file dialog: QFileDialog (PySide6 6.11, widget-based as offscreen)
#: blocks for good when Return is pressed on a symbolic link to itself; the app gets no say in it
QT_DIALOG_HANGS = ("store-linked-to-itself",)
#: actions the monkey never takes: they end the session or start another program
_NEVER = ("&Quit", "&Documentation (README)")


def type_text(widget: QWidget, text: str) -> None:
    """Type text as keys; what QTest cannot send as keys (non-ASCII, control characters) arrives as
    an input method would put it into a line edit (elsewhere it is left out)."""
    for printable, chars in itertools.groupby(text, key=lambda char: " " <= char <= "~"):
        chunk = "".join(chars)
        if printable:
            QTest.keyClicks(widget, chunk)
        elif isinstance(widget, QLineEdit):
            widget.insert(chunk)


def stale_labels(window: MainWindow) -> list[str]:
    """Labels of an idle window that do not match its state: each a sentence saying which."""
    problems = []
    session, panel = window.session, window.search.panel
    opened = session.current
    if opened is None and not session.busy and window.windowTitle() != WINDOW_TITLE:
        problems.append(f"nothing is open but the title is {window.windowTitle()!r}")
    if opened is not None and not window.windowTitle().startswith(display_label(opened.location)):
        problems.append(f"{opened.location} is open but the title is {window.windowTitle()!r}")
    tree = window.tree_panel
    if not tree.filter_edit.text() and (tree.filter_status.isVisibleTo(tree) or tree.tree.model() is tree.proxy):
        problems.append(f"no filter typed, but the tree is filtered ({tree.filter_status.text()!r})")
    if panel.session.hierarchy is not session.hierarchy:
        problems.append("the Search panel searches another store than the one open")
    recall = panel.recall_view
    if recall.outcome is None and "shown of" in recall.misses_label.text():
        problems.append(f"no recall sweep shown, but {recall.misses_label.text()!r}")
    if panel.exploration is None and panel.misses_label.text().startswith("True neighbours missed: "):
        problems.append(f"no search shown, but {panel.misses_label.text()!r}")
    if panel.form.compare_check.isChecked() and "tick" in panel.misses_label.text():
        problems.append(f"'Compare with exact search' is ticked, but {panel.misses_label.text()!r}")
    if opened is None and window.tree_model.hierarchy is not None:
        problems.append("nothing is open but the tree shows a store")
    return problems


@dataclass
class DialogPlan:
    """What to do with the next modal dialog: the text for its field (by kind) and accept or not."""

    path: str = ""
    item: str = ""
    file: str = ""
    url: str = ""
    accept: bool = False


@dataclass
class MonkeyRun:
    """What one run saw: the actions taken and every uncaught exception, with the action it followed."""

    seed: int
    actions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def replay_hint(self, count: int, tail: int = 40) -> str:
        shown = "\n".join(self.actions[-tail:])
        return (f"monkey seed {self.seed}, {len(self.actions)} of {count} actions taken; replay with\n"
                f"  ECPFS_MONKEY_SEED={self.seed} ECPFS_MONKEY_ACTIONS={len(self.actions)} "
                f"pytest tests/gui/test_monkey.py\nlast actions:\n{shown}")


class Monkey:
    """Takes seeded random actions on a MainWindow; dialogs it opens are closed by its timer."""

    def __init__(self, qtbot, window: MainWindow, stores: dict[str, Path], scratch: Path, seed: int,
                 http_url: str | None = None) -> None:
        self.qtbot, self.window, self.scratch = qtbot, window, scratch
        self.stores = stores
        self.locations = [str(path) for path in stores.values()] + ([http_url] if http_url else [])
        self.http_url = http_url
        self._dialog_hangs = {str(stores[name]) for name in QT_DIALOG_HANGS if name in stores}
        self.rng = random.Random(seed)
        self.trace: TextIO | None = None
        self.run = MonkeyRun(seed)
        self._plan = DialogPlan()
        self._modal: tuple[int, int] = (0, 0)  # id of the modal being tended, ticks seen
        self._acting = False  # an action's call is running (a menu open now blocks it)
        self._timer = QTimer()
        self._timer.setInterval(5)
        self._timer.timeout.connect(self._tend_dialogs)
        self._actions: list[tuple[int, Callable[[], str]]] = [
            (8, self.menu_action), (8, self.shortcut), (14, self.click_tree), (8, self.tree_key),
            (5, self.click_tab), (5, self.drop), (4, self.open_store), (4, self.go_to_path),
            (4, self.go_to_item), (6, self.type_into_field), (6, self.press_button), (3, self.choose_in_combo),
            (4, self.click_anywhere), (3, self.filter_tree), (3, self.settle), (2, self.close_other_windows),
        ]
        self._weights = [weight for weight, _ in self._actions]

    # -- running -----------------------------------------------------------------------------------------
    @contextmanager
    def watching(self) -> Iterator[MonkeyRun]:
        """Record uncaught exceptions (GUI thread and other threads) and tend dialogs meanwhile."""
        old_hook, old_thread_hook = sys.excepthook, threading.excepthook

        def on_exception(kind: type[BaseException], value: BaseException, tb: object) -> None:
            where = self.run.actions[-1] if self.run.actions else "before the first action"
            self.run.errors.append(f"after {where}:\n{''.join(traceback.format_exception(kind, value, tb))}")

        def on_thread_exception(args: threading.ExceptHookArgs) -> None:
            assert args.exc_value is not None
            on_exception(args.exc_type, args.exc_value, args.exc_traceback)

        sys.excepthook, threading.excepthook = on_exception, on_thread_exception  # type: ignore[assignment]
        self._timer.start()
        try:
            yield self.run
        finally:
            self._timer.stop()
            sys.excepthook, threading.excepthook = old_hook, old_thread_hook

    def step(self, number: int, settle: bool = False) -> None:
        """One random action, then the events it caused (and, with settle, until the window is idle)."""
        action = self.rng.choices([fn for _, fn in self._actions], self._weights)[0]
        self._close_popups()
        at = len(self.run.actions)
        self.run.actions.append(f"{number}: {action.__name__} (pending)")  # what an exception came after
        if self.trace is not None:  # each action as it is taken: a hang's last action is on file
            print(self.run.actions[at], file=self.trace, flush=True)
        self._acting = True
        try:
            self.run.actions[at] = f"{number}: {action.__name__} {action()}"
        finally:
            self._acting = False
        QApplication.processEvents()
        if settle:
            self.settle()

    def settle(self, timeout_ms: int = 60_000) -> str:
        """Wait until nothing the window started runs (a window that never settles is a hang), then
        check that no label it can see describes another state (issue 37: stale texts)."""
        try:
            self.qtbot.waitUntil(lambda: not self.window.is_busy(), timeout=timeout_ms)
        except Exception:  # name what still runs, and where every thread is, for the report
            w = self.window
            parts = {"session": w.session.busy, "tree": w.tree_model.is_busy(), "metadata": w.metadata.is_busy(),
                     "plot": w.plot.busy, "node page": w.node_page.busy, "search": w.search.busy,
                     "diagnostics": w.diagnostics.busy, "index map": w.index_map.busy}
            faulthandler.dump_traceback(all_threads=True)
            raise AssertionError(f"never settled; still busy: {[k for k, v in parts.items() if v]}") from None
        QApplication.processEvents()
        where = self.run.actions[-1] if self.run.actions else "before the first action"
        self.run.errors.extend(f"after {where}: stale: {problem}" for problem in stale_labels(self.window))
        return "until idle"

    # -- dialogs -----------------------------------------------------------------------------------------
    def _plan_dialog(self) -> DialogPlan:
        """Draw what the next dialog gets (always the same draws, whichever dialog it is)."""
        rng = self.rng
        local = [str(path) for name, path in self.stores.items() if name not in QT_DIALOG_HANGS]
        files = [*local, str(self.scratch / f"out-{rng.randrange(100)}.{rng.choice(['npy', 'csv', 'png', 'zarr'])}")]
        url = rng.choice([self.http_url or "http://127.0.0.1:9/", "http://127.0.0.1:9/none.zarr", "ftp://x",
                          f"{self.http_url or 'http://127.0.0.1:9'}/two_clusters.zarr", "s3://"])
        self._plan = DialogPlan(path=self.random_path(), item=rng.choice(_ITEMS), file=rng.choice(files), url=url,
                                accept=rng.random() < 0.7)
        return self._plan

    def _tend_dialogs(self) -> None:
        """Runs every few ms, also inside a dialog's own event loop: fill in the modal dialog, then
        press Return (accept) or Escape; a dialog still open after that is rejected."""
        modal = QApplication.activeModalWidget()
        if modal is None:
            # a menu a click opened runs its own loop too (a button's menu: QPushButton.setMenu), and
            # no dialog is modal meanwhile: close it once it has stayed a few ticks, or that click
            # never returns. A menu left open after an action is _close_popups' to choose from.
            popup = QApplication.activePopupWidget() if self._acting else None
            ticks = self._modal[1] + 1 if popup is not None and self._modal[0] == id(popup) else 1
            self._modal = (id(popup), ticks) if popup is not None else (0, 0)
            if popup is not None and ticks > 4:
                popup.close()
            return
        key, ticks = self._modal
        self._modal = (id(modal), ticks + 1 if key == id(modal) else 1)
        if self._modal[1] == 2:
            plan, self._plan = self._plan, DialogPlan()
            typed = self._fill(modal, plan)
            pressed = "Return" if plan.accept else "Escape"
            note = f"   in {type(modal).__name__} {modal.windowTitle()!r}: {typed!r}, {pressed}"
            self.run.actions.append(note)
            if self.trace is not None:
                print(note, file=self.trace, flush=True)
            key = Qt.Key.Key_Return if plan.accept else Qt.Key.Key_Escape
            # pressed after this handler returns: a dialog the key opens (a warning of the file dialog)
            # runs its own loop, and Qt never fires a timer again while its handler is still running
            QTimer.singleShot(0, lambda: self._press(modal, key))
        elif self._modal[1] > 4 and isinstance(modal, QDialog):
            modal.reject()

    def _press(self, modal: QWidget, key: Qt.Key) -> None:
        if QApplication.activeModalWidget() is modal:
            QTest.keyClick(self._focus_in(modal), key)

    def _fill(self, modal: QWidget, plan: DialogPlan) -> str | None:
        """Type the plan's text for this kind of dialog into its first field; what was typed."""
        if isinstance(modal, QFileDialog):
            text = plan.file
        elif isinstance(modal, QInputDialog):
            text = plan.item
        elif isinstance(modal, GoToPathDialog):
            text = plan.path
        else:
            text = plan.url
        edits = [edit for edit in modal.findChildren(QLineEdit) if edit.isVisible() and edit.isEnabled()]
        if not edits:
            return None
        edits[0].setText(text)
        edits[0].setFocus()
        return text

    @staticmethod
    def _focus_in(modal: QWidget) -> QWidget:
        focus = QApplication.focusWidget()
        return focus if focus is not None and modal.isAncestorOf(focus) else modal

    def _close_popups(self) -> None:
        """A context menu left open by the last action: choose one of its entries or close it."""
        pick = self.rng.random()
        popup = QApplication.activePopupWidget()
        if isinstance(popup, QMenu):
            actions = [a for a in popup.actions() if a.isEnabled() and not a.isSeparator()]
            popup.close()
            if actions and pick < 0.5:
                actions[int(pick * 2 * len(actions))].trigger()
        elif popup is not None:
            popup.close()

    # -- random text -------------------------------------------------------------------------------------
    def random_path(self) -> str:
        rng = self.rng
        parts = [rng.choice(_PATH_PARTS) for _ in range(rng.randrange(0, 5))]
        return rng.choice(["", "/", "//"]) + rng.choice(["/", "//"]).join(parts) + rng.choice(["", "/", " "])

    def random_text(self) -> str:
        return self.rng.choice([*_TEXTS, *_ITEMS, self.random_path()])

    # -- the actions (each draws its random numbers first) -------------------------------------------------
    def _window_actions(self) -> list[QAction]:
        # every menu below the menu bar (submenus are children of their menus); QAction.menu() is
        # not used: before PySide6 6.11.2 the wrapper it returns deletes the menu when collected
        menus = self.window.menuBar().findChildren(QMenu)
        submenus = {id(menu.menuAction()) for menu in menus}
        return [action for menu in menus for action in menu.actions()
                if id(action) not in submenus and not action.isSeparator() and action.isEnabled()
                and action.text() not in _NEVER]

    def menu_action(self) -> str:
        pick = self.rng.random()
        self._plan_dialog()
        actions = self._window_actions()
        action = actions[int(pick * len(actions))]
        text = action.text()  # the action may be gone afterwards (the recent list is rebuilt when a store opens)
        action.trigger()
        return f"menu {text!r}"

    def shortcut(self) -> str:
        pick = self.rng.random()
        self._plan_dialog()
        keys = sorted({a.shortcut().toString() for a in self.window.actions()
                       if not a.shortcut().isEmpty() and a.text() not in _NEVER})
        sequence = QKeySequence(keys[int(pick * len(keys))])
        combo = sequence[0]
        target = QApplication.focusWidget() or self.window
        if not self.window.isAncestorOf(target) and target is not self.window:
            target = self.window
        QTest.keyClick(target, combo.key(), combo.keyboardModifiers())
        return f"keys {sequence.toString()}"

    def click_tree(self) -> str:
        """A click on one of the rows shown (its name, or its expand arrow), a double or a right click."""
        pick, kind = self.rng.random(), self.rng.choice(["left", "left", "arrow", "double", "right"])
        tree = self.window.tree_panel.tree
        viewport = tree.viewport()
        if not viewport.isVisible():
            return "tree not shown"
        rows = []
        index = tree.indexAt(QPoint(4, 4))
        while index.isValid() and tree.visualRect(index).top() < viewport.height() and len(rows) < 200:
            rows.append(index)
            index = tree.indexBelow(index)
        if not rows:
            return "no tree row shown"
        index = rows[int(pick * len(rows))]
        rect = tree.visualRect(index)
        point = QPoint(max(1, rect.left() - tree.indentation() // 2), rect.center().y()) if kind == "arrow" \
            else QPoint(rect.left() + 8, rect.center().y())
        name = index.data()
        if kind == "double":
            QTest.mouseDClick(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, point)
        elif kind == "right":
            QTest.mouseClick(viewport, Qt.MouseButton.RightButton, Qt.KeyboardModifier.NoModifier, point)
            tree.customContextMenuRequested.emit(point)  # offscreen sends no context-menu event
        else:
            QTest.mouseClick(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, point)
        return f"{kind} click on tree row {name!r}"

    def tree_key(self) -> str:
        key = self.rng.choice(_KEYS)
        if not self.window.tree_panel.tree.isVisible():
            return "tree not shown"
        QTest.keyClick(self.window.tree_panel.tree, key)
        return f"key {QKeySequence(key).toString()!r} on the tree"

    def click_tab(self) -> str:
        pick = self.rng.random()
        bars = [bar for bar in self.window.findChildren(QTabBar) if bar.isVisible() and bar.count()]
        if not bars:
            return "no tab bar shown"
        bar = bars[int(pick * len(bars))]
        tab = int(pick * len(bars) * bar.count()) % bar.count()
        QTest.mouseClick(bar, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, bar.tabRect(tab).center())
        return f"tab {bar.tabText(tab)!r}"

    def drop(self) -> str:
        kind, location, text = self.rng.choice(["url", "text", "garbage"]), self.rng.choice(self.locations), \
            self.random_text()
        mime = QMimeData()
        if kind == "url":
            mime.setUrls([QUrl.fromLocalFile(location) if "://" not in location else QUrl(location)])
        else:
            mime.setText(f"{location}\n" if kind == "text" else text)
        center = self.window.rect().center()
        enter = QDragEnterEvent(center, Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                                Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(self.window, enter)
        if enter.isAccepted():
            QApplication.sendEvent(self.window, QDropEvent(QPointF(center), Qt.DropAction.CopyAction, mime,
                                                           Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier))
        return f"drop {kind} {location if kind != 'garbage' else text!r}"

    def open_store(self) -> str:
        """File > Open Index Folder / Open Zip: the store's path typed into the file dialog."""
        location, zipped = self.rng.choice(self.locations), self.rng.random() < 0.3
        plan = self._plan_dialog()
        if location in self._dialog_hangs:
            return f"not typed into the file dialog: {location} (Qt's dialog hangs on it)"
        plan.file, plan.accept = location, True
        (self.window.commands.open_zip_action if zipped else self.window.commands.open_folder_action).trigger()
        return f"open {'zip' if zipped else 'folder'} {location}"

    def go_to_path(self) -> str:
        plan = self._plan_dialog()
        self.window.commands.go_to_action.trigger()
        return f"go to path {plan.path!r} ({'Return' if plan.accept else 'Escape'})"

    def go_to_item(self) -> str:
        plan = self._plan_dialog()
        self.window.search.go_to_action.trigger()
        return f"go to item {plan.item!r} ({'Return' if plan.accept else 'Escape'})"

    def _shown(self, kind: type[QWidget]) -> list[QWidget]:
        return [w for w in self.window.findChildren(kind) if w.isVisible() and w.isEnabled()]

    def type_into_field(self) -> str:
        pick, text, enter = self.rng.random(), self.random_text(), self.rng.random() < 0.7
        self._plan_dialog()
        fields = [f for f in self._shown(QLineEdit) if not f.isReadOnly()] + self._shown(QAbstractSpinBox)
        if not fields:
            return "no field shown"
        widget = fields[int(pick * len(fields))]
        widget.setFocus()
        if isinstance(widget, QLineEdit):
            widget.selectAll()
        type_text(widget, text[:40])
        if enter:
            QTest.keyClick(widget, Qt.Key.Key_Return)
        return f"type {text[:40]!r} into {type(widget).__name__} {widget.objectName() or widget.toolTip()[:30]!r}"

    def press_button(self) -> str:
        pick = self.rng.random()
        self._plan_dialog()
        buttons = self._shown(QAbstractButton)
        if not buttons:
            return "no button shown"
        button = buttons[int(pick * len(buttons))]
        name = button.text() or button.toolTip()[:30]
        QTest.mouseClick(button, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, button.rect().center())
        return f"press {type(button).__name__} {name!r}"

    def choose_in_combo(self) -> str:
        pick, choice = self.rng.random(), self.rng.random()
        combos = self._shown(QComboBox)
        if not combos:
            return "no combo box shown"
        combo = combos[int(pick * len(combos))]
        if combo.count():
            combo.setCurrentIndex(int(choice * combo.count()))
        return f"choose {combo.currentText()!r} in a combo box"

    def click_anywhere(self) -> str:
        x, y, right = self.rng.random(), self.rng.random(), self.rng.random() < 0.2
        self._plan_dialog()
        point = QPoint(int(x * self.window.width()), int(y * self.window.height()))
        target = self.window.childAt(point) or self.window
        local = target.mapFrom(self.window, point) if target is not self.window else point
        button = Qt.MouseButton.RightButton if right else Qt.MouseButton.LeftButton
        QTest.mouseClick(target, button, Qt.KeyboardModifier.NoModifier, local)
        return f"{'right ' if right else ''}click at {point.x()},{point.y()} on {type(target).__name__}"

    def filter_tree(self) -> str:
        text = self.rng.choice([*_TEXTS[8:13], ""])
        edit = self.window.tree_panel.filter_edit
        if not edit.isVisible():
            return "filter not shown"
        edit.setFocus()
        edit.selectAll()
        if text:
            type_text(edit, text)
        else:
            edit.clear()
        return f"filter {text!r}"

    def close_other_windows(self) -> str:
        closed = [w for w in QApplication.topLevelWidgets()
                  if w.isVisible() and w is not self.window and not isinstance(w, QMenu)]
        for widget in closed:
            widget.close()
        return f"close {len(closed)} other windows"
