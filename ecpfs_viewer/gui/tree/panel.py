"""The tree panel: the lazy tree view, its name filter, and rows revealed once they are listed.

Kept apart from the main window because the view, the filter proxy slipped in only while a
filter is typed, and the rows waiting for a refreshed listing (expand them again, select one
again) are one piece of state: every index the view hands out must be mapped through the same
proxy decision, and a path can only be expanded or selected after its parent has been listed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtCore import QItemSelectionModel, QModelIndex, QPoint, Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QToolButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.runtime.action_cost import Measured
from ecpfs_viewer.gui.tree.columns import TreeColumns
from ecpfs_viewer.gui.tree.filter_proxy import TreeFilterProxy, count_filter_matches
from ecpfs_viewer.gui.tree.item_model import HierarchyTreeModel
from ecpfs_viewer.gui.tree.tree_item import LoadState, TreeItem
from ecpfs_viewer.gui.widgets.icons import standard_icon


@dataclass
class PendingReveal:
    """What a refresh asked for once the subtree is listed again: rows to expand, a row to select."""

    expand: set[str] = field(default_factory=set)
    select: str | None = None
    ranges: dict[str, set[str]] = field(default_factory=dict)  # group path -> names of its ranges to expand

    def clear(self) -> None:
        self.expand.clear()
        self.select = None
        self.ranges.clear()


def _ancestors(item: TreeItem | None) -> list[str]:
    """The paths of the groups above item, root first ("" is the root)."""
    if item is None:
        return []
    parts = item.path.split("/") if item.path else []
    return ["/".join(parts[:i]) for i in range(len(parts))]


class TreePanel(QWidget):
    """The filter row above the tree; emits ``item_chosen(TreeItem)`` when a row should be shown.

    ``item_chosen`` fires when the user moves the current row (not when a filter keystroke moves or
    hides it) and when a refresh selects the same row again, so the panels show fresh data.
    """

    item_chosen = Signal(object)  # TreeItem
    refresh_requested = Signal(object)  # TreeItem: Refresh in the row's context menu

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.tree_model = HierarchyTreeModel(self)
        self.proxy = TreeFilterProxy(self)  # only between model and view while a filter is typed
        self.pending = PendingReveal()
        self.item_actions: list[QAction] = []  # offered on a row's context menu (copy its path …)
        self._filter_changing = False
        self._expanded_unfiltered: list[str] = []  # what was expanded when the filter was typed: restored after
        self.tree = QTreeView()
        self.tree.setModel(self.tree_model)
        self.tree.setUniformRowHeights(True)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._tree_menu)
        self.tree_columns = TreeColumns(self.tree, "65,536 x 64  float32")
        self.tree.selectionModel().currentChanged.connect(self._on_current_changed)
        self.tree_model.listing_finished.connect(self._on_listing_finished)
        self.tree_model.rows_shown = self._rows_shown
        self.tree_model.path_revealed.connect(self._on_path_revealed)
        self.expand_action = QAction("&Expand Loaded", self)
        self.expand_action.triggered.connect(lambda _checked=False: self.expand_loaded())
        self.collapse_action = QAction("C&ollapse All", self)
        self.collapse_action.triggered.connect(lambda _checked=False: self.tree.collapseAll())

        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText("Filter: name, =exact, glob*")
        self.filter_edit.setToolTip("node_15 matches names containing it; =node_15 or \"node_15\" only that "
                                    "name; node_1? and *ids are globs. Only listed groups are searched.")
        self.filter_status = QLabel()
        self.filter_status.setWordWrap(True)
        self.filter_status.hide()
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.textChanged.connect(self._on_filter_changed)
        self.filter_row = filter_row = QHBoxLayout()
        filter_row.setContentsMargins(0, 0, 0, 0)
        filter_row.addWidget(self.filter_edit, 1)
        for icon, tip, slot in (("SP_ArrowDown", "Expand everything loaded", self.expand_loaded),
                                ("SP_ArrowUp", "Collapse all", self.tree.collapseAll)):
            button = QToolButton()
            button.setIcon(standard_icon(icon))
            button.setToolTip(tip)
            button.clicked.connect(slot)
            filter_row.addWidget(button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(filter_row)
        layout.addWidget(self.filter_status)
        layout.addWidget(self.tree, 1)
        self.setMinimumWidth(240)

    def add_tool_actions(self, actions: list[QAction]) -> None:
        """Buttons for these actions at the start of the filter row (Back and Forward), raised
        like the expand and collapse buttons at its end (the style's icons read on any palette there)."""
        for place, action in enumerate(actions):
            button = QToolButton()
            button.setDefaultAction(action)
            self.filter_row.insertWidget(place, button)

    # -- indexes of what the view shows ---------------------------------------------------------
    def view_index(self, source: QModelIndex) -> QModelIndex:
        """A tree-model index as an index of what the view shows (the filter proxy while filtering)."""
        return self.proxy.mapFromSource(source) if self.tree.model() is self.proxy else source

    def _rows_shown(self, owner: TreeItem) -> bool:
        """Whether the rows under owner may be on screen: the top level, or owner's row expanded."""
        index = self.tree_model.index_of(owner)
        return not index.isValid() or self.tree.isExpanded(self.view_index(index))

    def _to_source(self, index: QModelIndex) -> QModelIndex:
        return self.proxy.mapToSource(index) if self.tree.model() is self.proxy else index

    def current_item(self) -> TreeItem | None:
        index = self.tree.currentIndex()
        if not index.isValid():
            return None
        item = self.tree_model.item(self._to_source(index))
        return None if item.placeholder else item

    def expanded_paths(self) -> list[str]:
        model = self.tree_model
        return [i.path for i in model.loaded_items()
                if i.state is LoadState.LISTED and self.tree.isExpanded(self.view_index(model.index_for_path(i.path)))]

    def _expanded_ranges(self, groups: list[str]) -> dict[str, set[str]]:
        """The range rows expanded under each of groups (a range has its group's path, so
        expanded_paths cannot name it), by name: a group listed again gets the same ranges."""
        model, found = self.tree_model, {}
        for path in groups:
            names = {row.name for row in model.item(model.index_for_path(path)).children
                     if row.ranged and self.tree.isExpanded(self.view_index(model.index_of(row)))}
            if names:
                found[path] = names
        return found

    # -- selecting and expanding ----------------------------------------------------------------
    def select_source_index(self, source: QModelIndex) -> None:
        index = self.view_index(source)
        if not index.isValid():
            return
        self.tree.selectionModel().setCurrentIndex(
            index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        )
        self.tree.scrollTo(index)

    def reveal_path(self, path: str) -> None:
        """Select a node, listing its ancestors first when needed (e.g. a link in the overview)."""
        self.tree_model.reveal(path)

    def show_root(self) -> None:
        """List, select and expand the root row of a store just shown."""
        root = self.tree_model.index_for_path("")
        self.tree_model.fetchMore(root)  # also when a typed filter hides the root row (the view cannot expand it)
        self.select_source_index(root)
        self.tree.expand(self.view_index(root))

    def expand_loaded(self) -> None:
        """Expand every group already listed (never lists anything new)."""
        for item in self.tree_model.loaded_items():
            if item.state is LoadState.LISTED and item.children:
                index = self.view_index(self.tree_model.index_for_path(item.path))
                if index.isValid():
                    self.tree.expand(index)

    def focus_filter(self) -> None:
        self.filter_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.filter_edit.selectAll()

    def refresh(self, item: TreeItem) -> None:
        """Re-list one subtree (it may have grown), keeping what was expanded and selected in it."""
        current = self.current_item()
        selected = current.path if current is not None else item.path
        prefix = item.path + "/" if item.path else ""
        expanded = [path for path in self.expanded_paths() if path == item.path or path.startswith(prefix)]
        self.pending.expand = set(expanded) | {item.path}
        self.pending.ranges = self._expanded_ranges(expanded)
        self.pending.select = selected if (selected == item.path or selected.startswith(prefix)) else None
        self.tree_model.refresh(self.tree_model.index_for_path(item.path))
        if self.pending.select == item.path:
            self.pending.select = None
            self.select_source_index(self.tree_model.index_for_path(item.path))
            self.item_chosen.emit(item)

    # -- reactions ------------------------------------------------------------------------------
    def _on_current_changed(self, _current: QModelIndex, _previous: QModelIndex) -> None:
        item = self.current_item()
        if item is None or self.tree_model.hierarchy is None or self._filter_changing:
            return  # a filter keystroke moved or hid the current row: the panels keep what they show
        self.item_chosen.emit(item)

    def _on_path_revealed(self, source: QModelIndex) -> None:
        """Select the node a Go to or a link asked for; a filter that hides it is cleared first."""
        if source.isValid() and self.filter_edit.text() and not self.view_index(source).isValid():
            self.filter_edit.clear()
        self.select_source_index(source)
        self._keep_parent_in_view(self.view_index(source))

    def _keep_parent_in_view(self, index: QModelIndex) -> None:
        """Scroll so the parent row shows above a row just gone to, when both fit: the user sees
        where it lies (the bare row scrolled to the top edge says nothing of its group)."""
        parent = index.parent()
        if not index.isValid() or not parent.isValid():
            return
        top = self.tree.visualRect(parent).top()
        bottom = self.tree.visualRect(index).bottom()
        if top < 0 and bottom - top < self.tree.viewport().height():
            self.tree.scrollTo(parent, QAbstractItemView.ScrollHint.PositionAtTop)

    def _on_listing_finished(self, path: str, _result: Measured) -> None:
        listed = self.tree_model.item(self.tree_model.index_for_path(path))
        names = [child.name for child in listed.children] + ([] if path else [listed.name])  # the root row too
        self.tree_columns.note_names(names, path.count("/") + 2 if path else 1)  # the depth of the children
        for wanted in sorted(self.pending.expand):
            if self.tree_model.is_loaded(wanted):
                self.pending.expand.discard(wanted)
                self.tree.expand(self.view_index(self.tree_model.index_for_path(wanted)))
        ranges = self.pending.ranges.pop(path, set())
        for row in listed.children if ranges else []:
            if row.ranged and row.name in ranges:
                self.tree.expand(self.view_index(self.tree_model.index_of(row)))
        target = self.pending.select
        if target is not None and self.tree_model.is_loaded(target):
            self.pending.select = None
            self.select_source_index(self.tree_model.index_for_path(target))
            item = self.current_item()
            if item is not None and item.path == target:
                self.item_chosen.emit(item)  # same row index as before: show it again with fresh data
        if self.filter_edit.text():
            self._filter_changing = True
            try:
                self.expand_loaded()
            finally:
                self._filter_changing = False
            self._update_filter_status()

    def _on_filter_changed(self, text: str) -> None:
        self._filter_changing = True
        try:
            self.proxy.set_filter_text(text)
            self._use_proxy(bool(self.proxy.name_filter.mode))
            if text:
                self.expand_loaded()
        finally:
            self._filter_changing = False
        self._update_filter_status()

    def _use_proxy(self, filtering: bool) -> None:
        """Put the filter proxy between model and view only while filtering: without a filter it would
        only add per-row work on every layout of a 4,000-node level."""
        if (self.tree.model() is self.proxy) == filtering:
            return
        expanded = self.expanded_paths()
        current = self.current_item()
        if filtering:
            self._expanded_unfiltered = expanded
            self.proxy.setSourceModel(self.tree_model)
            self.tree.setModel(self.proxy)
        else:
            # the filter hid rows (and with them their expansion) and expanded every match: the tree
            # comes back as it was before the filter, opened down to the row selected meanwhile
            expanded = [p for p in dict.fromkeys([*self._expanded_unfiltered, *_ancestors(current)])
                        if self.tree_model.is_loaded(p)]
            self._expanded_unfiltered = []
            self.tree.setModel(self.tree_model)
            self.proxy.setSourceModel(None)  # type: ignore[arg-type]  # detaches it; the stubs omit None
        self.tree.selectionModel().currentChanged.connect(self._on_current_changed)
        for path in expanded:
            self.tree.expand(self.view_index(self.tree_model.index_for_path(path)))
        if current is not None:
            index = self.view_index(self.tree_model.index_for_path(current.path))
            if index.isValid():
                self.tree.selectionModel().setCurrentIndex(index, QItemSelectionModel.SelectionFlag.NoUpdate)

    def clear_filter(self) -> None:
        """Another store (or none): a filter typed for the old one is dropped with its status, so the
        new tree is never shown filtered to nothing ("0 matches") as if it were empty."""
        self._expanded_unfiltered = []
        self.filter_edit.clear()
        self._update_filter_status()

    def _update_filter_status(self) -> None:
        """How many loaded rows match, and which groups were not searched (never listed)."""
        name_filter = self.proxy.name_filter
        if not name_filter.mode:
            self.filter_status.clear()
            self.filter_status.hide()
            return
        self.filter_status.setText(count_filter_matches(self.tree_model, name_filter).text(name_filter))
        self.filter_status.show()

    def _tree_menu(self, point: QPoint) -> None:
        index = self.tree.indexAt(point)
        item = self.tree_model.item(self._to_source(index)) if index.isValid() else None
        menu = QMenu(self)
        if item is not None and not item.placeholder and self.tree_model.hierarchy is not None:
            self.tree.setCurrentIndex(index)
            for action in self.item_actions:
                menu.addAction(action)
            refresh = menu.addAction(standard_icon("SP_BrowserReload"), "Refresh")
            refresh.triggered.connect(lambda _checked=False, it=item: self.refresh_requested.emit(it))
            menu.addSeparator()
        menu.addAction(self.expand_action)
        menu.addAction(self.collapse_action)
        menu.popup(self.tree.viewport().mapToGlobal(point))
        self._context_menu = menu
