"""The Search panel in the main window: its dock, the Search menu (Ctrl+Shift+F, Ctrl+G), tree marks,
and opening a leaf with one row selected.

Kept out of main_window.py: the window creates one :class:`SearchFeature` and is otherwise unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDockWidget, QInputDialog, QLineEdit, QMenu

from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.search.panel import SearchPanel
from ecpfs_viewer.gui.search.session import MARKS_LAYER, SearchSession
from ecpfs_viewer.model.search import ItemLocation, UnknownItemError

if TYPE_CHECKING:
    from ecpfs_viewer.gui.window.main_window import MainWindow

#: Rows of a leaf shown around a selected row (the heatmap then selects that row).
ROW_WINDOW = 64


def _locate_job(session: SearchSession, item_id: int) -> ItemLocation | None:
    """Where an item is (reads item_ids only); None when no leaf holds it."""
    try:
        return session.reader().locate(item_id)
    except UnknownItemError:
        return None


def row_window(row: int, window: int = ROW_WINDOW) -> tuple[int, int]:
    """[start, stop) of the rows shown around ``row``: the row sits near the middle."""
    start = max(0, row - window // 2)
    return start, start + window


class SearchFeature(QObject):
    """Owns the Search dock and its actions; reacts to the window's store and plot."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.session = SearchSession()
        self.panel = SearchPanel(self.session)
        self.dock = QDockWidget("Search", window)
        self.dock.setObjectName("search_dock")  # its place is saved with the window's layout
        self.dock.setWidget(self.panel)
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.dock)
        self.dock.hide()
        self._locate_runner = BackgroundRunner(self)
        self._pending_row: tuple[str, int] | None = None  # embeddings path, row: waiting for the tree
        self._pending_select: tuple[str, int] | None = None  # embeddings path, row: waiting for the plot
        self._sized = False
        self._pending_message = ""  # shown once the row is on screen (Go to Item says where the item is)
        self._build_actions()

        self.panel.marks_changed.connect(lambda marks: window.tree_model.set_marks(MARKS_LAYER, marks))
        self.panel.row_requested.connect(self.show_leaf_row)
        self.panel.node_requested.connect(window.reveal_path)
        window.tree_model.modelReset.connect(self._on_tree_reset)  # a store shown, or closed
        window.tree_model.path_revealed.connect(self._on_path_revealed)  # after the window's own slot
        window.plot.shown.connect(self._on_plot_shown)
        window.plot.row_selected.connect(self._on_heatmap_row)

    def _build_actions(self) -> None:
        window = self.window
        self.show_action = self._action("&Search Panel", self.show_panel, "Ctrl+Shift+F")
        self.go_to_action = self._action("&Go to Item…", self.ask_item, "Ctrl+G")
        self.search_row_action = self._action("Search With Heatmap &Row", self.search_heatmap_row)
        self.search_row_action.setEnabled(False)
        self.clear_marks_action = self._action("Clear Search &Marks", self.panel.clear)
        menu = QMenu("&Search", window)
        help_menu = next((a for a in window.menuBar().actions() if a.text() == "&Help"), None)
        if help_menu is not None:  # keep Help last
            window.menuBar().insertMenu(help_menu, menu)
        else:
            window.menuBar().addMenu(menu)
        self.menu = menu
        for action in (self.show_action, self.go_to_action, self.search_row_action, self.clear_marks_action):
            menu.addAction(action)

    def _action(self, text: str, slot: Callable[[], object], shortcut: str | None = None) -> QAction:
        action = QAction(text, self.window)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        action.triggered.connect(lambda _checked=False: slot())
        self.window.addAction(action)
        return action

    @property
    def busy(self) -> bool:
        return self.panel.is_busy() or self._locate_runner.busy

    # -- the panel ----------------------------------------------------------------------------------
    def show_panel(self) -> None:
        """Show the dock and put the cursor in the query field."""
        self.dock.show()
        self.dock.raise_()
        if not self._sized:
            self._sized = True  # a useful height the first time; later the user's own
            self.window.resizeDocks([self.dock], [max(320, self.window.height() * 2 // 5)], Qt.Orientation.Vertical)
        self.panel.tabs.setCurrentIndex(self.panel.TAB_SEARCH)
        field = self.panel.form.item_edit if self.panel.form.kind == "item" else self.panel.form.source_combo
        field.setFocus(Qt.FocusReason.ShortcutFocusReason)
        if isinstance(field, QLineEdit):
            field.selectAll()

    def _on_tree_reset(self) -> None:
        """The tree shows another store (or none): search that one, dropping everything of the old."""
        hierarchy = self.window.tree_model.hierarchy
        if hierarchy is not self.session.hierarchy:
            self.panel.set_hierarchy(hierarchy)
            self._locate_runner.invalidate()
            self._pending_row = self._pending_select = None

    def _on_heatmap_row(self, row: int) -> None:
        subset = self.window.plot.current_subset()
        if subset is not None:
            self.panel.form.offer_row(subset.path, row)
            self.search_row_action.setEnabled(True)
            self.search_row_action.setText(f"Search With Row {row} of /{subset.path}")

    def search_heatmap_row(self) -> None:
        """Search with the heatmap row selected in the Data tab."""
        subset = self.window.plot.current_subset()
        row = self.window.plot.selected_row()
        if subset is not None and row is not None:
            self.show_panel()
            self.panel.use_row(subset.path, row)

    # -- go to item -----------------------------------------------------------------------------------
    def ask_item(self) -> None:
        """Ctrl+G: ask for an item id, then open its leaf with its row selected."""
        if self.window.hierarchy is None:
            self.window.statusBar().showMessage("Open an ecpfs index first", 5000)
            return
        text, ok = QInputDialog.getText(self.window, "Go to Item", "Item id:")
        if ok and text.strip():
            try:
                item_id = int(text.strip())
            except ValueError:
                self.window.statusBar().showMessage(f"{text.strip()!r} is not an item id", 8000)
                return
            self.go_to_item(item_id)

    def go_to_item(self, item_id: int) -> None:
        """Find an item's leaf and row (reading item_ids only) and show them; says so when absent."""
        self.window.statusBar().showMessage(f"Looking for item {item_id} …")
        self._locate_runner.run(_locate_job, self.session, item_id,
                                on_result=lambda location: self._on_located(item_id, location),
                                on_error=lambda message: self.window.statusBar().showMessage(message, 10000))

    def _on_located(self, item_id: int, location: ItemLocation | None) -> None:
        if location is None:
            self.window.statusBar().showMessage(f"Item {item_id} is not in this index", 10000)
            return
        self.show_leaf_row(location.leaf_path, location.row, location.describe())

    # -- a leaf with one row selected ---------------------------------------------------------------------
    def show_leaf_row(self, leaf_path: str, row: int, message: str = "") -> None:
        """Select the leaf's embeddings in the tree, show rows around ``row`` in the Data tab and
        select that row in the heatmap (its profile shows below); then show ``message``."""
        target = f"{leaf_path.strip('/')}/embeddings"
        self._pending_row = (target, row)
        self._pending_message = message
        self.window.tabs.setCurrentIndex(self.window.TAB_DATA)
        self.window.reveal_path(target)

    def _on_path_revealed(self, _index: QModelIndex) -> None:
        pending, hierarchy = self._pending_row, self.window.hierarchy
        item = self.window.current_item()
        if pending is None or hierarchy is None or item is None or item.path != pending[0]:
            return
        self._pending_row = None
        start, stop = row_window(pending[1])
        self._pending_select = pending
        self.window.plot.show_selection(hierarchy, pending[0], f"{start}:{stop}, :")

    def _on_plot_shown(self) -> None:
        pending = self._pending_select
        subset = self.window.plot.current_subset()
        if pending is None:
            return
        self._pending_select = None
        if subset is not None and subset.path == pending[0] and subset.offsets:
            self.window.plot.select_row(pending[1] - subset.offsets[0])
        if self._pending_message:  # after the listings, whose cost the status bar showed meanwhile
            self.window.statusBar().showMessage(self._pending_message, 15000)
            self._pending_message = ""
