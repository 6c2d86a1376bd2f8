"""Views as text: a rank-0 value in large type, and a table for strings and other non-numbers."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QLabel, QTableView, QVBoxLayout, QWidget

from ecpfs_viewer.gui.plot_views.base import BEST, PlotView
from ecpfs_viewer.model.plot_data import PlotData

_ROOT = QModelIndex()


def value_text(data: Any) -> str:
    """How a rank-0 value reads: strings as they are, bytes as a literal, '(empty string)' for ''."""
    value = np.asarray(data)
    item = value.item() if value.size == 1 else value
    shown = item if isinstance(item, str) else repr(item) if isinstance(item, bytes) else str(item)
    return shown if shown != "" else "(empty string)"


class ValueView(PlotView):
    """A rank-0 array's value, large and selectable."""

    title = "Value"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.label = QLabel()
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = QFont(self.label.font())
        font.setPointSizeF(font.pointSizeF() * 1.8)
        self.label.setFont(font)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)

    def priority(self, data: PlotData) -> int:
        return BEST if data.ndim == 0 else 0

    def draw(self) -> None:
        assert self._data is not None
        self.label.setText(value_text(self._data.subset.data))

    def clear(self) -> None:
        super().clear()
        self.label.setText("")

    def text(self) -> str:
        """The value as shown."""
        return self.label.text()


class ArrayTableModel(QAbstractTableModel):
    """A read-only table over a 1-D or 2-D array (strings, objects); cells are formatted on demand."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._data: np.ndarray = np.empty((0, 0), dtype=object)
        self._offsets: tuple[int, int] = (0, 0)

    def set_array(self, data: Any, offsets: tuple[int, ...] = ()) -> None:
        """Show an array (None: nothing); header numbers start at the subset's offsets."""
        self.beginResetModel()
        array = np.asarray(np.empty((0, 0), dtype=object) if data is None else data)
        if array.ndim <= 1:
            self._data = array.reshape(-1, 1)
        else:
            self._data = array.reshape(array.shape[0], math.prod(array.shape[1:]))
        padded = (*offsets, 0, 0)
        self._offsets = (int(padded[0]), int(padded[1]))
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else int(self._data.shape[0])

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else int(self._data.shape[1])

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole) and index.isValid():
            return str(self._data[index.row(), index.column()])
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        offset = self._offsets[0] if orientation == Qt.Orientation.Vertical else self._offsets[1]
        return str(offset + section)


class TableView(PlotView):
    """Strings (and other non-numbers) of rank 1 or more, one cell per value, headers = array indexes."""

    title = "Table"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = ArrayTableModel(self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setEditTriggers(QTableView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table)

    def priority(self, data: PlotData) -> int:
        return BEST if data.values is None and data.ndim >= 1 else 0

    def draw(self) -> None:
        assert self._data is not None
        self.model.set_array(self._data.subset.data, self._data.subset.offsets)

    def clear(self) -> None:
        super().clear()
        self.model.set_array(None)
