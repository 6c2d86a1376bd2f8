"""Run, Cancel, a progress bar and a summary line: the controls of a dialog that runs one job at a time."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from ecpfs_viewer.model.tasks import TaskError


class RunControls(QObject):
    """The buttons go in ``row`` (add more to it); ``summary`` says what happened."""

    def __init__(self, parent: QWidget, prompt: str) -> None:
        super().__init__(parent)
        self.run_button = QPushButton("Run")
        self.run_button.setDefault(True)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.hide()
        self.row = QHBoxLayout()
        self.row.addWidget(self.run_button)
        self.row.addWidget(self.cancel_button)
        self.row.addWidget(self.progress, 1)
        self.summary = QLabel(prompt)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

    def started(self, doing: str) -> None:
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setRange(0, 0)
        self.progress.show()
        self.summary.setText(doing)

    def show_progress(self, report: Any) -> None:
        """A tasks.Counted (or anything with done, total and message)."""
        self.progress.setRange(0, max(int(getattr(report, "total", 0)), 0))
        self.progress.setValue(int(getattr(report, "done", 0)))
        self.progress.setFormat(f"{getattr(report, 'message', '')} %v / %m")

    def idle(self) -> None:
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.progress.hide()

    def failed(self, error: TaskError) -> None:
        self.idle()
        self.summary.setText("Cancelled." if error.cancelled else str(error))
