"""The Search panel in the main window: its place (a tab or its own window), the Search menu
(Ctrl+Shift+F, Ctrl+G), tree marks, and opening a leaf with one row selected.

The feature is given what it works with (the tree model it marks, the plot pane it opens rows in,
a callable that selects a path, the status bar) rather than the window, so it depends on those
parts alone and the window only creates it.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QModelIndex, QObject, Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLineEdit, QMainWindow, QMenu

from ecpfs_viewer.gui.data.plot_pane import PlotPane
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.search.panel import SearchPanel
from ecpfs_viewer.gui.search.session import MARKS_LAYER, SearchSession
from ecpfs_viewer.gui.tree.item_model import HierarchyTreeModel
from ecpfs_viewer.gui.tree.tree_item import TreeItem
from ecpfs_viewer.gui.widgets.actions import window_action
from ecpfs_viewer.gui.widgets.ask_dialog import AskDialog
from ecpfs_viewer.gui.widgets.panel_places import PanelPlaces
from ecpfs_viewer.model.search import ItemLocation, UnknownItemError

#: Rows of a leaf shown around a selected row (the heatmap then selects that row).
ROW_WINDOW = 64


def _locate_job(session: SearchSession, item_id: int) -> ItemLocation | None:
    """Where an item is (reads item_ids only); None when no leaf holds it."""
    try:
        return session.reader().locate(item_id)
    except UnknownItemError:
        return None


def item_id_problem(text: str) -> str | None:
    """Why text is no item id, or None."""
    if not text:
        return "Type an item id, e.g. 42"
    try:
        int(text)
    except ValueError:
        return f"{text!r} is not an item id (a whole number)"
    return None


def row_window(row: int, window: int = ROW_WINDOW) -> tuple[int, int]:
    """[start, stop) of the rows shown around ``row``: the row sits near the middle."""
    start = max(0, row - window // 2)
    return start, start + window


class SearchFeature(QObject):
    """Owns the Search panel and its actions; reacts to the store the tree shows and to the plot.

    ``host`` holds the Search menu, ``places`` puts the panel in a tab or a window of its own;
    ``reveal`` selects a path in the tree (listing its ancestors), ``current_item`` is the row
    selected there, ``show_data`` brings the plot pane forward and ``say`` puts a note on the status
    bar.
    """

    def __init__(self, host: QMainWindow, places: PanelPlaces, *, tree_model: HierarchyTreeModel, plot: PlotPane,
                 reveal: Callable[[str], None], current_item: Callable[[], TreeItem | None],
                 show_data: Callable[[], None], say: Callable[[str, int], None]) -> None:
        super().__init__(host)
        self.host, self.tree_model, self.plot = host, tree_model, plot
        self._reveal, self._current_item, self._show_data, self._say = reveal, current_item, show_data, say
        self.session = SearchSession()
        self.panel = SearchPanel(self.session)
        self.dock = places.panel("search", "Search", self.panel, self.show_panel)  # a tab, or its own window
        self._locate_runner = BackgroundRunner(self)
        self._pending_row: tuple[str, int] | None = None  # embeddings path, row: waiting for the tree
        self._pending_select: tuple[str, int] | None = None  # embeddings path, row: waiting for the plot
        self._pending_message = ""  # shown once the row is on screen (Go to Item says where the item is)
        self._build_actions()

        self.panel.marks_changed.connect(lambda marks: tree_model.set_marks(MARKS_LAYER, marks))
        self.panel.row_requested.connect(self.show_leaf_row)
        self.panel.node_requested.connect(reveal)
        tree_model.modelReset.connect(self._on_tree_reset)  # a store shown, or closed
        tree_model.path_revealed.connect(self._on_path_revealed)  # after the tree panel's own slot
        plot.shown.connect(self._on_plot_shown)
        plot.row_selected.connect(self._on_heatmap_row)

    def _build_actions(self) -> None:
        host = self.host
        self.show_action = self._action("&Search Panel", self.show_panel, "Ctrl+Shift+F")
        self.go_to_action = self._action("&Go to Item…", self.ask_item, "Ctrl+G")
        self.search_row_action = self._action("Search With Heatmap &Row", self.search_heatmap_row)
        self.search_row_action.setEnabled(False)
        self.clear_marks_action = self._action("Clear Search &Marks", self.panel.clear)
        menu = QMenu("&Search", host)
        help_menu = next((a for a in host.menuBar().actions() if a.text() == "&Help"), None)
        if help_menu is not None:  # keep Help last
            host.menuBar().insertMenu(help_menu, menu)
        else:
            host.menuBar().addMenu(menu)
        self.menu = menu
        for action in (self.show_action, self.go_to_action, self.search_row_action, self.clear_marks_action):
            menu.addAction(action)

    def _action(self, text: str, slot: Callable[[], object], shortcut: str | None = None) -> QAction:
        return window_action(self.host, text, slot, shortcut)

    @property
    def busy(self) -> bool:
        return self.panel.is_busy() or self._locate_runner.busy

    # -- the panel ----------------------------------------------------------------------------------
    def show_panel(self) -> None:
        """Show the dock and put the cursor in the query field."""
        self.dock.show()
        self.panel.tabs.setCurrentIndex(self.panel.TAB_SEARCH)
        field = self.panel.form.item_edit if self.panel.form.kind == "item" else self.panel.form.source_combo
        field.setFocus(Qt.FocusReason.ShortcutFocusReason)
        if isinstance(field, QLineEdit):
            field.selectAll()

    def _on_tree_reset(self) -> None:
        """The tree shows another store (or none): search that one, dropping everything of the old."""
        hierarchy = self.tree_model.hierarchy
        if hierarchy is not self.session.hierarchy:
            self.panel.set_hierarchy(hierarchy)
            self._locate_runner.invalidate()
            self._pending_row = self._pending_select = None

    def _on_heatmap_row(self, row: int) -> None:
        subset = self.plot.current_subset()
        if subset is not None:
            self.panel.form.offer_row(subset.path, row)
            self.search_row_action.setEnabled(True)
            self.search_row_action.setText(f"Search With Row {row} of /{subset.path}")

    def search_heatmap_row(self) -> None:
        """Search with the heatmap row selected in the Data tab."""
        subset = self.plot.current_subset()
        row = self.plot.selected_row()
        if subset is not None and row is not None:
            self.show_panel()
            self.panel.use_row(subset.path, row)

    # -- go to item -----------------------------------------------------------------------------------
    def ask_item(self) -> None:
        """Ctrl+G: ask for an item id, then open its leaf with its row selected."""
        if self.session.hierarchy is None:
            self._say("Open an ecpfs index first", 5000)
            return
        dialog = AskDialog(self.host, "Go to Item", "Item id:", placeholder="e.g. 42", check=item_id_problem)
        dialog.submitted.connect(lambda text: self.go_to_item(int(text), dialog))
        dialog.rejected.connect(self._locate_runner.invalidate)  # cancelled while looking: no answer comes
        dialog.exec()  # open until the item is found; says in place why not
        dialog.deleteLater()

    def go_to_item(self, item_id: int, dialog: AskDialog | None = None) -> None:
        """Find an item's leaf and row (reading item_ids only) and show them; says so when absent
        (in the dialog asking, if any, and on the status bar)."""
        self._say(f"Looking for item {item_id} …", 0)
        self._locate_runner.run(_locate_job, self.session, item_id,
                                on_result=lambda location: self._on_located(item_id, location, dialog),
                                on_error=lambda message: self._not_found(message, dialog))

    def _on_located(self, item_id: int, location: ItemLocation | None, dialog: AskDialog | None) -> None:
        if location is None:
            self._not_found(f"Item {item_id} is not in this index", dialog)
            return
        if dialog is not None:
            dialog.found()
        self.show_leaf_row(location.leaf_path, location.row, location.describe())

    def _not_found(self, message: str, dialog: AskDialog | None) -> None:
        self._say(message, 10000)
        if dialog is not None:
            dialog.refuse(message)

    # -- a leaf with one row selected ---------------------------------------------------------------------
    def show_leaf_row(self, leaf_path: str, row: int, message: str = "") -> None:
        """Select the leaf's embeddings in the tree, show rows around ``row`` in the Data tab and
        select that row in the heatmap (its profile shows below); then show ``message``."""
        target = f"{leaf_path.strip('/')}/embeddings"
        self._pending_row = (target, row)
        self._pending_message = message
        self._show_data()
        self._reveal(target)

    def _on_path_revealed(self, _index: QModelIndex) -> None:
        pending, hierarchy = self._pending_row, self.session.hierarchy
        item = self._current_item()
        if pending is None or hierarchy is None or item is None or item.path != pending[0]:
            return
        self._pending_row = None
        start, stop = row_window(pending[1])
        self._pending_select = pending
        self.plot.show_selection(hierarchy, pending[0], f"{start}:{stop}, :")

    def _on_plot_shown(self) -> None:
        pending = self._pending_select
        subset = self.plot.current_subset()
        if pending is None:
            return
        self._pending_select = None
        if subset is not None and subset.path == pending[0] and subset.offsets:
            self.plot.select_row(pending[1] - subset.offsets[0])
        if self._pending_message:  # after the listings, whose cost the status bar showed meanwhile
            self._say(self._pending_message, 15000)
            self._pending_message = ""
