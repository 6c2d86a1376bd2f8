"""Pictures of an array's data: heatmap, row profile, line, histogram, value or text table.

The pane picks its views from the subset it was given (silx's DataViewer idea): 2-D numbers give a
heatmap with a colour bar and a row profile, 1-D numbers a line, every numeric subset a histogram,
rank-0 data its value, strings a table. Reading the subset, converting it for pyqtgraph, and
computing colour levels and the histogram all happen in the worker (:func:`prepare_plot`); the
GUI thread only hands ready arrays to pyqtgraph. A result for an array the user already left is
dropped by the BackgroundRunner; a failed read becomes a message in the pane.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyqtgraph as pg
import pyqtgraph.exporters
from PySide6.QtCore import QAbstractTableModel, QEvent, QModelIndex, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QFont
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QSizePolicy,
    QStackedWidget,
    QTableView,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.colormaps import colormap, plot_colors, style_plot
from ecpfs_viewer.gui.workers import BackgroundRunner
from ecpfs_viewer.model.formatting import format_shape
from ecpfs_viewer.model.hierarchy import Hierarchy
from ecpfs_viewer.model.subset import Subset, default_selection, read_subset

DEFAULT_MAX_ELEMENTS = 4_000_000
HISTOGRAM_BINS = 100
_INTEGER_BIN_LIMIT = 256  # integer data spanning at most this many values gets one bin per value
_PERCENTILE_LEVELS = (0.5, 99.5)
_MARKER_LIMIT = 200  # 1-D subsets up to this length draw a marker on every value
_AXIS_WIDTH = 64  # fixed left-axis width so the heatmap and its row profile share x positions
_WRAPPER_ERRORS = {"SelectionError", "ArrayReadError"}


# -- worker side: everything here is plain numpy and runs off the GUI thread -----------------------

@dataclass(frozen=True)
class PlotData:
    """A subset made ready to draw: the view to use, numbers for pyqtgraph, levels, histogram."""

    subset: Subset
    view: str  # "image", "line", "value", "table"
    values: np.ndarray | None  # numeric data (bool as uint8, complex as magnitude); None for text
    image: np.ndarray | None  # row-major, C-contiguous float32 (2-D views only)
    levels: tuple[float, float] | None
    hist_counts: np.ndarray | None
    hist_edges: np.ndarray | None
    summary: str
    note: str = ""


def prepare_plot(hierarchy: Hierarchy, path: str, text: str | None,
                 max_elements: int = DEFAULT_MAX_ELEMENTS) -> PlotData:
    """Read a subset (the default one, reading at most one chunk, when text is None) and prepare it."""
    if text is None:
        text = default_selection(hierarchy.array_details(path))
    return plot_data(read_subset(hierarchy, path, text, max_elements=max_elements))


def plot_data(subset: Subset) -> PlotData:
    """Choose the view for a subset and compute what it needs (levels, histogram, summary)."""
    data = np.asarray(subset.data)
    note = ""
    if data.dtype.kind == "b":
        values: np.ndarray | None = data.astype(np.uint8)
    elif data.dtype.kind in "iuf":
        values = data
    elif data.dtype.kind == "c":
        values, note = np.abs(data), "complex values: showing the magnitude"
    else:
        values = None
    shape_text = format_shape(data.shape)
    dtype_text = "string" if data.dtype.kind in "UTO" else str(data.dtype)
    if values is None or data.ndim == 0:
        view = "value" if data.ndim == 0 else "table"
        return PlotData(subset, view, values, None, None, None, None, f"{shape_text} {dtype_text}", note)
    image = None
    levels = None
    if values.ndim >= 2:
        if values.ndim > 2:
            note = _join(note, f"axes after the first are flattened: {values.shape} shown as "
                               f"{values.shape[0]} x {int(np.prod(values.shape[1:]))}")
            values = values.reshape(values.shape[0], -1)
        image = np.ascontiguousarray(values, dtype=np.float32)
    counts, edges, finite = _histogram(values)
    if image is not None:
        levels = _levels(values, finite)
    return PlotData(subset, "image" if image is not None else "line", values, image, levels, counts, edges,
                    _summary(shape_text, data.dtype, values, finite), note)


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _finite(values: np.ndarray) -> np.ndarray:
    flat = values.reshape(-1)
    return flat[np.isfinite(flat)] if flat.dtype.kind == "f" else flat


def _levels(values: np.ndarray, finite: np.ndarray) -> tuple[float, float]:
    """Colour levels: percentiles for floats (robust to outliers), exact range for integers."""
    if finite.size == 0:
        return 0.0, 1.0
    if values.dtype.kind == "f" and finite.size > 1000:
        lo, hi = (float(v) for v in np.percentile(finite, _PERCENTILE_LEVELS))
    else:
        lo, hi = float(finite.min()), float(finite.max())
    if not hi > lo:
        hi = lo + 1.0
    return lo, hi


def _histogram(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Counts and bin edges of the finite values; one bin per value for a narrow integer range."""
    finite = _finite(values)
    if finite.size == 0:
        return np.zeros(1, dtype=np.int64), np.array([0.0, 1.0]), finite
    lo, hi = finite.min(), finite.max()
    if values.dtype.kind in "iub" and int(hi) - int(lo) < _INTEGER_BIN_LIMIT:
        edges = np.arange(int(lo), int(hi) + 2, dtype=np.float64) - 0.5
    else:
        lo_f, hi_f = float(lo), float(hi)
        if not hi_f > lo_f:
            lo_f, hi_f = lo_f - 0.5, hi_f + 0.5
        edges = np.linspace(lo_f, hi_f, HISTOGRAM_BINS + 1)
    counts, edges = np.histogram(finite, bins=edges)
    return counts, edges, finite


def _summary(shape_text: str, dtype: np.dtype, values: np.ndarray, finite: np.ndarray) -> str:
    parts = [f"{shape_text} {dtype}"]
    if finite.size:
        parts += [f"min {_fmt(finite.min())}", f"max {_fmt(finite.max())}", f"mean {_fmt(finite.mean())}"]
    missing = values.size - finite.size
    if missing:
        parts.append(f"{missing:,} NaN/inf")
    return " · ".join(parts)


def _fmt(value: Any) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 1e15 else f"{value:.6g}"


def write_csv(data: np.ndarray, path: str | Path) -> None:
    """Write a subset as CSV: one line per row (one value for 0-D/1-D, axes after the first flattened)."""
    data = np.asarray(data)
    rows = data.reshape(1, 1) if data.ndim == 0 else data.reshape(data.shape[0], -1)
    if rows.dtype.kind in "biuf":
        if rows.dtype.kind == "b":
            rows = rows.astype(np.uint8)
        fmt = "%d" if rows.dtype.kind in "iu" else ("%.17g" if rows.dtype.itemsize > 4 else "%.9g")
        np.savetxt(path, rows, fmt=fmt, delimiter=",")
        return
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        for row in rows:
            writer.writerow([str(v) for v in row])


# -- GUI side ----------------------------------------------------------------------------------

class _ArrayTableModel(QAbstractTableModel):
    """A read-only table over a 1-D or 2-D array (strings, objects); cells are formatted on demand."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._data = np.empty((0, 0), dtype=object)
        self._offsets = (0, 0)

    def set_array(self, data: np.ndarray | None, offsets: tuple[int, ...] = ()) -> None:
        self.beginResetModel()
        if data is None:
            data = np.empty((0, 0), dtype=object)
        data = np.asarray(data)
        self._data = data.reshape(-1, 1) if data.ndim <= 1 else data.reshape(data.shape[0], math.prod(data.shape[1:]))
        self._offsets = ((*tuple(offsets), 0, 0))[:2]
        self.endResetModel()

    def rowCount(self, parent: QModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else self._data.shape[0]

    def columnCount(self, parent: QModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else self._data.shape[1]

    def data(self, index: QModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole) and index.isValid():
            return str(self._data[index.row(), index.column()])
        return None

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        offset = self._offsets[0] if orientation == Qt.Orientation.Vertical else self._offsets[1]
        return str(offset + section)


class _IndexAxis(pg.AxisItem):
    """An axis of array indexes: ticks only on whole numbers, no SI prefix."""

    def __init__(self, orientation: str) -> None:
        super().__init__(orientation)
        self.enableAutoSIPrefix(False)

    def tickSpacing(self, minVal: float, maxVal: float, size: float) -> list[tuple[float, float]]:
        levels = [(spacing, offset) for spacing, offset in super().tickSpacing(minVal, maxVal, size) if spacing >= 1]
        return levels or [(1.0, 0.0)]


def _index_axes(*names: str) -> dict[str, pg.AxisItem]:
    return {name: _IndexAxis(name) for name in names}


class PlotPane(QWidget):
    """Shows a subset of one array; the user edits the subset, picks a view, and exports."""

    TAB_HEATMAP, TAB_LINE, TAB_HISTOGRAM, TAB_VALUE, TAB_TABLE = range(5)
    row_selected = Signal(int)  # absolute row index chosen in the heatmap

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.max_elements = DEFAULT_MAX_ELEMENTS
        self._runner = BackgroundRunner(self)
        self._hierarchy: Hierarchy | None = None
        self._path: str | None = None
        self._data: PlotData | None = None
        self._row: int | None = None  # selected row, relative to the subset
        self._preferred_tab: int | None = None
        self._pending_text: str | None = None
        self._busy_timer = QTimer(self)
        self._busy_timer.setSingleShot(True)
        self._busy_timer.setInterval(150)
        self._busy_timer.timeout.connect(self._show_busy)
        self._build_ui()
        self._apply_palette()
        self.clear()

    # -- construction --------------------------------------------------------------------------
    def _build_ui(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.setSpacing(4)

        bar = QHBoxLayout()
        self.path_label = QLabel()
        self.path_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        bar.addWidget(self.path_label)
        bar.addSpacing(8)
        bar.addWidget(QLabel("Subset:"))
        self.subset_edit = QLineEdit()
        self.subset_edit.setPlaceholderText("numpy-style selection, e.g. 0:200, :")
        self.subset_edit.setToolTip("Rows and columns to read, numpy style (0:200, :  or  5, ::2). "
                                    "Press Enter to apply.")
        self.subset_edit.setMinimumWidth(140)
        self.subset_edit.returnPressed.connect(self.apply_subset)
        bar.addWidget(self.subset_edit, 1)
        self.export_button = QToolButton()
        self.export_button.setText("Export")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.export_button)
        self.export_png_action = QAction("Snapshot as PNG…", self)
        self.export_png_action.triggered.connect(lambda: self.export_png())
        self.export_npy_action = QAction("Subset as .npy…", self)
        self.export_npy_action.triggered.connect(lambda: self.export_npy())
        self.export_csv_action = QAction("Subset as .csv…", self)
        self.export_csv_action.triggered.connect(lambda: self.export_csv())
        for action in (self.export_png_action, self.export_npy_action, self.export_csv_action):
            menu.addAction(action)
        self.export_button.setMenu(menu)
        bar.addWidget(self.export_button)
        layout.addLayout(bar)

        self.stack = QStackedWidget()
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.tabBarClicked.connect(lambda i: setattr(self, "_preferred_tab", i))
        self.stack.addWidget(self.tabs)
        self._message = QLabel()
        self._message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._message.setWordWrap(True)
        self._message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._message.setMargin(16)
        self.stack.addWidget(self._message)
        layout.addWidget(self.stack, 1)

        self.summary_label = QLabel()
        self.summary_label.setWordWrap(True)
        self.summary_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout.addWidget(self.summary_label)

        # heatmap with colour bar, and the profile of the chosen row below it
        self.heat_view = pg.GraphicsLayoutWidget()
        self.heat_plot: pg.PlotItem = self.heat_view.addPlot(row=0, col=0, axisItems=_index_axes("left", "bottom"))
        self.heat_plot.invertY(True)
        self.heat_plot.setLabel("left", "row")
        self.heat_plot.setLabel("bottom", "column")
        self.heat_plot.setMenuEnabled(False)
        self.image_item = pg.ImageItem(axisOrder="row-major")
        self.heat_plot.addItem(self.image_item)
        self.colorbar = pg.ColorBarItem(values=(0, 1), colorMap=colormap(), interactive=True, width=16)
        self.colorbar.setImageItem(self.image_item)
        self.heat_view.addItem(self.colorbar, row=0, col=1)  # own column: the row plot below stays aligned
        self.row_marker = pg.InfiniteLine(angle=0, movable=False)
        self.row_marker.setZValue(10)
        self.heat_plot.addItem(self.row_marker)
        self.row_plot: pg.PlotItem = self.heat_view.addPlot(row=1, col=0, axisItems=_index_axes("bottom"))
        self.row_plot.setLabel("bottom", "column")
        self.row_plot.setLabel("left", "value")
        self.row_plot.setXLink(self.heat_plot)
        self.row_plot.setClipToView(True)
        self.row_plot.setMenuEnabled(False)
        self.row_curve = self.row_plot.plot()
        for plot in (self.heat_plot, self.row_plot):
            plot.getAxis("left").setWidth(_AXIS_WIDTH)
        self.row_plot.getAxis("left").enableAutoSIPrefix(False)
        self.heat_view.ci.layout.setRowStretchFactor(0, 3)
        self.heat_view.ci.layout.setRowStretchFactor(1, 1)
        self.heat_view.scene().sigMouseClicked.connect(self._heatmap_clicked)
        self.tabs.addTab(self.heat_view, "Heatmap")

        line_page = QWidget()
        line_layout = QVBoxLayout(line_page)
        line_layout.setContentsMargins(0, 0, 0, 0)
        self.line_view = pg.PlotWidget(axisItems=_index_axes("bottom"))
        self.line_plot: pg.PlotItem = self.line_view.getPlotItem()
        self.line_plot.setLabel("bottom", "index")
        self.line_plot.setLabel("left", "value")
        self.line_plot.setClipToView(True)
        self.line_plot.setDownsampling(auto=True, mode="peak")
        self.line_curve = self.line_plot.plot()
        line_layout.addWidget(self.line_view, 1)
        self.step_check = QCheckBox("Steps")
        self.step_check.setToolTip("Draw each value as a flat step instead of joining points with lines")
        self.step_check.toggled.connect(lambda _: self._draw_line())
        line_layout.addWidget(self.step_check)
        self.tabs.addTab(line_page, "Line")

        self.hist_view = pg.PlotWidget()
        self.hist_plot: pg.PlotItem = self.hist_view.getPlotItem()
        self.hist_plot.setLabel("bottom", "value")
        self.hist_plot.setLabel("left", "count")
        self.histogram_item = pg.PlotDataItem(stepMode="center", fillLevel=0)
        self.hist_plot.addItem(self.histogram_item)
        self.tabs.addTab(self.hist_view, "Histogram")

        self.value_label = QLabel()
        self.value_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.value_label.setWordWrap(True)
        self.value_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        font = QFont(self.value_label.font())
        font.setPointSizeF(font.pointSizeF() * 1.8)
        self.value_label.setFont(font)
        self.tabs.addTab(self.value_label, "Value")

        self.table_model = _ArrayTableModel(self)
        self.table_view = QTableView()
        self.table_view.setModel(self.table_model)
        self.table_view.setEditTriggers(QTableView.EditTrigger.NoEditTriggers)
        self.table_view.setWordWrap(False)
        self.table_view.horizontalHeader().setStretchLastSection(True)
        self.tabs.addTab(self.table_view, "Table")

    def _apply_palette(self) -> None:
        palette = self.palette()
        background, text, accent = plot_colors(palette)
        for view in (self.heat_view, self.line_view, self.hist_view):
            view.setBackground(background)
        for plot in (self.heat_plot, self.row_plot, self.line_plot, self.hist_plot):
            style_plot(plot, palette)
        self.colorbar.axis.setPen(pg.mkPen(text))
        self.colorbar.axis.setTextPen(pg.mkPen(text))
        pen = pg.mkPen(accent, width=1.5)
        self.row_curve.setPen(pen)
        self.line_curve.setPen(pen)
        marker = pg.mkColor(text)
        marker.setAlpha(200)
        self.row_marker.setPen(pg.mkPen(marker, width=1, style=Qt.PenStyle.DashLine))
        fill = pg.mkColor(accent)
        fill.setAlpha(110)
        self.histogram_item.setPen(pg.mkPen(accent, width=1))
        self.histogram_item.setBrush(pg.mkBrush(fill))

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_palette()
        super().changeEvent(event)

    # -- public API ----------------------------------------------------------------------------
    def show_array(self, hierarchy: Hierarchy, path: str) -> None:
        """Show the default subset of an array (reading at most one chunk)."""
        self._start(hierarchy, path, None)

    def show_selection(self, hierarchy: Hierarchy, path: str, text: str) -> None:
        """Show a given numpy-style selection of an array (e.g. the chunk clicked in the chunk map)."""
        self.subset_edit.setText(text)
        self._start(hierarchy, path, text)

    def apply_subset(self) -> None:
        """Read the selection typed in the subset field (Enter)."""
        if self._hierarchy is not None and self._path is not None:
            self._start(self._hierarchy, self._path, self.subset_edit.text().strip())

    def clear(self) -> None:
        """Nothing selected: drop pending results and show a hint."""
        self._runner.invalidate()
        self._busy_timer.stop()
        self._hierarchy, self._path, self._data = None, None, None
        self.path_label.setText("")
        self.subset_edit.clear()
        self.subset_edit.setEnabled(False)
        self._set_export_enabled(False)
        self._clear_items()
        self.show_message("Select an array to plot its data.")

    def show_message(self, text: str) -> None:
        """Replace the plot with a readable message (an error, a refusal, a hint)."""
        self._message.setText(text)
        self.summary_label.setText("")
        self.stack.setCurrentWidget(self._message)

    def message_text(self) -> str:
        """The message shown instead of a plot, or '' while a plot is shown."""
        return self._message.text() if self.stack.currentWidget() is self._message else ""

    def current_subset(self) -> Subset | None:
        return self._data.subset if self._data is not None else None

    def current_data(self) -> PlotData | None:
        return self._data

    @property
    def curve_item(self) -> pg.PlotDataItem:
        """The curve of the current view: the heatmap's row profile, or the 1-D line."""
        return self.row_curve if self._data is not None and self._data.view == "image" else self.line_curve

    def current_view(self) -> str:
        """Name of the tab shown ('Heatmap', 'Line', 'Histogram', 'Value', 'Table'), or '' for a message."""
        return self.tabs.tabText(self.tabs.currentIndex()) if self.stack.currentWidget() is self.tabs else ""

    def value_text(self) -> str:
        return self.value_label.text()

    def selected_row(self) -> int | None:
        """The heatmap row shown as a profile, as an absolute row index of the array."""
        if self._row is None or self._data is None:
            return None
        return self._row + self._offset(0)

    def select_row(self, row: int) -> None:
        """Show the profile of one heatmap row (relative to the subset)."""
        data = self._data
        if data is None or data.view != "image" or data.values is None:
            return
        row = max(0, min(int(row), data.values.shape[0] - 1))
        self._row = row
        values = data.values[row]
        x0 = self._offset(1)
        self.row_curve.setData(x=np.arange(x0, x0 + values.shape[0]), y=values, connect="finite")
        self.row_marker.setValue(self._offset(0) + row)
        self.row_marker.show()
        self.row_plot.setTitle(f"row {self._offset(0) + row}")
        style_plot(self.row_plot, self.palette())
        self.row_selected.emit(self._offset(0) + row)

    def histogram_counts(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(counts, edges) of the histogram shown, as computed by the worker."""
        if self._data is None or self._data.hist_counts is None:
            return None
        return self._data.hist_counts, self._data.hist_edges

    @property
    def busy(self) -> bool:
        return self._runner.busy

    # -- export --------------------------------------------------------------------------------
    def export_png(self, path: str | None = None) -> str | None:
        """Save a picture of the current view; asks for a file name when none is given."""
        if self._data is None:
            return None
        path = path or self._ask_path("Save snapshot", "PNG image (*.png)", ".png")
        if not path:
            return None
        page = self.tabs.currentWidget()
        if page is self.heat_view:
            exporter = pg.exporters.ImageExporter(self.heat_view.scene())
        elif page is self.hist_view:
            exporter = pg.exporters.ImageExporter(self.hist_plot)
        elif page is self.line_view.parentWidget():
            exporter = pg.exporters.ImageExporter(self.line_plot)
        else:
            exporter = None
        if exporter is not None:
            exporter.parameters()["width"] = max(int(page.width()), 200)
            exporter.export(path)
        else:
            page.grab().save(path)
        return path

    def export_npy(self, path: str | None = None) -> str | None:
        """Save the subset's data as a numpy .npy file."""
        if self._data is None:
            return None
        path = path or self._ask_path("Save subset as .npy", "NumPy array (*.npy)", ".npy")
        if path:
            np.save(path, self._data.subset.data, allow_pickle=False)
        return path or None

    def export_csv(self, path: str | None = None) -> str | None:
        """Save the subset's data as CSV, one line per row."""
        if self._data is None:
            return None
        path = path or self._ask_path("Save subset as .csv", "CSV file (*.csv)", ".csv")
        if path:
            write_csv(self._data.subset.data, path)
        return path or None

    def _ask_path(self, title: str, file_filter: str, suffix: str) -> str | None:
        stem = (self._path or "subset").replace("/", "_") or "subset"
        path, _ = QFileDialog.getSaveFileName(self, title, stem + suffix, file_filter)
        if not path:
            return None
        return path if path.lower().endswith(suffix) else path + suffix

    def _set_export_enabled(self, enabled: bool) -> None:
        self.export_button.setEnabled(enabled)
        for action in (self.export_png_action, self.export_npy_action, self.export_csv_action):
            action.setEnabled(enabled)

    # -- requests and results ------------------------------------------------------------------
    def _start(self, hierarchy: Hierarchy, path: str, text: str | None) -> None:
        if path != self._path or hierarchy is not self._hierarchy:
            self._data = None
            self._clear_items()
            self._set_export_enabled(False)
        self._hierarchy, self._path = hierarchy, path
        if text is None:
            self.subset_edit.clear()  # the default selection arrives with the result
        self.path_label.setText(f"<b>{path or '/'}</b>")
        self.subset_edit.setEnabled(True)
        self._pending_text = text
        self._busy_timer.start()
        self._runner.run(prepare_plot, hierarchy, path, text, self.max_elements,
                         on_result=self._on_result, on_error=self._on_error)

    def _show_busy(self) -> None:
        if self._runner.busy:
            selection = f" [{self._pending_text}]" if self._pending_text else ""
            self.show_message(f"Reading {self._path}{selection}…")

    def _on_error(self, message: str) -> None:
        self._busy_timer.stop()
        self._data = None
        self._clear_items()
        self._set_export_enabled(False)
        head, _, rest = message.partition(":")
        if head in _WRAPPER_ERRORS and rest:
            message = rest.strip()  # the wrapper adds nothing the user needs
        if self._path and message.startswith(f"{self._path}: "):
            message = message[len(self._path) + 2:]  # the header already names the array
        selection = f" [{self._pending_text}]" if self._pending_text else ""
        self.show_message(f"Cannot show {self._path}{selection}:\n{message}")

    def _on_result(self, data: PlotData) -> None:
        self._busy_timer.stop()
        self._data = data
        self._row = None
        self.subset_edit.setText(data.subset.text)
        self._set_export_enabled(True)
        self._clear_items()
        visible = self._tabs_for(data)
        for tab in range(self.tabs.count()):
            self.tabs.setTabVisible(tab, tab in visible)
        if data.view == "image":
            self._draw_image()
        elif data.view == "line":
            self._draw_line()
        elif data.view == "value":
            self._draw_value()
        else:
            self.table_model.set_array(data.subset.data, data.subset.offsets)
        if data.hist_counts is not None:
            self.histogram_item.setData(data.hist_edges, data.hist_counts)
            self.hist_plot.enableAutoRange()
        wanted = self._preferred_tab if self._preferred_tab in visible else visible[0]
        self.tabs.setCurrentIndex(wanted)
        self.stack.setCurrentWidget(self.tabs)
        self.summary_label.setText(_join(f"{data.subset.path} [{data.subset.text}]: {data.summary}", data.note))

    def _tabs_for(self, data: PlotData) -> list[int]:
        if data.view == "image":
            return [self.TAB_HEATMAP, self.TAB_HISTOGRAM]
        if data.view == "line":
            return [self.TAB_LINE, self.TAB_HISTOGRAM]
        if data.view == "value":
            return [self.TAB_VALUE]
        return [self.TAB_TABLE]

    def _offset(self, axis: int) -> int:
        offsets = self._data.subset.offsets if self._data is not None else ()
        return int(offsets[axis]) if axis < len(offsets) else 0

    def _draw_image(self) -> None:
        data = self._data
        assert data is not None and data.image is not None and data.levels is not None
        rows, cols = data.image.shape
        self.image_item.setImage(data.image, levels=data.levels, autoLevels=False)
        # cell (i, j) is centred on (j, i): ticks name cells, and the row profile lines up with the columns
        self.image_item.setRect(pg.QtCore.QRectF(self._offset(1) - 0.5, self._offset(0) - 0.5, cols, rows))
        # dragging the bar's handles moves the levels in steps of `rounding` (1 by default: far too
        # coarse for embeddings in [-0.1, 0.1]); a thousandth of the span keeps adjustment smooth
        self.colorbar.rounding = max(data.levels[1] - data.levels[0], 1e-12) / 1000
        self.colorbar.setLevels(data.levels)
        self.heat_plot.enableAutoRange()
        self.heat_plot.autoRange(padding=0)
        self.select_row(0)
        self.row_plot.enableAutoRange()

    def _draw_line(self) -> None:
        data = self._data
        if data is None or data.view != "line" or data.values is None:
            return
        values = data.values
        x0 = self._offset(0)
        if values.shape[0] <= _MARKER_LIMIT and not self.step_check.isChecked():  # few points: show each one
            accent = plot_colors(self.palette())[2]
            self.line_curve.setSymbol("o")
            self.line_curve.setSymbolSize(5)
            self.line_curve.setSymbolBrush(pg.mkBrush(accent))
            self.line_curve.setSymbolPen(pg.mkPen(accent))
        else:
            self.line_curve.setSymbol(None)
        if self.step_check.isChecked():
            x = np.arange(values.shape[0] + 1, dtype=np.float64) + x0 - 0.5
            self.line_curve.setData(x=x, y=values, stepMode="center")
        else:
            self.line_curve.setData(x=np.arange(x0, x0 + values.shape[0]), y=values, stepMode=None,
                                    connect="finite")
        self.line_plot.enableAutoRange()

    def _draw_value(self) -> None:
        data = self._data
        assert data is not None
        value = np.asarray(data.subset.data)
        item = value.item() if value.size == 1 else value
        shown = item if isinstance(item, str) else repr(item) if isinstance(item, bytes) else str(item)
        self.value_label.setText(shown if shown != "" else "(empty string)")

    def _clear_items(self) -> None:
        self._row = None
        self.image_item.clear()
        self.row_curve.setData([], [])
        self.row_marker.hide()
        self.row_plot.setTitle(None)
        self.line_curve.setData([], [])
        self.histogram_item.setData([0.0, 1.0], [0])
        self.value_label.setText("")
        self.table_model.set_array(None)

    def _heatmap_clicked(self, event: Any) -> None:
        """A left click on the heatmap shows that row's profile below it."""
        if event.button() != Qt.MouseButton.LeftButton or self._data is None or self._data.view != "image":
            return
        if not self.heat_plot.vb.sceneBoundingRect().contains(event.scenePos()):
            return
        point = self.heat_plot.vb.mapSceneToView(event.scenePos())
        row = math.floor(point.y() + 0.5) - self._offset(0)
        col = math.floor(point.x() + 0.5) - self._offset(1)
        rows, cols = self._data.image.shape  # type: ignore[union-attr]
        if 0 <= row < rows and 0 <= col < cols:
            self.select_row(row)
