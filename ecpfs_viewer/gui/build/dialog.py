"""The Build dialog: choose a .npy file and parameters, see the index it will make, build it in the background.

Every change re-checks the form in a worker (debounced) with the builder's own check
(:func:`ecpfs_viewer.model.build.builder.preview_build`): the numbers, the warnings, and the problems,
each tied to its field, so it appears under that field (:class:`BuildForm`); the Build button
stays disabled until there are none. When the input is chosen, a second worker reads its values
for NaN and infinity (:func:`scan_values`), and a build the preview finds unusually large for its
input (:attr:`BuildPreview.oversize`) is said beside the preview with a "Build it anyway" box: both
before Build is pressed. The message line and the progress keep their place when empty, so
nothing moves as they fill. The build runs through a
:class:`BackgroundRunner` with progress (:class:`BuildProgressBox`) and cancel; the builder leaves
nothing on disk when it fails or is cancelled, and the form keeps its values for another try
(and for the next time the dialog opens: paths and parameters are remembered).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget
from superqt.utils import qdebounced

from ecpfs_viewer.gui.build.form import BuildForm, PreviewBox
from ecpfs_viewer.gui.build.progress import BuildProgressBox
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.colormaps import error_color
from ecpfs_viewer.gui.widgets.screen_fit import fit_to_screen
from ecpfs_viewer.gui.widgets.user_guide import guide_on_f1
from ecpfs_viewer.model.build.builder import (
    BuildCancelled,
    BuildError,
    BuildParams,
    BuildPreview,
    BuildProblem,
    BuildProgress,
    BuildResult,
    build_index,
    preview_build,
)
from ecpfs_viewer.model.build.value_scan import scan_values
from ecpfs_viewer.model.tasks import Counted, TaskError

PREVIEW_DELAY_MS = 150
CHECKING = "Checking…"
SCANNING = "Checking the values for NaN and infinity…"
CANCELLED = "Cancelled, nothing written."
BUILD_ANYWAY = "Build it anyway"


def check_form(source: str, output: str, overwrite: bool, params: BuildParams) -> BuildPreview:
    """The builder's check and preview of the form (touches the disk, so it runs in a worker).

    One rule is the dialog's own: a relative output path means nothing in a GUI (no working folder).
    """
    text = output.strip()
    if text and not Path(text).expanduser().is_absolute():
        preview = preview_build(source, params)
        relative = BuildProblem("output", "give the full path of the index folder to create")
        return replace(preview, problems=[*preview.problems, relative])
    return preview_build(source, params, text, overwrite=overwrite)


def _run_build(source: str, output: str, params: BuildParams, overwrite: bool, *,
               progress: Callable[[BuildProgress], None],
               cancel: threading.Event) -> BuildResult | BuildError | BuildCancelled:
    """The worker side of a build: the result, or the builder's error or cancellation as a value."""
    try:
        return build_index(source, output, params, overwrite=overwrite, progress=progress, cancel=cancel)
    except (BuildError, BuildCancelled) as exc:
        return exc


class BuildDialog(QDialog):
    """Build an ecpfs index from one .npy file; emits index_built(path) when done."""

    index_built = Signal(str)

    def __init__(self, parent: QWidget | None = None, input_path: str | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Build an index")
        self._preview_runner = BackgroundRunner(self)
        self._build_runner = BackgroundRunner(self)
        self._start_check_later = qdebounced(self._start_check, timeout=PREVIEW_DELAY_MS, parent=self)
        self._check: BuildPreview | None = None  # the check of the form as it is now, once it arrived
        self._ready = False  # that check and the values' check found nothing wrong
        self._build_request: int | None = None
        self._close_when_done = False
        self._scan_runner = BackgroundRunner(self)
        self._scan: tuple[str, BuildProblem | None] | None = None  # the values' check of the input named
        self._scanning: str | None = None  # the input whose values are being read

        self.form = BuildForm(input_path=input_path)
        self.form.resized.connect(self._fit_height)
        self.preview = PreviewBox()
        self.progress = BuildProgressBox()  # always shown (its status line says when no build runs): no blank band
        layout = QVBoxLayout(self)
        layout.setSizeConstraint(QVBoxLayout.SizeConstraint.SetMinimumSize)  # error labels never squeeze fields
        top = QHBoxLayout()
        top.addWidget(self.form, 5)
        top.addWidget(self.preview, 4)  # room for the size on one line, so warnings fit beside the form
        layout.addLayout(top)
        layout.addWidget(self.progress)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        policy = self.message.sizePolicy()
        policy.setRetainSizeWhenHidden(True)  # its line is kept, so the buttons stay where they are
        self.message.setSizePolicy(policy)
        self.message.setMinimumHeight(self.message.fontMetrics().lineSpacing())
        self.message.hide()
        layout.addWidget(self.message)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.build_button = QPushButton("Build")
        self.build_button.setDefault(True)
        self.build_button.setEnabled(False)
        self.build_button.clicked.connect(self.start_build)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self._cancel_clicked)
        buttons.addWidget(self.build_button)
        buttons.addWidget(self.cancel_button)
        layout.addLayout(buttons)

        self.form.changed.connect(self._schedule_check)
        self.form.input_edit.textChanged.connect(self._input_changed)
        self.preview.anyway_check.toggled.connect(self._update_build_button)
        self.form.changed.connect(self.message.hide)  # a build's failure was about the inputs as they were
        self._schedule_check()
        fit_to_screen(self, max(self.sizeHint().width(), 960), self.sizeHint().height())
        guide_on_f1(self, "building-an-index")

    def _fit_height(self) -> None:
        """Grow to show every message and field in full (wrapped labels need more height than the hint)."""
        layout = self.layout()
        if layout is None:
            return
        layout.activate()
        needed = layout.totalHeightForWidth(self.width()) if layout.hasHeightForWidth() else -1
        needed = max(needed, layout.totalMinimumSize().height())
        if needed > self.height():
            self.resize(self.width(), needed)

    def params(self) -> BuildParams:
        """The parameters as the form shows them now."""
        return self.form.params()

    # ----------------------------------------------------------------------------- checking

    def _schedule_check(self) -> None:
        """Something changed: forget the last check and run a new one shortly."""
        self._check = None
        self._ready = False
        self._preview_runner.invalidate()
        self.build_button.setEnabled(False)
        self.preview.status_label.setText(CHECKING)
        self._start_check_later()

    def _input_changed(self) -> None:
        """Another input: its values are read again (once its header checks out)."""
        self._scan = None
        self._scanning = None
        self._scan_runner.invalidate()
        self.message.hide()  # what the last build said was about another input

    def _start_scan(self, source: str) -> None:
        self._scanning = source
        self._scan_runner.run(scan_values, source, on_result=lambda problem: self._scanned(source, problem),
                              on_error=lambda error: self._scan_failed(source, error),
                              on_progress=self._scan_progress)

    def _scan_progress(self, p: Counted) -> None:
        if self._check is not None and self._scanning is not None:
            self.preview.status_label.setText(f"{SCANNING} {p.done / max(1, p.total):.0%}")

    def _scanned(self, source: str, problem: BuildProblem | None) -> None:
        self._scanning = None
        self._scan = (source, problem)
        if self._check is not None:
            self._show_check(self._check)

    def _scan_failed(self, source: str, error: TaskError) -> None:
        self._scanned(source, BuildProblem("input", f"its values could not be read: {error}"))

    def _start_check(self) -> None:
        self._preview_runner.run(check_form, self.form.source(), self.form.output(), self.form.overwrite(),
                                 self.params(), on_result=self._show_check, on_error=self._check_failed)

    def _check_failed(self, message: str) -> None:
        self.preview.status_label.setText(f"Could not check the form: {message}")

    def _show_check(self, check: BuildPreview) -> None:
        self._check = check
        problems = list(check.problems)
        source = self.form.source()
        header_ok = check.rows > 0 and not any(p.field == "input" for p in problems)
        scanning = False
        if header_ok:
            if self._scan is not None and self._scan[0] == source:
                if self._scan[1] is not None:
                    problems.append(self._scan[1])
            else:
                scanning = True
                if self._scanning != source:
                    self._start_scan(source)
        invalid = self.form.show_problems(problems)
        self.preview.show_preview(check)
        self._fit_height()
        if invalid:
            status = f"Fix the {'field' if invalid == 1 else f'{invalid} fields'} marked in red to build."
        elif scanning:
            status = SCANNING
        elif check.oversize:
            status = f"Unusually large: tick {BUILD_ANYWAY} to build it."
        else:
            status = "Ready to build."
        self.preview.status_label.setText(status)
        self._ready = not invalid and not scanning
        self._update_build_button()

    def _update_build_button(self) -> None:
        check = self._check
        anyway = check is not None and (not check.oversize or self.preview.anyway_check.isChecked())
        self.build_button.setEnabled(check is not None and self._ready and anyway
                                     and self._build_request is None)

    # ----------------------------------------------------------------------------- building

    def start_build(self) -> None:
        """Start the build with the checked form (the Build button); an unusually large one only once
        "Build it anyway" is ticked beside the preview."""
        check = self._check
        if check is None or not self.build_button.isEnabled() or self._build_request is not None:
            return
        self._start(check)

    def _start(self, check: BuildPreview) -> None:
        self.form.save_settings()
        self.message.hide()
        self.form.setEnabled(False)
        self.build_button.setEnabled(False)
        self.preview.status_label.setText("Building…")
        self._fit_height()
        self.progress.start(check.rows)
        output = str(Path(self.form.output().strip()).expanduser())
        self._build_request = self._build_runner.run(
            _run_build, self.form.source(), output, self.params(), self.form.overwrite(),
            on_result=self._build_ended, on_error=self._build_failed, on_progress=self._build_progress,
        )

    def _build_progress(self, p: BuildProgress) -> None:
        if self.progress.report(p, hide_message=self.form.source()):
            self._fit_height()

    def _cancel_clicked(self) -> None:
        if self._build_request is None:
            self.reject()
            return
        self.cancel_button.setEnabled(False)
        self._build_runner.cancel(self._build_request)
        self.progress.set_cancelling()

    def _finish_build(self, *, completed: bool, cancelled: bool = False) -> None:
        self._build_request = None
        self.progress.stop(completed=completed, cancelled=cancelled)
        self.form.setEnabled(True)
        self.cancel_button.setEnabled(True)

    def _build_ended(self, outcome: BuildResult | BuildError | BuildCancelled) -> None:
        if isinstance(outcome, BuildResult):
            self._finish_build(completed=True)
            self._show_message(f"Built {outcome.output} in {outcome.seconds:.1f} s.", error=False)
            self.index_built.emit(str(outcome.output))
            self.accept()
        elif isinstance(outcome, BuildCancelled):
            self._stopped(CANCELLED, error=False, cancelled=True)
        else:
            self._stopped(f"Build failed: {outcome}", error=True)

    def _build_failed(self, message: str) -> None:
        """An unexpected exception in the builder (its own errors arrive as values)."""
        self._stopped(f"Build failed: {message}", error=True)

    def _stopped(self, text: str, *, error: bool, cancelled: bool = False) -> None:
        self._finish_build(completed=False, cancelled=cancelled)
        self._show_message(text, error=error)
        if self._close_when_done:
            super().reject()
            return
        self._schedule_check()

    def _show_message(self, text: str, *, error: bool) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(f"color: {error_color(self)};" if error else "")
        self.message.show()
        self._fit_height()

    def reject(self) -> None:
        """Closing while a build runs cancels it first (nothing is left on disk), then closes; the
        form is remembered for the next time either way."""
        if self._build_request is not None:
            self._close_when_done = True
            self._cancel_clicked()
            return
        self.form.save_settings()
        super().reject()

    @property
    def building(self) -> bool:
        return self._build_request is not None
