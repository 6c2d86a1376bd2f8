"""Go to path (Ctrl+L): type 'lvl_3/node_812/embeddings' and the tree selects it.

Completion offers what the tree has listed so far (typing never lists the store); a path not
listed yet is still accepted, and the tree lists its ancestors on the way to it.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QStringListModel, Qt
from PySide6.QtWidgets import QCompleter, QDialog, QDialogButtonBox, QLabel, QLineEdit, QVBoxLayout, QWidget


def normalise_path(text: str) -> str:
    """A typed path as the tree names it: no leading or trailing slashes, no blanks around."""
    return text.strip().strip("/")


class GoToPathDialog(QDialog):
    """A line edit with completion from the listed paths; path() is what was typed, normalised."""

    def __init__(self, paths: Iterable[str], parent: QWidget | None = None, current: str = "") -> None:
        super().__init__(parent)
        self.setWindowTitle("Go to Path")
        self.edit = QLineEdit(current)
        self.edit.setPlaceholderText("lvl_3/node_812/embeddings")
        self.edit.setMinimumWidth(420)
        self.paths = QStringListModel(sorted(p for p in paths if p), self)  # owned here: Qt would not keep it
        self.completer = QCompleter(self.paths, self)
        self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.edit.setCompleter(self.completer)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Path of a group or array in the open store:"))
        layout.addWidget(self.edit)
        layout.addWidget(buttons)
        self.edit.selectAll()

    def path(self) -> str:
        return normalise_path(self.edit.text())
