"""A row of controls that goes onto two or more lines when the window is too narrow for it.

Squeezed onto one line, a row wider than its place cuts every button's text ("Re…es" for
"Representatives" at 1.5x). The row is given in groups (widgets that belong together); they stand
side by side where they fit, else one group a line: decided on each resize, the grid's new
height then asks the layout above it for room.
"""

from __future__ import annotations

from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QGridLayout, QWidget


class WrappingRow(QWidget):
    """Groups of widgets on one line where they fit, else a line each (module docstring)."""

    def __init__(self, *groups: QWidget, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._groups = groups
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._wrapped: bool | None = None
        # as narrow as its widest group: the row wraps rather than holding the window wide
        self.setMinimumWidth(max(group.minimumSizeHint().width() for group in groups))
        self._place(False)

    @property
    def wrapped(self) -> bool:
        """Whether the groups stand a line each."""
        return bool(self._wrapped)

    def _one_line_width(self) -> int:
        spacing = max(0, self._grid.horizontalSpacing()) * (len(self._groups) - 1)
        return sum(group.sizeHint().width() for group in self._groups) + spacing

    def _fits(self, width: int) -> bool:
        return self._one_line_width() <= width

    def _place(self, wrapped: bool) -> None:
        if wrapped == self._wrapped:
            return
        self._wrapped = wrapped
        for group in self._groups:
            self._grid.removeWidget(group)
        for column in range(self._grid.columnCount()):
            self._grid.setColumnStretch(column, 0)
        for i, group in enumerate(self._groups):
            self._grid.addWidget(group, i if wrapped else 0, 0 if wrapped else i)
        self._grid.setColumnStretch(0 if wrapped else len(self._groups) - 1, 1)  # the spare width at the end
        self.updateGeometry()

    def resizeEvent(self, event: QResizeEvent) -> None:
        self._place(not self._fits(event.size().width()))
        super().resizeEvent(event)
