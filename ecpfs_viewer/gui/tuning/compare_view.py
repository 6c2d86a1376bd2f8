"""The comparison view: two indexes side by side (File > Compare With…).

It opens its own readers of both indexes (the window's index and the one chosen), so closing or
changing the index in the main window never pulls the store from under a running comparison.
Everything it computes runs in a BackgroundRunner with progress and cancel: opening and the
summaries, balance and the item migration first, then recall against cost on the queries of the form.
Every table exports as CSV or JSON, every chart as PNG.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.runtime.settings import settings
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.tuning.compare_charts import draw_balance, draw_recall
from ecpfs_viewer.gui.tuning.drift_sim_dialog import DriftSimDialog
from ecpfs_viewer.gui.widgets.display import panes
from ecpfs_viewer.gui.widgets.escape import close_on_escape
from ecpfs_viewer.gui.widgets.fields import hbox, npy_field, search_exps_field, spin_box
from ecpfs_viewer.gui.widgets.rows_table import RowsModel, fit_table, rows_view, titled
from ecpfs_viewer.gui.widgets.run_controls import RunControls
from ecpfs_viewer.gui.widgets.saving import save_to
from ecpfs_viewer.gui.widgets.screen_fit import fit_to_screen
from ecpfs_viewer.gui.widgets.user_guide import guide_on_f1
from ecpfs_viewer.gui.widgets.wrapping_row import WrappingRow
from ecpfs_viewer.model.ecpfs.opened_index import open_index
from ecpfs_viewer.model.search import IndexReader, QueryError, SearchResult, index_reader
from ecpfs_viewer.model.search.cluster import scheduler_problem
from ecpfs_viewer.model.search.explore import load_npy
from ecpfs_viewer.model.search.results import ProgressCallback, parse_search_exps
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.tuning.compare import (
    COST_AXES,
    QueryDifference,
    RecallComparison,
    SideBySide,
    compare_recall,
    item_maps,
    query_paths,
    side_by_side,
)
from ecpfs_viewer.model.tuning.compare_tables import (
    Table,
    balance_table,
    curve_table,
    differing_table,
    flows_table,
    summary_table,
    trace_table,
)
from ecpfs_viewer.model.tuning.migration import Migration, compare_assignments

#: where the Scheduler field is remembered
SCHEDULER_KEY = "compare/scheduler"


class ComparePage(Protocol):
    """A tab another feature adds to the comparison (the window adds Compare ▸ Map from gui/diagnostics):
    handed both readers once they are open, asked whether it is busy, stopped when the window closes."""

    def show_indexes(self, a: IndexReader, b: IndexReader) -> None: ...

    @property
    def busy(self) -> bool: ...

    def stop(self) -> None: ...


@dataclass(frozen=True)
class Opened:
    """From the first job: both readers, their side-by-side summaries and how their items moved."""

    a: IndexReader
    b: IndexReader
    sides: SideBySide
    migration: Migration
    common_ids: np.ndarray  # item ids both hold, to sample queries from


@dataclass(frozen=True)
class Searched:
    """What the second job found: recall against cost on the form's queries."""

    recall: RecallComparison


def _open_both(location_a: str, remote_a: RemoteOptions | None, location_b: str, remote_b: RemoteOptions | None,
               progress: ProgressCallback | None = None, cancel: threading.Event | None = None) -> Opened:
    a = index_reader(open_index(location_a, remote=remote_a))
    b = index_reader(open_index(location_b, remote=remote_b))
    maps = item_maps(a, b, progress, cancel)
    sides = side_by_side(a, b, maps)
    return Opened(a, b, sides, compare_assignments(*maps), np.intersect1d(maps[0].unique_ids(), maps[1].unique_ids()))


def _search(opened: Opened, queries: str, sample: int, k: int, exps: list[int], scheduler: str | None = None,
            remote: RemoteOptions | None = None, progress: ProgressCallback | None = None,
            cancel: threading.Event | None = None) -> Searched:
    """The recall part of compare_indexes (as `compare --scheduler` runs it), on the indexes opened."""
    matrix = load_npy(queries) if queries else None
    return Searched(compare_recall(opened.a, opened.b, queries=matrix, query_source=queries, sample=sample, k=k,
                                   search_exps=exps, common_ids=opened.common_ids, progress=progress, cancel=cancel,
                                   scheduler=scheduler, remote=remote))




class TableBox(QWidget):
    """A titled table with its export button (CSV or JSON, by the name chosen)."""

    def __init__(self, title: str, export: Callable[[], object], on_activated: Callable[[int], None] | None = None,
                 stretch: int | None = None) -> None:
        super().__init__()
        self.model = RowsModel(("",), self)
        self.view: QTableView = rows_view(self.model, on_activated)
        self.title = QLabel(title)
        self._stretch = stretch
        button = QPushButton("Export…")
        button.setToolTip("Save this table as CSV, or as JSON when the name ends in .json")
        button.clicked.connect(export)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(titled(self.view, self.title, button))

    def show_table(self, table: Table) -> None:
        self.model.set_headers(table.headers)
        self.model.set_rows(table.rows, highlight=table.marked, texts=table.texts())
        fit_table(self.view, stretch=self._stretch)


class CompareView(QWidget):
    """Index A (the window's) beside index B: summaries, balance, migration, recall vs cost, queries."""

    finished = Signal()  # a job ended: its result, an error or a cancellation is on screen

    def __init__(self, location_a: str, location_b: str, remote_a: RemoteOptions | None = None,
                 remote_b: RemoteOptions | None = None, parent: QWidget | None = None,
                 pages: Sequence[tuple[str, Callable[[], QWidget]]] = ()) -> None:
        """``pages``: (tab title, a factory of a QWidget that is a :class:`ComparePage`) added after the
        comparison's own tabs."""
        super().__init__(parent)
        self._page_factories = tuple(pages)
        self.pages: dict[str, ComparePage] = {}
        if parent is not None:
            self.setWindowFlag(Qt.WindowType.Window, True)
        self.setWindowTitle(f"Compare {Path(location_a.rstrip('/')).name} with {Path(location_b.rstrip('/')).name}")
        fit_to_screen(self, 1100, 760, "compare")
        self.location_a, self.location_b = location_a, location_b
        self._remotes = (remote_a, remote_b)
        self._runner = BackgroundRunner(self)
        self._paths_runner = BackgroundRunner(self)
        self.opened: Opened | None = None
        self.searched: Searched | None = None
        self.tables: dict[str, Table] = {}
        self._build()
        close_on_escape(self)
        guide_on_f1(self, "comparing-two-indexes")
        self._open()

    # -- layout ---------------------------------------------------------------------------------
    def _build(self) -> None:
        self.header = QLabel(f"<b>A</b> {self.location_a}<br><b>B</b> {self.location_b}")
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # a long path is cut at the window's edge (whole in the tooltip), never a window wider than the screen
        self.header.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.header.setToolTip(f"A: {self.location_a}\nB: {self.location_b}")
        self.sample_spin = spin_box(1, 100_000, 200, "Queries: this many items both indexes hold (each left out of "
                                    "its own lists)", "sample ")
        self.file_edit, browse = npy_field("Queries (.npy)", "or queries.npy")
        self.k_spin = spin_box(1, 10_000, 10, "recall@k: how many exact neighbours each search should find", "k ")
        self.exps_edit = search_exps_field("1, 2, 4, 8", "search_exp values to sweep in both indexes", self.run,
                                           "1, 2, 4, 8, 16")
        self.scheduler_edit = QLineEdit(str(settings().value(SCHEDULER_KEY, "")))
        self.scheduler_edit.setPlaceholderText("this machine")
        self.scheduler_edit.setToolTip("Compute the exact neighbours with dask: 'threads' on this machine, or on the "
                                       "workers of this dask.distributed scheduler, tcp://HOST:PORT (the scale "
                                       "extra; the workers open both indexes by their path or URL). Empty: this "
                                       "process. Remembered.")
        self.scheduler_edit.setMinimumWidth(self.scheduler_edit.fontMetrics().horizontalAdvance("tcp://HOST.example:8786"))
        self.scheduler_edit.returnPressed.connect(self.run)
        self.controls = RunControls(self, "", "Compare", run=self.run, cancel=self.cancel, one_line=True,
                                    can_run=lambda: self.opened is not None, runners=(self._runner, self._paths_runner))
        self.run_button, self.cancel_button = self.controls.run_button, self.controls.cancel_button
        self.progress, self.status = self.controls.progress, self.controls.summary
        self.controls.ended.connect(self.finished)
        self.progress.setMinimumWidth(200)
        # the queries, then the sweep: one line where they fit, two in a narrow window (at 1.5x the
        # file field showed "o…" and the search_exp field the end of its values)
        self.form_row = WrappingRow(hbox(self.sample_spin, self.file_edit, browse, stretch=1),
                                    hbox(self.k_spin, QLabel("search_exp"), self.exps_edit, self.run_button,
                                         self.cancel_button, stretch=2))
        running = QHBoxLayout()  # the status first, on one line from the left edge; the bar at its end
        self.status.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        running.addWidget(self.status, 1)
        running.addWidget(self.progress)
        self.drift_button = QPushButton("Simulate Drift…")
        self.drift_button.setToolTip("How an index decays as inserts accumulate: build on part of a .npy, add the "
                                     "rest, and compare each point with a build of all rows (Build ▸ Simulate Drift…)")
        self.drift_button.clicked.connect(self.open_drift_simulation)
        running.addWidget(self.drift_button)

        self.tabs = QTabWidget()
        self.summary_box = TableBox("Summaries (rows that differ are marked)", lambda: self.export_table("summary"))
        self.tabs.addTab(self.summary_box, "Summary")
        self.tabs.addTab(self._balance_page(), "Balance")
        self.tabs.addTab(self._migration_page(), "Migration")
        self.tabs.addTab(self._recall_page(), "Recall vs cost")
        self.tabs.addTab(self._queries_page(), "Queries")
        for title, make in self._page_factories:
            page = make()
            self.pages[title] = page  # type: ignore[assignment]
            self.tabs.addTab(page, title)
        top = QHBoxLayout()  # the Scheduler beside the two paths, where there is room: the form line is full at 1.5x
        top.addWidget(self.header, 1)
        top.addWidget(QLabel("Scheduler"), 0, Qt.AlignmentFlag.AlignBottom)
        top.addWidget(self.scheduler_edit, 0, Qt.AlignmentFlag.AlignBottom)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.form_row)
        layout.addLayout(running)
        layout.addWidget(self.tabs, 1)

    def open_drift_simulation(self) -> DriftSimDialog:
        """The drift simulation beside the comparison: how far inserts would move a build of this kind."""
        dialog = DriftSimDialog(self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        return dialog

    def _chart_bar(self, *widgets: QWidget, chart: str) -> QHBoxLayout:
        line = QHBoxLayout()
        for widget in widgets:
            line.addWidget(widget)
        line.addStretch(1)
        save = QPushButton("Save PNG…")
        save.clicked.connect(lambda: self.export_chart(chart))
        line.addWidget(save)
        return line

    def _balance_page(self) -> QWidget:
        self.level_combo = QComboBox()
        self.level_combo.currentIndexChanged.connect(self._plot_balance)
        self.shape_combo = QComboBox()
        self.shape_combo.addItems(["Histogram", "CDF"])
        self.shape_combo.currentIndexChanged.connect(self._plot_balance)
        self.balance_plot = pg.PlotWidget()
        self.balance_plot.setMinimumHeight(220)
        self.balance_box = TableBox("Imbalance per level", lambda: self.export_table("balance"))
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.addLayout(self._chart_bar(QLabel("Level"), self.level_combo, self.shape_combo, chart="balance"))
        layout.addWidget(panes(Qt.Orientation.Vertical, (self.balance_plot, 3), (self.balance_box, 2)), 1)
        return page

    def _migration_page(self) -> QWidget:
        self.migration_label = QLabel("Reading where every item is in both indexes …")
        self.migration_label.setWordWrap(True)
        self.migration_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.flows_box = TableBox("Largest leaf-to-leaf flows", lambda: self.export_table("flows"))
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.addWidget(self.migration_label)
        layout.addWidget(self.flows_box, 1)
        return page

    def _recall_page(self) -> QWidget:
        self.axis_combo = QComboBox()
        for axis in COST_AXES:
            self.axis_combo.addItem(COST_AXES[axis], axis)
        self.axis_combo.setToolTip("Mean cost of a search (bytes read per search are not counted yet)")
        self.axis_combo.currentIndexChanged.connect(self._plot_recall)
        self.recall_plot = pg.PlotWidget()
        self.recall_plot.setMinimumHeight(220)
        self.recall_note = QLabel()
        self.recall_note.setWordWrap(True)
        self.curve_box = TableBox("Every point", lambda: self.export_table("recall_vs_cost"))
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.addLayout(self._chart_bar(QLabel("Cost"), self.axis_combo, chart="recall_vs_cost"))
        layout.addWidget(self.recall_note)
        layout.addWidget(panes(Qt.Orientation.Vertical, (self.recall_plot, 3), (self.curve_box, 2)), 1)
        return page

    def _queries_page(self) -> QWidget:
        self.queries_box = TableBox("Queries whose recall differs most (double-click: their paths)",
                                    lambda: self.export_table("differing_queries"), self.open_query)
        self.path_label = QLabel("Double-click a query to search it again in both indexes and see both paths.")
        self.path_label.setWordWrap(True)
        self.trace_a = TableBox("Path in A", lambda: self.export_table("path_a"))
        self.trace_b = TableBox("Path in B", lambda: self.export_table("path_b"))
        traces = panes(Qt.Orientation.Horizontal, (self.trace_a, 1), (self.trace_b, 1))
        lower = QWidget()
        layout = QVBoxLayout(lower)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.path_label)
        layout.addWidget(traces, 1)
        return panes(Qt.Orientation.Vertical, (self.queries_box, 2), (lower, 3))

    # -- running --------------------------------------------------------------------------------
    def _open(self) -> None:
        self._runner.run(_open_both, self.location_a, self._remotes[0], self.location_b, self._remotes[1],
                         on_result=self._on_opened, on_error=self.controls.failed,
                         on_progress=self.controls.show_progress)
        self.controls.started("Opening both indexes: summaries and where every item is …")

    def run(self) -> None:
        """Recall against cost with the form's queries, k and search_exp values."""
        if self.opened is None:
            return
        try:
            exps = parse_search_exps(self.exps_edit.text())
        except QueryError as exc:
            self.controls.say(str(exc), error=True)
            return
        scheduler = self.scheduler_edit.text().strip() or None
        problem = scheduler and scheduler_problem(scheduler)
        if problem:
            self.controls.say(f"Scheduler {problem}; or empty for this process", error=True)
            return
        settings().setValue(SCHEDULER_KEY, scheduler or "")
        remote = self._remotes[0] or self._remotes[1]
        self._runner.run(_search, self.opened, self.file_edit.text().strip(), self.sample_spin.value(),
                         self.k_spin.value(), exps, scheduler, remote, on_result=self._on_searched,
                         on_error=self.controls.failed, on_progress=self.controls.show_progress, heavy=True)
        self.controls.started(f"Comparing recall@{self.k_spin.value()} over search_exp {', '.join(map(str, exps))} …")

    def cancel(self) -> None:
        """Stop what runs; what was shown before stays."""
        self.controls.stop()

    @property
    def busy(self) -> bool:
        return self.controls.busy or any(page.busy for page in self.pages.values())

    # -- showing --------------------------------------------------------------------------------
    def _on_opened(self, opened: Opened) -> None:
        self.opened = opened
        sides = opened.sides
        self._set_table(summary_table(sides), self.summary_box)
        self._set_table(balance_table(sides), self.balance_box)
        self.level_combo.blockSignals(True)
        self.level_combo.clear()
        for level in range(1, max(len(sides.a.balance), len(sides.b.balance)) + 1):
            self.level_combo.addItem(f"lvl_{level}", level)
        self.level_combo.setCurrentIndex(self.level_combo.count() - 1)
        self.level_combo.blockSignals(False)
        self._plot_balance()
        self._show_migration(opened.migration)
        for page in self.pages.values():
            page.show_indexes(opened.a, opened.b)
        differing = sum(r.differs for r in sides.rows)
        self.controls.finished(f"{differing} of {len(sides.rows)} summary rows differ. Computing recall against cost …")
        self.run()

    def _show_migration(self, m: Migration) -> None:
        if m.common_items:
            self.migration_label.setText(
                f"On the {m.common_items:,} item ids both hold ({m.only_a:,} only in A, {m.only_b:,} only in B): "
                f"pair agreement {m.pair_agreement:.4f} (of the item pairs sharing a leaf in A, the share that "
                f"share one in B; from B's side {m.pair_agreement_b:.4f}), adjusted Rand index "
                f"{m.adjusted_rand:.4f}. {m.moved_items:,} items ({m.moved_share:.1%}) are outside the B leaf most "
                f"of their A leaf went to, in {m.flow_count:,} flows; the largest are listed.")
        else:
            self.migration_label.setText("The indexes hold no item id in common: nothing to follow.")
        self._set_table(flows_table(m), self.flows_box)

    def _on_searched(self, searched: Searched) -> None:
        self.searched = searched
        r = searched.recall
        self._set_table(curve_table(r), self.curve_box)
        self._set_table(differing_table(r), self.queries_box)
        self.recall_note.setText(f"recall@{r.k} on {r.source}; {r.note}.")
        self._plot_recall()
        last_a, last_b = r.curve_a[-1], r.curve_b[-1]
        self.controls.finished(f"Compared on {len(r.queries_a)} queries: recall@{r.k} at search_exp "
                               f"{last_a.search_exp} A {last_a.recall:.3f}, B {last_b.recall:.3f}; "
                               f"{len(r.differing)} queries differ.")

    def _set_table(self, table: Table, box: TableBox) -> None:
        self.tables[table.name] = table
        box.show_table(table)

    def _plot_balance(self) -> None:
        level = self.level_combo.currentData()
        sides = self.opened.sides if self.opened is not None else None
        draw_balance(self.balance_plot, sides, None if level is None else int(level),
                     self.shape_combo.currentIndex() == 1)

    def _plot_recall(self) -> None:
        draw_recall(self.recall_plot, self.searched.recall if self.searched is not None else None,
                    str(self.axis_combo.currentData()))


    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._plot_balance()
            self._plot_recall()
        super().changeEvent(event)

    # -- one query's paths ----------------------------------------------------------------------
    def open_query(self, row: int) -> None:
        """Search a listed query again in both indexes (in a worker) and show both paths."""
        if self.opened is None or self.searched is None:
            return
        query = int(self.queries_box.model.row(row)[0])
        difference = next(d for d in self.searched.recall.differing if d.query == query)
        self.path_label.setText(f"Searching query {query} in both indexes …")
        self._paths_runner.run(query_paths, self.opened.a, self.opened.b, self.searched.recall, difference,
                               on_result=lambda found: self._show_paths(difference, found),
                               on_error=lambda message: self.path_label.setText(message))

    def _show_paths(self, difference: QueryDifference, found: tuple[SearchResult, SearchResult]) -> None:
        item = "" if difference.item_id is None else f" (item {difference.item_id})"
        self.path_label.setText(
            f"Query {difference.query}{item} at search_exp {difference.search_exp}: recall A "
            f"{difference.recall_a:.2f}, B {difference.recall_b:.2f}; {len(found[0].trace)} and {len(found[1].trace)}"
            f" nodes popped, {found[0].cost.distance_computations:,} and {found[1].cost.distance_computations:,} "
            f"distance computations.")
        recall = self.searched.recall if self.searched is not None else None
        truth_a = recall.truth_a[difference.query] if recall is not None else frozenset()
        truth_b = recall.truth_b[difference.query] if recall is not None else frozenset()
        self._set_table(trace_table("path_a", found[0], truth_a), self.trace_a)
        self._set_table(trace_table("path_b", found[1], truth_b), self.trace_b)
        self.finished.emit()

    # -- export ---------------------------------------------------------------------------------
    def export_table(self, name: str, path: str | None = None) -> str | None:
        """Save one table as CSV (or JSON for a .json name); the path written, None when nothing was."""
        table = self.tables.get(name)
        if table is None:
            return None
        return save_to(self, path, f"Export {name}", f"{name}.csv", "CSV file (*.csv);;JSON file (*.json)",
                       table.write, self.controls.say)

    def export_chart(self, name: str, path: str | None = None) -> str | None:
        """Save a chart ('balance' or 'recall_vs_cost') as PNG, as it is drawn."""
        widget = self.balance_plot if name == "balance" else self.recall_plot
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self, f"Save {name} chart", f"{name}.png", "PNG image (*.png)")
            if not path:
                return None
        if not widget.grab().save(path):
            self.controls.say(f"Could not write {path}", error=True)
            return None
        self.controls.say(f"Saved {path}")
        return path

    def closeEvent(self, event: QCloseEvent) -> None:
        self.controls.drop(None)
        for page in self.pages.values():
            page.stop()
        super().closeEvent(event)
