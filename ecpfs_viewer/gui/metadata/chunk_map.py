"""A picture of an array's chunk grid: one cell per (inner) chunk, coloured by its stored bytes.

The whole grid is drawn as one image built with numpy (never one widget per chunk), so a grid of
100,000 chunks costs one image the size of the widget. Missing chunks (they read as the fill
value) are hatched grey; the last chunk row of an array that does not fill its chunk (the padded
chunk of a small ecpfs node) is drawn partly filled from the top, in proportion to the rows it
really holds, the unused rest in a pale tint of the chunk's colour (labelled "95 / 2,048 rows" when
the cell is big enough). A grid of a few chunks is drawn with big cells, up to MAX_CELL_PX.
Hovering a cell tells its key, rows and bytes; clicking one emits ``chunk_clicked(index)``.
"""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import QEvent, QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QHelpEvent,
    QImage,
    QMouseEvent,
    QPainter,
    QPaintEvent,
    QPalette,
    QPen,
    QPixmap,
    QResizeEvent,
)
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QToolTip, QVBoxLayout, QWidget

from ecpfs_viewer.gui.widgets.colormaps import MISSING_HATCH_RGB, MISSING_RGB, lookup_table
from ecpfs_viewer.model.formatting import count_noun, format_bytes
from ecpfs_viewer.model.zarrtree.chunks import ChunkStats

MAX_CELL_PX = 160  # cells never grow larger than this, however few there are
MIN_SLIVER_PX = 3  # the used part of a partial cell is never thinner than this (when the cell allows)
UNUSED_TINT = 0.35  # share of the chunk's colour in the tint of a partial chunk's unused rows
_LABEL_MIN_PX = 56  # cells at least this big carry a text label
_PADDING = -2.0  # value of a display position that holds no chunk (the tail of a wrapped row)
_MISSING = -1.0


def _rgb(color: QColor) -> tuple[int, int, int]:
    return color.red(), color.green(), color.blue()


def unused_tint(chunk_rgb: np.ndarray | tuple[int, int, int], palette: QPalette) -> tuple[int, int, int]:
    """The colour of a partial chunk's unused rows: its own colour faded toward the palette's base.

    Clearly different from both the used part and the background (not white on white), calm
    enough not to read as a warning, and on dark palettes a dark tint rather than a bright one.
    """
    base = np.asarray(_rgb(palette.color(QPalette.ColorRole.Base)), dtype=np.float64)
    text = np.asarray(_rgb(palette.color(QPalette.ColorRole.Text)), dtype=np.float64)
    ground = base * 0.85 + text * 0.15  # a step away from the background, toward the text
    mixed = np.asarray(chunk_rgb, dtype=np.float64) * UNUSED_TINT + ground * (1 - UNUSED_TINT)
    red, green, blue = (round(float(v)) for v in mixed)
    return red, green, blue



class _Grid:
    """How chunk indexes map to display rows and columns (1-D grids wrap; extra axes flatten)."""

    def __init__(self, stats: ChunkStats, aspect: float) -> None:
        self.grid_shape = stats.grid_shape
        stored = np.asarray(stats.stored, dtype=np.float64)
        self.ndim = len(stats.grid_shape)
        trailing = stats.grid_shape[1:]
        self.wrapped = self.ndim <= 1 or math.prod(trailing) == 1
        values: np.ndarray
        if self.ndim == 0:
            values = stored.reshape(1)
        elif self.wrapped:
            values = stored.reshape(-1)
        else:
            values = stored.reshape(stored.shape[0], -1)
        self.n_cells = int(values.size)
        self.values: np.ndarray
        if self.wrapped:
            n = max(1, self.n_cells)
            self.cols = max(1, min(n, math.ceil(math.sqrt(n * max(aspect, 0.05)))))
            self.rows = math.ceil(n / self.cols)
            padded = np.full(self.rows * self.cols, _PADDING)
            padded[:self.n_cells] = values
            self.values = padded.reshape(self.rows, self.cols)
        else:
            self.rows, self.cols = np.shape(values)  # a 2-D grid in this branch
            self.values = values

    def index_of(self, row: int, col: int) -> tuple[int, ...] | None:
        """The chunk index shown at a display cell, or None outside the grid."""
        if not (0 <= row < self.rows and 0 <= col < self.cols):
            return None
        if self.ndim == 0:
            return () if (row, col) == (0, 0) else None
        if self.wrapped:
            linear = row * self.cols + col
            if linear >= self.n_cells:
                return None
            return (linear,) + (0,) * (self.ndim - 1)
        rest = np.unravel_index(col, self.grid_shape[1:])
        return (row, *tuple(int(i) for i in rest))

    def position_of(self, index: tuple[int, ...]) -> tuple[int, int]:
        """The display (row, col) of a chunk index."""
        index = tuple(int(i) for i in index)
        if self.ndim == 0:
            return 0, 0
        if self.wrapped:
            return divmod(index[0], self.cols)
        col = int(np.ravel_multi_index(index[1:], self.grid_shape[1:])) if self.ndim > 1 else 0
        return index[0], col


class _ChunkCanvas(QWidget):
    """Paints the rendered chunk image and turns mouse positions into chunk indexes."""

    def __init__(self, owner: ChunkMapWidget) -> None:
        super().__init__(owner)
        self._owner = owner
        self.setMouseTracking(True)
        self.setMinimumSize(120, 48)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.image: QImage | None = None
        self.cell_px = 1.0  # on-screen size of one cell (may be < 1 when the grid is larger than the canvas)
        self.target = QRect()

    def sizeHint(self) -> QSize:
        return QSize(360, 180)

    def resizeEvent(self, event: QResizeEvent) -> None:
        self._owner._render()
        super().resizeEvent(event)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        if self.image is None:
            painter.setPen(self.palette().color(QPalette.ColorRole.PlaceholderText))
            painter.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, self._owner._empty_text)
            return
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, False)
        painter.drawImage(self.target, self.image)
        self._draw_labels(painter)
        selected = self._owner._selected
        if selected is not None:
            rect = self.cell_rect(selected)
            if rect is not None:
                pen = QPen(self.palette().color(QPalette.ColorRole.Highlight), 2)
                painter.setPen(pen)
                painter.setBrush(Qt.BrushStyle.NoBrush)
                painter.drawRect(rect.adjusted(-1, -1, 1, 1))

    def _draw_labels(self, painter: QPainter) -> None:
        """'95 / 2,048 rows' on big partial cells, over their unused part, in a contrasting colour."""
        owner = self._owner
        if self.cell_px < _LABEL_MIN_PX or not owner._partial_cells:
            return
        for index, text, rgb in owner._labels:
            rect = self.cell_rect(index)
            if rect is None:
                continue
            used = owner._used_px
            area = QRect(rect.x() + 2, rect.y() + used, rect.width() - 4, rect.height() - used)
            if painter.fontMetrics().horizontalAdvance(text) > area.width() or area.height() < 16:
                continue
            light = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] > 140
            painter.setPen(QColor(20, 20, 20) if light else QColor(235, 235, 235))
            painter.drawText(area, Qt.AlignmentFlag.AlignCenter, text)

    def cell_rect(self, index: tuple[int, ...]) -> QRect | None:
        grid = self._owner._grid
        if grid is None or self.image is None:
            return None
        row, col = grid.position_of(index)
        x0 = self.target.x() + col * self.cell_px
        y0 = self.target.y() + row * self.cell_px
        size = max(1, int(self.cell_px))
        return QRect(int(x0), int(y0), size, size)

    def index_at(self, pos: QPoint) -> tuple[int, ...] | None:
        grid = self._owner._grid
        if grid is None or self.image is None or not self.target.contains(pos):
            return None
        col = int((pos.x() - self.target.x()) // self.cell_px)
        row = int((pos.y() - self.target.y()) // self.cell_px)
        return grid.index_of(row, col)

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip:
            assert isinstance(event, QHelpEvent)
            text = self._owner.tooltip_at(event.pos())
            if text:
                QToolTip.showText(event.globalPos(), text, self)
            else:
                QToolTip.hideText()
                event.ignore()
            return True
        return super().event(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            index = self.index_at(event.position().toPoint())
            if index is not None:
                self._owner._click(index)
        super().mouseReleaseEvent(event)


class ChunkMapWidget(QWidget):
    """The chunk grid of one array as a single image, with a legend and a one-line summary."""

    chunk_clicked = Signal(tuple)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._stats: ChunkStats | None = None
        self._grid: _Grid | None = None
        self._selected: tuple[int, ...] | None = None
        self._empty_text = "No chunk statistics"
        self._partial_cells = 0
        self._labels: list[tuple[tuple[int, ...], str, tuple[int, int, int]]] = []
        self._used_px = 0
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        self.canvas = _ChunkCanvas(self)
        layout.addWidget(self.canvas, 1)
        legend = QHBoxLayout()
        legend.setSpacing(6)
        self._low_label = QLabel("stored 0 B")
        self._ramp = QLabel()
        self._high_label = QLabel()
        self._missing_swatch = QLabel()
        self._missing_label = QLabel("missing (read as fill)")
        self._partial_swatch = QLabel()
        self._partial_label = QLabel("unused chunk rows")
        self._partial_label.setToolTip("The last chunk reaches past the end of the array: its unused rows "
                                       "(the pale part, below the rows in use) are padding that is still "
                                       "decoded on every read")
        for widget in (self._low_label, self._ramp, self._high_label):
            legend.addWidget(widget)
        legend.addSpacing(12)
        for widget in (self._missing_swatch, self._missing_label):
            legend.addWidget(widget)
        legend.addSpacing(12)
        for widget in (self._partial_swatch, self._partial_label):
            legend.addWidget(widget)
        legend.addStretch(1)
        layout.addLayout(legend)
        self.caption = QLabel()
        self.caption.setWordWrap(True)
        self.caption.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.caption.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        layout.addWidget(self.caption)
        self.set_stats(None)

    # -- public API ----------------------------------------------------------------------------
    def set_stats(self, stats: ChunkStats | None) -> None:
        """Show the chunk grid of one array (None: nothing selected)."""
        self._stats = stats
        self._selected = None
        self._grid = None
        self._empty_text = "No chunk statistics"
        if stats is not None:
            self._grid = _Grid(stats, self._aspect())
            if self._grid.n_cells == 0:
                self._grid, self._empty_text = None, "Empty array: no chunks"
        self._render()
        self._update_legend()
        self.caption.setText(self._caption())

    def stats(self) -> ChunkStats | None:
        return self._stats

    def cell_count(self) -> int:
        """How many chunk cells are drawn."""
        return 0 if self._grid is None else self._grid.n_cells

    def caption_text(self) -> str:
        return self.caption.text()

    def tooltip_at(self, pos: QPoint) -> str:
        """The tooltip for a canvas position: the description of the chunk under it, or ''."""
        index = self.canvas.index_at(pos)
        if index is None or self._stats is None:
            return ""
        return self._stats.describe_cell(index)

    def cell_rect(self, index: tuple[int, ...]) -> QRect | None:
        """Where a chunk's cell is drawn on the canvas (canvas coordinates)."""
        return self.canvas.cell_rect(index)

    def cell_color(self, index: tuple[int, ...]) -> QColor:
        """The colour a chunk is drawn with (its fill colour, ignoring hatching and padding)."""
        if self._grid is None:
            return QColor()
        row, col = self._grid.position_of(index)
        r, g, b = self._cell_colors(self._grid.values[row:row + 1, col:col + 1])[0, 0]
        return QColor(int(r), int(g), int(b))

    def selected_chunk(self) -> tuple[int, ...] | None:
        return self._selected

    # -- rendering -----------------------------------------------------------------------------
    def _aspect(self) -> float:
        size = self.canvas.size() if self.canvas.width() > 10 else self.canvas.sizeHint()
        return size.width() / max(1, size.height())

    def _max_stored(self) -> float:
        if self._grid is None:
            return 0.0
        return float(max(0.0, self._grid.values.max(initial=0.0)))

    def _color_range(self) -> tuple[float, float]:
        """(low, high) stored bytes spanned by the colour map: the smallest to the largest stored chunk.

        Chunks of one array are often within a few percent of each other; a scale starting at 0 B
        would paint them all the same colour. With a single size (or one chunk) the scale is 0..max.
        """
        top = self._max_stored()
        if self._grid is None:
            return 0.0, top
        stored = self._grid.values[self._grid.values >= 0]
        low = float(stored.min()) if stored.size else 0.0
        return (low, top) if low < top else (0.0, top)

    def _cell_colors(self, values: np.ndarray) -> np.ndarray:
        """(rows, cols, 3) uint8 colours: the colour map for stored bytes, grey for missing."""
        lut = lookup_table()
        low, top = self._color_range()
        scaled = np.clip((values - low) / (top - low), 0.0, 1.0) if top > low else np.zeros_like(values)
        colors = lut[np.round(scaled * (len(lut) - 1)).astype(np.intp)]
        colors[values == _MISSING] = MISSING_RGB
        colors[values == _PADDING] = _rgb(self.canvas.palette().color(QPalette.ColorRole.Window))
        return colors

    def _render(self) -> None:
        """Build the image for the current canvas size: one numpy pass, then one QImage."""
        grid, canvas = self._grid, self.canvas
        if grid is None:
            canvas.image = None
            canvas.update()
            return
        if grid.wrapped and self._stats is not None:
            fresh = _Grid(self._stats, self._aspect())
            if (fresh.rows, fresh.cols) != (grid.rows, grid.cols):
                self._grid = grid = fresh
        width, height = max(1, canvas.width()), max(1, canvas.height())
        fit = min(width / grid.cols, height / grid.rows)
        px = int(max(1, min(MAX_CELL_PX, math.floor(fit))))
        colors = self._cell_colors(grid.values)
        pixels = np.repeat(np.repeat(colors, px, axis=0), px, axis=1)
        background = _rgb(canvas.palette().color(QPalette.ColorRole.Window))
        if px >= 4:
            self._hatch_missing(pixels, grid.values == _MISSING, px)
        self._partial_cells = self._draw_partial(pixels, grid, px)
        if px >= 5:  # a one-pixel gap between cells
            pixels[px - 1::px, :, :] = background
            pixels[:, px - 1::px, :] = background
        if px >= 3:
            self._draw_shard_edges(pixels, grid, px)
        pixels = np.ascontiguousarray(pixels)
        h, w = pixels.shape[:2]
        image = QImage(pixels.data, w, h, 3 * w, QImage.Format.Format_RGB888).copy()
        canvas.image = image
        if fit >= 1:
            canvas.cell_px = float(px)
            canvas.target = QRect(0, 0, w, h)
        else:  # larger than the canvas even at one pixel per cell: scale down, keeping cells square
            canvas.cell_px = fit
            canvas.target = QRect(0, 0, max(1, int(grid.cols * fit)), max(1, int(grid.rows * fit)))
        canvas.update()

    def _draw_shard_edges(self, pixels: np.ndarray, grid: _Grid, px: int) -> None:
        """Lines in the text colour between shards (2-D grids; a wrapped grid has no straight edges)."""
        stats = self._stats
        if stats is None or stats.shard_shape is None or grid.wrapped or len(stats.grid_shape) != 2:
            return
        text = _rgb(self.canvas.palette().color(QPalette.ColorRole.Text))
        rows_per, cols_per = (max(1, s // c) for s, c in zip(stats.shard_shape, stats.chunk_shape, strict=False))
        if rows_per < grid.rows:
            pixels[rows_per * px - 1::rows_per * px, :, :] = text
        if cols_per < grid.cols:
            pixels[:, cols_per * px - 1::cols_per * px, :] = text

    @staticmethod
    def _hatch_missing(pixels: np.ndarray, missing: np.ndarray, px: int) -> None:
        if not missing.any():
            return
        mask = np.repeat(np.repeat(missing, px, axis=0), px, axis=1)
        ys, xs = np.indices(mask.shape[:2])
        pixels[mask & ((xs + ys) % 4 == 0)] = MISSING_HATCH_RGB

    def _draw_partial(self, pixels: np.ndarray, grid: _Grid, px: int) -> int:
        """Tint the unused rows of chunks that reach past the end of axis 0; returns how many.

        The used rows fill the cell from the top (rows run downwards, like the grid's first axis),
        at least MIN_SLIVER_PX tall so a nearly empty chunk still shows it holds data.
        """
        self._labels, self._used_px = [], 0
        stats = self._stats
        if stats is None or not stats.shape or not stats.grid_shape or stats.stored_rows < stats.grid_shape[0]:
            return 0
        last = stats.grid_shape[0] - 1
        start, stop = stats.rows_of((last,) + (0,) * (len(stats.grid_shape) - 1))
        chunk_rows = stats.chunk_shape[0]
        fraction = (stop - start) / chunk_rows if chunk_rows else 1.0
        if fraction >= 1.0:
            return 0
        inner = px - 1 if px >= 5 else px
        used = round(fraction * inner)
        used = min(inner - 1, max(used, min(MIN_SLIVER_PX, inner // 4), 1)) if inner > 1 else inner
        self._used_px = used
        palette = self.canvas.palette()
        label = f"{stop - start:,} / {chunk_rows:,} rows used"
        count = 0
        per_row = 1 if grid.wrapped else grid.cols
        for k in range(per_row):
            index = (last,) + ((0,) * (len(stats.grid_shape) - 1) if grid.wrapped
                               else tuple(int(i) for i in np.unravel_index(k, stats.grid_shape[1:])))
            row, col = grid.position_of(index)
            if grid.values[row, col] == _MISSING:
                continue
            count += 1
            if used >= inner:
                continue
            y0, x0 = row * px, col * px
            cell = pixels[y0:y0 + inner, x0:x0 + inner]
            tint = unused_tint(cell[0, 0], palette)
            cell[used:, :] = tint
            self._labels.append((index, label, tint))
        return count

    # -- legend and caption --------------------------------------------------------------------
    def _update_legend(self) -> None:
        lut = lookup_table()
        ramp = np.ascontiguousarray(np.repeat(lut[np.newaxis, :, :], 12, axis=0))
        image = QImage(ramp.data, ramp.shape[1], ramp.shape[0], 3 * ramp.shape[1],
                       QImage.Format.Format_RGB888).copy().scaled(80, 12)
        self._ramp.setPixmap(QPixmap.fromImage(image))
        low, top = self._color_range()
        self._low_label.setText(f"stored {format_bytes(low)}")
        self._high_label.setText(format_bytes(top))
        swatch = np.zeros((12, 12, 3), dtype=np.uint8)
        swatch[:] = MISSING_RGB
        self._hatch_missing(swatch, np.ones((1, 1), dtype=bool), 12)
        self._missing_swatch.setPixmap(QPixmap.fromImage(
            QImage(swatch.data, 12, 12, 36, QImage.Format.Format_RGB888).copy()))
        partial = np.zeros((12, 12, 3), dtype=np.uint8)
        # a cell of the middle of the ramp (its end is the biggest chunk's yellow, which this is not)
        sample = lookup_table()[len(lookup_table()) // 2]
        partial[:] = unused_tint(sample, self.palette())
        partial[:4, :] = sample
        self._partial_swatch.setPixmap(QPixmap.fromImage(
            QImage(np.ascontiguousarray(partial).data, 12, 12, 36, QImage.Format.Format_RGB888).copy()))
        has_stats = self._grid is not None
        for widget in (self._low_label, self._ramp, self._high_label, self._missing_swatch, self._missing_label):
            widget.setVisible(has_stats)
        for widget in (self._partial_swatch, self._partial_label):
            widget.setVisible(has_stats and self._partial_cells > 0)

    def _caption(self) -> str:
        stats = self._stats
        if stats is None:
            return ""
        ratio = f"{stats.compression_ratio:.2f}" if stats.compression_ratio is not None else "n/a"
        noun = "inner chunk" if stats.shard_shape is not None else "chunk"
        parts = [f"{count_noun(stats.n_chunks, noun)}: {stats.n_present:,} stored, {stats.n_missing:,} missing "
                 f"(read as fill); {format_bytes(stats.stored_bytes_total)} stored, compression ratio {ratio}"]
        grid = stats.grid_shape
        if len(grid) > 2 and self._grid is not None and not self._grid.wrapped:
            parts.append(f"grid {' x '.join(map(str, grid))}: axes after the first are flattened into columns")
        elif len(grid) >= 2 and stats.n_chunks > 1:
            parts.append(f"grid {' x '.join(map(str, grid))}" + self._wrap_note())
        elif len(grid) == 1 and stats.n_chunks > 1:
            parts.append(f"grid {grid[0]:,}" + self._wrap_note())
        if stats.shard_shape is not None:
            per_shard = math.prod(max(1, s // c) for s, c in zip(stats.shard_shape, stats.chunk_shape, strict=False))
            parts.append(f"sharded: {per_shard:,} inner chunks per shard"
                         + (" (lines mark shard edges)" if len(grid) == 2 else ""))
        if stats.underfill is not None:
            parts.append(stats.underfill.describe())
        parts.extend(stats.notes)
        return "\n".join(parts)

    def _wrap_note(self) -> str:
        grid = self._grid
        return ", wrapped into rows (read left to right)" if grid is not None and grid.wrapped and grid.rows > 1 else ""

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._render()
            self._update_legend()
        super().changeEvent(event)

    def _click(self, index: tuple[int, ...]) -> None:
        self._selected = index
        self.canvas.update()
        self.chunk_clicked.emit(index)
