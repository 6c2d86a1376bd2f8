"""How to rebuild a legacy index, under the verdict that says it needs it.

The exact ``ecpfs-viewer build`` command (from :func:`rebuild_plan`, copyable), and a button that
writes the index's own vectors to the ``.npy`` the command names (in the background) and then
opens the Build dialog on it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QGridLayout, QLabel, QPushButton, QWidget

from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.fields import command_line
from ecpfs_viewer.model.build.rebuild import RebuildPlan, plan_rebuild, write_item_vectors
from ecpfs_viewer.model.ecpfs import IndexSummary
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def _write_vectors(h: Hierarchy, summary: IndexSummary, out: Path, *, progress: Any,
                   cancel: threading.Event) -> str:
    write_item_vectors(h, summary, out, progress=lambda done, total: progress((done, total)), cancel=cancel)
    return str(out)


class RebuildBox(QWidget):
    """The rebuild command of one index, with Copy and 'Save Vectors, then Build…'."""

    build_requested = Signal(str)  # the .npy just written: open the Build dialog on it

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runner = BackgroundRunner(self)
        self._job: tuple[Hierarchy, IndexSummary, RebuildPlan] | None = None
        self.intro = QLabel()
        self.intro.setWordWrap(True)
        self.command, self.copy_button = command_line("Copy the command to the clipboard",
                                                      lambda: self.status.setText("Command copied."))
        self.save_button = QPushButton("Save Vectors, then Build…")
        self.save_button.clicked.connect(self.save_vectors)
        self.status = QLabel()
        self.status.setWordWrap(True)
        grid = QGridLayout(self)
        grid.setContentsMargins(0, 4, 0, 4)
        grid.addWidget(self.intro, 0, 0, 1, 3)
        grid.addWidget(self.command, 1, 0, 1, 3)  # the whole width: the command is long
        grid.addWidget(self.copy_button, 2, 1)
        grid.addWidget(self.save_button, 2, 2)
        grid.addWidget(self.status, 2, 0)
        grid.setColumnStretch(0, 1)
        self.hide()

    def offer(self, hierarchy: Hierarchy, summary: IndexSummary) -> None:
        """Work out the command in the background (it reads the leaf level's metadata), then show it."""
        self._runner.invalidate()
        self._job = None
        self._runner.run(plan_rebuild, hierarchy, summary,
                         on_result=lambda plan: self._show_plan(hierarchy, summary, plan),
                         on_error=lambda _message: self.hide())

    def _show_plan(self, hierarchy: Hierarchy, summary: IndexSummary, plan: RebuildPlan | None) -> None:
        if plan is None:  # not on disk, or no leaves to rebuild from
            return
        self._job = (hierarchy, summary, plan)
        self.intro.setText(f"To rebuild it from its own vectors: save them to <b>{plan.vectors.name}</b> beside "
                           f"it (leaves read in item-id order), then run:")
        self.command.setText(plan.command)
        self.command.setToolTip(plan.command)
        self.command.setCursorPosition(0)
        self.save_button.setEnabled(True)
        self.status.clear()
        self.show()

    def clear(self) -> None:
        self._runner.invalidate()
        self._job = None
        self.hide()

    @property
    def busy(self) -> bool:
        return self._runner.busy

    def save_vectors(self) -> None:
        """Write the vectors in the background, then ask for the Build dialog on them."""
        if self._job is None:
            return
        hierarchy, summary, plan = self._job
        self.save_button.setEnabled(False)
        self.status.setText(f"Writing {plan.vectors} …")
        self._runner.run(_write_vectors, hierarchy, summary, plan.vectors, on_result=self._saved,
                         on_error=self._failed, on_progress=self._progress, heavy=True)

    def _progress(self, value: tuple[int, int]) -> None:
        self.status.setText(f"Writing the vectors: {value[0]:,} of {value[1]:,} steps …")

    def _saved(self, path: str) -> None:
        self.save_button.setEnabled(True)
        self.status.setText(f"Wrote {path}.")
        self.build_requested.emit(path)

    def _failed(self, message: str) -> None:
        self.save_button.setEnabled(True)
        self.status.setText(f"Could not write the vectors: {message}")
