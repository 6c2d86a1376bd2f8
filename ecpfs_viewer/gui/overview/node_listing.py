"""The node page's listing: a node's children (with a bar of their sizes) or a leaf's item ids.

A table model of its own because a leaf may hold hundreds of thousands of items: rows are
formatted only when the view asks for them, and column widths are fitted from the longest texts
found without formatting every row. A header click sorts by any column in the model (a leaf's
ids with one numpy argsort), so the rows a double-click reads are the rows the user sees.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QModelIndex, QObject, QPersistentModelIndex, QRect, Qt
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QStyledItemDelegate, QStyleOptionViewItem

from ecpfs_viewer.gui.widgets.rows_table import SortingTableModel, sort_key
from ecpfs_viewer.model.ecpfs import Finding
from ecpfs_viewer.model.views.node_info import Children, LeafItems

_ROOT = QModelIndex()
PATH_ROLE = Qt.ItemDataRole.UserRole
BAR_ROLE = Qt.ItemDataRole.UserRole + 2  # fraction of the largest child, for the size bar


class SizeBarDelegate(QStyledItemDelegate):
    """Draws a horizontal bar of the fraction in BAR_ROLE (the child's size against the largest)."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
              ) -> None:
        super().paint(painter, option, index)
        fraction = index.data(BAR_ROLE)
        if fraction is None:
            return
        rect: QRect = option.rect.adjusted(3, 4, -3, -4)
        rect.setWidth(max(1, int(rect.width() * float(fraction))))
        painter.save()
        painter.fillRect(rect, option.palette.color(QPalette.ColorRole.Highlight))
        painter.restore()


class ListingModel(SortingTableModel):
    """Children (row, child, rows, size bar, finding) or leaf members (row, item id, finding)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._headers: list[str] = []
        self._children: Children | None = None
        self._items: LeafItems | None = None
        self._problems: dict[int, Finding] = {}
        self._largest = 1
        self._order: np.ndarray | None = None  # shown row -> stored row, once sorted

    def set_children(self, children: Children | None) -> None:
        self.beginResetModel()
        self._children, self._items = children, None
        self._headers = ["Row", "Child node", "Rows", "Size", "Finding"]
        sizes = [r.rows for r in children.rows if r.rows is not None] if children else []
        self._largest = max(sizes, default=1) or 1
        self._arrange(*self._sorted_by)
        self.endResetModel()

    def set_items(self, items: LeafItems | None) -> None:
        self.beginResetModel()
        self._children, self._items = None, items
        self._headers = ["Row", "Item id", "Finding"]
        self._problems = {p.row: p.finding for p in items.problems} if items else {}
        self._arrange(*self._sorted_by)
        self.endResetModel()

    def _arrange(self, column: int, order: Qt.SortOrder) -> None:
        self._sorted_by = (column, order)
        self._order = None
        count = self.rowCount()
        if not 0 <= column < len(self._headers) or count == 0:
            return
        if self._children is not None:
            rows = self._children.rows
            if column in (0, 2, 3):  # the row, or its size (drawn as the bar too): numbers
                keys = [sort_key(r.row if column == 0 else r.rows) for r in rows]
            else:
                keys = [sort_key(self._text(i, column)) for i in range(count)]
            order_of = np.asarray(sorted(range(count), key=keys.__getitem__), np.int64)
        elif self._items is not None:
            if column == 1:
                order_of = np.argsort(self._items.ids, kind="stable")
            elif column == 0:
                order_of = np.arange(count)
            else:  # the wrong members first, in row order
                wrong = np.fromiter(sorted(self._problems), np.int64, len(self._problems))
                order_of = np.concatenate([wrong, np.setdiff1d(np.arange(count), wrong, assume_unique=True)])
        else:
            return
        if order == Qt.SortOrder.DescendingOrder:
            order_of = order_of[::-1]
        self._order = order_of

    def _stored(self, row: int) -> int:
        """The stored row shown at a row of the view."""
        return row if self._order is None else int(self._order[row])

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        if parent.isValid():
            return 0
        if self._children is not None:
            return len(self._children.rows)
        return self._items.count if self._items is not None else 0

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(self._headers)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self._headers[section]
        return None

    def path_at(self, row: int) -> str | None:
        """The child a row of the view leads (None for leaf members)."""
        return self._children.rows[self._stored(row)].ref.path if self._children is not None else None

    def finding_at(self, row: int) -> Finding | None:
        """The finding of a row of the view."""
        return self._finding(self._stored(row))

    def _finding(self, row: int) -> Finding | None:
        if self._children is not None:
            return self._children.rows[row].finding
        return self._problems.get(row)

    def _text(self, row: int, column: int) -> str:
        """What a cell of a stored row shows."""
        finding = self._finding(row)
        message = finding.message if finding else ""
        if self._children is not None:
            child = self._children.rows[row]
            return [str(child.row), child.ref.path, "—" if child.rows is None else f"{child.rows:,}", "",
                    message][column]
        if self._items is not None:
            return [str(row), str(int(self._items.ids[row])), message][column]
        return ""

    def longest_texts(self, column: int, count: int = 3) -> list[str]:
        """The longest texts of a column (for fit_columns), found without formatting every leaf member."""
        if self._children is not None:
            texts = (self._text(row, column) for row in range(len(self._children.rows)))
            return heapq.nlargest(count, texts, key=len)
        if self._items is None or self._items.count == 0:
            return []
        if column == 0:
            return [str(self._items.count - 1)]
        if column == 1:
            return [str(int(self._items.ids.max())), str(int(self._items.ids.min()))]
        return heapq.nlargest(count, (finding.message for finding in self._problems.values()), key=len)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, column = self._stored(index.row()), index.column()
        finding = self._finding(row)
        if role == PATH_ROLE:
            return self.path_at(index.row())
        if role == Qt.ItemDataRole.DisplayRole:
            return self._text(row, column)
        if self._children is not None:
            child = self._children.rows[row]
            if role == BAR_ROLE and column == 3 and child.rows is not None:
                return child.rows / self._largest
            if role == Qt.ItemDataRole.ToolTipRole:
                return (finding.message + "\n" if finding else "") + f"Double-click to open {child.ref.path}"
        elif self._items is not None and role == Qt.ItemDataRole.ToolTipRole and finding:
            return finding.message
        if role == Qt.ItemDataRole.ForegroundRole and finding is not None:
            return pg.mkColor("#d62728")
        if role == Qt.ItemDataRole.TextAlignmentRole and column < 3 and (column != 1 or self._items is not None):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None
