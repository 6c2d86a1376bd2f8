"""A rank-0 value in large type (tables of strings and numbers live in :mod:`.table`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from ecpfs_viewer.gui.data.plot_views.base import BEST, PlotView
from ecpfs_viewer.gui.data.plot_views.table import ArrayTableModel, TableView
from ecpfs_viewer.model.views.plot_data import PlotData

__all__ = ["ArrayTableModel", "TableView", "ValueView", "value_text"]


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

    def draw(self, data: PlotData) -> None:
        self.label.setText(value_text(data.subset.data))

    def clear(self) -> None:
        super().clear()
        self.label.setText("")

    def text(self) -> str:
        """The value as shown."""
        return self.label.text()
