"""The plot pane: a subset field, the views that can show the subset, export, and messages.

The pane reads a subset in the worker (:func:`~ecpfs_viewer.model.views.plot_data.prepare_plot`: the
subset, converted for pyqtgraph, with colour levels, histogram and summary), then asks every view
how well it fits the result (silx's DataViewer idea; see :mod:`ecpfs_viewer.gui.data.plot_views`): the
views that can show it become tabs and the best one opens, unless the user picked another tab
that still applies. A result for an array the user already left is dropped by the
BackgroundRunner; a failed read becomes a message in the pane, and a selection that cannot be parsed
or read a message under the subset field, the pictures on screen kept.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.data.export_image import add_title
from ecpfs_viewer.gui.data.plot_views import HeatmapView, HistogramView, LineView, PlotView, TableView, ValueView
from ecpfs_viewer.gui.data.plot_views.table import Reader
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.colormaps import error_color
from ecpfs_viewer.model.tasks import TaskError
from ecpfs_viewer.model.views.export import subset_labels, write_csv, write_npy
from ecpfs_viewer.model.views.plot_data import DEFAULT_MAX_ELEMENTS, PlotData, join_notes, prepare_plot, prepare_table
from ecpfs_viewer.model.views.table_data import TableWindow, read_table_rows
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.subset import SelectionError, SelectionTooLarge, Subset


class PlotPane(QWidget):
    """Shows a subset of one array; the user edits the subset, picks a view, and exports."""

    row_selected = Signal(int)  # absolute row index chosen in the heatmap
    node_requested = Signal(str)  # a node id was clicked in the table: that node's path
    shown = Signal()  # a request ended: its pictures, or the message saying why not, are on screen
    exported = Signal(str)  # the file an export wrote

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.max_elements = DEFAULT_MAX_ELEMENTS
        self._runner = BackgroundRunner(self)
        self._hierarchy: Hierarchy | None = None
        self._path: str | None = None
        self._data: PlotData | None = None
        self._preferred: str | None = None  # title of the tab the user last clicked
        self._pending_text: str | None = None
        self._busy_timer = QTimer(self)
        self._busy_timer.setSingleShot(True)
        self._busy_timer.setInterval(150)
        self._busy_timer.timeout.connect(self._show_busy)
        self.heatmap = HeatmapView()
        self.line = LineView()
        self.histogram = HistogramView()
        self.value = ValueView()
        self.table = TableView()
        self.views: tuple[PlotView, ...] = (self.heatmap, self.line, self.histogram, self.value, self.table)
        self.heatmap.row_selected.connect(self.row_selected)
        self.table.link_activated.connect(self.node_requested)
        self.table.hierarchy_reader = self._table_reader
        self._build_ui()
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
        self.subset_edit.setWhatsThis("Rows and columns to read, numpy style (0:200, :  or  5, ::2). "
                                      "Press Enter to apply.")
        self.subset_edit.setToolTip(self.subset_edit.whatsThis())
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
        self.subset_error = QLabel()  # why the typed selection was refused; the pictures stay
        self.subset_error.setWordWrap(True)
        self.subset_error.setTextFormat(Qt.TextFormat.PlainText)
        self.subset_error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.subset_error.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.subset_error.hide()
        layout.addWidget(self.subset_error)

        self.stack = QStackedWidget()
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        for view in self.views:
            self.tabs.addTab(view, view.title)
        self.tabs.tabBarClicked.connect(self._tab_clicked)
        self.tabs.currentChanged.connect(self._draw_current)
        self.stack.addWidget(self.tabs)
        self._message_page = QWidget()
        message_layout = QVBoxLayout(self._message_page)
        message_layout.addStretch(1)
        self._message = QLabel()
        self._message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._message.setWordWrap(True)
        self._message.setTextFormat(Qt.TextFormat.PlainText)
        self._message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._message.setMargin(16)
        message_layout.addWidget(self._message)
        self.table_button = QPushButton("Show as a table (reads only the rows on screen)")
        self.table_button.clicked.connect(lambda _checked=False: self.show_table())
        self.table_button.hide()
        message_layout.addWidget(self.table_button, 0, Qt.AlignmentFlag.AlignHCenter)
        message_layout.addStretch(1)
        self.stack.addWidget(self._message_page)
        layout.addWidget(self.stack, 1)

        self.summary_label = QLabel()
        self.summary_label.setWordWrap(True)
        self.summary_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout.addWidget(self.summary_label)

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

    def show_table(self) -> None:
        """Show the typed selection in the table, reading only the rows on screen (for selections
        over the element cap)."""
        if self._hierarchy is not None and self._path is not None:
            self._start(self._hierarchy, self._path, self.subset_edit.text().strip(), lazy=True)

    def clear(self) -> None:
        """Nothing selected: drop pending results and show a hint."""
        self._runner.invalidate()
        self._busy_timer.stop()
        self._hierarchy, self._path = None, None
        self.path_label.setText("")
        self.subset_edit.clear()
        self.subset_edit.setEnabled(False)
        self._show_subset_error("")
        self._drop_data()
        self.show_message("Select an array to plot its data.")

    def show_message(self, text: str) -> None:
        """Replace the plot with a readable message (an error, a refusal, a hint)."""
        self._message.setText(text)
        self.table_button.hide()
        self.summary_label.setText("")
        self.stack.setCurrentWidget(self._message_page)

    def message_text(self) -> str:
        """The message shown instead of a plot, or '' while a plot is shown."""
        return self._message.text() if self.stack.currentWidget() is self._message_page else ""

    def subset_error_text(self) -> str:
        """Why the selection typed last was refused ('' when it was not)."""
        return self.subset_error.text() if self.subset_error.isVisibleTo(self) else ""

    def _show_subset_error(self, text: str) -> None:
        self.subset_error.setText(text)
        self.subset_error.setStyleSheet(f"color: {error_color(self)}" if text else "")
        self.subset_error.setVisible(bool(text))
        self.subset_edit.setToolTip(text or self.subset_edit.whatsThis())

    def current_subset(self) -> Subset | None:
        """The subset on screen (None while a message is shown)."""
        return self._data.subset if self._data is not None else None

    def current_data(self) -> PlotData | None:
        """What the views were given for the subset on screen."""
        return self._data

    def current_view(self) -> str:
        """Title of the tab shown ('Heatmap', 'Line', 'Histogram', 'Value', 'Table'), or '' for a message."""
        return self.tabs.tabText(self.tabs.currentIndex()) if self.stack.currentWidget() is self.tabs else ""

    def offered_views(self) -> list[str]:
        """Titles of the tabs offered for the subset on screen, in tab order."""
        return [view.title for i, view in enumerate(self.views) if self.tabs.isTabVisible(i)] if self._data else []

    def show_view(self, title: str) -> bool:
        """Open the tab of that title, as a click on it would; False when it is not offered."""
        if title not in self.offered_views():
            return False
        self._preferred = title
        self.tabs.setCurrentIndex(self._index_of(title))
        return True

    @property
    def image_item(self) -> pg.ImageItem:
        """The heatmap's image."""
        self.heatmap.ensure_drawn()
        return self.heatmap.image_item

    @property
    def curve_item(self) -> pg.PlotDataItem:
        """The curve of the current data: the heatmap's row profile, or the 1-D line."""
        if self._data is not None and self.heatmap.priority(self._data) > 0:
            self.heatmap.ensure_drawn()
            return self.heatmap.row_curve
        self.line.ensure_drawn()
        return self.line.curve

    def value_text(self) -> str:
        """The rank-0 value as shown."""
        return self.value.text()

    def selected_row(self) -> int | None:
        """The heatmap row shown as a profile, as an absolute row index of the array."""
        self.heatmap.ensure_drawn()
        return self.heatmap.selected_row()

    def select_row(self, row: int) -> None:
        """Show the profile of one heatmap row (relative to the subset)."""
        self.heatmap.ensure_drawn()
        self.heatmap.select_row(row)

    def histogram_counts(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(counts, edges) of the histogram shown, as computed by the worker."""
        data = self._data
        if data is None or data.hist_counts is None or data.hist_edges is None:
            return None
        return data.hist_counts, data.hist_edges

    @property
    def busy(self) -> bool:
        """A read is under way."""
        return self._runner.busy

    # -- export --------------------------------------------------------------------------------
    def export_png(self, path: str | None = None) -> str | None:
        """Save a picture of the current view; asks for a file name when none is given."""
        page = self.tabs.currentWidget()
        if not isinstance(page, PlotView):
            return None

        def snapshot(subset: Subset, target: str) -> None:
            page.export_png(target)
            add_title(target, f"/{subset.path} [{subset.text}]")

        return self._export(path, "Save snapshot", "PNG image (*.png)", ".png", snapshot)

    def export_npy(self, path: str | None = None) -> str | None:
        """Save the subset's data as a numpy .npy file."""
        return self._export(path, "Save subset as .npy", "NumPy array (*.npy)", ".npy",
                            lambda subset, target: write_npy(subset.data, target))

    def export_csv(self, path: str | None = None) -> str | None:
        """Save the subset's data as CSV, one line per row."""
        def write(subset: Subset, target: str) -> None:
            labels = subset_labels(self._hierarchy, subset) if self._hierarchy is not None else None
            write_csv(subset.data, target, labels)

        return self._export(path, "Save subset as .csv", "CSV file (*.csv)", ".csv", write)

    def _export(self, path: str | None, title: str, file_filter: str, suffix: str,
                write: Callable[[Subset, str], None]) -> str | None:
        """One export flow for every format: nothing without data, ask for a name unless given, say so."""
        if self._data is None:
            return None
        path = path or self._ask_path(title, file_filter, suffix)
        if path:
            write(self._data.subset, path)
            self.exported.emit(path)
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
    def _table_reader(self, window: TableWindow) -> Reader:
        assert self._hierarchy is not None
        return partial(read_table_rows, self._hierarchy, window)

    def _start(self, hierarchy: Hierarchy, path: str, text: str | None, lazy: bool = False) -> None:
        if path != self._path or hierarchy is not self._hierarchy:
            self._drop_data()
        self._hierarchy, self._path = hierarchy, path
        if text is None:
            self.subset_edit.clear()  # the default selection arrives with the result
        self.path_label.setText(f"<b>{path or '/'}</b>")
        self.subset_edit.setEnabled(True)
        self._show_subset_error("")
        self._pending_text = text
        self._busy_timer.start()
        if lazy and text is not None:
            self._runner.run(prepare_table, hierarchy, path, text, on_result=self._on_result, on_error=self._on_error)
        else:
            self._runner.run(prepare_plot, hierarchy, path, text, self.max_elements,
                             on_result=self._on_result, on_error=self._on_error)

    def _show_busy(self) -> None:
        if self._runner.busy:
            selection = f" [{self._pending_text}]" if self._pending_text else ""
            self.show_message(f"Reading {self._path}{selection}…")

    def _on_error(self, error: TaskError) -> None:
        self._busy_timer.stop()
        message = error.message
        if self._path and message.startswith(f"{self._path}: "):
            message = message[len(self._path) + 2:]  # the header already names the array
        selection = f" [{self._pending_text}]" if self._pending_text else ""
        if error.is_a(SelectionError) and not error.is_a(SelectionTooLarge):
            # a typo in the field: say so under it, and keep what is on screen (tabs and all)
            self._show_subset_error(f"Cannot read{selection}: {message}")
            if self._data is not None:
                self.stack.setCurrentWidget(self.tabs)  # back from "Reading…", if that was shown
                self.shown.emit()
                return
        self._drop_data()
        self.show_message(f"Cannot show {self._path}{selection}:\n{message}")
        self.table_button.setVisible(error.is_a(SelectionTooLarge))  # a table pages through it
        self.shown.emit()

    def _on_result(self, data: PlotData) -> None:
        self._busy_timer.stop()
        self._data = data
        self.subset_edit.setText(data.subset.text)
        self._set_export_enabled(True)
        for action in (self.export_npy_action, self.export_csv_action):
            action.setEnabled(data.window is None)  # a lazy table has no subset in memory
        if self._hierarchy is not None:  # the heatmap's colours are chosen per array
            self.heatmap.use_array((self._hierarchy.store.label, data.subset.path))
        scores = [view.priority(data) for view in self.views]
        for index, (view, score) in enumerate(zip(self.views, scores, strict=True)):
            view.clear()
            self.tabs.setTabVisible(index, score > 0)
            if score > 0:
                view.set_data(data)
        offered = [view.title for view, score in zip(self.views, scores, strict=True) if score > 0]
        best = self.views[scores.index(max(scores))].title
        self.tabs.setCurrentIndex(self._index_of(self._preferred if self._preferred in offered else best))
        self._draw_current()
        self.stack.setCurrentWidget(self.tabs)
        spread = data.stats.percentiles_text() if data.stats is not None else ""
        self.summary_label.setText("\n".join(line for line in (
            join_notes(f"{data.subset.path} [{data.subset.text}]: {data.summary}", data.note),
            f"percentiles: {spread}" if spread else "") if line))
        self.shown.emit()

    def _drop_data(self) -> None:
        self._data = None
        self._set_export_enabled(False)
        for view in self.views:
            view.clear()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange and self.subset_error.text():
            self._show_subset_error(self.subset_error.text())  # its red follows light or dark
        super().changeEvent(event)

    def _index_of(self, title: str) -> int:
        return next(i for i, view in enumerate(self.views) if view.title == title)

    def _draw_current(self, _index: int = -1) -> None:
        page = self.tabs.currentWidget()
        if isinstance(page, PlotView):
            page.ensure_drawn()

    def _tab_clicked(self, index: int) -> None:
        if 0 <= index < len(self.views):
            self._preferred = self.views[index].title
