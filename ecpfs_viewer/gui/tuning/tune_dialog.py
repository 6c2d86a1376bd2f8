"""Build > Tune…: build a grid of variants of one .npy in the background and show recall against cost.

The tune runs as the one job of a :class:`RunDialog` (heavy) with a bar for the variant's step and
one for the whole run, and Cancel (the model removes every folder it wrote), live only while a tune
runs (Close and Escape close the dialog). Before Run, :class:`GridGuard` lists the grid's variants
that are unusually large for the input, left out unless "Include them anyway" is ticked. The result: the
plot (one curve per variant, the Pareto frontier, a choice of cost axis), the sortable table of
every point and of the variants, CSV / JSON export, the recommendation with its `build` command
(Copy), and Open for a kept variant (``open_requested``, which the window connects to opening it).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.tuning.drift_sim_dialog import DriftSimDialog
from ecpfs_viewer.gui.tuning.grid_guard import GridGuard
from ecpfs_viewer.gui.tuning.tune_form import TuneForm
from ecpfs_viewer.gui.tuning.tune_plot import TunePlot
from ecpfs_viewer.gui.widgets.colormaps import error_color
from ecpfs_viewer.gui.widgets.display import panes
from ecpfs_viewer.gui.widgets.fields import command_line
from ecpfs_viewer.gui.widgets.rows_table import RowsModel, fit_table, rows_view, titled
from ecpfs_viewer.gui.widgets.run_controls import RunDialog
from ecpfs_viewer.gui.widgets.saving import save_to
from ecpfs_viewer.gui.widgets.screen_fit import fit_to_screen
from ecpfs_viewer.gui.widgets.user_guide import guide_on_f1
from ecpfs_viewer.model.build.builder import BuildError
from ecpfs_viewer.model.formatting import count_noun
from ecpfs_viewer.model.search.cluster import SchedulerError
from ecpfs_viewer.model.tasks import TaskError
from ecpfs_viewer.model.tuning.tune import (
    COST_AXES,
    TuneCancelled,
    TuneError,
    TuneGrid,
    TuneProgress,
    TuneReport,
    TuneSettings,
    tune,
)

CANCELLED = "Cancelled; every variant built so far was removed."
POINT_HEADERS = ("variant", "search_exp", "recall", "cost mean", "cost p95", "leaves mean", "nodes mean", "ms mean",
                 "frontier")
VARIANT_HEADERS = ("variant", "build s", "disk", "files", "leaf max/median", "leaf CV", "kept in")


def _run_tune(source: str, grid: TuneGrid, tune_settings: TuneSettings, axis: str, scheduler: str | None, *,
              progress: Callable[[TuneProgress], None],
              cancel: threading.Event) -> TuneReport | TuneError | BuildError | TuneCancelled | SchedulerError:
    """The worker side: the report, or why it stopped, as a value."""
    try:
        return tune(source, grid, tune_settings, progress=progress, cancel=cancel, cost_axis=axis,
                    scheduler=scheduler)
    except (TuneError, BuildError, TuneCancelled, SchedulerError) as exc:
        return exc


class TuneDialog(RunDialog):
    """Tune build parameters on a .npy; ``open_requested(path)`` asks the window to open a kept variant."""

    open_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None, input_path: str | None = None) -> None:
        super().__init__("Choose a .npy and the grid, then Run.", parent)
        self.setWindowTitle("Tune build parameters")
        self.report: TuneReport | None = None

        self.form = TuneForm(input_path)
        self.guard = GridGuard()
        self.form.changed.connect(self._grid_changed)
        self.step_label, self.overall_bar = self.summary, self.progress  # the step, the whole run
        self.overall_bar.setFormat("overall: %p%")
        self.variant_bar = QProgressBar()
        self.variant_bar.setFormat("variant: %p%")
        self.variant_bar.hide()
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.plot = TunePlot()
        self.axis_combo = QComboBox()
        for name, title in COST_AXES.items():
            self.axis_combo.addItem(title, name)
        self.axis_combo.setToolTip("The cost the plot, the frontier and the recommendation use")
        self.axis_combo.currentIndexChanged.connect(self._axis_changed)
        self.recommendation = QLabel("")
        self.recommendation.setWordWrap(True)
        self.command_edit, self.copy_button = command_line("Copy the build command",
                                                           lambda: self._show_status("Copied the build command."))
        self.variants_model = RowsModel(VARIANT_HEADERS, self, kinds=("", "", "bytes"))
        self.variants_view = rows_view(self.variants_model, self._open_row)
        self.variants_view.setToolTip("Double-click a kept variant (or select it and press Open) to open it")
        self.open_button = QPushButton("Open")
        self.open_button.setEnabled(False)
        self.open_button.clicked.connect(self._open_selected)
        self.variants_view.selectionModel().selectionChanged.connect(self._selection_changed)
        self.points_model = RowsModel(POINT_HEADERS, self)
        self.points_view = rows_view(self.points_model)
        self.csv_button = QPushButton("Export CSV…")
        self.csv_button.clicked.connect(lambda: self.export_csv())
        self.json_button = QPushButton("Export JSON…")
        self.json_button.clicked.connect(lambda: self.export_json())
        self.drift_button = QPushButton("Simulate Drift…")
        self.drift_button.setToolTip("How the input's index decays as inserts accumulate: build on part of the "
                                     "rows, add the rest (with the recommended setting after a run)")
        self.drift_button.clicked.connect(self.open_drift_simulation)
        self.close_button = QPushButton("Close")
        self.close_button.setAutoDefault(False)
        self.close_button.clicked.connect(self.reject)
        self._layout()
        self._show_report(None)
        self._grid_changed()

    def _layout(self) -> None:
        top = QHBoxLayout()
        top.addWidget(self.form, 1)
        buttons = QVBoxLayout()
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        buttons.addStretch(1)
        buttons.addWidget(self.drift_button)
        buttons.addWidget(self.close_button)
        top.addLayout(buttons)
        bars = QHBoxLayout()
        bars.addWidget(self.step_label, 2)
        bars.addWidget(self.variant_bar, 1)
        bars.addWidget(self.overall_bar, 1)
        command = QHBoxLayout()
        command.addWidget(self.command_edit, 1)
        command.addWidget(self.copy_button)
        right = QWidget()
        side = QVBoxLayout(right)
        side.setContentsMargins(0, 0, 0, 0)
        side.addWidget(self.recommendation)
        side.addLayout(command)
        side.addWidget(titled(self.variants_view, QLabel("Variants"), self.open_button), 1)
        side.addWidget(titled(self.points_view, QLabel("Every point"), self.csv_button, self.json_button), 2)
        left = QWidget()
        plot_side = QVBoxLayout(left)
        plot_side.setContentsMargins(0, 0, 0, 0)
        plot_side.addWidget(titled(self.plot, QLabel("Cost axis"), self.axis_combo))
        for view in (self.variants_view, self.points_view):  # a header and a row at least: fits 1280 x 800 at 1.5x
            row = view.verticalHeader().minimumSectionSize()
            view.setMinimumHeight(view.horizontalHeader().sizeHint().height() + row
                                  + view.horizontalScrollBar().sizeHint().height() + 2 * view.frameWidth())
        body = panes(Qt.Orientation.Horizontal, (left, 1), (right, 1))
        body.setSizes([620, 680])
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.guard)
        layout.addLayout(bars)
        layout.addWidget(self.status)
        layout.addWidget(body, 1)
        fit_to_screen(self, 1320, 860, "tune")
        guide_on_f1(self, "tuning")

    # ----------------------------------------------------------------------------- running

    def run(self) -> None:
        """Run the tune of the form as it is (the Run button)."""
        if self.busy:
            return
        try:
            grid, tune_settings = self.form.read()
            scheduler = self.form.scheduler()
        except ValueError as exc:
            self._show_status(str(exc), error=True)
            return
        grid = replace(grid, include_oversize=self.guard.include())
        count = len(grid.variants()) if grid.include_oversize else len(grid.variants()) - len(self.guard.left_out)
        self.form.save_settings()
        self.form.setEnabled(False)
        self.guard.setEnabled(False)
        self._show_status("")
        self.controls.started(f"Starting {count_noun(count, 'variant')}…")
        self.variant_bar.setRange(0, 0)
        self.variant_bar.show()
        self._request = self.runner.run(_run_tune, self.form.source(), grid, tune_settings,
                                        self.axis_combo.currentData(), scheduler, on_result=self._ended,
                                        on_error=self._failed, on_progress=self._progress, heavy=True)

    def _grid_changed(self) -> None:
        try:
            grid: TuneGrid | None = self.form.grid()
        except ValueError:
            grid = None  # Run names the field
        self.guard.check(self.form.source(), grid)

    def cancel(self) -> None:
        """Stop the running tune (the model removes what it wrote); nothing when none runs (Cancel is
        disabled then: it never means close)."""
        if not self.busy:
            return
        self.cancel_button.setEnabled(False)
        self.controls.say("Cancelling…")
        super().cancel()

    def _progress(self, p: TuneProgress) -> None:
        self.controls.say(p.message)
        self.variant_bar.setRange(0, max(1, p.step_total))
        self.variant_bar.setValue(min(p.step_done, max(1, p.step_total)))
        self.overall_bar.setRange(0, p.total)
        self.overall_bar.setValue(p.done)

    def _finish(self, step: str) -> None:
        """The tune ended: ``step`` says how, the form is live again, Cancel is not."""
        self.form.setEnabled(True)
        self.guard.setEnabled(True)
        self.variant_bar.hide()
        self.controls.finished(step)

    def _ended(self, outcome: TuneReport | TuneError | BuildError | TuneCancelled | SchedulerError) -> None:
        if isinstance(outcome, TuneReport):
            self.overall_bar.setValue(1000)
            self._show_report(outcome)
            self._finish(f"Done: {len(outcome.variants)} variants in {outcome.seconds:.1f} s, "
                         f"{outcome.build_seconds / max(outcome.seconds, 1e-9):.0%} of it building.")
        elif isinstance(outcome, TuneCancelled):
            self._finish(CANCELLED)
        elif isinstance(outcome, BuildError):
            self._show_status("A build failed: " + "; ".join(str(p) for p in outcome.problems), error=True)
            self._finish("Stopped.")
        elif isinstance(outcome, SchedulerError):
            self._show_status(str(outcome), error=True)
            self._finish("Stopped.")
        else:
            self._show_status(str(outcome), error=True)
            self._finish("Not started.")

    def _failed(self, error: TaskError) -> None:
        self._show_status(f"Tune failed: {error}", error=True)
        self._finish("Stopped.")

    def _show_status(self, text: str, error: bool = False) -> None:
        self.status.setText(text)
        self.status.setVisible(bool(text))
        self.status.setStyleSheet(f"color: {error_color(self)};" if error else "")

    # ----------------------------------------------------------------------------- results

    def _axis_changed(self) -> None:
        if self.report is not None:
            self._show_report(self.report.on_axis(self.axis_combo.currentData()))

    def open_drift_simulation(self) -> DriftSimDialog:
        """The drift simulation of this input, with the recommended variant and search_exp when there is one."""
        dialog = DriftSimDialog(self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.rows.setText(self.form.input_edit.text())
        rec = self.report.recommendation if self.report is not None else None
        if rec is not None and self.report is not None:
            params = self.report.variants[rec.variant].params
            dialog.levels.setValue(params.levels)
            dialog.target.setValue(params.target_cluster_items)
            dialog.metric_box.setCurrentText(params.metric)
            dialog.search_exp.setValue(rec.search_exp)
        self._drift_dialog = dialog
        dialog.show()
        return dialog

    def _show_report(self, report: TuneReport | None) -> None:
        self.report = report
        self.plot.show_report(report)
        for button in (self.csv_button, self.json_button, self.copy_button):
            button.setEnabled(report is not None)
        if report is None:
            self.recommendation.setText("The recommendation appears here after a run.")
            self.command_edit.clear()
            self.variants_model.clear()
            self.points_model.clear()
            return
        axis = report.cost_axis
        rec = report.recommendation
        if rec is None:
            best = max(report.points(), key=lambda p: p.recall)
            self.recommendation.setText(
                f"No variant reaches recall {report.recall_target:g}; the best is "
                f"{report.variants[best.variant].name} at search_exp {best.search_exp} ({best.recall:.3f}).")
            self.command_edit.clear()
            self.copy_button.setEnabled(False)
        else:
            self.recommendation.setText(
                f"<b>Recommended: {report.variants[rec.variant].name} at search_exp {rec.search_exp}</b>: recall "
                f"{rec.recall:.3f} at {rec.cost:,.0f} {COST_AXES[axis]} per query (the cheapest reaching "
                f"{report.recall_target:g}; {report.queries} queries: {report.query_source}).")
            self.command_edit.setText(rec.command)
            self.command_edit.setCursorPosition(0)
        self.variants_model.set_rows([
            (v.name, round(v.build_seconds, 2), v.disk_bytes, v.files,
             _rounded(v.balance[-1].max_over_median, 2) if v.balance else None,
             _rounded(v.balance[-1].coefficient_of_variation, 3) if v.balance else None, v.path or "")
            for v in report.variants], highlight=[rec.variant] if rec else ())
        points = report.points()
        self.points_model.set_headers([*POINT_HEADERS[:3], f"{COST_AXES[axis]} mean", f"{COST_AXES[axis]} p95",
                                       *POINT_HEADERS[5:]])
        self.points_model.set_rows([
            (report.variants[p.variant].name, p.search_exp, round(p.recall, 4), round(p.costs[axis].mean, 1),
             round(p.costs[axis].p95, 1), round(p.costs["leaves_scanned"].mean, 2),
             round(p.costs["nodes_visited"].mean, 2), round(p.ms_mean, 3), p.on_frontier)
            for p in points],
            highlight=[i for i, p in enumerate(points)
                       if rec is not None and (p.variant, p.search_exp) == (rec.variant, rec.search_exp)])
        fit_table(self.variants_view, stretch=6)
        fit_table(self.points_view)

    def _selection_changed(self) -> None:
        rows = self.variants_view.selectionModel().selectedRows()
        self.open_button.setEnabled(bool(rows) and bool(self.variants_model.row(rows[0].row())[-1]))

    def _open_selected(self) -> None:
        rows = self.variants_view.selectionModel().selectedRows()
        if rows:
            self._open_row(rows[0].row())

    def _open_row(self, row: int) -> None:
        path = str(self.variants_model.row(row)[-1])
        if path:
            self.open_requested.emit(path)
        else:
            self._show_status("This variant was removed after measuring it; tick Keep to open variants.")

    # ----------------------------------------------------------------------------- export

    def export_csv(self, path: str | None = None) -> str | None:
        """Every point with its variant's parameters and build figures, as CSV."""
        return self._export(path, "Export the tune's points as CSV", "CSV file (*.csv)", ".csv",
                            lambda r: r.points_csv())

    def export_json(self, path: str | None = None) -> str | None:
        """The whole report (variants, balance, points, frontier, recommendation) as JSON."""
        return self._export(path, "Export the tune as JSON", "JSON file (*.json)", ".json",
                            lambda r: json.dumps(r.to_dict(), indent=2) + "\n")

    def _export(self, path: str | None, title: str, file_filter: str, suffix: str,
                text: Callable[[TuneReport], str]) -> str | None:
        report = self.report
        if report is None:
            return None

        def write(target: str) -> None:
            Path(target).write_text(text(report), encoding="utf-8")

        return save_to(self, path, title, f"tune{suffix}", file_filter, write, self._show_status)

    def reject(self) -> None:
        """Closing while a tune runs cancels it first (the model cleans up)."""
        if self.busy:
            self.runner.cancel(self._request)
        super().reject()


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
