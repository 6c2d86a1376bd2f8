"""The form of the Tune dialog: the .npy, the grid, the queries, the target, where variants are kept and
where they are built (this machine, or the workers of a dask cluster).

It reads its widgets into the model's :class:`TuneGrid` and :class:`TuneSettings` (or one message
naming the field that is wrong), and remembers what was typed for the next time it opens.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from ecpfs_viewer.gui.runtime.settings import settings
from ecpfs_viewer.gui.widgets.fields import hbox, npy_field, spin_box
from ecpfs_viewer.model.search.cluster import is_cluster, scheduler_problem
from ecpfs_viewer.model.tuning.tune import TuneGrid, TuneSettings

_KEY = "tune/"


def parse_numbers(text: str, name: str, least: int) -> tuple[int, ...]:
    """'1, 2 3' -> (1, 2, 3) without repeats; ValueError naming the field otherwise."""
    found: list[int] = []
    for part in text.replace(",", " ").split():
        if not part.isdigit() or int(part) < least:
            raise ValueError(f"{name}: whole numbers of at least {least}, separated by commas; {part!r} is not one")
        if int(part) not in found:
            found.append(int(part))
    if not found:
        raise ValueError(f"{name}: give at least one value")
    return tuple(found)


class TuneForm(QWidget):
    """What to tune; ``changed`` fires on every edit."""

    changed = Signal()

    def __init__(self, input_path: str | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        stored = settings()
        self.input_edit, browse = npy_field("Embeddings to tune on", "embeddings.npy",
                                            text=input_path or str(stored.value(_KEY + "input", "")))
        self.levels_edit = QLineEdit(str(stored.value(_KEY + "levels", "1, 2, 3")))
        self.levels_edit.setToolTip("levels to try, e.g. 1, 2, 3")
        self.targets_edit = QLineEdit(str(stored.value(_KEY + "targets", "25, 50, 100, 200")))
        self.targets_edit.setToolTip("target_cluster_items to try (average leaf size)")
        self.offset_check = QCheckBox("offset")
        self.offset_check.setChecked(True)
        self.random_check = QCheckBox("random")
        self.metric_combo = QComboBox()
        self.metric_combo.addItems(["L2", "IP"])
        self.source_combo = QComboBox()
        self.source_combo.addItem("Hold out rows of the input", "holdout")
        self.source_combo.addItem("Rows of a query .npy", "file")
        self.holdout_spin = spin_box(1, 1_000_000, 200, "rows left out of every build and used as queries", "N ")
        self.queries_edit, queries_browse = npy_field("Queries")
        self.k_spin = spin_box(1, 10_000, 10, "recall@k: how many exact neighbours each search should find", "k ")
        self.exps_edit = QLineEdit(str(stored.value(_KEY + "search_exps", "1, 2, 4, 8, 16")))
        self.exps_edit.setToolTip("search_exp values of each variant's recall sweep")
        self.target_spin = QDoubleSpinBox()
        self.target_spin.setRange(0.01, 1.0)
        self.target_spin.setSingleStep(0.01)
        self.target_spin.setDecimals(3)
        self.target_spin.setValue(0.9)
        self.keep_check = QCheckBox("Keep the variants in")
        self.keep_edit = QLineEdit(str(stored.value(_KEY + "keep", "")))
        self.keep_edit.setPlaceholderText("a new folder (else they are removed at the end)")
        keep_browse = QPushButton("Browse…")
        keep_browse.clicked.connect(self._browse_keep)
        self.scheduler_edit = QLineEdit(str(stored.value(_KEY + "scheduler", "")))
        self.scheduler_edit.setPlaceholderText("this machine; or tcp://HOST:PORT of a dask cluster")
        self.scheduler_edit.setToolTip("Build and measure each variant on a worker of this dask.distributed "
                                       "scheduler (the scale extra; the workers read the input by its path, "
                                       "so it must be one they share). Empty: on this machine.")

        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Input .npy", hbox(self.input_edit, browse))
        form.addRow("Levels", self.levels_edit)
        form.addRow("Target cluster items", self.targets_edit)
        form.addRow("Representatives", hbox(self.offset_check, self.random_check, QLabel("  metric"),
                                            self.metric_combo, stretch=None))
        form.addRow("Queries", hbox(self.source_combo, self.holdout_spin, self.queries_edit, queries_browse, stretch=2))
        form.addRow("Recall", hbox(self.k_spin, QLabel("search_exp"), self.exps_edit, self.target_spin, stretch=2))
        form.addRow(self.keep_check, hbox(self.keep_edit, keep_browse))
        form.addRow("Scheduler", self.scheduler_edit)
        self.target_spin.setPrefix("target ")
        for edit in (self.input_edit, self.levels_edit, self.targets_edit, self.exps_edit, self.queries_edit,
                     self.keep_edit, self.scheduler_edit):
            edit.textChanged.connect(self.changed)
        for check in (self.offset_check, self.random_check, self.keep_check):
            check.toggled.connect(self.changed)
        self.metric_combo.currentIndexChanged.connect(self.changed)
        self.source_combo.currentIndexChanged.connect(self._source_changed)
        self._source_changed()

    def _source_changed(self) -> None:
        holdout = self.source_combo.currentData() == "holdout"
        self.holdout_spin.setVisible(holdout)
        self.queries_edit.setVisible(not holdout)
        self.changed.emit()

    def source(self) -> str:
        return self.input_edit.text().strip()

    def scheduler(self) -> str | None:
        """The dask scheduler address to tune on, None for this machine; ValueError naming the field."""
        text = self.scheduler_edit.text().strip()
        if not text:
            return None
        problem = scheduler_problem(text)
        if problem is not None or not is_cluster(text):
            raise ValueError(f"Scheduler: an address like tcp://HOST:PORT, or empty for this machine (got {text!r})")
        if self.keep_check.isChecked():
            raise ValueError("Scheduler: variants built on a cluster are not kept; untick Keep or empty Scheduler")
        return text

    def grid(self) -> TuneGrid:
        """The grid the form shows; ValueError with a message naming the field."""
        selections = tuple(name for name, check in (("offset", self.offset_check), ("random", self.random_check))
                           if check.isChecked())
        if not selections:
            raise ValueError("Representatives: tick offset, random or both")
        return TuneGrid(levels=parse_numbers(self.levels_edit.text(), "Levels", 1),
                        target_cluster_items=parse_numbers(self.targets_edit.text(), "Target cluster items", 1),
                        rep_selections=selections, metric=self.metric_combo.currentText())

    def read(self) -> tuple[TuneGrid, TuneSettings]:
        """The grid and settings the form shows; ValueError with a message naming the field."""
        if not self.source():
            raise ValueError("Input .npy: choose the embeddings to tune on")
        grid = self.grid()
        queries = None
        if self.source_combo.currentData() == "file":
            queries = self.queries_edit.text().strip()
            if not queries:
                raise ValueError("Queries: choose a query .npy, or hold out rows of the input")
        keep = None
        if self.keep_check.isChecked():
            keep = self.keep_edit.text().strip()
            if not keep:
                raise ValueError("Keep: choose a folder for the variants, or untick it")
        tune_settings = TuneSettings(k=self.k_spin.value(),
                                     search_exps=parse_numbers(self.exps_edit.text(), "search_exp", 0),
                                     holdout=self.holdout_spin.value(), queries=queries,
                                     recall_target=self.target_spin.value(), keep=keep)
        return grid, tune_settings

    def save_settings(self) -> None:
        stored = settings()
        for key, edit in (("input", self.input_edit), ("levels", self.levels_edit), ("targets", self.targets_edit),
                          ("search_exps", self.exps_edit), ("keep", self.keep_edit),
                          ("scheduler", self.scheduler_edit)):
            stored.setValue(_KEY + key, edit.text())

    def _browse_keep(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Keep the variants in", self.keep_edit.text())
        if path:
            self.keep_edit.setText(path)
            self.keep_check.setChecked(True)
