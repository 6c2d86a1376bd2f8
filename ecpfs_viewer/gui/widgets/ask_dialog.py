"""A one-line question that answers where the user typed it, as a browser's address bar does.

OK does not close the dialog: the text is checked (``check``, at once) and then handed to its
owner (``submitted``), who looks it up, often in a worker, and answers with :meth:`AskDialog.found`
(the dialog closes) or :meth:`AskDialog.refuse` (the reason under the field, the dialog stays open
with the text selected for another try).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QLineEdit, QVBoxLayout, QWidget

from ecpfs_viewer.gui.widgets.colormaps import error_color


class AskDialog(QDialog):
    """A line edit, the answer to the last try under it, OK and Cancel."""

    submitted = Signal(str)  # the checked text: answer with found() or refuse(message)

    def __init__(self, parent: QWidget | None, title: str, prompt: str, *, text: str = "",
                 placeholder: str = "", check: Callable[[str], str | None] | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self._check = check
        self.edit = QLineEdit(text)
        self.edit.setPlaceholderText(placeholder)
        self.edit.setMinimumWidth(420)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.problem = QLabel()  # why the last try failed (or that it is being looked up), under the field
        self.problem.setWordWrap(True)
        self.problem.hide()
        self.edit.textEdited.connect(lambda _text: self.problem.hide())
        layout = QVBoxLayout(self)
        self.prompt = QLabel(prompt)
        layout.addWidget(self.prompt)
        layout.addWidget(self.edit)
        layout.addWidget(self.problem)
        layout.addWidget(self.buttons)
        self.edit.selectAll()

    def text(self) -> str:
        return self.edit.text().strip()

    def accept(self) -> None:
        """Check the text, then hand it over; the dialog stays open until found() is called."""
        problem = self._check(self.text()) if self._check is not None else None
        if problem:
            self.refuse(problem)
            return
        self._say(f"Looking for {self.text()} …", error=False)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(False)
        self.submitted.emit(self.text())

    def refuse(self, message: str) -> None:
        """Say why under the field and stay open, the text selected for another try."""
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(True)
        self._say(message, error=True)
        self.edit.setFocus()
        self.edit.selectAll()

    def found(self) -> None:
        """The lookup succeeded: close."""
        super().accept()

    def problem_text(self) -> str:
        """The message under the field ('' when none is shown)."""
        return self.problem.text() if not self.problem.isHidden() else ""

    def _say(self, text: str, *, error: bool) -> None:
        self.problem.setText(text)
        self.problem.setStyleSheet(f"color: {error_color(self)};" if error else "")
        self.problem.show()
