"""The histogram of a numeric subset's finite values, with its bins, range and a log count axis.

The worker's histogram (:func:`~ecpfs_viewer.model.histogram.histogram`: one bin per value for
narrow integers, Freedman-Diaconis otherwise) is drawn first; a bin count, a range (From/To, blank
meaning the data's own end) or both recount the values in a worker. The range is the array's: it
is cleared when another array is shown; the bin count and the log axis stay.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QDoubleValidator
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QLineEdit, QSpinBox, QVBoxLayout, QWidget

from ecpfs_viewer.gui.data.plot_views.base import ALSO, PlotView, export_plot
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.colormaps import style_filled_steps, warning_color
from ecpfs_viewer.model.formatting import count_noun
from ecpfs_viewer.model.histogram import PER_VALUE_LIMIT, finite_values, histogram
from ecpfs_viewer.model.views.plot_data import PlotData

_EMPTY = (np.array([0.0, 1.0]), np.zeros(1))  # what an empty histogram draws: one flat bin
MAX_BINS = 1000
LOG_FLOOR = 0.5  # where an empty bin's bar ends on a log count axis (below 1, the smallest count)


def _recount(values: np.ndarray, bins: int | None, span: tuple[float, float] | None
             ) -> tuple[np.ndarray, np.ndarray, int]:
    """(counts, edges, values left out by the range) — in the worker: millions of values. A bin count
    the user chose is kept even for integers that would get one bin per value."""
    counts, edges = histogram(values, bins, span=span, per_value_limit=PER_VALUE_LIMIT if bins is None else 0)
    left_out = int(finite_values(values).size - counts.sum())
    return counts, edges, left_out


class HistogramView(PlotView):
    """Counts per bin as filled steps; offered beside the heatmap or line, never opened first."""

    title = "Histogram"

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runner = BackgroundRunner(self)
        self._path: str | None = None  # the array whose range the From/To fields hold
        self.counts: np.ndarray = np.zeros(0, dtype=np.int64)  # what is drawn
        self.edges: np.ndarray = np.zeros(1)
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 0, 4, 0)
        self.bins_box = QSpinBox()
        self.bins_box.setRange(0, MAX_BINS)
        self.bins_box.setSpecialValueText("auto")  # 0: one per value for narrow integers, else Freedman-Diaconis
        self.bins_box.setToolTip("Number of bins (auto: one per value for integers spanning few values, "
                                 "otherwise the Freedman-Diaconis rule)")
        self.bins_box.setKeyboardTracking(False)
        self.bins_box.valueChanged.connect(lambda _v: self._recount())
        self.low_edit, self.high_edit = QLineEdit(), QLineEdit()
        for edit, word in ((self.low_edit, "From"), (self.high_edit, "To")):
            edit.setValidator(QDoubleValidator(edit))
            edit.setMaximumWidth(110)
            edit.setToolTip(f"{word} this value (blank: the data's {'smallest' if word == 'From' else 'largest'}); "
                            "Enter to apply")
            edit.editingFinished.connect(self._recount)
        self.log_box = QCheckBox("log count")
        self.log_box.setToolTip("Counts on a logarithmic axis: rare values stay visible beside common ones")
        self.log_box.toggled.connect(lambda _on: self._draw_counts())
        for widget in (QLabel("Bins:"), self.bins_box, QLabel("From:"), self.low_edit, QLabel("To:"),
                       self.high_edit, self.log_box):
            bar.addWidget(widget)
        bar.addStretch(1)
        self.note = QLabel()  # values the range leaves out, or why a recount failed
        self.note.setWordWrap(True)
        self.note.hide()
        self.view = pg.PlotWidget()
        self.plot: pg.PlotItem = self.view.getPlotItem()
        self.plot.setLabel("bottom", "value")
        self.plot.setLabel("left", "count")
        self.plot.getAxis("left").enableAutoSIPrefix(False)
        self.item = pg.PlotDataItem(stepMode="center", fillLevel=0)
        self.plot.addItem(self.item)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(bar)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.note)
        self.apply_palette()
        self.clear()

    def priority(self, data: PlotData) -> int:
        return ALSO if data.hist_counts is not None else 0

    def set_data(self, data: PlotData) -> None:
        if data.subset.path != self._path:  # a range means nothing for another array
            self._path = data.subset.path
            self.low_edit.clear()
            self.high_edit.clear()
        super().set_data(data)

    def draw(self, data: PlotData) -> None:
        assert data.hist_counts is not None and data.hist_edges is not None
        if self.bins_box.value() or self.span() is not None:
            self._recount()
        else:
            self._show(data.hist_counts, data.hist_edges, 0)

    def span(self) -> tuple[float, float] | None:
        """The range typed in From/To, each blank end the data's own; None when both are blank."""
        low, high = (self._number(edit) for edit in (self.low_edit, self.high_edit))
        if low is None and high is None:
            return None
        stats = self._data.stats if self._data is not None else None
        data_low = float(stats.minimum) if stats is not None and stats.minimum is not None else -math.inf
        data_high = float(stats.maximum) if stats is not None and stats.maximum is not None else math.inf
        return (data_low if low is None else low, data_high if high is None else high)

    @staticmethod
    def _number(edit: QLineEdit) -> float | None:
        text = edit.text().strip().replace(",", "")
        try:
            value = float(text) if text else None
        except ValueError:
            return None
        return value if value is not None and math.isfinite(value) else None

    def _recount(self) -> None:
        data = self._data
        if data is None or data.values is None or self._stale:
            return
        span = self.span()
        if span is not None and not span[0] < span[1]:
            self._say(f"The range is empty: {span[0]:g} is not below {span[1]:g}.")
            return
        bins = self.bins_box.value() or None
        if bins is None and span is None and data.hist_counts is not None and data.hist_edges is not None:
            self._runner.invalidate()
            self._show(data.hist_counts, data.hist_edges, 0)
            return
        self._runner.run(partial(_recount, data.values, bins, span), on_result=lambda r: self._show(*r),
                         on_error=lambda error: self._say(f"Cannot count these bins: {error.message}"))

    def _show(self, counts: np.ndarray, edges: np.ndarray, left_out: int) -> None:
        self.counts, self.edges = counts, edges
        self._draw_counts()
        self._say(f"{count_noun(left_out, 'finite value')} outside the range left out." if left_out else "")

    def _draw_counts(self) -> None:
        log = self.log_box.isChecked()
        self.plot.setLogMode(x=False, y=log)
        self.item.setFillLevel(math.log10(LOG_FLOOR) if log else 0)
        if self.counts.size:
            shown = np.where(self.counts > 0, self.counts, LOG_FLOOR) if log else self.counts
            self.item.setData(self.edges, shown)
        else:  # no finite value (in the range): nothing to count, one flat bin at the floor
            edges, zero = _EMPTY
            self.item.setData(edges, np.full_like(zero, LOG_FLOOR) if log else zero)
        self.plot.enableAutoRange()

    def _say(self, text: str) -> None:
        self.note.setText(f'<span style="color:{warning_color(self)}">{text}</span>' if text else "")
        self.note.setVisible(bool(text))

    def clear(self) -> None:
        super().clear()
        self._runner.invalidate()
        self.counts, self.edges = np.zeros(0, dtype=np.int64), np.zeros(1)
        self.item.setData(*_EMPTY)
        self._say("")

    def apply_palette(self) -> None:
        style_filled_steps(self.view, self.plot, self.item, self.palette())

    def export_png(self, path: str) -> None:
        export_plot(self.plot, self.width(), path)
