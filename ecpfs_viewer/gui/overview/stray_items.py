"""The "Strays" tab of a leaf's page: its items whose search at search_exp 1 does not reach it.

Filled from the last self-reachability run of the open index (the window hands the report over);
double-click a row to open the leaf that item's search reached instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from ecpfs_viewer.gui.widgets.rows_table import RowsModel, fit_table, rows_view
from ecpfs_viewer.model.ecpfs.paths import node_path

if TYPE_CHECKING:
    from ecpfs_viewer.model.diagnostics.reachability import ReachabilityReport

HEADERS = ("item", "reached leaf", "leaves its branch at")


class StrayItems(QWidget):
    """The stray items of one leaf, from a ReachabilityReport."""

    node_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.report: ReachabilityReport | None = None
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.model = RowsModel(HEADERS, self, kinds=("id",))
        self.view = rows_view(self.model, self._open_row)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.view, 1)
        self.show_leaf(None)

    def set_report(self, report: ReachabilityReport | None) -> None:
        self.report = report

    def show_leaf(self, leaf: int | None) -> None:
        """The strays of lvl_L/node_<leaf> (None: not a leaf, or nothing shown)."""
        report = self.report
        if report is None or leaf is None:
            self.model.clear()
            self.label.setText("Run Diagnostics > Self-Reachability to see which items of a leaf would not "
                               "find their way home with search_exp 1." if leaf is not None else "")
            return
        rows = report.strays_of_leaf(leaf)
        sampled = " of those sampled" if report.sampled else ""
        self.label.setText(f"{len(rows):,} item(s){sampled} of this leaf do not reach it with search_exp 1."
                           if rows else f"Every item{sampled} of this leaf reaches it with search_exp 1.")
        self.model.set_rows([(r["item_id"], node_path(report.levels, r["reached_leaf"]),
                              f"lvl_{r['leaves_branch_at']}") for r in rows])
        fit_table(self.view, stretch=2)

    def _open_row(self, row: int) -> None:
        self.node_requested.emit(str(self.model.row(row)[1]))
