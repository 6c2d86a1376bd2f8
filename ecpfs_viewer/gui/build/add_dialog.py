"""Build ▸ Add Vectors…: the window's face of model/build/insert.py (what `ecpfs-viewer add` runs).

The user names the index folder to write (typed, browsed, or "Use the open index" — opening an
index for browsing never makes it a target by itself) and the .npy of rows. The checks run in the
background whenever either changes and are shown before Add can be pressed: the rows' count, type
and dimension, the ids they will get, and every problem or warning. The add runs off the GUI thread
with progress and Cancel (effective until the ids are reserved), then says the id range.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QFileDialog, QFormLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.fields import hbox, npy_field
from ecpfs_viewer.gui.widgets.run_controls import RunDialog
from ecpfs_viewer.gui.widgets.screen_fit import fit_to_screen
from ecpfs_viewer.gui.widgets.user_guide import guide_on_f1
from ecpfs_viewer.model.build.insert import AddPlan, AddResult, add_rows, check_add
from ecpfs_viewer.model.build.write_lock import UPSTREAM_NOT_COVERED
from ecpfs_viewer.model.tasks import TaskError

#: the checks wait this long after the last keystroke in a path field
CHECK_DELAY_MS = 300


def check_job(index: str, rows: str, progress: Any = None,
              cancel: threading.Event | None = None) -> tuple[str, str, AddPlan]:
    """The add's checks (runs in a worker: reading the rows may take a moment), with what was checked."""
    return index, rows, check_add(index, rows)[0]


def describe_plan(plan: AddPlan) -> str:
    """What the add will do, or why it cannot; one paragraph of lines for the dialog."""
    lines: list[str] = []
    facts = plan.facts
    if facts is not None:
        normalized = ", is_normalized" if facts.is_normalized else ""
        lines.append(f"Index: {facts.levels} levels, {facts.metric}{normalized}, dimension {facts.dim}, "
                     f"{facts.stored_dtype}, {facts.total_items:,} items, next item id {facts.next_item_id:,}")
    if plan.rows:
        lines.append(f"Rows: {plan.rows:,} × {plan.dim} {plan.rows_dtype}")
    if plan.ok and facts is not None:
        lines.append(f"They will get item ids {facts.next_item_id:,}..{facts.next_item_id + plan.rows - 1:,}.")
    lines += [f"Problem: {p}" for p in plan.problems]
    lines += [f"Warning: {w}" for w in plan.warnings]
    return "\n".join(lines)


class AddVectorsDialog(RunDialog):
    """Choose an index folder and a .npy, see the checks, add; ``added`` carries the index's path."""

    added = Signal(str)

    def __init__(self, parent: QWidget | None = None, open_index: str | None = None) -> None:
        super().__init__("Choose the index folder and the .npy of vectors to add.", parent)
        self.setWindowTitle("Add Vectors")
        self.run_button.setText("Add")
        self.run_button.setEnabled(False)
        self.added_result: AddResult | None = None
        self.plan: AddPlan | None = None
        self._open_index = open_index
        self.index = QLineEdit()
        self.index.setPlaceholderText("index folder (written in place)")
        browse_index = QPushButton("Browse…")
        browse_index.clicked.connect(self._browse_index)
        self.use_open = QPushButton("Use the Open Index")
        self.use_open.setEnabled(bool(open_index))
        self.use_open.setToolTip(open_index or "The open index is not a local folder (vectors are added to "
                                                "local folders only)")
        self.use_open.clicked.connect(lambda: self.index.setText(open_index or ""))
        self.rows, browse_rows = npy_field("Vectors to add", "vectors.npy")
        self.checks = QLabel()
        self.checks.setWordWrap(True)
        note = QLabel("Like upstream's insert: no rebalancing; ids are reserved first. Note: "
                      + UPSTREAM_NOT_COVERED.replace("`", "") + ".")
        note.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Index folder", hbox(self.index, browse_index, self.use_open))
        form.addRow(".npy of vectors", hbox(self.rows, browse_rows))
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.checks)
        layout.addWidget(note)
        layout.addLayout(self.controls.row)
        layout.addWidget(self.summary)
        self.checker = BackgroundRunner(self)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(CHECK_DELAY_MS)
        self._timer.timeout.connect(self.check)
        self.index.textChanged.connect(lambda _: self._timer.start())
        self.rows.textChanged.connect(lambda _: self._timer.start())
        fit_to_screen(self, 760, 300)
        guide_on_f1(self, "adding-vectors")

    def _browse_index(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Index folder to add to", self.index.text())
        if path:
            self.index.setText(path)

    # -- checks ---------------------------------------------------------------------------------
    def check(self) -> None:
        """Check the index and rows now (in the background); Add waits for a clean result."""
        self.run_button.setEnabled(False)
        self.plan = None
        index, rows = self.index.text().strip(), self.rows.text().strip()
        if not index or not rows:
            self.checks.setText("")
            return
        self.checks.setText("Checking …")
        self.checker.run(check_job, index, rows, on_result=self._checked, on_error=self._check_failed)

    def _checked(self, checked: tuple[str, str, AddPlan]) -> None:
        index, rows, plan = checked
        if (index, rows) != (self.index.text().strip(), self.rows.text().strip()):
            return  # the fields changed meanwhile: a newer check comes
        self.plan = plan
        self.checks.setText(describe_plan(plan))
        self.run_button.setEnabled(plan.ok and not self.busy)

    def _check_failed(self, error: TaskError) -> None:
        self.checks.setText(f"Problem: {error}")

    # -- the add --------------------------------------------------------------------------------
    def run(self) -> None:
        if self.plan is None or not self.plan.ok:
            return
        index, rows = self.index.text().strip(), self.rows.text().strip()
        self.controls.started(f"Adding {self.plan.rows:,} vectors to {Path(index).name} …")
        self._request = self.runner.run(add_rows, index, rows, on_result=self._done, on_error=self._failed,
                                        on_progress=self.controls.show_progress, heavy=True)

    def _done(self, result: AddResult) -> None:
        self.added_result = result
        ids = result.ids
        self.controls.finished(f"Added {len(ids):,} vectors: item ids {ids.start:,}..{ids.stop - 1:,} "
                               f"({result.leaves_appended:,} leaves appended, {len(result.leaves_created):,} "
                               f"created).")
        self.added.emit(str(result.index))
        self.check()  # the next add would start after these ids

    def _failed(self, error: TaskError) -> None:
        self.controls.failed(error)
        self.check()
