"""Marks that panels put on tree rows: validation findings on broken nodes, the nodes a search
visited. Each panel owns one layer, so clearing a search never clears the validation marks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

from PySide6.QtGui import QColor, QIcon, QPalette
from PySide6.QtWidgets import QApplication

from ecpfs_viewer.gui.widgets.icons import standard_icon


class MarkKind(IntEnum):
    """What a mark says, in the order a row shows them (the highest wins the icon)."""

    VISITED = 1
    INFO = 2
    WARNING = 3
    ERROR = 4


@dataclass(frozen=True)
class RowMark:
    """One mark on one row: what it says and the sentence its tooltip adds."""

    kind: MarkKind
    tooltip: str


_ICONS = {MarkKind.ERROR: "SP_MessageBoxCritical", MarkKind.WARNING: "SP_MessageBoxWarning",
          MarkKind.INFO: "SP_MessageBoxInformation"}


class TreeMarks:
    """Layers of path -> mark; the tree model asks it what to draw for a path."""

    def __init__(self) -> None:
        self._layers: dict[str, dict[str, RowMark]] = {}

    def set_layer(self, layer: str, marks: Mapping[str, RowMark]) -> set[str]:
        """Replace one layer; returns every path whose marks changed (old and new)."""
        old = self._layers.pop(layer, {})
        if marks:
            self._layers[layer] = dict(marks)
        return set(old) | set(marks)

    def clear(self) -> None:
        self._layers.clear()

    def at(self, path: str) -> list[RowMark]:
        """The marks on a path, strongest first."""
        found = [layer[path] for layer in self._layers.values() if path in layer]
        return sorted(found, key=lambda mark: -mark.kind)

    def icon(self, path: str) -> QIcon | None:
        """The icon of the strongest finding on path, or None (visits are shown by colour)."""
        marks = self.at(path)
        if marks and marks[0].kind in _ICONS:
            return standard_icon(_ICONS[marks[0].kind])
        return None

    def background(self, path: str) -> QColor | None:
        """A tint of the palette's highlight for rows a search visited."""
        if not any(mark.kind is MarkKind.VISITED for mark in self.at(path)):
            return None
        colour = QColor(QApplication.palette().color(QPalette.ColorRole.Highlight))
        colour.setAlpha(70)
        return colour

    def tooltip(self, path: str) -> str | None:
        marks = self.at(path)
        return "\n".join(mark.tooltip for mark in marks) if marks else None
