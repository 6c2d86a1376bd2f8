"""The store's hierarchy as a lazy Qt item model: a group is listed when it is first expanded.

Listing and metadata parsing run in the background (:class:`BackgroundRunner`); while a group is
listed it shows a "Loading…" row, and all its children arrive in one ``beginInsertRows`` so a
level of thousands of nodes opens at once. The second column (array shape and dtype, rows of an
ecpfs node) is filled in batches afterwards. Every result carries the item's version: a result
for an item that was refreshed or closed since is dropped.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from PySide6.QtCore import (
    QAbstractItemModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QApplication

from ecpfs_viewer.gui.runtime.action_cost import Measured, measured
from ecpfs_viewer.gui.runtime.collector import CollectionHold, keep_long_lived
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.tree.marks import RowMark, TreeMarks
from ecpfs_viewer.gui.tree.ranges import LARGE_GROUP, in_ranges, range_tooltip
from ecpfs_viewer.gui.tree.tree_item import LoadState, TreeItem
from ecpfs_viewer.gui.widgets.icons import kind_icon
from ecpfs_viewer.model.ecpfs import forget_level_stats
from ecpfs_viewer.model.ecpfs.paths import array_role
from ecpfs_viewer.model.storage.opening import join_key
from ecpfs_viewer.model.views.tree_rows import NodeSummary, needs_summary, summarize_nodes
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import Node, NodeKind, base_name
from ecpfs_viewer.model.zarrtree.paths import NodePathError, parse_node_path

PATH_ROLE = Qt.ItemDataRole.UserRole + 1
KIND_ROLE = Qt.ItemDataRole.UserRole + 2
_Index = QModelIndex | QPersistentModelIndex
# QTreeView calls index / hasChildren / flags (twice) for every row of an expanded group on each
# full relayout: each is a C++ -> Python call that must take the GIL, so a 4,000-node level costs
# ~16,000 of them. flags() is therefore not overridden (Qt's own default, enabled | selectable, is
# what a row needs; a placeholder row is greyed and selects nothing), which halves a relayout, and
# the model avoids relayouts: rows are never removed when a listing arrives (see _on_listed).
_DISPLAY = Qt.ItemDataRole.DisplayRole
_DECORATION = Qt.ItemDataRole.DecorationRole
_TOOLTIP = Qt.ItemDataRole.ToolTipRole
_FOREGROUND = Qt.ItemDataRole.ForegroundRole
_BACKGROUND = Qt.ItemDataRole.BackgroundRole
_DETAIL_ROLES = [Qt.ItemDataRole.DisplayRole]
_ANSWERED_ROLES = frozenset({_DISPLAY, _DECORATION, _TOOLTIP, _FOREGROUND, _BACKGROUND, PATH_ROLE, KIND_ROLE})
LARGE_LISTING = 1000  # rows from which a listing is frozen out of garbage collection once linked in


def list_children(hierarchy: Hierarchy, path: str) -> tuple[Node, list[Node]]:
    """The node itself (re-read after a refresh) and its children, for the listing worker."""
    return hierarchy.node(path), hierarchy.children(path)


class Listing:
    """What the listing worker hands back: the rows are built off the GUI thread (4,000 TreeItems
    take tens of milliseconds), so the GUI thread only links them in."""

    __slots__ = ("__weakref__", "by_path", "hold", "node", "rows", "wanted")

    def __init__(self, hierarchy: Hierarchy, owner: TreeItem, path: str, large: int = LARGE_GROUP) -> None:
        # the rows are frozen once linked in: no pass need walk them before (the hold is ended then,
        # by HierarchyTreeModel._on_listed, or when a listing dropped unlinked is freed)
        self.hold = CollectionHold()
        weakref.finalize(self, self.hold.end)
        try:
            self.node, children = list_children(hierarchy, path)
            rows = [TreeItem(child.path, base_name(child.path), child.kind, owner, row, error=child.error)
                    for row, child in enumerate(children)]
            self.by_path = {row.path: row for row in rows}
            self.rows = in_ranges(owner, rows, large)  # the rows under owner: its children, or ranges of them
            self.wanted = [child.path for child in children if needs_summary(child)]
        except BaseException:
            self.hold.end()
            raise
        self.hold.renew()


def detail_text(summary: NodeSummary) -> str:
    """The second column: "8 x 2  float32" for arrays, "4 rows" for ecpfs nodes."""
    if summary.error:
        return "unreadable metadata"
    if summary.kind is NodeKind.ARRAY:
        return f"{summary.shape}  {summary.dtype}"
    if summary.rows is not None:
        return f"{summary.rows:,} row" + ("" if summary.rows == 1 else "s")
    return ""


class HierarchyTreeModel(QAbstractItemModel):
    """A lazy two-column model (name, details) over a :class:`Hierarchy`."""

    listing_finished = Signal(str, object)  # path, Measured (value: number of children)
    listing_failed = Signal(str, str)  # path, message
    path_revealed = Signal(QModelIndex)  # answer to reveal(path)

    HEADERS = ("Name", "Shape / rows")

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._hierarchy: Hierarchy | None = None
        self._root = TreeItem("", "", None, None)  # invisible root; its children are top-level rows
        self._by_path: dict[str, TreeItem] = {}
        self._runner = BackgroundRunner(self)
        self._describes_due = 0  # descriptions started on the next event-loop turn (see _on_listed)
        self._generation = 0
        self._reveal: str | None = None
        self._marks = TreeMarks()
        self.large_group = LARGE_GROUP  # children from which a group shows them in ranges (ranges.py)
        #: whether the rows under an item may be on screen (its row is expanded in the view); the
        #: tree panel answers. Details that arrive for rows under a collapsed row need no
        #: dataChanged: each one repaints the view, a thousand calls into Python that each wait
        #: for the interpreter while workers run; the view asks for the rows when it shows them.
        self.rows_shown: Callable[[TreeItem], bool] = lambda _owner: True

    # -- marks ----------------------------------------------------------------------------------
    def set_marks(self, layer: str, marks: Mapping[str, RowMark]) -> None:
        """Replace one layer of row marks (e.g. 'validation', 'search'); rows not listed yet show
        their marks when they appear."""
        for path in self._marks.set_layer(layer, marks):
            index = self.index_for_path(path)
            if index.isValid():
                self.dataChanged.emit(index, index.siblingAtColumn(1), [_DECORATION, _TOOLTIP, _BACKGROUND])

    def marks_at(self, path: str) -> list[RowMark]:
        """The marks a row shows, strongest first."""
        return self._marks.at(path)

    # -- what the model shows -------------------------------------------------------------------
    @property
    def hierarchy(self) -> Hierarchy | None:
        return self._hierarchy

    def set_hierarchy(self, hierarchy: Hierarchy | None, label: str = "") -> None:
        """Show a store: one top-level row for its root (whose node the opener already probed)."""
        self._reset()
        if hierarchy is None:
            self.endResetModel()
            return
        self._hierarchy = hierarchy
        root_node = hierarchy.root()
        item = TreeItem("", label or "/", root_node.kind, self._root, error=root_node.error)
        self._root.children = [item]
        self._by_path[""] = item
        self.endResetModel()

    def show_placeholder(self, text: str) -> None:
        """A single greyed row, e.g. "Opening …", while a store opens in the background."""
        self._reset()
        self._root.children = [TreeItem("", text, None, self._root, placeholder=True)]
        self.endResetModel()

    def show_failure(self, label: str, message: str) -> None:
        """A single error row for a store that could not be opened."""
        self._reset()
        self._root.children = [TreeItem("", label, NodeKind.ERROR, self._root, error=message)]
        self.endResetModel()

    def clear(self) -> None:
        self.set_hierarchy(None)

    def _reset(self) -> None:
        self.beginResetModel()
        self._generation += 1
        self._runner.invalidate()
        self._hierarchy = None
        self._root.children = []
        self._by_path = {}
        self._reveal = None
        self._marks.clear()  # marks belong to the store they were made for

    # -- lookups ------------------------------------------------------------------------------
    def item(self, index: _Index) -> TreeItem:
        return index.internalPointer() if index.isValid() else self._root

    def index_of(self, item: TreeItem, column: int = 0) -> QModelIndex:
        """The index of a row object (a range row has its group's path: index_for_path finds the group)."""
        return QModelIndex() if item is self._root else self.createIndex(item.row, column, item)

    def index_for_path(self, path: str, column: int = 0) -> QModelIndex:
        """The index of a loaded node (invalid when it has not been listed yet)."""
        item = self._by_path.get(path.strip("/"))
        return QModelIndex() if item is None else self.createIndex(item.row, column, item)

    def is_loaded(self, path: str) -> bool:
        return path.strip("/") in self._by_path

    def loaded_items(self) -> Iterator[TreeItem]:
        """Every item already in the model, depth first (never triggers a listing)."""
        stack = list(reversed(self._root.children))
        while stack:
            item = stack.pop()
            yield item
            stack.extend(reversed(item.children))

    def is_busy(self) -> bool:
        """A listing or a description running, or a description due on the next event-loop turn."""
        return self._runner.busy or self._describes_due > 0

    # -- Qt model interface -------------------------------------------------------------------
    # index / parent / hasChildren run once per row on every layout and paint: one binding call each
    # (an invalid index's internalPointer() is None), no isValid() round trip.
    def index(self, row: int, column: int, parent: _Index = QModelIndex()) -> QModelIndex:
        children = (parent.internalPointer() or self._root).children
        if 0 <= row < len(children) and 0 <= column < 2:
            return self.createIndex(row, column, children[row])
        return QModelIndex()

    def parent(self, index: _Index = QModelIndex()) -> QModelIndex:  # type: ignore[override]
        item = index.internalPointer()
        owner = None if item is None else item.parent
        if owner is None or owner is self._root:
            return QModelIndex()
        return self.createIndex(owner.row, 0, owner)

    def rowCount(self, parent: _Index = QModelIndex()) -> int:
        item = parent.internalPointer()
        if item is None:
            return len(self._root.children)
        return len(item.children) if parent.column() == 0 else 0

    def columnCount(self, parent: _Index = QModelIndex()) -> int:
        return len(self.HEADERS)

    def hasChildren(self, parent: _Index = QModelIndex()) -> bool:
        item = parent.internalPointer()
        if item is None:
            return bool(self._root.children)
        if item.children:
            return True
        return item.is_container and item.state is LoadState.UNLISTED

    def canFetchMore(self, parent: _Index) -> bool:
        item = self.item(parent)
        return (item is not self._root and item.is_container and item.state is LoadState.UNLISTED
                and self._hierarchy is not None)

    def fetchMore(self, parent: _Index) -> None:
        if not self.canFetchMore(parent):
            return
        item = self.item(parent)
        index = self.createIndex(item.row, 0, item)
        item.state = LoadState.LISTING
        self.beginInsertRows(index, 0, 0)
        item.children = [TreeItem(item.path, "Loading…", None, item, placeholder=True)]
        self.endInsertRows()
        hierarchy = self._hierarchy
        assert hierarchy is not None
        token = (self._generation, item.version)
        self._runner.run(measured, hierarchy.store, Listing, hierarchy, item, item.path, self.large_group,
                         on_result=partial(self._on_listed, item, token),
                         on_error=partial(self._on_list_failed, item, token), supersede=False)

    def headerData(self, section: int, orientation: Qt.Orientation,
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.HEADERS[section]
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role not in _ANSWERED_ROLES or not index.isValid():  # font, alignment, size hint, ... per row
            return None
        item: TreeItem = index.internalPointer()
        column = index.column()
        if role == _DISPLAY:
            return item.name if column == 0 else item.detail
        if role == _DECORATION:
            if column != 0 or item.placeholder:
                return None
            if item.error:
                return kind_icon(NodeKind.ERROR)
            return self._marks.icon(item.path) or kind_icon(item.kind)
        if role == _TOOLTIP:
            if item.error:
                return item.error
            if item.placeholder:
                return None
            if item.ranged and item.children:
                return range_tooltip(item)
            where = f"/{item.path}" if item.parent is not self._root else item.name
            role_text = array_role(item.path) if item.kind is NodeKind.ARRAY else None
            if role_text:
                where += f"\n{item.name}: {role_text}"
            marked = self._marks.tooltip(item.path)
            return f"{where}\n{marked}" if marked else where
        if role == _BACKGROUND:
            return None if item.placeholder else self._marks.background(item.path)
        if role == _FOREGROUND:
            return QApplication.palette().color(QPalette.ColorRole.PlaceholderText) if item.placeholder else None
        if role == PATH_ROLE:
            return None if item.placeholder else item.path
        if role == KIND_ROLE:
            return None if item.placeholder else item.kind
        return None

    # -- listing results ----------------------------------------------------------------------
    def _stale(self, item: TreeItem, token: tuple[int, int]) -> bool:
        return token != (self._generation, item.version) or item.state is not LoadState.LISTING

    def _on_listed(self, item: TreeItem, token: tuple[int, int], result: Measured) -> None:
        try:
            self._link_listing(item, token, result)
        finally:
            result.value.hold.end()  # linked in and frozen (or dropped): passes may walk what is young again

    def _link_listing(self, item: TreeItem, token: tuple[int, int], result: Measured) -> None:
        if self._stale(item, token):
            return
        listing: Listing = result.value
        node = listing.node
        index = self.createIndex(item.row, 0, item)
        if item.kind is not node.kind or item.error != node.error:
            item.set_kind(node.kind)
            item.error = node.error
            self.dataChanged.emit(index, index.siblingAtColumn(1))
        self._show_children(item, index, listing.rows)
        self._by_path.update(listing.by_path)
        if item.children and not item.children[0].ranged:  # the first row may be the reused placeholder object
            self._by_path[item.children[0].path] = item.children[0]
        item.state = LoadState.LISTED
        if len(listing.by_path) >= LARGE_LISTING:
            keep_long_lived()  # its rows (and the nodes behind them) live as long as the index
        if listing.wanted and self._hierarchy is not None:
            # Started on the next event-loop turn, after the view has laid out the new rows: a worker
            # parsing metadata meanwhile would make each of the layout's per-row Python calls wait
            # for the GIL. Busy from now on (before listing_finished), so no one takes the rows for done.
            self._describes_due += 1
            QTimer.singleShot(0, self, partial(self._describe, item, token, listing.wanted))
        self.listing_finished.emit(item.path, replace(result, value=len(listing.by_path)))  # rows, not ranges
        self._advance_reveal()

    def _describe(self, item: TreeItem, token: tuple[int, int], paths: list[str]) -> None:
        self._describes_due -= 1
        if token != (self._generation, item.version) or self._hierarchy is None:
            return
        self._runner.run(summarize_nodes, self._hierarchy, paths, on_result=partial(self._on_described, token),
                         on_progress=partial(self._on_described, token), supersede=False)

    def _on_list_failed(self, item: TreeItem, token: tuple[int, int], message: str) -> None:
        if self._stale(item, token):
            return
        index = self.createIndex(item.row, 0, item)
        self._show_children(item, index, [TreeItem(item.path, "cannot list this group", NodeKind.ERROR, item,
                                                   placeholder=True, error=message)])
        item.state = LoadState.LISTED
        self.listing_failed.emit(item.path, message)
        self._reveal = None

    def _on_described(self, token: tuple[int, int], batch: list[NodeSummary]) -> None:
        if token[0] != self._generation or not batch:
            return
        rows: dict[int, list[int]] = {}
        parents: dict[int, TreeItem] = {}
        errors: list[TreeItem] = []
        for summary in batch:
            item = self._by_path.get(summary.path)
            if item is None or item.parent is None:
                continue
            error = summary.error
            if error and error != item.error:
                errors.append(item)
            item.detail, item.error = detail_text(summary), error or item.error
            rows.setdefault(id(item.parent), []).append(item.row)
            parents[id(item.parent)] = item.parent
        # One dataChanged per parent, over the details column only: for a range that touches column 0
        # QTreeView asks hasChildren of every row in it (a Python call each).
        for key, changed in rows.items():
            owner = parents[key]
            if not self.rows_shown(owner):
                continue
            first, last = owner.children[min(changed)], owner.children[max(changed)]
            self.dataChanged.emit(self.createIndex(first.row, 1, first), self.createIndex(last.row, 1, last),
                                  _DETAIL_ROLES)
        for item in errors:  # the name column shows the error icon and tooltip
            self.dataChanged.emit(self.createIndex(item.row, 0, item), self.createIndex(item.row, 0, item))

    def _show_children(self, item: TreeItem, index: QModelIndex, rows: list[TreeItem]) -> None:
        """Replace the "Loading…" row by the listed rows without removing any row.

        QTreeView answers any row removal with a relayout of the whole tree (every row of an
        expanded 4,000-node level, in Python calls), but an insert below a collapsed group is nearly
        free. So the placeholder becomes the first row (same object, so indexes Qt holds stay
        valid; one dataChanged) and the other rows are inserted after it."""
        old = item.children
        if len(old) != 1 or not old[0].placeholder or not rows:
            self._remove_children(item, index)
            if rows:
                self.beginInsertRows(index, 0, len(rows) - 1)
                item.children = rows
                self.endInsertRows()
            return
        keep, first = old[0], rows[0]
        keep.version += 1  # results still in flight for the placeholder become stale
        for name in TreeItem.__slots__:
            if name != "version":
                setattr(keep, name, getattr(first, name))
        keep.parent, keep.row = item, 0
        for child in keep.children:  # a range's rows belong to the row object kept
            child.parent = keep
        rows[0] = keep
        self.dataChanged.emit(self.createIndex(0, 0, keep), self.createIndex(0, 1, keep))
        if len(rows) > 1:
            self.beginInsertRows(index, 1, len(rows) - 1)
            item.children = rows
            self.endInsertRows()
        else:
            item.children = rows

    def _remove_children(self, item: TreeItem, index: QModelIndex) -> None:
        if not item.children:
            return
        self.beginRemoveRows(index, 0, len(item.children) - 1)
        for child in item.children:
            self._forget(child)
        item.children = []
        self.endRemoveRows()

    def _forget(self, item: TreeItem) -> None:
        stack = [item]
        while stack:
            current = stack.pop()
            current.version += 1  # results still in flight for it become stale
            if not current.placeholder and self._by_path.get(current.path) is current:
                del self._by_path[current.path]
            stack.extend(current.children)

    # -- refresh and reveal ------------------------------------------------------------------
    def refresh(self, index: _Index) -> QModelIndex:
        """Re-read a subtree: forget the model's cache below it and list it again.

        Returns the (new) index of the refreshed item, listed again in the background."""
        item = self.item(index)
        if item.ranged and item.parent is not None:  # a range stands for its group
            item = item.parent
        if self._hierarchy is None or item is self._root or item.placeholder:
            return QModelIndex()
        self._hierarchy.refresh(item.path)
        forget_level_stats(self._hierarchy, item.path)
        source = self.createIndex(item.row, 0, item)
        self._remove_children(item, source)
        item.version += 1
        item.state = LoadState.UNLISTED
        item.detail = ""
        if (item.kind is not None and item.kind.is_container) or item.kind is NodeKind.ERROR:
            item.set_kind(item.kind if item.kind is not NodeKind.ERROR else NodeKind.IMPLICIT_GROUP)
            self.fetchMore(source)
        else:  # an array: re-read its metadata for the details column
            token = (self._generation, item.version)
            self._runner.run(summarize_nodes, self._hierarchy, [item.path],
                             on_result=partial(self._on_described, token),
                             on_progress=partial(self._on_described, token), supersede=False)
        self.dataChanged.emit(source, source.siblingAtColumn(1))
        return source

    def reveal(self, path: str) -> None:
        """List the ancestors of path as needed, then emit path_revealed with its index.

        The path is parsed first (model.node_paths: one grammar for every caller); one that cannot
        name a node is refused by listing_failed with the reason, before any walk."""
        try:
            self._reveal = parse_node_path(path)
        except NodePathError as exc:
            self._reveal = None
            self.listing_failed.emit(path, str(exc))
            return
        self._advance_reveal()

    def _advance_reveal(self) -> None:
        """Walk down to the wanted path, one part per listed level; resumed when a listing ends."""
        target = self._reveal
        if target is None or not self._root.children:
            return
        current = self._root.children[0]
        for name in target.split("/") if target else []:
            if current.state is LoadState.UNLISTED and self.canFetchMore(self.createIndex(current.row, 0, current)):
                self.fetchMore(self.createIndex(current.row, 0, current))
                return
            if current.state is LoadState.LISTING:
                return
            found = self._by_path.get(join_key(current.path, name))
            if found is None or found.placeholder:
                self._reveal = None
                self.listing_failed.emit(target, f"{target}: no such node")
                return
            current = found
        self._reveal = None
        self.path_revealed.emit(self.createIndex(current.row, 0, current))
