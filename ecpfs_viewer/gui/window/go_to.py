"""Go to path (Ctrl+L): type 'lvl_3/node_812/embeddings' and the tree selects it.

Completion offers what the tree has listed so far (typing never lists the store); a path not
listed yet is still accepted, and the tree lists its ancestors on the way to it. What is typed
is parsed by model.node_paths (the one path grammar): a path that cannot name a node keeps the
dialog open with the reason under the field.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QStringListModel, Qt
from PySide6.QtWidgets import QCompleter, QDialog, QDialogButtonBox, QLabel, QLineEdit, QVBoxLayout, QWidget

from ecpfs_viewer.model.zarrtree.paths import NodePathError, parse_node_path


class GoToPathDialog(QDialog):
    """A line edit with completion from the listed paths; path() is what was typed, parsed."""

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
        self.problem = QLabel()  # why the typed path cannot be gone to, under the field
        self.problem.setWordWrap(True)
        self.problem.hide()
        self.edit.textEdited.connect(lambda _text: self.problem.hide())
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Path of a group or array in the open store:"))
        layout.addWidget(self.edit)
        layout.addWidget(self.problem)
        layout.addWidget(buttons)
        self.edit.selectAll()

    def accept(self) -> None:
        """Close only on a path that can name a node; otherwise say why and stay open."""
        try:
            parse_node_path(self.edit.text())
        except NodePathError as exc:
            self.problem.setText(str(exc))
            self.problem.show()
            return
        super().accept()

    def path(self) -> str:
        """The typed path as the tree names it ('//lvl_1//node_2/' is 'lvl_1/node_2')."""
        return parse_node_path(self.edit.text())
