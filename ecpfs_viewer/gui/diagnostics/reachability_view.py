"""The Self-Reachability dialog: which items would not find their way home with search_exp 1.

Runs :func:`self_reachability` in a BackgroundRunner (progress, cancel), then shows the rule and the
numbers, strays per level, and every stray item with its own leaf and the leaf its search reached;
double-click a row to open the item's leaf (whose page lists its strays, given ``report_ready``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFileDialog,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.widgets.rows_table import RowsModel, fit_table, rows_view
from ecpfs_viewer.gui.widgets.run_controls import RunDialog
from ecpfs_viewer.gui.widgets.screen_fit import fit_to_screen
from ecpfs_viewer.gui.widgets.user_guide import guide_on_f1
from ecpfs_viewer.model.diagnostics.reachability import ReachabilityReport, self_reachability
from ecpfs_viewer.model.ecpfs.paths import node_path
from ecpfs_viewer.model.formatting import format_percent
from ecpfs_viewer.model.search import IndexReader

STRAY_HEADERS = ("item", "own leaf", "reached leaf", "leaves its branch at")
#: Rows shown in the table (the JSON export has every stray).
SHOWN = 5000


def stray_rows(report: ReachabilityReport, rows: list[dict[str, int]] | None = None) -> list[tuple[Any, ...]]:
    """Table rows of stray items: item, own leaf path, reached leaf path, level name."""
    chosen = report.stray_rows()[:SHOWN] if rows is None else rows
    return [(r["item_id"], node_path(report.levels, r["leaf"]),
             node_path(report.levels, r["reached_leaf"]) if r["reached_leaf"] >= 0 else "—",
             f"lvl_{r['leaves_branch_at']}") for r in chosen]


class ReachabilityDialog(RunDialog):
    """Run self-reachability on the open index; ``node_requested`` opens a leaf's page."""

    node_requested = Signal(str)
    report_ready = Signal(object)  # the ReachabilityReport, for the leaf pages

    def __init__(self, reader: Callable[[], IndexReader], parent: QWidget | None = None) -> None:
        super().__init__("Press Run.", parent)
        self.setWindowTitle("Self-Reachability")
        self._reader = reader
        self.report: ReachabilityReport | None = None
        intro = QLabel("Searches with every item's own vector at search_exp 1 (a seeded sample of 20,000 on "
                       "indexes of over 250,000 items) and lists the items whose search does not reach their "
                       "own leaf, with the level at which the path leaves their branch.")
        intro.setWordWrap(True)
        self.export_button = QPushButton("Export JSON…")
        self.export_button.setEnabled(False)
        self.export_button.clicked.connect(self._ask_export)
        buttons = self.controls.row
        buttons.addWidget(self.export_button)
        self.model = RowsModel(STRAY_HEADERS, self, kinds=("id",))
        self.view = rows_view(self.model, self._open_row)
        self.view.setToolTip("Double-click an item to open its own leaf")
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(buttons)
        layout.addWidget(self.summary)
        layout.addWidget(self.view, 1)
        fit_to_screen(self, 760, 520, "reachability")
        guide_on_f1(self, "diagnostics")

    def run(self) -> None:
        self.controls.started("Searching with each item's own vector …")
        self._request = self.runner.run(self._job, on_result=self._show, on_error=self.controls.failed,
                                        on_progress=self.controls.show_progress, heavy=True)

    def _job(self, progress: Any = None, cancel: Any = None) -> ReachabilityReport:
        return self_reachability(self._reader(), progress=progress, cancel=cancel)

    def _show(self, report: ReachabilityReport) -> None:
        self.report = report
        share = f"{format_percent(report.share_reached)} reach their own leaf"
        more = f" (the first {SHOWN:,} are listed; the JSON export has all)" if report.strays > SHOWN else ""
        self.model.set_rows(stray_rows(report))
        fit_table(self.view, stretch=3)
        self.export_button.setEnabled(True)
        self.report_ready.emit(report)
        self.controls.finished(f"{report.sentence()}.\n{share}{more}.")

    def _open_row(self, row: int) -> None:
        self.node_requested.emit(str(self.model.row(row)[1]))

    def _ask_export(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export self-reachability", "self_reachability.json",
                                              "JSON (*.json)")
        if path:
            self.export(path)

    def export(self, path: str) -> None:
        if self.report is not None:
            Path(path).write_text(json.dumps(self.report.to_dict(), indent=2), encoding="utf-8")
