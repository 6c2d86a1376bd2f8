"""Run, Cancel, a progress bar and a summary line: the controls of a dialog that runs one job at a
time, and the dialog base class that wires them to its runner."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.progress import show_progress
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
        show_progress(self.progress, report)

    def idle(self) -> None:
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.progress.hide()

    def failed(self, error: TaskError) -> None:
        self.idle()
        self.summary.setText("Cancelled." if error.cancelled else str(error))


class RunDialog(QDialog):
    """A dialog whose Run starts one background job (``run``, in the subclass) and Cancel stops it."""

    finished_run = Signal()  # a run ended: shown, failed or cancelled

    def __init__(self, prompt: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.runner = BackgroundRunner(self)
        self._request = 0
        self.controls = RunControls(self, prompt)
        self.run_button, self.cancel_button = self.controls.run_button, self.controls.cancel_button
        self.progress, self.summary = self.controls.progress, self.controls.summary
        self.run_button.clicked.connect(self.run)
        self.cancel_button.clicked.connect(self.cancel)

    def run(self) -> None:
        raise NotImplementedError

    def cancel(self) -> None:
        self.runner.cancel(self._request)

    @property
    def busy(self) -> bool:
        return self.runner.busy

    def _failed(self, error: TaskError) -> None:
        self.controls.failed(error)
        self.finished_run.emit()
