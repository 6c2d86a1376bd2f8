"""Diagnostics ▸ Drift…: the window's face of model/drift/report.py (what `ecpfs-viewer drift` runs).

The open index against a fresh build of its own items (made in a temporary folder and removed) or
an index the user names; search_exp, k, the query sample and the five thresholds are fields. The
report runs off the GUI thread with progress and Cancel; the verdict heads the result (in the error
colour when a rebuild is advised), with its reasons, the `build` command to copy, and the whole
report as the CLI prints it. A fresh build over Build's size guard is asked about, as Build asks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.widgets.colormaps import error_color
from ecpfs_viewer.gui.widgets.fields import command_line, hbox
from ecpfs_viewer.gui.widgets.run_controls import RunDialog
from ecpfs_viewer.model.drift.fresh import DriftOversize
from ecpfs_viewer.model.drift.report import DriftReport, DriftSettings, drift_report
from ecpfs_viewer.model.drift.text import report_lines
from ecpfs_viewer.model.drift.verdict import DriftThresholds
from ecpfs_viewer.model.ecpfs.opened_index import open_index
from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.search.index import index_reader
from ecpfs_viewer.model.tasks import TaskError

#: field label, DriftThresholds attribute, step, range, tooltip
THRESHOLD_FIELDS = (
    ("Recall drop", "recall_drop", 0.01, (0.0, 1.0), "recall@k fell this much below the fresh build's"),
    ("Cost ratio", "cost_ratio", 0.1, (1.0, 1000.0), "distance computations per search grew this many times"),
    ("Leaves over 4× target", "over_4x_share", 0.01, (0.0, 1.0),
     "this much more of the leaves (a share) hold over 4× the build's target than in the fresh build"),
    ("Imbalance ratio", "imbalance_ratio", 0.1, (1.0, 1000.0), "the leaves' imbalance factor grew this many times"),
    ("Own-leaf gap", "reach_gap", 0.01, (0.0, 1.0),
     "inserted items reach their own leaf this much less often than built ones"),
)


class DriftDialog(RunDialog):
    """Run the drift report on the open index; ``report`` holds the last one shown."""

    def __init__(self, reader: Callable[[], IndexReader], parent: QWidget | None = None) -> None:
        super().__init__("Press Run.", parent)
        self.setWindowTitle("Drift")
        self._reader = reader
        self.report: DriftReport | None = None
        self._force = False
        intro = QLabel("How far inserts have moved this index from a fresh build of its own items, and whether "
                       "to rebuild. A rebuild is advised when any threshold is crossed (docs/drift.md says why "
                       "these defaults).")
        intro.setWordWrap(True)
        self.against = QLineEdit()
        self.against.setPlaceholderText("empty: a fresh build in a temporary folder (removed afterwards)")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        self.search_exp = _spin(1, 4096, 4)
        self.k = _spin(1, 10_000, 10)
        self.sample = _spin(1, 100_000, 200)
        form = QFormLayout()
        form.addRow("Against", hbox(self.against, browse))
        form.addRow("search_exp", hbox(self.search_exp, QLabel("k"), self.k, QLabel("sampled queries"), self.sample,
                                       stretch=None))
        defaults = DriftThresholds()
        self.thresholds: dict[str, QDoubleSpinBox] = {}
        grid = QGridLayout()
        for i, (label, name, step, (low, high), tip) in enumerate(THRESHOLD_FIELDS):
            box = QDoubleSpinBox()
            box.setDecimals(2)
            box.setRange(low, high)
            box.setSingleStep(step)
            box.setValue(getattr(defaults, name))
            box.setToolTip(tip)
            self.thresholds[name] = box
            caption = QLabel(label)
            caption.setToolTip(tip)
            grid.addWidget(caption, i // 3, 2 * (i % 3))
            grid.addWidget(box, i // 3, 2 * (i % 3) + 1)
        form.addRow("Thresholds", _widget(grid))
        self.verdict = QLabel()
        self.verdict.setWordWrap(True)
        self.command, copy = command_line("Copy the build command", lambda: self.controls.say("Command copied."))
        self.details = QPlainTextEdit()
        self.details.setReadOnly(True)
        self.details.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.details.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addLayout(self.controls.row)
        layout.addWidget(self.summary)
        layout.addWidget(self.verdict)
        layout.addWidget(hbox(QLabel("Rebuild with"), self.command, copy, stretch=1))
        layout.addWidget(self.details, 1)
        self.resize(900, 680)

    def _browse(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "A fresh build of the same items", self.against.text())
        if path:
            self.against.setText(path)

    def settings(self) -> DriftSettings:
        thresholds = DriftThresholds(**{name: box.value() for name, box in self.thresholds.items()})
        return DriftSettings(search_exp=self.search_exp.value(), k=self.k.value(), sample=self.sample.value(),
                             thresholds=thresholds, force=self._force)

    def run(self) -> None:
        against = self.against.text().strip() or None
        self.controls.started("Measuring drift …" if against else "Building a fresh copy of the index's items …")
        self._request = self.runner.run(self._job, self.settings(), against, on_result=self._show,
                                        on_error=self._failed, on_progress=self.controls.show_progress, heavy=True)

    def _job(self, settings: DriftSettings, against: str | None, progress: Any = None,
             cancel: Any = None) -> DriftReport:
        other = index_reader(open_index(against)) if against else None
        return drift_report(self._reader(), other, settings, progress=progress, cancel=cancel)

    def _show(self, report: DriftReport) -> None:
        self.report = report
        self._force = False
        v = report.verdict
        crossed = f" ({len(v.reasons)} of {len(v.checks)} thresholds crossed)" if v.rebuild else ""
        self.controls.finished(("Rebuild advised" + crossed if v.rebuild else "No rebuild needed") + ".")
        reasons = "".join(f"<li>{_escape(r)}</li>" for r in v.reasons)
        text = (f"<b>Rebuild advised</b> because:<ul>{reasons}</ul>" if v.rebuild
                else "<b>No rebuild needed</b>: every figure is within its threshold of a fresh build.")
        self.verdict.setText(text)
        self.verdict.setStyleSheet(f"color: {error_color(self.verdict)};" if v.rebuild else "")
        self.command.setText(v.command)
        self.command.setCursorPosition(0)
        self.details.setPlainText("\n".join(report_lines(report)))

    def _failed(self, error: TaskError) -> None:
        if error.is_a(DriftOversize) and not self._force:
            answer = QMessageBox.question(self, "Large fresh build", f"{error}\n\nBuild it anyway?")
            if answer == QMessageBox.StandardButton.Yes:
                self._force = True
                self.controls.idle()
                self.run()
                return
        self.controls.failed(error)


def _spin(low: int, high: int, value: int) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    return box


def _widget(layout: QGridLayout) -> QWidget:
    box = QWidget()
    box.setLayout(layout)
    layout.setContentsMargins(0, 0, 0, 0)
    return box


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


__all__ = ["DriftDialog"]
