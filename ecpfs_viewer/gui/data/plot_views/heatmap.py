"""2-D numbers as a heatmap with a colour bar, and the profile of one row below it.

Above the picture: the colour map (reversible), linear or log, and a robust (percentile) or full
range, remembered per array (:mod:`.heatmap_look`: a choice made for one array never restyles the
next), with Reset View to go back to the default look and the whole picture; below it, a warning
whenever the colours clip values (with a link to the full range) or cannot colour some
(non-positive values on a log scale).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

from ecpfs_viewer.gui.data.plot_views.base import AXIS_WIDTH, BEST, PlotView, export_plot, fit_constant_y, index_axes
from ecpfs_viewer.gui.data.plot_views.heatmap_look import DEFAULT_LOOK, ArrayKey, HeatmapLook, LookMemory
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.colormaps import (
    DIVERGING,
    HEATMAP_COLORMAPS,
    colormap,
    plot_colors,
    style_plot,
    warning_color,
)
from ecpfs_viewer.model.views.color_scale import (
    FULL,
    LINEAR,
    LOG,
    ROBUST,
    ColorScale,
    color_scale,
    fixed_scale,
    with_levels,
)
from ecpfs_viewer.model.views.plot_data import PlotData

#: The choices above the heatmap: (key, label, [(shown text, value)...]); the keys are HeatmapLook's fields.
CHOICES = (
    ("colormap", "Map:", list(HEATMAP_COLORMAPS)),
    ("scale", "Scale:", [("linear", LINEAR), ("log", LOG)]),
    ("range", "Range:", [("robust (p0.5–p99.5)", ROBUST), ("full (min–max)", FULL)]),
)


class _ShrinkingCombo(QComboBox):
    """As wide as its longest entry when there is room, down to a few letters when there is not (the
    pane is narrow beside a wide tree)."""

    def minimumSizeHint(self) -> QSize:
        hint = super().minimumSizeHint()
        return QSize(min(hint.width(), self.fontMetrics().horizontalAdvance("robust") + 32), hint.height())


def _choice_box(options: list[tuple[str, str]]) -> QComboBox:
    box = _ShrinkingCombo()
    for text, value in options:
        box.addItem(text, value)
    box.setToolTip("\n".join(text for text, _ in options))
    return box


class HeatmapView(PlotView):
    """The image of a 2-D subset (higher ranks flattened); a click on a row plots that row below."""

    title = "Heatmap"
    row_selected = Signal(int)  # absolute row index chosen in the heatmap
    recoloured = Signal()  # the colours of the chosen scale and range are on screen

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._row: int | None = None  # selected row, relative to the subset
        self.scale: ColorScale | None = None  # how the image on screen is coloured
        self._runner = BackgroundRunner(self)  # percentiles and logarithms of millions of values
        self._looks = LookMemory()
        self._array: ArrayKey | None = None  # the array whose look the choices show
        self.choices: dict[str, QComboBox] = {}
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 0, 4, 0)
        self.reverse_box = QCheckBox("reversed")
        self.reverse_box.setToolTip("Run the colour map the other way round")
        self.reverse_box.toggled.connect(lambda _on: self._choice_changed("colormap"))
        for key, label, options in CHOICES:
            box = _choice_box(options)
            box.currentIndexChanged.connect(lambda _i, key=key: self._choice_changed(key))
            self.choices[key] = box
            bar.addWidget(QLabel(label))
            bar.addWidget(box)
            if key == "colormap":
                bar.addWidget(self.reverse_box)
            bar.addSpacing(4)
        self.reset_button = QToolButton()
        self.reset_button.setText("Reset View")
        self.reset_button.setToolTip("Back to the default colours (viridis, linear, robust range) and the whole "
                                     "picture, for this array")
        self.reset_button.clicked.connect(lambda _checked=False: self.reset_view())
        bar.addStretch(1)
        bar.addWidget(self.reset_button)
        self.view = pg.GraphicsLayoutWidget()
        self.heat_plot: pg.PlotItem = self.view.addPlot(row=0, col=0, axisItems=index_axes("left", "bottom"),
                                                            enableMenu=False)  # no context menu, none built
        self.heat_plot.invertY(True)
        self.heat_plot.setLabel("left", "row")
        self.heat_plot.setLabel("bottom", "column")
        self.image_item = pg.ImageItem(axisOrder="row-major")
        self.heat_plot.addItem(self.image_item)
        self.colorbar = pg.ColorBarItem(values=(0, 1), colorMap=colormap(DEFAULT_LOOK.colormap), interactive=True,
                                        width=16)
        self.colorbar.setImageItem(self.image_item)
        self.colorbar.sigLevelsChangeFinished.connect(self._levels_dragged)
        self.view.addItem(self.colorbar, row=0, col=1)  # own column: the row plot below stays aligned
        self.row_marker = pg.InfiniteLine(angle=0, movable=False)
        self.row_marker.setZValue(10)
        self.heat_plot.addItem(self.row_marker)
        self.row_plot: pg.PlotItem = self.view.addPlot(row=1, col=0, axisItems=index_axes("bottom"), enableMenu=False)
        self.row_plot.setLabel("bottom", "column")
        self.row_plot.setLabel("left", "value")
        self.row_plot.setXLink(self.heat_plot)
        self.row_plot.setClipToView(True)
        self.row_curve = self.row_plot.plot()
        for plot in (self.heat_plot, self.row_plot):
            plot.getAxis("left").setWidth(AXIS_WIDTH)
        self.row_plot.getAxis("left").enableAutoSIPrefix(False)
        self.view.ci.layout.setRowStretchFactor(0, 3)
        self.view.ci.layout.setRowStretchFactor(1, 1)
        self.view.scene().sigMouseClicked.connect(self._clicked)
        self.view.scene().sigMouseMoved.connect(self.hover)
        self.hover_label = QLabel(" ")
        self.hover_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.clip_label = QLabel()
        self.clip_label.setWordWrap(True)
        self.clip_label.setTextFormat(Qt.TextFormat.RichText)
        self.clip_label.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse
                                                | Qt.TextInteractionFlag.LinksAccessibleByKeyboard)
        self.clip_label.linkActivated.connect(lambda _link: self.set_choice("range", FULL))
        self.clip_label.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(bar)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.clip_label)
        layout.addWidget(self.hover_label)
        self.apply_palette()

    def priority(self, data: PlotData) -> int:
        return BEST if data.image is not None else 0

    def draw(self, data: PlotData) -> None:
        assert data.image is not None and data.levels is not None
        rows, cols = data.image.shape
        self._color()
        # cell (i, j) is centred on (j, i): ticks name cells, and the row profile lines up with the columns
        self.image_item.setRect(QRectF(self.offset(1) - 0.5, self.offset(0) - 0.5, cols, rows))
        self.heat_plot.enableAutoRange()
        self.heat_plot.autoRange(padding=0)
        self.select_row(0)
        self.row_plot.enableAutoRange()

    # -- colours -------------------------------------------------------------------------------
    def choice(self, key: str) -> str:
        """The value chosen for one of CHOICES' keys ('CET-D1A', LOG, FULL...)."""
        return str(self.choices[key].currentData())

    def set_choice(self, key: str, value: str) -> None:
        """Choose a value as the user would in its combo box (remembered for this array, and the image
        recoloured)."""
        self.choices[key].setCurrentIndex(self.choices[key].findData(value))

    def colormap_name(self) -> str:
        return self.choice("colormap")

    def look(self) -> HeatmapLook:
        """The look the choices above the picture show."""
        return HeatmapLook(colormap=self.choice("colormap"), reverse=self.reverse_box.isChecked(),
                           scale=self.choice("scale"), range=self.choice("range"))

    def use_array(self, key: ArrayKey) -> None:
        """The next data comes from this array (store label, path): show the look chosen for it, or the
        default one (set before :meth:`set_data`, so the picture is drawn once, in its own colours)."""
        if key != self._array:
            self._array = key
            self._show_look(self._looks.look_of(key))

    def reset_view(self) -> None:
        """The default look and the whole picture again, for the array shown (its choices forgotten)."""
        self._looks.forget(self._array)
        changed = self.look() != DEFAULT_LOOK
        self._show_look(DEFAULT_LOOK)
        if changed and self._data is not None and self._data.image is not None and not self._stale:
            self.scale = None  # start again from the worker's levels
            self._color()
        if self._data is not None and not self._stale:
            self.heat_plot.enableAutoRange()
            self.heat_plot.autoRange(padding=0)
            self.row_plot.enableAutoRange()

    def _show_look(self, look: HeatmapLook) -> None:
        """Set the choices to a look without recolouring (the caller draws)."""
        widgets = (*self.choices.values(), self.reverse_box)
        for widget in widgets:
            widget.blockSignals(True)
        try:
            for key in ("colormap", "scale", "range"):
                box = self.choices[key]
                box.setCurrentIndex(max(box.findData(getattr(look, key)), 0))
            self.reverse_box.setChecked(look.reverse)
        finally:
            for widget in widgets:
                widget.blockSignals(False)
        self.colorbar.setColorMap(colormap(look.colormap, look.reverse))

    def clip_text(self) -> str:
        """The warning under the heatmap, as plain text ('' when the colours show every value)."""
        return self.scale.clip_text() if self.scale is not None and self._data is not None else ""

    def _choice_changed(self, key: str) -> None:
        self._looks.remember(self._array, self.look())
        if key == "colormap":
            self.colorbar.setColorMap(colormap(self.colormap_name(), self.reverse_box.isChecked()))
        if self._data is not None and self._data.image is not None and not self._stale:
            self._color()

    def _color(self) -> None:
        """Colour the image by the chosen scale and range: the default one at once, from the worker's
        levels and statistics; the others in a worker, the picture keeping its colours meanwhile."""
        data = self._data
        assert data is not None and data.image is not None and data.levels is not None
        scale, span = self.choice("scale"), self.choice("range")
        symmetric = self.colormap_name() in DIVERGING
        self._runner.invalidate()
        default = scale == LINEAR and span == ROBUST and not symmetric
        if default or self.scale is None:  # a new picture starts from the worker's levels
            stats = data.stats
            if stats is not None and stats.minimum is not None:
                self._apply(fixed_scale(data.image, data.levels, (float(stats.minimum), float(stats.maximum)),
                                        stats.finite))
            else:
                self._apply(fixed_scale(data.image, data.levels, None, 0))
        if not default:
            exact = data.values is not None and data.values.dtype.kind != "f"
            self._runner.run(partial(color_scale, data.image, scale, span, symmetric=symmetric, exact=exact),
                             on_result=self._apply, on_error=self._scale_failed)

    def _apply(self, scale: ColorScale) -> None:
        self.scale = scale
        levels = scale.levels
        self.image_item.setImage(scale.image, levels=levels, autoLevels=False)
        # dragging the bar's handles moves the levels in steps of `rounding` (1 by default: far too
        # coarse for embeddings in [-0.1, 0.1]); a thousandth of the span keeps adjustment smooth
        self.colorbar.rounding = max(levels[1] - levels[0], 1e-12) / 1000
        self.colorbar.setLevels(levels)
        self.colorbar.axis.setLogMode(scale.scale == LOG)
        self._show_clipping()
        self.recoloured.emit()

    def _scale_failed(self, message: str) -> None:
        self.clip_label.setText(f'<span style="color:{warning_color(self)}">Cannot colour this scale: {message}</span>')
        self.clip_label.show()

    def _levels_dragged(self, _bar: object) -> None:
        if self.scale is not None and self._data is not None:
            self.scale = with_levels(self.scale, tuple(self.colorbar.levels()))
            self._show_clipping()

    def _show_clipping(self) -> None:
        text = self.clip_text()
        if text and self.scale is not None and self.scale.clipped and self.choice("range") != FULL:
            text += ' — <a href="full">show the full range</a>'
        self.clip_label.setText(f'<span style="color:{warning_color(self)}">{text}</span>' if text else "")
        self.clip_label.setVisible(bool(text))

    def clear(self) -> None:
        super().clear()
        self._runner.invalidate()
        self._row = None
        self.scale = None
        self.clip_label.hide()
        self.image_item.clear()
        self.row_curve.setData([], [])
        self.row_marker.hide()
        self.row_plot.setTitle(None)
        self.hover_label.setText(" ")

    def selected_row(self) -> int | None:
        """The row shown as a profile, as an absolute row index of the array."""
        return None if self._row is None or self._data is None else self._row + self.offset(0)

    def select_row(self, row: int) -> None:
        """Show the profile of one row (relative to the subset; clamped to the rows there are)."""
        data = self._data
        if data is None or data.image is None or data.values is None:
            return
        row = max(0, min(int(row), data.values.shape[0] - 1))
        self._row = row
        values = data.values[row]
        x0 = self.offset(1)
        self.row_curve.setData(x=np.arange(x0, x0 + values.shape[0]), y=values, connect="finite")
        self.row_plot.enableAutoRange()
        fit_constant_y(self.row_plot, values)
        self.row_marker.setValue(self.offset(0) + row)
        self.row_marker.show()
        self.row_plot.setTitle(f"row {self.offset(0) + row}")
        style_plot(self.row_plot, self.palette())
        self.row_selected.emit(self.offset(0) + row)

    def apply_palette(self) -> None:
        palette = self.palette()
        background, text, accent = plot_colors(palette)
        self.view.setBackground(background)
        for plot in (self.heat_plot, self.row_plot):
            style_plot(plot, palette)
        self.colorbar.axis.setPen(pg.mkPen(text))
        self.colorbar.axis.setTextPen(pg.mkPen(text))
        self.row_curve.setPen(pg.mkPen(accent, width=1.5))
        marker = pg.mkColor(text)
        marker.setAlpha(200)
        self.row_marker.setPen(pg.mkPen(marker, width=1, style=Qt.PenStyle.DashLine))
        self._show_clipping()  # the warning's amber follows light or dark

    def export_png(self, path: str) -> None:
        export_plot(self.view.scene(), self.width(), path)

    def cell_at(self, scene_pos: QPointF) -> tuple[int, int] | None:
        """(row, column) of the subset under a scene position, or None outside the image."""
        image = self._data.image if self._data is not None else None
        if image is None or not self.heat_plot.vb.sceneBoundingRect().contains(scene_pos):
            return None
        point = self.heat_plot.vb.mapSceneToView(scene_pos)
        row = math.floor(point.y() + 0.5) - self.offset(0)
        col = math.floor(point.x() + 0.5) - self.offset(1)
        rows, cols = image.shape
        return (row, col) if 0 <= row < rows and 0 <= col < cols else None

    def hover(self, scene_pos: QPointF) -> None:
        """Say which cell is under the cursor and its value (row and column as array indexes)."""
        cell = self.cell_at(scene_pos)
        if cell is None or self._data is None or self._data.values is None:
            self.hover_label.setText(" ")
            return
        row, col = cell
        value = self._data.values[row, col]
        shown = f"{float(value):.6g}" if np.issubdtype(np.asarray(value).dtype, np.floating) else str(value)
        self.hover_label.setText(f"row {row + self.offset(0)}, column {col + self.offset(1)}: {shown}")

    def hover_text(self) -> str:
        """What the line under the heatmap says about the cell under the cursor."""
        return self.hover_label.text().strip()

    def _clicked(self, event: Any) -> None:
        """A left click on the heatmap shows that row's profile below it."""
        if event.button() != Qt.MouseButton.LeftButton:
            return
        cell = self.cell_at(event.scenePos())
        if cell is not None:
            self.select_row(cell[0])
