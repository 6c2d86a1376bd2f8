"""Run, Cancel, a progress bar and a status line: the controls of a view that runs one job at a
time (the recall sweep, the comparison, the tune, the Diagnostics dialogs), and the dialog base
class that wires them to its runner."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cached_property
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QProgressBar, QPushButton, QSizePolicy, QWidget

from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.colormaps import error_color
from ecpfs_viewer.gui.widgets.progress import show_progress
from ecpfs_viewer.model.tasks import TaskError


class RunControls(QObject):
    """``run_button``, ``cancel_button``, ``progress`` and ``summary`` (what happened), in the states of
    a job: ``started``, ``idle``, ``finished`` or ``failed``.

    ``one_line``: the summary keeps to one line of the width it is given, its whole text in its
    tooltip (otherwise it wraps). ``can_run``: whether Run may be pressed when no job runs (always,
    by default). ``runners``: the view's BackgroundRunners, which ``busy`` asks and ``drop``
    invalidates (Cancel's default, ``stop``). A view whose jobs start on their own (the index map's
    layout) leaves ``run_button`` out of its layout."""

    ended = Signal()  # a job ended: its result, an error or a cancellation is on screen

    def __init__(self, parent: QWidget, prompt: str, run_text: str = "Run", *,
                 run: Callable[[], None] = lambda: None, cancel: Callable[[], None] | None = None,
                 one_line: bool = False, can_run: Callable[[], bool] = lambda: True,
                 runners: Sequence[BackgroundRunner] = ()) -> None:
        super().__init__(parent)
        self._can_run = can_run
        self._runners = tuple(runners)
        self.run_button = QPushButton(run_text)
        self.run_button.setDefault(isinstance(parent, QDialog))  # Enter runs: a dialog's default button
        self.run_button.clicked.connect(run)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(cancel or self.stop)
        self.progress = QProgressBar()
        self.progress.hide()
        self.summary = QLabel()
        self._one_line = one_line
        if one_line:
            self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        else:
            self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.say(prompt)

    @cached_property
    def row(self) -> QHBoxLayout:
        """Run, Cancel and the bar side by side (add more to it), for views that take them as a row."""
        row = QHBoxLayout()
        row.addWidget(self.run_button)
        row.addWidget(self.cancel_button)
        row.addWidget(self.progress, 1)
        return row

    def started(self, doing: str) -> None:
        """A job started: Cancel is live, the bar busy until the first report, ``doing`` said."""
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setRange(0, 0)
        self.progress.show()
        self.say(doing)

    def show_progress(self, report: Any) -> None:
        """A tasks.Counted or a SearchProgress (anything with done, total and message or phase)."""
        show_progress(self.progress, report)

    def idle(self) -> None:
        """No job runs: the bar hidden, Run live again (if it can run), Cancel not."""
        self.run_button.setEnabled(self._can_run())
        self.cancel_button.setEnabled(False)
        self.progress.hide()
        self.progress.setMinimumWidth(0)  # widened to its text while a job reported (widgets/progress.py)

    def say(self, text: str, error: bool = False) -> None:
        """Put ``text`` in the summary line, in the error colour for a failure."""
        self.summary.setText(text)
        if self._one_line:
            self.summary.setToolTip(text)
        self.summary.setStyleSheet(f"color: {error_color(self.summary)};" if error else "")

    def finished(self, message: str, error: bool = False) -> None:
        """A job ended (or was dropped): idle, ``message`` says how, ``ended`` is emitted."""
        self.idle()
        self.say(message, error)
        self.ended.emit()

    @property
    def busy(self) -> bool:
        """A job of one of the runners is running."""
        return any(runner.busy for runner in self._runners)

    def stop(self) -> None:
        """What Cancel does unless told otherwise: drop the running jobs, if any."""
        if self.busy:
            self.drop()

    def drop(self, message: str | None = "Cancelled.") -> None:
        """Drop every job (each asked to stop; nothing it computed is shown); say ``message`` (None: go
        idle without a word, and without ``ended``)."""
        for runner in self._runners:
            runner.invalidate()
        if message is None:
            self.idle()
        else:
            self.finished(message)

    def failed(self, error: TaskError) -> None:
        """A job ended with an error, or cancelled at a checkpoint (an ``on_error`` of the runner)."""
        self.finished("Cancelled." if error.cancelled else str(error), not error.cancelled)


class RunDialog(QDialog):
    """A dialog whose Run starts one background job (``run``, in the subclass) and Cancel stops it."""

    finished_run = Signal()  # a run ended: shown, failed or cancelled

    def __init__(self, prompt: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.runner = BackgroundRunner(self)
        self._request = 0
        self.controls = RunControls(self, prompt, run=self.run, cancel=self.cancel, runners=(self.runner,))
        self.run_button, self.cancel_button = self.controls.run_button, self.controls.cancel_button
        self.progress, self.summary = self.controls.progress, self.controls.summary
        self.controls.ended.connect(self.finished_run)

    def run(self) -> None:
        raise NotImplementedError

    def cancel(self) -> None:
        self.runner.cancel(self._request)

    @property
    def busy(self) -> bool:
        return self.controls.busy
