"""The Build dialog: choose a .npy file and parameters, see the index it will make, build it in the background.

Every change re-checks the form in a worker (debounced): the builder's own preview
(:func:`ecpfs_viewer.model.build.preview_build`) gives the numbers, warnings and parameter
errors; the output path is checked beside it. Errors appear under the field they concern and
the Build button stays disabled until the form is valid. The build itself runs through a
:class:`BackgroundRunner` with progress and cancel; the builder leaves nothing on disk when it
fails or is cancelled.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QElapsedTimer, Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.colormaps import is_dark
from ecpfs_viewer.gui.settings import settings
from ecpfs_viewer.gui.workers import BackgroundRunner
from ecpfs_viewer.model import sizing
from ecpfs_viewer.model.build import BuildParams, BuildPreview, BuildProgress, BuildResult, build_index, preview_build
from ecpfs_viewer.model.formatting import format_bytes

PREVIEW_DELAY_MS = 150
_SETTINGS_GROUP = "build_dialog"
_FIELDS = ("input", "output", "levels", "target", "metric", "dtype", "rep_selection",
           "node_chunk", "rep_chunk")
#: Which field a builder parameter error belongs to, by the message's first word(s).
_ERROR_PREFIXES = (
    ("levels", "levels"), ("target_cluster_items", "target"), ("metric", "metric"),
    ("rep_selection", "rep_selection"), ("dtype", "dtype"), ("node chunk", "node_chunk"),
    ("rep chunk", "rep_chunk"),
)


@dataclass(frozen=True)
class FormCheck:
    """The outcome of checking the form once: the builder's preview and the output path's problem."""

    preview: BuildPreview
    output_error: str | None


def output_problem(output: str, overwrite: bool) -> str | None:
    """Why the index cannot be written at ``output`` (None when it can); runs in a worker."""
    text = output.strip()
    if not text:
        return "choose where to write the index"
    path = Path(text).expanduser()
    if not path.is_absolute():
        return "give the full path of the index folder to create"
    if path.exists() or path.is_symlink():
        if not overwrite:
            return "already exists: choose a new name, or tick \"Replace an existing index\""
        if not path.is_dir() or (any(path.iterdir()) and not (path / "zarr.json").exists()):
            return "exists and is not a Zarr store; it will not be replaced"
    parent = path.parent
    if not parent.is_dir():
        return f"folder {parent} does not exist"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"folder {parent} is not writable"
    return None


def check_form(source: str, output: str, overwrite: bool, params: BuildParams) -> FormCheck:
    """Preview the build and check the output path (both touch the disk, so this runs in a worker)."""
    return FormCheck(preview_build(source, params), output_problem(output, overwrite))


def field_of_error(message: str) -> str:
    """The form field a builder error message is about (input errors are everything else)."""
    for prefix, field_name in _ERROR_PREFIXES:
        if message.startswith(prefix):
            return field_name
    return "input"


def _error_color(widget: QWidget) -> str:
    return "#ff7b72" if is_dark(widget.palette()) else "#c62828"


def _warning_color(widget: QWidget) -> str:
    return "#e3b341" if is_dark(widget.palette()) else "#8a5a00"


class _PhaseRow:
    """One labelled progress bar for one build phase."""

    def __init__(self, grid: QGridLayout, row: int, phase: str) -> None:
        self.label = QLabel(phase_title(phase))
        self.bar = QProgressBar()
        self.bar.setRange(0, 1000)
        self.bar.setTextVisible(True)
        grid.addWidget(self.label, row, 0)
        grid.addWidget(self.bar, row, 1)

    def show(self, done: int, total: int, message: str) -> None:
        fraction = done / total if total > 0 else 1.0
        self.bar.setValue(round(1000 * min(1.0, fraction)))
        detail = f"  {message}" if message else ""
        self.bar.setFormat(f"{done:,} / {total:,}{detail}")

    def finish(self) -> None:
        self.bar.setValue(1000)


def phase_title(phase: str) -> str:
    """A readable name for a builder phase ("reading", "level 2", "writing")."""
    titles = {"reading": "Reading and checking rows", "writing": "Writing leaf nodes"}
    if phase in titles:
        return titles[phase]
    return phase[:1].upper() + phase[1:]


class BuildDialog(QDialog):
    """Build an ecpfs index from one .npy file; emits index_built(path) when done."""

    index_built = Signal(str)

    def __init__(self, parent: QWidget | None = None, input_path: str | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Build an index")
        self._preview_runner = BackgroundRunner(self)
        self._build_runner = BackgroundRunner(self)
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(PREVIEW_DELAY_MS)
        self._debounce.timeout.connect(self._start_check)
        self._check: FormCheck | None = None  # the check of the form as it is now, once it arrived
        self._output_auto = True  # the output path follows the input until the user edits it
        self._build_request: int | None = None
        self._cancelling = False
        self._close_when_done = False
        self._phases: dict[str, _PhaseRow] = {}
        self._phase_started = 0.0
        self._rows_rate: float | None = None
        self._elapsed = QElapsedTimer()
        self._clock = QTimer(self)
        self._clock.setInterval(250)
        self._clock.timeout.connect(self._update_status)
        self.field_errors: dict[str, QLabel] = {}
        self.preview_values: dict[str, QLabel] = {}

        self._make_form()
        self._make_preview()
        self._make_progress()
        layout = QVBoxLayout(self)
        layout.setSizeConstraint(QVBoxLayout.SizeConstraint.SetMinimumSize)  # error labels never squeeze fields
        top = QHBoxLayout()
        top.addWidget(self._form_box, 3)
        top.addWidget(self._preview_box, 2)
        layout.addLayout(top)
        layout.addWidget(self.warnings_label)
        layout.addWidget(self._progress_box)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
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

        self._restore_settings()
        if input_path:
            self.input_edit.setText(os.fspath(input_path))
        self._connect_changes()
        if input_path:
            self._input_changed(self.input_edit.text())
        self._schedule_check()
        self.resize(max(self.sizeHint().width(), 960), self.sizeHint().height())

    # ----------------------------------------------------------------------------- form

    def _error_label(self, name: str) -> QLabel:
        label = QLabel()
        label.setWordWrap(True)
        label.setObjectName(f"error_{name}")
        label.setStyleSheet(f"color: {_error_color(self)};")
        label.hide()
        self.field_errors[name] = label
        return label

    def _with_error(self, name: str, *widgets: QWidget) -> QWidget:
        """A field (one or more widgets in a row) with its error label underneath."""
        box = QWidget()
        column = QVBoxLayout(box)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        for w in widgets:
            row.addWidget(w, 1 if isinstance(w, QLineEdit) else 0)
        if not any(isinstance(w, QLineEdit) for w in widgets):
            row.addStretch(1)
        column.addLayout(row)
        column.addWidget(self._error_label(name))
        return box

    def _make_form(self) -> None:
        self._form_box = QGroupBox("Input and parameters")
        form = QFormLayout(self._form_box)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.ExpandingFieldsGrow)

        self.input_edit = QLineEdit()
        self.input_edit.setPlaceholderText("a 2-D .npy file of vectors (rows x dim)")
        browse_in = QPushButton("Browse…")
        browse_in.clicked.connect(self._browse_input)
        form.addRow("Vectors (.npy):", self._with_error("input", self.input_edit, browse_in))

        self.output_edit = QLineEdit()
        self.output_edit.setPlaceholderText("the index folder to create, e.g. vectors.zarr")
        browse_out = QPushButton("Browse…")
        browse_out.clicked.connect(self._browse_output)
        form.addRow("Output index:", self._with_error("output", self.output_edit, browse_out))
        self.overwrite_check = QCheckBox("Replace an existing index at this path")
        form.addRow("", self.overwrite_check)

        self.levels_spin = QSpinBox()
        self.levels_spin.setRange(0, 16)  # 0 is allowed so the form can say why it is wrong
        self.levels_spin.setValue(3)
        form.addRow("Levels:", self._with_error("levels", self.levels_spin))

        self.target_spin = QSpinBox()
        self.target_spin.setRange(0, 2**31 - 1)
        self.target_spin.setGroupSeparatorShown(True)
        self.target_spin.setValue(100)
        self.target_spin.setToolTip("Items per leaf cluster to aim for; R = ceil(rows / this)")
        form.addRow("Target cluster items:", self._with_error("target", self.target_spin))

        self.metric_combo = QComboBox()
        self.metric_combo.addItem("L2 (Euclidean distance)", "L2")
        self.metric_combo.addItem("IP (inner product)", "IP")
        form.addRow("Metric:", self._with_error("metric", self.metric_combo))

        self.dtype_combo = QComboBox()
        for choice in sizing.DTYPE_CHOICES:
            text = "native (as the input; float64 → float32)" if choice == "native" else choice
            self.dtype_combo.addItem(text, choice)
        form.addRow("Stored dtype:", self._with_error("dtype", self.dtype_combo))

        self.normalized_check = QCheckBox("Vectors are unit length (is_normalized)")
        form.addRow("", self.normalized_check)

        self.rep_combo = QComboBox()
        self.rep_combo.addItem("offset (every n-th row)", "offset")
        self.rep_combo.addItem("random", "random")
        self.seed_spin = QSpinBox()
        self.seed_spin.setRange(-1, 2**31 - 1)
        self.seed_spin.setSpecialValueText("no seed")
        self.seed_spin.setValue(-1)
        self.seed_spin.setPrefix("seed ")
        self.seed_spin.setToolTip("A seed makes the random choice reproducible")
        form.addRow("Representatives:", self._with_error("rep_selection", self.rep_combo, self.seed_spin))

        self.advanced_button = QToolButton()
        self.advanced_button.setText("Advanced")
        self.advanced_button.setCheckable(True)
        self.advanced_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.advanced_button.setArrowType(Qt.ArrowType.RightArrow)
        self.advanced_button.setAutoRaise(True)
        self.advanced_button.toggled.connect(self._toggle_advanced)
        form.addRow(self.advanced_button)
        self.advanced = QWidget()
        adv = QFormLayout(self.advanced)
        adv.setContentsMargins(16, 0, 0, 0)
        self.node_chunk_spin = QSpinBox()
        self.node_chunk_spin.setRange(0, 1024 * 1024)
        self.node_chunk_spin.setSuffix(" KiB")
        self.node_chunk_spin.setValue(sizing.DEFAULT_NODE_CHUNK_BYTES // 1024)
        adv.addRow("Node chunk size:", self._with_error("node_chunk", self.node_chunk_spin))
        self.rep_chunk_spin = QSpinBox()
        self.rep_chunk_spin.setRange(0, 4096)
        self.rep_chunk_spin.setSuffix(" MiB")
        self.rep_chunk_spin.setValue(sizing.DEFAULT_REP_CHUNK_BYTES // (1024 * 1024))
        adv.addRow("Representative chunk size:", self._with_error("rep_chunk", self.rep_chunk_spin))
        self.advanced.hide()
        form.addRow(self.advanced)
        self._update_seed_enabled()

    def _make_preview(self) -> None:
        self._preview_box = QGroupBox("What will be built")
        form = QFormLayout(self._preview_box)
        for key, title in (("rows", "Rows:"), ("dim", "Dimension:"), ("dtype", "Source → stored dtype:"),
                           ("representatives", "Representatives (R):"), ("fan_out", "Fan-out:"),
                           ("nodes", "Nodes per level (at most):"), ("chunk_rows", "Rows per chunk:"),
                           ("size", "Estimated size on disk:")):
            value = QLabel("—")
            value.setObjectName(f"preview_{key}")
            value.setWordWrap(True)
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.preview_values[key] = value
            form.addRow(title, value)
        self.warnings_label = QLabel()
        self.warnings_label.setWordWrap(True)
        self.warnings_label.setStyleSheet(f"color: {_warning_color(self)};")
        self.warnings_label.hide()
        self.status_label = QLabel()
        self.status_label.setWordWrap(True)
        form.addRow(self.status_label)

    def _make_progress(self) -> None:
        self._progress_box = QGroupBox("Progress")
        column = QVBoxLayout(self._progress_box)
        self._phase_grid = QGridLayout()
        self._phase_grid.setColumnStretch(1, 1)
        column.addLayout(self._phase_grid)
        self.speed_label = QLabel()
        column.addWidget(self.speed_label)
        self._progress_box.hide()

    def _connect_changes(self) -> None:
        self.input_edit.textChanged.connect(self._input_changed)
        self.output_edit.textEdited.connect(self._output_edited)
        self.output_edit.textChanged.connect(self._schedule_check)
        self.overwrite_check.toggled.connect(self._schedule_check)
        for spin in (self.levels_spin, self.target_spin, self.seed_spin, self.node_chunk_spin,
                     self.rep_chunk_spin):
            spin.valueChanged.connect(self._schedule_check)
        for combo in (self.metric_combo, self.dtype_combo, self.rep_combo):
            combo.currentIndexChanged.connect(self._schedule_check)
        self.rep_combo.currentIndexChanged.connect(self._update_seed_enabled)
        self.normalized_check.toggled.connect(self._schedule_check)

    def _toggle_advanced(self, shown: bool) -> None:
        self.advanced.setVisible(shown)
        self.advanced_button.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)
        self._fit_height()

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

    def _update_seed_enabled(self) -> None:
        self.seed_spin.setEnabled(self.rep_combo.currentData() == "random")

    def _input_changed(self, text: str) -> None:
        if self._output_auto:
            self.output_edit.setText(self._default_output(text))
        self._schedule_check()

    def _output_edited(self, text: str) -> None:
        self._output_auto = not text.strip()

    def _default_output(self, input_text: str) -> str:
        """``<stem>.zarr`` in the last output folder used (else beside the input)."""
        text = input_text.strip()
        if not text:
            return ""
        source = Path(text.partition("#")[0]).expanduser()
        folder = settings().value(f"{_SETTINGS_GROUP}/output_dir", "") or str(source.parent)
        return str(Path(folder) / f"{source.stem}.zarr")

    def _browse_input(self) -> None:
        start = self.input_edit.text().strip() or settings().value(f"{_SETTINGS_GROUP}/input_dir", "")
        path, _ = QFileDialog.getOpenFileName(self, "Vectors to index", str(start),
                                              "NumPy arrays (*.npy);;All files (*)")
        if path:
            self.input_edit.setText(path)

    def _browse_output(self) -> None:
        start = self.output_edit.text().strip() or settings().value(f"{_SETTINGS_GROUP}/output_dir", "")
        path, _ = QFileDialog.getSaveFileName(self, "Index folder to create", str(start),
                                              "Zarr stores (*.zarr);;All files (*)",
                                              options=QFileDialog.Option.DontConfirmOverwrite)
        if path:
            self._output_auto = False
            self.output_edit.setText(path)

    def params(self) -> BuildParams:
        """The parameters as the form shows them now."""
        random = self.rep_combo.currentData() == "random"
        seed = self.seed_spin.value()
        return BuildParams(
            levels=self.levels_spin.value(),
            target_cluster_items=self.target_spin.value(),
            metric=self.metric_combo.currentData(),
            is_normalized=self.normalized_check.isChecked(),
            dtype=self.dtype_combo.currentData(),
            rep_selection="random" if random else "offset",
            seed=seed if random and seed >= 0 else None,
            node_chunk_bytes=self.node_chunk_spin.value() * 1024,
            rep_chunk_bytes=self.rep_chunk_spin.value() * 1024 * 1024,
        )

    # ----------------------------------------------------------------------------- checking

    def _schedule_check(self, *_args: object) -> None:
        """Something changed: forget the last check and run a new one shortly."""
        self._check = None
        self._preview_runner.invalidate()
        self.build_button.setEnabled(False)
        self._debounce.start()

    def _start_check(self) -> None:
        self.status_label.setText("Checking…")
        self._preview_runner.run(check_form, self.input_edit.text().strip(), self.output_edit.text(),
                                 self.overwrite_check.isChecked(), self.params(),
                                 on_result=self._show_check, on_error=self._check_failed)

    def _check_failed(self, message: str) -> None:
        self.status_label.setText(f"Could not check the form: {message}")

    def _show_check(self, check: FormCheck) -> None:
        self._check = check
        preview = check.preview
        errors: dict[str, list[str]] = {name: [] for name in _FIELDS}
        source = self.input_edit.text().strip()
        if not source:
            errors["input"].append("choose a .npy file of vectors")
        else:
            for message in preview.errors:
                field_name = field_of_error(message)
                if field_name == "input" and message.startswith(f"{preview.source}: "):
                    message = message[len(preview.source) + 2:]  # the field already shows the path
                errors[field_name].append(message)
        if check.output_error:
            errors["output"].append(check.output_error)
        for name, label in self.field_errors.items():
            label.setText("\n".join(errors[name]))
            label.setVisible(bool(errors[name]))
        if errors["node_chunk"] or errors["rep_chunk"]:
            self.advanced_button.setChecked(True)
        self._show_preview(preview)
        self._fit_height()
        invalid = sum(bool(v) for v in errors.values())
        self.status_label.setText(
            "Ready to build." if not invalid else
            f"Fix the {'field' if invalid == 1 else f'{invalid} fields'} marked in red to build."
        )
        self.build_button.setEnabled(not invalid and self._build_request is None)

    def _show_preview(self, p: BuildPreview) -> None:
        known = p.rows > 0
        complete = known and p.ok
        v = self.preview_values
        v["rows"].setText(f"{p.rows:,}" if known else "—")
        v["dim"].setText(f"{p.dim:,}" if known else "—")
        if complete:
            v["dtype"].setText(f"{p.source_dtype} → {p.stored_dtype}")
        else:
            v["dtype"].setText(p.source_dtype or "—")
        v["representatives"].setText(f"{p.representatives:,}" if complete else "—")
        v["fan_out"].setText(f"{p.fan_out:,}" if complete else "—")
        v["nodes"].setText(" · ".join(f"{n:,}" for n in p.max_nodes_per_level) if complete else "—")
        v["nodes"].setToolTip("\n".join(f"lvl_{i}: at most {n:,} nodes"
                                        for i, n in enumerate(p.max_nodes_per_level, 1)) if complete else "")
        v["chunk_rows"].setText(f"{p.node_chunk_rows:,} (nodes) · {p.rep_chunk_rows:,} (reps)"
                                if complete else "—")
        v["size"].setText(f"about {format_bytes(p.estimated_bytes)}" if complete else "—")
        self.warnings_label.setText("\n".join(f"⚠ {w}" for w in p.warnings))
        self.warnings_label.setVisible(bool(p.warnings))

    # ----------------------------------------------------------------------------- building

    def start_build(self) -> None:
        """Start the build with the checked form (the Build button)."""
        check = self._check
        if check is None or check.output_error or not check.preview.ok or self._build_request is not None:
            return
        self._save_settings()
        self._clear_phases()
        self.message.hide()
        self._form_box.setEnabled(False)
        self.build_button.setEnabled(False)
        self._progress_box.show()
        self.status_label.setText("Building…")
        self._fit_height()
        self._cancelling = False
        self._rows_total = check.preview.rows
        self._rows_rate = None
        self._elapsed.start()
        self._clock.start()
        self._update_status()
        output = str(Path(self.output_edit.text().strip()).expanduser())
        self._build_request = self._build_runner.run(
            _run_build, self.input_edit.text().strip(), output, self.params(),
            self.overwrite_check.isChecked(),
            on_result=self._build_done, on_error=self._build_failed, on_progress=self._build_progress,
        )

    def _clear_phases(self) -> None:
        for row in self._phases.values():
            row.label.deleteLater()
            row.bar.deleteLater()
        self._phases.clear()

    def _build_progress(self, p: BuildProgress) -> None:
        row = self._phases.get(p.phase)
        now = self._elapsed.elapsed() / 1000.0
        if row is None:
            for earlier in self._phases.values():
                earlier.finish()
            row = self._phases[p.phase] = _PhaseRow(self._phase_grid, len(self._phases), p.phase)
            self._phase_started = now
            self._fit_height()
        row.show(p.done, p.total, "" if p.message == self.input_edit.text().strip() else p.message)
        if p.total == self._rows_total and now > self._phase_started:
            self._rows_rate = p.done / (now - self._phase_started)

    def _update_status(self) -> None:
        seconds = self._elapsed.elapsed() / 1000.0 if self._elapsed.isValid() else 0.0
        text = f"Elapsed {seconds:.1f} s"
        if self._rows_rate:
            text += f" · {self._rows_rate:,.0f} rows/s"
        if self._cancelling:
            text += " · cancelling…"
        self.speed_label.setText(text)

    def _cancel_clicked(self) -> None:
        if self._build_request is None:
            self.reject()
            return
        self._cancelling = True
        self.cancel_button.setEnabled(False)
        self._build_runner.cancel(self._build_request)
        self._update_status()

    def _finish_build(self) -> None:
        self._build_request = None
        self._clock.stop()
        self._update_status()
        self._form_box.setEnabled(True)
        self.cancel_button.setEnabled(True)

    def _build_done(self, result: BuildResult) -> None:
        self._finish_build()
        for row in self._phases.values():
            row.finish()
        self._show_message(f"Built {result.output} in {result.seconds:.1f} s.", error=False)
        self.index_built.emit(str(result.output))
        self.accept()

    def _build_failed(self, message: str) -> None:
        cancelled = self._cancelling or "BuildCancelled" in message
        self._finish_build()
        if cancelled:
            self._show_message("Build cancelled; nothing was written.", error=False)
        else:
            self._show_message(f"Build failed: {message}", error=True)
        self._cancelling = False
        if self._close_when_done:
            super().reject()
            return
        self._schedule_check()

    def _show_message(self, text: str, *, error: bool) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(f"color: {_error_color(self)};" if error else "")
        self.message.show()
        self._fit_height()

    def reject(self) -> None:
        """Closing while a build runs cancels it first (nothing is left on disk), then closes."""
        if self._build_request is not None:
            self._close_when_done = True
            self._cancel_clicked()
            return
        super().reject()

    @property
    def building(self) -> bool:
        return self._build_request is not None

    # ----------------------------------------------------------------------------- settings

    def _restore_settings(self) -> None:
        s = settings()
        s.beginGroup(_SETTINGS_GROUP)
        try:
            self.levels_spin.setValue(int(s.value("levels", self.levels_spin.value())))
            self.target_spin.setValue(int(s.value("target_cluster_items", self.target_spin.value())))
            _select_data(self.metric_combo, s.value("metric", "L2"))
            _select_data(self.dtype_combo, s.value("dtype", "native"))
            _select_data(self.rep_combo, s.value("rep_selection", "offset"))
            self.seed_spin.setValue(int(s.value("seed", -1)))
            self.normalized_check.setChecked(str(s.value("is_normalized", "false")).lower() == "true")
            self.node_chunk_spin.setValue(int(s.value("node_chunk_kib", self.node_chunk_spin.value())))
            self.rep_chunk_spin.setValue(int(s.value("rep_chunk_mib", self.rep_chunk_spin.value())))
            self.advanced_button.setChecked(str(s.value("advanced_open", "false")).lower() == "true")
        except (TypeError, ValueError):
            pass  # a hand-edited or foreign settings file: keep the defaults set above
        finally:
            s.endGroup()
        self._update_seed_enabled()

    def _save_settings(self) -> None:
        p = self.params()
        s = settings()
        s.beginGroup(_SETTINGS_GROUP)
        s.setValue("levels", p.levels)
        s.setValue("target_cluster_items", p.target_cluster_items)
        s.setValue("metric", p.metric)
        s.setValue("dtype", p.dtype)
        s.setValue("rep_selection", p.rep_selection)
        s.setValue("seed", self.seed_spin.value())
        s.setValue("is_normalized", "true" if p.is_normalized else "false")
        s.setValue("node_chunk_kib", self.node_chunk_spin.value())
        s.setValue("rep_chunk_mib", self.rep_chunk_spin.value())
        s.setValue("advanced_open", "true" if self.advanced_button.isChecked() else "false")
        source = Path(self.input_edit.text().strip().partition("#")[0]).expanduser()
        s.setValue("input_dir", str(source.parent))
        s.setValue("output_dir", str(Path(self.output_edit.text().strip()).expanduser().parent))
        s.endGroup()
        s.sync()


def _select_data(combo: QComboBox, value: object) -> None:
    index = combo.findData(value)
    if index >= 0:
        combo.setCurrentIndex(index)


def _run_build(source: str, output: str, params: BuildParams, overwrite: bool, *,
               progress, cancel) -> BuildResult:
    """The worker side of a build: BackgroundRunner passes progress= and cancel=."""
    return build_index(source, output, params, overwrite=overwrite, progress=progress, cancel=cancel)
