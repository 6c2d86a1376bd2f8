"""Go to path (Ctrl+L): type 'lvl_3/node_812/embeddings' and the tree selects it.

Completion offers what the tree has listed so far (typing never lists the store); a path not
listed yet is still accepted, and the tree lists its ancestors on the way to it. What is typed
is parsed by model.node_paths (the one path grammar). The dialog closes once the tree has the
node; a path that cannot name a node, or names none ('no such node', a listing that failed on
the way), keeps it open with the reason under the field.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QModelIndex, QStringListModel, Qt, QTimer
from PySide6.QtWidgets import QCompleter, QWidget

from ecpfs_viewer.gui.tree.item_model import HierarchyTreeModel
from ecpfs_viewer.gui.widgets.ask_dialog import AskDialog
from ecpfs_viewer.model.zarrtree.paths import NodePathError, parse_node_path


def path_problem(text: str) -> str | None:
    """Why text cannot name a node, or None."""
    try:
        parse_node_path(text)
    except NodePathError as exc:
        return str(exc)
    return None


class GoToPathDialog(AskDialog):
    """A line edit with completion from the listed paths; the tree is walked to the typed path."""

    def __init__(self, paths: Iterable[str], parent: QWidget | None = None, current: str = "",
                 tree_model: HierarchyTreeModel | None = None) -> None:
        super().__init__(parent, "Go to Path", "Path of a group or array in the open store:", text=current,
                         placeholder="lvl_3/node_812/embeddings", check=path_problem)
        self.paths = QStringListModel(sorted(p for p in paths if p), self)  # owned here: Qt would not keep it
        self.completer = QCompleter(self.paths, self)
        self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.edit.setCompleter(self.completer)
        # a completion chosen (Return on it, or a click) goes there: one Return, not one to take the
        # completion and a second to go (the popup eats the first)
        self.completer.activated.connect(self._completion_chosen)
        self._waiting: str | None = None
        self._tree = tree_model
        if tree_model is not None:
            tree_model.path_revealed.connect(self._revealed)
            tree_model.listing_failed.connect(self._failed)
            self.submitted.connect(self._walk)
        else:  # nothing to walk: the path is the answer
            self.submitted.connect(lambda _text: self.found())

    def _completion_chosen(self, chosen: object) -> None:
        text = chosen if isinstance(chosen, str) else str(getattr(chosen, "data", lambda: "")())
        self.edit.setText(text)
        QTimer.singleShot(0, self.accept)  # after the completer has put the text in and closed its popup

    def path(self) -> str:
        """The typed path as the tree names it ('//lvl_1//node_2/' is 'lvl_1/node_2')."""
        return parse_node_path(self.edit.text())

    def _walk(self, _text: str) -> None:
        assert self._tree is not None
        self._waiting = self.path()
        self._tree.reveal(self._waiting)

    def _revealed(self, index: QModelIndex) -> None:
        if self._waiting is not None and self._tree is not None and self._tree.item(index).path == self._waiting:
            self._waiting = None
            self.found()

    def _failed(self, path: str, message: str) -> None:
        """'no such node' for the path, or a listing on the way to it that failed."""
        wanted = self._waiting
        if wanted is not None and (path == wanted or not path or wanted.startswith(path.rstrip("/") + "/")):
            self._waiting = None
            self.refuse(message)

    def done(self, result: int) -> None:
        self._waiting = None
        if self._tree is not None:  # the tree outlives the dialog
            self._tree.path_revealed.disconnect(self._revealed)
            self._tree.listing_failed.disconnect(self._failed)
            self._tree = None
        super().done(result)
