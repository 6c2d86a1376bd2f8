"""The form part of the Build dialog: input, output and parameters, each with its problem underneath,
and the "What will be built" box that shows the builder's preview.

The form only collects values and shows what it is told: the checking itself is the model's
(:func:`ecpfs_viewer.model.build.builder.preview_build`), run by the dialog.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from PySide6.QtCore import QStandardPaths, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.runtime.settings import settings
from ecpfs_viewer.gui.widgets.colormaps import error_color, is_dark
from ecpfs_viewer.model.build.builder import PROBLEM_FIELDS, BuildParams, BuildPreview, BuildProblem
from ecpfs_viewer.model.ecpfs import sizing
from ecpfs_viewer.model.ecpfs.paths import level_path
from ecpfs_viewer.model.formatting import format_bytes

SETTINGS_GROUP = "build_dialog"


def _warning_color(widget: QWidget) -> str:
    return "#e3b341" if is_dark(widget.palette()) else "#8a5a00"


def _int(value: object) -> int:
    """A remembered number (QSettings gives str or int); ValueError for anything else."""
    if isinstance(value, int | str):
        return int(value)
    raise ValueError(f"not a number: {value!r}")


def writable_folder(folder: Path) -> bool:
    """True when ``folder`` exists and this user may create entries in it (as the builder checks)."""
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


def documents_folder() -> Path | None:
    """The user's Documents folder, when the desktop names one."""
    found = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    return Path(found) if found else None


def free_index_path(folder: Path, stem: str) -> Path:
    """``<stem>.zarr`` in folder, or ``<stem>-2.zarr`` … when an index of that name is there already."""
    candidate = folder / f"{stem}.zarr"
    number = 2
    while candidate.exists() and number < 1000:
        candidate = folder / f"{stem}-{number}.zarr"
        number += 1
    return candidate


def _select_data(combo: QComboBox, value: object) -> None:
    index = combo.findData(value)
    if index >= 0:
        combo.setCurrentIndex(index)


class BuildForm(QGroupBox):
    """Input, output and parameters; ``changed`` fires on every edit, problems show under their field."""

    changed = Signal()
    #: The Advanced section opened or closed (the dialog grows to fit).
    resized = Signal()

    def __init__(self, parent: QWidget | None = None, input_path: str | None = None) -> None:
        super().__init__("Input and parameters", parent)
        self.field_errors: dict[str, QLabel] = {}
        self._output_auto = True  # the output path follows the input until the user edits it
        self._make_fields()
        self.restore_settings()
        if input_path:
            self.input_edit.setText(os.fspath(input_path))
            self.output_edit.setText(self._default_output(self.input_edit.text()))
        else:
            self._restore_paths()
        self._connect_changes()

    # ----------------------------------------------------------------------------- layout

    def _error_label(self, name: str, reserve: bool) -> QLabel:
        label = QLabel()
        label.setWordWrap(True)
        label.setObjectName(f"error_{name}")
        label.setStyleSheet(f"color: {error_color(self)};")
        if reserve:  # one line is kept free, so a message appearing or going moves nothing
            policy = label.sizePolicy()
            policy.setRetainSizeWhenHidden(True)
            label.setSizePolicy(policy)
            label.setMinimumHeight(label.fontMetrics().lineSpacing())
        label.hide()
        self.field_errors[name] = label
        return label

    def _with_error(self, name: str, *widgets: QWidget, reserve: bool = True) -> QWidget:
        """A field (one or more widgets in a row) with its error label underneath.

        ``reserve`` keeps a line for the message even when there is none: every field the user
        can get wrong has one, so the form does not jump while typing (a choice from a list cannot
        be wrong, so those rows stay compact).
        """
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
        column.addWidget(self._error_label(name, reserve))
        return box

    def _make_fields(self) -> None:
        form = QFormLayout(self)
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
        output_box = self._with_error("output", self.output_edit, browse_out)
        self.output_note = QLabel()  # why the proposed folder is not the one the user would expect
        self.output_note.setObjectName("output_note")
        self.output_note.setWordWrap(True)
        self.output_note.setStyleSheet(f"color: {_warning_color(self)};")
        self.output_note.hide()
        output_layout = output_box.layout()
        assert isinstance(output_layout, QVBoxLayout)
        output_layout.insertWidget(1, self.output_note)  # under the field, above its (reserved) error line
        form.addRow("Output index:", output_box)
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
        form.addRow("Metric:", self._with_error("metric", self.metric_combo, reserve=False))

        self.dtype_combo = QComboBox()
        for choice in sizing.DTYPE_CHOICES:
            text = "native (as the input; float64 → float32)" if choice == "native" else choice
            self.dtype_combo.addItem(text, choice)
        form.addRow("Stored dtype:", self._with_error("dtype", self.dtype_combo, reserve=False))

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
        form.addRow("Representatives:", self._with_error("rep_selection", self.rep_combo, self.seed_spin,
                                                          reserve=False))

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

    def _connect_changes(self) -> None:
        self.input_edit.textChanged.connect(self._input_changed)
        self.output_edit.textEdited.connect(self._output_edited)
        self.output_edit.textChanged.connect(self.changed)
        self.overwrite_check.toggled.connect(self.changed)
        for spin in (self.levels_spin, self.target_spin, self.seed_spin, self.node_chunk_spin,
                     self.rep_chunk_spin):
            spin.valueChanged.connect(self.changed)
        for combo in (self.metric_combo, self.dtype_combo, self.rep_combo):
            combo.currentIndexChanged.connect(self.changed)
        self.rep_combo.currentIndexChanged.connect(self._update_seed_enabled)
        self.normalized_check.toggled.connect(self.changed)

    def _toggle_advanced(self, shown: bool) -> None:
        self.advanced.setVisible(shown)
        self.advanced_button.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)
        self.resized.emit()

    def _update_seed_enabled(self) -> None:
        self.seed_spin.setEnabled(self.rep_combo.currentData() == "random")

    # ----------------------------------------------------------------------------- values

    def _input_changed(self, text: str) -> None:
        if self._output_auto:
            self.output_edit.setText(self._default_output(text))
        self.changed.emit()

    def _output_edited(self, text: str) -> None:
        self._output_auto = not text.strip()
        self._say_why("")  # the user's own path: the check speaks about it

    def _say_why(self, note: str) -> None:
        self.output_note.setText(note)
        self.output_note.setVisible(bool(note))
        self.output_edit.setToolTip(note)
        self.resized.emit()

    def _default_output(self, input_text: str) -> str:
        """A free ``<stem>.zarr`` in the last output folder used, else beside the input, else in the
        user's Documents or home folder; "" when none of them can be written.

        Only a folder this user can write is proposed (the test the builder makes: os.access), so
        a file opened from a read-only share or a system folder gets an output that can be built,
        and the note under the field says why the index does not go where the user expected.
        """
        text = input_text.strip()
        if not text:
            self._say_why("")
            return ""
        source = Path(text.partition("#")[0]).expanduser()
        remembered = str(settings().value(f"{SETTINGS_GROUP}/output_dir", "") or "")
        expected = [(Path(remembered), "the last output folder")] if remembered else []
        expected.append((source.absolute().parent, "the folder of the vectors"))
        documents = documents_folder()
        fallbacks = [(documents, "your Documents folder")] if documents is not None else []
        fallbacks.append((Path.home(), "your home folder"))
        usable = [(c, name) for c, name in expected + fallbacks if writable_folder(c)]
        first, first_name = expected[0]
        if not usable:
            self._say_why(f"No folder to propose: {first_name} ({first}), {fallbacks[-1][1]} and the others "
                          "cannot be written. Choose a folder you can write.")
            return ""
        folder, name = usable[0]
        self._say_why("" if folder == first else
                      f"{first_name.capitalize()} ({first}) cannot be written, so the index goes to {name}.")
        return str(free_index_path(folder, source.stem))

    def _restore_paths(self) -> None:
        """The input of the last build, and its output while nothing is there yet (a build that
        failed or was cancelled); once built, a free name in a folder this user can write."""
        remembered_input = str(settings().value(f"{SETTINGS_GROUP}/input_path", "") or "")
        if not remembered_input or not Path(remembered_input.partition("#")[0]).expanduser().exists():
            return
        self.input_edit.setText(remembered_input)
        output = Path(str(settings().value(f"{SETTINGS_GROUP}/output_path", "") or "")).expanduser()
        if output.name and not output.exists() and writable_folder(output.parent):
            self._output_auto = False
            self.output_edit.setText(str(output))
        else:
            self.output_edit.setText(self._default_output(remembered_input))

    def _browse_input(self) -> None:
        start = self.input_edit.text().strip() or settings().value(f"{SETTINGS_GROUP}/input_dir", "")
        path, _ = QFileDialog.getOpenFileName(self, "Vectors to index", str(start),
                                              "NumPy arrays (*.npy);;All files (*)")
        if path:
            self.input_edit.setText(path)

    def _browse_output(self) -> None:
        start = self.output_edit.text().strip() or settings().value(f"{SETTINGS_GROUP}/output_dir", "")
        path, _ = QFileDialog.getSaveFileName(self, "Index folder to create", str(start),
                                              "Zarr stores (*.zarr);;All files (*)",
                                              options=QFileDialog.Option.DontConfirmOverwrite)
        if path:
            self._output_auto = False
            self.output_edit.setText(path)

    def source(self) -> str:
        """The input as typed (a .npy path or store.zarr#array)."""
        return self.input_edit.text().strip()

    def output(self) -> str:
        """The output path as typed."""
        return self.output_edit.text()

    def overwrite(self) -> bool:
        return self.overwrite_check.isChecked()

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

    def show_problems(self, problems: Iterable[BuildProblem]) -> int:
        """Show each problem under its field (the field shows the path, so not its subject); how many fields."""
        messages: dict[str, list[str]] = {name: [] for name in PROBLEM_FIELDS}
        for problem in problems:
            messages[problem.field].append(problem.message)
        for name, label in self.field_errors.items():
            label.setText("\n".join(messages[name]))
            label.setVisible(bool(messages[name]))
        if messages["node_chunk"] or messages["rep_chunk"]:
            self.advanced_button.setChecked(True)
        return sum(bool(m) for m in messages.values())

    # ----------------------------------------------------------------------------- settings

    def restore_settings(self) -> None:
        """The parameters of the last build (a hand-edited settings file keeps the defaults)."""
        s = settings()
        s.beginGroup(SETTINGS_GROUP)
        try:
            self.levels_spin.setValue(_int(s.value("levels", self.levels_spin.value())))
            self.target_spin.setValue(_int(s.value("target_cluster_items", self.target_spin.value())))
            _select_data(self.metric_combo, s.value("metric", "L2"))
            _select_data(self.dtype_combo, s.value("dtype", "native"))
            _select_data(self.rep_combo, s.value("rep_selection", "offset"))
            self.seed_spin.setValue(_int(s.value("seed", -1)))
            self.normalized_check.setChecked(str(s.value("is_normalized", "false")).lower() == "true")
            self.node_chunk_spin.setValue(_int(s.value("node_chunk_kib", self.node_chunk_spin.value())))
            self.rep_chunk_spin.setValue(_int(s.value("rep_chunk_mib", self.rep_chunk_spin.value())))
            self.advanced_button.setChecked(str(s.value("advanced_open", "false")).lower() == "true")
        except (TypeError, ValueError):
            pass  # a hand-edited or foreign settings file: keep the defaults set above
        finally:
            s.endGroup()
        self._update_seed_enabled()

    def save_settings(self) -> None:
        """Remember the parameters and folders for the next build."""
        p = self.params()
        s = settings()
        s.beginGroup(SETTINGS_GROUP)
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
        if self.source():
            source = Path(self.source().partition("#")[0]).expanduser()
            s.setValue("input_path", self.source())
            s.setValue("input_dir", str(source.parent))
        output = self.output_edit.text().strip()
        if output and Path(output).expanduser().is_absolute():
            s.setValue("output_path", output)
            s.setValue("output_dir", str(Path(output).expanduser().parent))
        s.endGroup()
        s.sync()


def size_text(p: BuildPreview) -> str:
    """'about 265.0 MiB on disk: 55,579 files and folders, 60.3 MiB of it data'."""
    return (f"about {format_bytes(p.estimated_bytes)} on disk: {p.estimated_files:,} files and folders, "
            f"{format_bytes(p.estimated_apparent_bytes)} of it data")


class PreviewBox(QGroupBox):
    """"What will be built": the preview's numbers, a status line and the warnings, under the numbers.

    The warnings sit in this column, beside the taller form, so they appear and go without moving
    any field or button.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("What will be built", parent)
        self.values: dict[str, QLabel] = {}
        form = QFormLayout(self)
        for key, title in (("rows", "Rows:"), ("dim", "Dimension:"), ("dtype", "Source → stored dtype:"),
                           ("representatives", "Representatives (R):"), ("fan_out", "Fan-out:"),
                           ("nodes", "Nodes per level (at most):"), ("chunk_rows", "Rows per chunk:"),
                           ("size", "Size (estimate):")):
            value = QLabel("—")
            value.setObjectName(f"preview_{key}")
            value.setWordWrap(True)
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.values[key] = value
            form.addRow(title, value)
        self.values["size"].setToolTip("Files rounded up to the disk's block size, plus one block per folder; "
                                       "chunks counted uncompressed")
        self.status_label = QLabel()
        self.status_label.setWordWrap(True)
        form.addRow(self.status_label)
        self.warnings_label = QLabel()
        self.warnings_label.setWordWrap(True)
        self.warnings_label.setStyleSheet(f"color: {_warning_color(self)};")
        self.warnings_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.warnings_label.hide()
        form.addRow(self.warnings_label)
        self.oversize_label = QLabel()  # an unusually large build, said before Build is pressed
        self.oversize_label.setObjectName("preview_oversize")
        self.oversize_label.setWordWrap(True)
        self.oversize_label.setStyleSheet(f"color: {_warning_color(self)};")
        self.oversize_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow(self.oversize_label)
        self.anyway_check = QCheckBox("Build it anyway")
        self.anyway_check.setToolTip("This size is meant: build it (as `build --force`)")
        form.addRow(self.anyway_check)
        self._form = form
        self._show_oversize(False)

    def show_preview(self, p: BuildPreview) -> None:
        """The numbers the preview could compute (a dash for the others) and its warnings."""
        known = p.rows > 0
        complete = p.representatives > 0  # the parameters were valid, so the tree could be sized
        v = self.values
        v["rows"].setText(f"{p.rows:,}" if known else "—")
        v["dim"].setText(f"{p.dim:,}" if known else "—")
        if complete:
            v["dtype"].setText(f"{p.source_dtype} → {p.stored_dtype}")
        else:
            v["dtype"].setText(p.source_dtype or "—")
        v["representatives"].setText(f"{p.representatives:,}" if complete else "—")
        v["fan_out"].setText(f"{p.fan_out:,}" if complete else "—")
        v["nodes"].setText(" · ".join(f"{n:,}" for n in p.max_nodes_per_level) if complete else "—")
        v["nodes"].setToolTip("\n".join(f"{level_path(i)}: at most {n:,} nodes"
                                        for i, n in enumerate(p.max_nodes_per_level, 1)) if complete else "")
        v["chunk_rows"].setText(f"{p.node_chunk_rows:,} (nodes) · {p.rep_chunk_rows:,} (reps)"
                                if complete else "—")
        v["size"].setText(size_text(p) if complete else "—")
        self.warnings_label.setText("\n".join(f"⚠ {w}" for w in p.warnings))
        self.warnings_label.setVisible(bool(p.warnings))
        oversize = p.oversize
        if oversize != self.oversize_label.text().removeprefix("⚠ ").rstrip("."):
            self.anyway_check.setChecked(False)  # "anyway" was said of another size
        self.oversize_label.setText(f"⚠ {oversize}." if oversize else "")
        self._show_oversize(bool(oversize))

    def _show_oversize(self, shown: bool) -> None:
        """The rows of the size question, shown or taken out of the layout (no spacing left behind)."""
        for widget in (self.oversize_label, self.anyway_check):
            self._form.setRowVisible(widget, shown)
