"""The Workload dialog: replay sampled items, a .npy or the saved queries, and see where the search goes.

Shows the leaves-per-query histogram, the visits of every node against its size, the skew per level
and the hot leaves (double-click one to open its page); exports CSV, JSON and PNG. The replay runs
in a BackgroundRunner with progress and cancel; the window stays responsive.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.widgets.colormaps import plot_colors, style_plot
from ecpfs_viewer.gui.widgets.fields import hbox, npy_field, spin_box
from ecpfs_viewer.gui.widgets.rows_table import RowsModel, fit_table, rows_view
from ecpfs_viewer.gui.widgets.run_controls import RunDialog
from ecpfs_viewer.gui.widgets.screen_fit import fit_to_screen
from ecpfs_viewer.gui.widgets.user_guide import guide_on_f1
from ecpfs_viewer.model.diagnostics.search_log import workload_from_log
from ecpfs_viewer.model.diagnostics.workload import Workload, replay
from ecpfs_viewer.model.ecpfs.paths import node_path
from ecpfs_viewer.model.search import IndexReader, SearchParams, queries_from_array, sample_items, saved_queries
from ecpfs_viewer.model.search.explore import load_npy
from ecpfs_viewer.model.views.export import write_csv

SOURCES = ("Sampled items", "Queries from a .npy file", "Saved queries", "Searches of an ecpfs log (.jsonl)")
LOG_SOURCE = 3
HOT_HEADERS = ("leaf", "visits", "items", "share of queries")


def workload_job(reader: Callable[[], IndexReader], source: int, count: int, seed: int, npy: str, search_exp: int,
                 k: int, log: str = "", progress: Any = None, cancel: threading.Event | None = None) -> Workload:
    """Open the queries and replay them, or read what a search log recorded (runs in a worker)."""
    index = reader()
    if source == LOG_SOURCE:
        return workload_from_log(index, log, progress=progress, cancel=cancel)
    if source == 1:
        queries = queries_from_array(index, load_npy(npy), Path(npy).name)
    elif source == 2:
        queries = saved_queries(index)
    else:
        queries = sample_items(index, count, seed, progress, cancel)
    return replay(index, queries, SearchParams(k=k, search_exp=search_exp), progress=progress, cancel=cancel)


class WorkloadDialog(RunDialog):
    """Replay a query set and show visits per node; ``node_requested`` opens a node's page."""

    node_requested = Signal(str)

    def __init__(self, reader: Callable[[], IndexReader], parent: QWidget | None = None) -> None:
        super().__init__("Choose the queries and press Run.", parent)
        self.setWindowTitle("Query Workload")
        self._reader = reader
        self.workload: Workload | None = None
        self.source = QComboBox()
        self.source.addItems(SOURCES)
        self.count = spin_box(1, 1_000_000, 1000, "How many stored items to sample as queries")
        self.count.setGroupSeparatorShown(True)
        self.npy, browse = npy_field("Queries", chosen=lambda: self.source.setCurrentIndex(1))
        self.log = QLineEdit()
        self.log.setPlaceholderText("ecpfs search log, written with --log-level trace")
        self.log_browse = QPushButton("Browse…")
        self.log_browse.clicked.connect(self._browse_log)
        self.search_exp = spin_box(1, 4096, 4, "search_exp of every replayed search")
        self.k = spin_box(1, 10_000, 10, "k: results per replayed search")
        form = QFormLayout()
        form.addRow("Queries", self.source)
        form.addRow("Items to sample", self.count)
        form.addRow(".npy file", hbox(self.npy, browse))
        form.addRow("Log file", hbox(self.log, self.log_browse))
        form.addRow("search_exp", self.search_exp)
        form.addRow("k", self.k)
        buttons = self.controls.row

        self.histogram_view = pg.PlotWidget()
        self.histogram = self.histogram_view.getPlotItem()
        self.histogram.setTitle("Leaves scanned per query")
        self.histogram.setLabel("bottom", "leaves scanned")
        self.histogram.setLabel("left", "queries")
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.8)
        self.histogram.addItem(self.bars)
        self.scatter_view = pg.PlotWidget()
        self.scatter = self.scatter_view.getPlotItem()
        self.scatter.setTitle("Visits against node size (leaves)")
        self.scatter.setLabel("bottom", "items in the leaf")
        self.scatter.setLabel("left", "visits")
        self.points = pg.ScatterPlotItem(size=5)
        self.scatter.addItem(self.points)
        self.hot_model = RowsModel(HOT_HEADERS, self, kinds=("", "", "", "percent"))
        self.hot_view = rows_view(self.hot_model, self._open_row)
        self.hot_view.setToolTip("Double-click a leaf to open its page")
        plots = QSplitter(Qt.Orientation.Horizontal)
        plots.addWidget(self.histogram_view)
        plots.addWidget(self.scatter_view)
        plots.addWidget(self.hot_view)
        plots.setSizes([280, 300, 380])

        self.export_csv = QPushButton("Export CSV…")
        self.export_json = QPushButton("Export JSON…")
        self.export_png = QPushButton("Export PNG…")
        exports = QHBoxLayout()
        exports.addStretch(1)
        for button, kind in ((self.export_csv, "csv"), (self.export_json, "json"), (self.export_png, "png")):
            button.setEnabled(False)
            button.clicked.connect(lambda _=False, kind=kind: self._ask_export(kind))
            exports.addWidget(button)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(self.summary)
        layout.addWidget(plots, 1)
        layout.addLayout(exports)
        self.source.currentIndexChanged.connect(self._source_changed)
        self._source_changed(0)
        fit_to_screen(self, 1000, 640, "workload")
        guide_on_f1(self, "diagnostics")
        self._style()

    # -- running -----------------------------------------------------------------------------
    def run(self) -> None:
        source = self.source.currentIndex()
        if source == 1 and not self.npy.text().strip():
            self.controls.say("Choose a .npy file of queries first.", error=True)
            return
        if source == LOG_SOURCE and not self.log.text().strip():
            self.controls.say("Choose an ecpfs search log (.jsonl) first.", error=True)
            return
        self.controls.started("Reading the log …" if source == LOG_SOURCE else "Replaying …")
        self._request = self.runner.run(
            workload_job, self._reader, source, self.count.value(), 0, self.npy.text().strip(),
            self.search_exp.value(), self.k.value(), self.log.text().strip(), on_result=self._show,
            on_error=self.controls.failed, on_progress=self.controls.show_progress, heavy=True)

    def _show(self, work: Workload) -> None:
        self.workload = work
        values, counts = work.leaves_histogram()
        self.bars.setOpts(x=values.astype(float), height=counts.astype(float), width=0.8)
        if len(values):
            self.histogram.setXRange(float(values.min()) - 1, float(values.max()) + 1)
        leaf = work.levels[-1]
        self.points.setData(x=leaf.sizes.astype(float), y=leaf.visits.astype(float))
        self.hot_model.set_rows([(h["path"], h["visits"], h["items"], h["share_of_queries"])
                                 for h in work.hot_leaves()])
        fit_table(self.hot_view, stretch=3)
        for button in (self.export_csv, self.export_json, self.export_png):
            button.setEnabled(True)
        self.controls.finished("\n".join((work.sentence(), *work.notes)))

    def _open_row(self, row: int) -> None:
        path = str(self.hot_model.row(row)[0])
        self.node_requested.emit(path)

    def leaf_path(self, leaf: int) -> str:
        levels = len(self.workload.levels) if self.workload else 1
        return node_path(levels, leaf)

    # -- export ------------------------------------------------------------------------------
    def _ask_export(self, kind: str) -> None:
        filters = {"csv": "CSV (*.csv)", "json": "JSON (*.json)", "png": "PNG image (*.png)"}
        path, _ = QFileDialog.getSaveFileName(self, "Export workload", f"workload.{kind}", filters[kind])
        if path:
            self.export(kind, path)

    def export(self, kind: str, path: str) -> None:
        """Every node's visits (CSV), the whole result (JSON) or the dialog as shown (PNG)."""
        work = self.workload
        if kind == "png":
            self.grab().save(path)
        elif work is not None and kind == "json":
            Path(path).write_text(json.dumps(work.to_dict(), indent=2), encoding="utf-8")
        elif work is not None:
            rows = np.array([[r["level"], r["node_id"], r["size"], r["visits"]] for r in work.visits_rows()],
                            np.int64).reshape(-1, 4)
            write_csv(rows, path)
            text = Path(path).read_text(encoding="utf-8")
            Path(path).write_text("level,node_id,size,visits\n" + text, encoding="utf-8")

    # -- look ---------------------------------------------------------------------------------
    def _source_changed(self, source: int) -> None:
        self.count.setEnabled(source == 0)
        self.npy.setEnabled(source == 1)
        for widget in (self.log, self.log_browse):
            widget.setEnabled(source == LOG_SOURCE)
        for spin in (self.search_exp, self.k):  # a log says what its searches used
            spin.setEnabled(source != LOG_SOURCE)

    def _browse_log(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "ecpfs search log", self.log.text(),
                                              "JSONL logs (*.jsonl);;All files (*)")
        if path:
            self.log.setText(path)
            self.source.setCurrentIndex(LOG_SOURCE)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:  # the theme changed: plots follow the palette
            self._style()
        super().changeEvent(event)

    def _style(self) -> None:
        palette = self.palette()
        background, _, accent = plot_colors(palette)
        for view, plot in ((self.histogram_view, self.histogram), (self.scatter_view, self.scatter)):
            view.setBackground(background)
            style_plot(plot, palette)
        fill = pg.mkColor(accent)
        fill.setAlpha(150)
        self.bars.setOpts(brush=pg.mkBrush(fill), pen=pg.mkPen(accent))
        self.points.setBrush(pg.mkBrush(fill))
        self.points.setPen(pg.mkPen(None))
