"""Recall of eCP search against exact search: sampled queries over a list of search_exp values, with
progress and cancel; recall@k and leaves visited plotted against search_exp; the true neighbours
missed and why; the numbers and the misses exported as CSV (two files) or JSON.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.runtime.settings import settings
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.search.session import SearchSession, score_header, shown_score
from ecpfs_viewer.gui.widgets.colormaps import plain_numbers, plot_colors, style_plot
from ecpfs_viewer.gui.widgets.display import panes
from ecpfs_viewer.gui.widgets.fields import hbox, npy_field, search_exps_field, spin_box
from ecpfs_viewer.gui.widgets.rows_table import RowsModel, fit_table, fit_table_pane, rows_view, titled
from ecpfs_viewer.gui.widgets.run_controls import RunControls
from ecpfs_viewer.gui.widgets.saving import save_to
from ecpfs_viewer.model.diagnostics.index_map_layout import shared_layout
from ecpfs_viewer.model.diagnostics.miss_map import MissMap, MissMapCollector
from ecpfs_viewer.model.search import QueryError
from ecpfs_viewer.model.search.cluster import scheduler_problem
from ecpfs_viewer.model.search.explore import RecallOutcome, RecallSpec, misses_csv_path, recall_explore
from ecpfs_viewer.model.search.results import ProgressCallback, parse_search_exps
from ecpfs_viewer.model.tasks import Cancelled

CSV_EXPORT_TITLE = "Export recall as CSV: the numbers in this file, the misses beside it in <name>-misses.csv"
CSV_EXPORT_NOTE = ("Two CSV files: one line per search_exp (recall, leaves, time, costs) in the file you name, and "
                   "every missed true neighbour with why it was missed in <name>-misses.csv beside it")
_COST_TIPS = {
    "leaves": "Leaves scanned per query",
    "ms": "Milliseconds per query on this machine",
    "distances": "Distance computations per query: representatives scored at every level, items in the leaves",
    "nodes": "Nodes visited per query: internal nodes and leaves opened",
    "read": "Bytes one query reads with nothing cached, index_root included",
    "requests": "Requests one query makes with nothing cached, index_root included",
}
#: What the numbers table's cost columns mean (their header tooltips).
NUMBER_TIPS = {f"{name}\n{stat}": f"{tip} ({word})" for name, tip in _COST_TIPS.items()
               for stat, word in (("mean", "mean"), ("p95", "95th percentile"))}
_FILE = ("Rows of a .npy file", "file")
_SOURCES = (("Sampled stored items", "sample"), _FILE, ("Saved queries", "saved"))
_SCHEDULER_KEY = "recall/scheduler"




def _recall_job(session: SearchSession, spec: RecallSpec, k: int, exps: list[int], exclude_self: bool,
                scheduler: str | None = None, progress: ProgressCallback | None = None,
                cancel: threading.Event | None = None) -> tuple[RecallOutcome, MissMap | None]:
    """The sweep, and its miss map (None for an index that cannot be laid out)."""
    reader = session.reader()
    try:
        collector: MissMapCollector | None = MissMapCollector(shared_layout(reader, cancel=cancel))
    except Cancelled:
        raise
    except Exception:  # a tree that cannot be laid out: the sweep goes on without its miss map
        collector = None
    outcome = recall_explore(reader, spec, k, exps, exclude_self, progress, cancel,
                             observe=None if collector is None else collector.observe, scheduler=scheduler)
    return outcome, None if collector is None else collector.result(reader.locator.complete_map())


#: the second plot's title: with its axis and margins, what each plot needs to stand beside the other
LEAVES_TITLE = "leaves visited per query"


class RecallView(QWidget):
    """Runs recall sweeps in a worker and shows their numbers, plots and misses."""

    row_requested = Signal(str, int)  # a missed neighbour double-clicked: its leaf and row
    finished = Signal()  # a run ended: results, an error or a cancellation on screen
    miss_map_ready = Signal(object)  # the MissMap of the sweep on screen (None: dropped)

    # two lines each (the figure, then mean or p95): the fourteen columns fit beside the plots
    NUMBER_HEADERS = ("search_exp", "recall@k", *(f"{name}\n{stat}" for name in _COST_TIPS for stat in ("mean", "p95")))
    MISS_HEADERS = ("search_exp", "query", "exact rank", "item id", "distance", "leaf", "row", "why")
    NUMBER_KINDS = ("", "", *[""] * 8, "bytes", "bytes")
    MISS_KINDS = ("", "id", "", "id", "", "", "id")

    def __init__(self, session: SearchSession, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.session = session
        self._runner = BackgroundRunner(self)
        self._outcome: RecallOutcome | None = None
        self.miss_map: MissMap | None = None
        self._metric = "L2"
        self._build_form()
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setMinimumSize(240, 170)  # at 1.5x the tables keep most of a narrow pane
        self.recall_plot = self.graphics.addPlot(row=0, col=0)
        self.leaves_plot = self.graphics.addPlot(row=0, col=1)
        self._plots_stacked = False
        self.graphics.installEventFilter(self)  # its width decides where the second plot goes
        plain_numbers(self.recall_plot)
        self.numbers_model = RowsModel(self.NUMBER_HEADERS, self, NUMBER_TIPS, kinds=self.NUMBER_KINDS)
        self.numbers_view = rows_view(self.numbers_model)
        self.miss_filter = QComboBox()
        self.miss_filter.setToolTip("Show the misses of one search_exp")
        self.miss_filter.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.miss_filter.currentIndexChanged.connect(self._show_misses)
        self.misses_label = QLabel("True neighbours missed")
        self.misses_model = RowsModel(self.MISS_HEADERS, self, kinds=self.MISS_KINDS)
        self.misses_view = rows_view(self.misses_model, self._miss_activated)
        self.misses_view.setToolTip("Double-click to open the neighbour's leaf with its row selected")

        misses = titled(self.misses_view, self.misses_label, self.miss_filter)
        self.tables = panes(Qt.Orientation.Vertical, (self.numbers_view, 1), (misses, 2))
        body = panes(Qt.Orientation.Horizontal, (self.graphics, 2), (self.tables, 3))
        body.setSizes([380, 720])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.form)
        layout.addWidget(body, 1)
        self._style_plots()
        self.clear()

    def _build_form(self) -> None:
        self.source_combo = QComboBox()
        for text, kind in _SOURCES:
            self.source_combo.addItem(text, kind)
        self.n_spin = spin_box(1, 100_000, 50, "How many queries (sampled without replacement)", "N ")
        self.seed_spin = spin_box(0, 2**31 - 1, 0, "Seed of the sample: the same seed gives the same queries", "seed ")
        # as wide as a seed of six digits, not of the ten its range allows: at 1.5x the row did not fit
        self.seed_spin.setMinimumWidth(self.seed_spin.fontMetrics().horizontalAdvance("seed 999999") + 32)
        self.file_edit, browse = npy_field("Queries (.npy)", "queries.npy (for 'Rows of a .npy file')",
                                           lambda: self.source_combo.setCurrentIndex(_SOURCES.index(_FILE)))
        self.k_spin = spin_box(1, 10_000, 10, "recall@k: how many exact neighbours each search should find", "k ")
        self.exps_edit = search_exps_field("1, 2, 4, 8, 16", "search_exp values to sweep", self.run,
                                           "1, 2, 4, 8, 16, 32")
        self.self_check = QCheckBox("Exclude self")
        self.self_check.setToolTip("Leave each sampled item out of its own exact and eCP lists (else every query "
                                   "finds itself at distance 0); `recall --include-self` keeps it")
        self.self_check.setChecked(True)
        self.scheduler_edit = QLineEdit(str(settings().value(_SCHEDULER_KEY, "")))
        self.scheduler_edit.setPlaceholderText("this process, threads or tcp://HOST:PORT")
        self.scheduler_edit.setToolTip("Compute the exact neighbours with dask: 'threads' on this machine, or on the "
                                       "workers of this dask.distributed scheduler (the scale extra; the workers "
                                       "open the index themselves, so it must be a URL or a path they share). "
                                       "Empty: in this process.")
        self.controls = RunControls(self, "", "Run recall", run=self.run, one_line=True, runners=(self._runner,))
        self.run_button, self.cancel_button = self.controls.run_button, self.controls.cancel_button
        self.progress, self.status = self.controls.progress, self.controls.summary
        self.controls.ended.connect(self.finished)
        self.csv_button = QPushButton("Export CSV…")
        self.csv_button.setToolTip(CSV_EXPORT_NOTE)
        self.csv_button.clicked.connect(lambda: self.export_csv())
        self.json_button = QPushButton("Export JSON…")
        self.json_button.clicked.connect(lambda: self.export_json())

        self.form = QWidget()
        form = QFormLayout(self.form)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Queries", hbox(self.source_combo, self.n_spin, self.seed_spin, self.file_edit, browse, stretch=3))
        form.addRow("Sweep", hbox(self.k_spin, QLabel("search_exp"), self.exps_edit, self.self_check,
                                  QLabel("scheduler"), self.scheduler_edit, stretch=2))
        form.addRow("", hbox(self.run_button, self.cancel_button, self.progress, self.status, self.csv_button,
                              self.json_button, stretch=3))

    # -- running --------------------------------------------------------------------------------
    def run(self) -> None:
        """Start a sweep with the form's settings (replacing any sweep still running)."""
        try:
            exps = parse_search_exps(self.exps_edit.text())
            kind = str(self.source_combo.currentData())
            if kind == "file" and not self.file_edit.text().strip():
                raise QueryError("choose a .npy file of queries")
            scheduler = self.scheduler_edit.text().strip() or None
            problem = scheduler and scheduler_problem(scheduler)
            if problem:
                raise QueryError(f"Scheduler {problem}; or empty for this process")
        except QueryError as exc:
            self.controls.say(str(exc), error=True)
            return
        settings().setValue(_SCHEDULER_KEY, scheduler or "")
        spec = RecallSpec(kind, self.n_spin.value(), self.seed_spin.value(), self.file_edit.text().strip())
        self.clear()  # the numbers of the sweep this one replaces are no longer what the form says
        self._runner.run(_recall_job, self.session, spec, self.k_spin.value(), exps, self.self_check.isChecked(),
                         scheduler, on_result=self._on_sweep, on_error=self.controls.failed,
                         on_progress=self.controls.show_progress, heavy=True)
        self.controls.started(f"Measuring recall@{self.k_spin.value()} over search_exp {', '.join(map(str, exps))} …")

    @property
    def busy(self) -> bool:
        return self.controls.busy

    def reset(self) -> None:
        """Another store: drop the running sweep and what is shown."""
        self.controls.drop(None)
        self._metric = "L2"
        self.clear()
        self.numbers_model.set_headers(self.NUMBER_HEADERS)
        self.misses_model.set_headers(self.MISS_HEADERS)

    def set_metric(self, metric: str) -> None:
        self._metric = metric

    def _on_sweep(self, result: tuple[RecallOutcome, MissMap | None]) -> None:
        outcome, self.miss_map = result
        self._on_result(outcome)
        self.miss_map_ready.emit(self.miss_map)

    def _on_result(self, outcome: RecallOutcome) -> None:
        self._outcome = outcome
        report = outcome.report
        self.numbers_model.set_headers(["search_exp", f"recall@{report.k}", *self.NUMBER_HEADERS[2:]])
        self.numbers_model.set_rows([(r.search_exp, round(r.recall, 4), r.leaves_mean, r.leaves_p95,
                                      round(r.ms_mean, 3), round(r.ms_p95, 3), round(r.distance_computations_mean, 1),
                                      round(r.distance_computations_p95, 1), round(r.nodes_visited_mean, 1),
                                      round(r.nodes_visited_p95, 1), r.bytes_mean,
                                      r.bytes_p95, round(r.requests_mean, 1),
                                      round(r.requests_p95, 1)) for r in report.rows])
        fit_table(self.numbers_view)
        scrolls = self.numbers_view.horizontalHeader().length() > self.numbers_view.viewport().width()
        fit_table_pane(self.tables, self.numbers_view, len(report.rows) + scrolls, share=0.45)  # room for its bar
        self._plot(outcome)
        self.miss_filter.blockSignals(True)
        self.miss_filter.clear()
        self.miss_filter.addItem("every search_exp", None)
        for row in report.rows:
            self.miss_filter.addItem(f"search_exp {row.search_exp}", row.search_exp)
        self.miss_filter.setCurrentIndex(1 if report.rows else 0)
        self.miss_filter.blockSignals(False)
        self._show_misses()
        self.csv_button.setEnabled(True)
        self.json_button.setEnabled(True)
        queries = report.rows[0].queries if report.rows else 0
        self.controls.finished(f"recall@{report.k} over {queries} queries ({report.source}); "
                               f"{outcome.missed_total:,} true neighbours missed in all.")

    # -- showing ----------------------------------------------------------------------------------
    def clear(self) -> None:
        self._outcome = None
        if self.miss_map is not None:  # the map and the tree no longer show a sweep the panel does not
            self.miss_map = None
            self.miss_map_ready.emit(None)
        self.numbers_model.clear()
        self.misses_model.clear()
        self.miss_filter.clear()
        self.misses_label.setText("True neighbours missed")  # no count of a sweep no longer shown
        self.recall_plot.clear()
        self.leaves_plot.clear()
        self.csv_button.setEnabled(False)
        self.json_button.setEnabled(False)
        self.controls.say("Sample queries, then see how recall@k and the leaves visited grow with search_exp.")

    @property
    def outcome(self) -> RecallOutcome | None:
        return self._outcome

    def _plot(self, outcome: RecallOutcome) -> None:
        rows = outcome.report.rows
        exps = [r.search_exp for r in rows]
        log = bool(exps) and min(exps) > 0
        xs = [math.log2(e) if log else float(e) for e in exps]
        ticks = [[(x, str(e)) for x, e in zip(xs, exps, strict=True)]]
        _, text, accent = plot_colors(self.palette())
        for plot in (self.recall_plot, self.leaves_plot):
            plot.clear()
            plot.getAxis("bottom").setTicks(ticks)
            plot.setLabel("bottom", "search_exp" + (" (log scale)" if log else ""))
        self.recall_plot.plot(xs, [r.recall for r in rows], pen=pg.mkPen(accent, width=2), symbol="o",
                              symbolBrush=accent, symbolPen=None)
        self.recall_plot.setYRange(0, 1.05, padding=0)
        self.recall_plot.setTitle(f"recall@{outcome.report.k}")
        if self.leaves_plot.legend is None:
            self.leaves_plot.addLegend(offset=(8, 8), labelTextColor=text)
        self.leaves_plot.plot(xs, [r.leaves_mean for r in rows], pen=pg.mkPen(accent, width=2), symbol="o",
                              symbolBrush=accent, symbolPen=None, name="mean")
        self.leaves_plot.plot(xs, [r.leaves_p95 for r in rows], pen=pg.mkPen(text, width=1, style=Qt.PenStyle.DashLine),
                              symbol="t", symbolBrush=text, symbolPen=None, symbolSize=7, name="95th percentile")
        self.leaves_plot.setTitle(LEAVES_TITLE)
        self._style_plots()

    def _show_misses(self) -> None:
        outcome = self._outcome
        if outcome is None:
            return
        wanted = self.miss_filter.currentData()
        shown = [m for m in outcome.misses if wanted is None or m.search_exp == wanted]
        metric = self._metric
        self.misses_model.set_headers([*self.MISS_HEADERS[:4], score_header(metric), *self.MISS_HEADERS[5:]])
        self.misses_model.set_rows(
            [(m.search_exp, m.query, m.miss.true_rank, m.miss.item_id, shown_score(metric, m.miss.score),
              m.miss.location.leaf_path, m.miss.location.row, m.text) for m in shown],
            tooltips=[m.text for m in shown])
        fit_table(self.misses_view, stretch=7)
        kept = "" if outcome.missed_total == len(outcome.misses) else f" (first {len(outcome.misses):,} kept)"
        self.misses_label.setText(f"True neighbours missed: {len(shown):,} shown of {outcome.missed_total:,}{kept}")

    def _miss_activated(self, row: int) -> None:
        values = self.misses_model.row(row)
        self.row_requested.emit(str(values[5]), int(values[6]))

    # -- export -----------------------------------------------------------------------------------
    def export_csv(self, path: str | None = None) -> str | None:
        """Save the sweep's numbers (one line per search_exp) as CSV, and every kept miss with why it
        was missed in a second CSV beside it (misses_csv_path: 'recall.csv' -> 'recall-misses.csv')."""
        metric = self._metric

        def write(outcome: RecallOutcome, target: str) -> list[str]:
            misses = misses_csv_path(target)
            Path(target).write_text(outcome.csv_text(), encoding="utf-8")
            Path(misses).write_text(outcome.misses_csv_text(metric), encoding="utf-8")
            return [target, misses]

        return self._export(path, CSV_EXPORT_TITLE, "CSV file (*.csv)", ".csv", write)

    def export_json(self, path: str | None = None) -> str | None:
        """Save the numbers and every kept miss with its explanation as JSON."""
        def write(outcome: RecallOutcome, target: str) -> list[str]:
            Path(target).write_text(json.dumps(outcome.to_dict(), indent=2) + "\n", encoding="utf-8")
            return [target]

        return self._export(path, "Export recall as JSON (the numbers and every miss)", "JSON file (*.json)", ".json",
                            write)

    def _export(self, path: str | None, title: str, file_filter: str, suffix: str,
                write: Callable[[RecallOutcome, str], list[str]]) -> str | None:
        outcome = self._outcome
        if outcome is None:
            return None
        return save_to(self, path, title, f"recall{suffix}", file_filter, lambda target: write(outcome, target),
                       self.controls.say)

    def _style_plots(self) -> None:
        background, _, _ = plot_colors(self.palette())
        self.graphics.setBackground(background)
        for plot in (self.recall_plot, self.leaves_plot):
            plot.showGrid(x=True, y=True, alpha=0.25)
            style_plot(plot, self.palette())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.graphics and event.type() == QEvent.Type.Resize:
            self._arrange_plots()
        return super().eventFilter(watched, event)

    def _arrange_plots(self) -> None:
        """The two plots side by side where each has room for its title and axis, else one above the
        other (side by side in the pane's usual width the second was cut off at the pane's edge)."""
        metrics = self.fontMetrics()
        stacked = self.graphics.width() < 2 * (metrics.horizontalAdvance(LEAVES_TITLE) + 4 * metrics.height())
        if stacked == self._plots_stacked:
            return
        self._plots_stacked = stacked
        self.graphics.ci.removeItem(self.leaves_plot)
        self.graphics.ci.addItem(self.leaves_plot, row=1 if stacked else 0, col=0 if stacked else 1)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "graphics"):
            outcome = getattr(self, "_outcome", None)
            if outcome is not None:
                self._plot(outcome)  # the curves' and markers' colours come from the palette too
            else:
                self._style_plots()
        super().changeEvent(event)
