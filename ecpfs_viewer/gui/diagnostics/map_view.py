"""The index map drawn as one image: each band's pixel columns take the colour of the node under them.

A drawing costs one binary search per pixel column and band (numpy), whatever the node count, so
4,000 or 40,000 nodes draw alike; node borders are the columns where the node changes. Wheel zooms
around the cursor, dragging pans, Home (or a double-click) shows everything again; hovering names
the node with its facts, a click emits its path; the node selected in the tree is outlined.
"""

from __future__ import annotations

import math
import time

import numpy as np
from PySide6.QtCore import QPoint, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QImage, QKeyEvent, QMouseEvent, QPainter, QPaintEvent, QPalette, QPen, QWheelEvent
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from ecpfs_viewer.gui.widgets.colormaps import MISSING_RGB, is_dark, lookup_table
from ecpfs_viewer.model.diagnostics.index_map import OK, IndexMap, MapOverlay

SEQUENTIAL_MAP = "viridis"
DIVERGING_MAP = "CET-D1A"
#: flag values -> colour: none, note, warning, error
FLAG_RGB = {0.0: (200, 205, 210), 0.5: (90, 140, 220), 1.0: (227, 179, 65), 2.0: (215, 58, 73)}
ZOOM_STEP = 1.25
CLICK_SLOP = 4  # pixels a press may move and still be a click


def overlay_colours(index_map: IndexMap, overlay: MapOverlay | None) -> list[np.ndarray]:
    """(n, 3) uint8 colours of each band's nodes under an overlay (grey where it has no value)."""
    out: list[np.ndarray] = []
    seq = lookup_table(SEQUENTIAL_MAP)
    div = lookup_table(DIVERGING_MAP)
    top = overlay.scale_top() if overlay is not None else 1.0
    for band in index_map.levels:
        rgb = np.empty((len(band), 3), np.uint8)
        rgb[:] = MISSING_RGB
        values = overlay.values.get(band.level) if overlay is not None else None
        if overlay is not None and values is not None and values.size == len(band):
            known = ~np.isnan(values)
            v = values[known]
            if overlay.kind == "flag":
                shade = np.empty((v.size, 3), np.uint8)
                shade[:] = FLAG_RGB[0.0]
                for level, colour in FLAG_RGB.items():
                    shade[v >= level] = colour
                rgb[known] = shade
            elif overlay.kind == "diverging":
                t = np.clip((v - overlay.centre) / top, -1.0, 1.0) * 0.5 + 0.5
                rgb[known] = div[np.minimum((t * (len(div) - 1)).round().astype(np.int64), len(div) - 1)]
            else:
                t = np.clip(v / top, 0.0, 1.0)
                rgb[known] = seq[np.minimum((t * (len(seq) - 1)).round().astype(np.int64), len(seq) - 1)]
        out.append(rgb)
    return out


class IndexMapView(QWidget):
    """The icicle map of one index, coloured by one overlay (see the module docstring)."""

    node_clicked = Signal(str)  # the path of the node clicked
    view_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setMinimumSize(320, 160)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.index_map: IndexMap | None = None
        self.overlay: MapOverlay | None = None
        self.extra_facts: list[MapOverlay] = []  # overlays whose values hover also names
        self._colours: list[np.ndarray] = []
        self._span = (0.0, 1.0)
        self._image: QImage | None = None
        self._image_key: tuple[object, ...] | None = None
        self.selected: tuple[int, int] | None = None  # (level, node_id) outlined
        self.hover_text = ""
        self.last_draw_seconds = 0.0  # GUI-thread time of the last paint (image built and drawn)
        self._press: QPoint | None = None
        self._press_span = self._span

    # -- what is shown ------------------------------------------------------------------------
    def set_map(self, index_map: IndexMap | None, overlay: MapOverlay | None = None) -> None:
        self.index_map = index_map
        self._span = (0.0, max(index_map.total, 1.0)) if index_map is not None else (0.0, 1.0)
        self.set_overlay(overlay)

    def set_overlay(self, overlay: MapOverlay | None) -> None:
        self.overlay = overlay
        self._colours = overlay_colours(self.index_map, overlay) if self.index_map is not None else []
        self._image = None
        self.update()

    def select(self, level: int | None, node_id: int | None = None) -> None:
        """Outline a node (the one selected in the tree); None: no outline."""
        self.selected = None if level is None or node_id is None else (level, node_id)
        self.update()

    @property
    def span(self) -> tuple[float, float]:
        return self._span

    def set_span(self, low: float, high: float) -> None:
        """Show items low .. high (clamped to the map)."""
        if self.index_map is None:
            return
        total = max(self.index_map.total, 1.0)
        width = min(max(high - low, min(1.0, total)), total)
        low = min(max(low, 0.0), total - width)
        self._span = (low, low + width)
        self._image = None
        self.update()
        self.view_changed.emit()

    def reset_view(self) -> None:
        if self.index_map is not None:
            self.set_span(0.0, self.index_map.total)

    def zoom(self, factor: float, at_x: float | None = None) -> None:
        """Zoom in (factor > 1) or out around a widget x (the centre by default)."""
        low, high = self._span
        x = self._item_x(at_x if at_x is not None else self.width() / 2)
        self.set_span(x - (x - low) / factor, x + (high - x) / factor)

    # -- geometry -------------------------------------------------------------------------------
    def _band_height(self) -> float:
        levels = len(self.index_map.levels) if self.index_map is not None else 1
        return self.height() / max(levels, 1)

    def _item_x(self, widget_x: float) -> float:
        low, high = self._span
        return low + widget_x / max(self.width(), 1) * (high - low)

    def _widget_x(self, item_x: float) -> float:
        low, high = self._span
        return (item_x - low) / max(high - low, 1e-12) * self.width()

    def node_at(self, pos: QPointF | QPoint) -> tuple[int, int] | None:
        if self.index_map is None:
            return None
        return self.index_map.node_at(self._item_x(pos.x()), pos.y() / self._band_height())

    def node_rect(self, level: int, node_id: int) -> QRectF | None:
        """Where a node is drawn (widget coordinates), or None."""
        if self.index_map is None or not 1 <= level <= len(self.index_map.levels):
            return None
        band = self.index_map.band(level)
        i = band.index_of(node_id)
        if i is None:
            return None
        h = self._band_height()
        x0, x1 = self._widget_x(float(band.x0[i])), self._widget_x(float(band.x1[i]))
        return QRectF(x0, (level - 1) * h, x1 - x0, h)

    # -- drawing --------------------------------------------------------------------------------
    def render_image(self, width: int, height: int) -> QImage:
        """The map (without the outline) as an image of width x height pixels."""
        rgb = np.empty((max(height, 1), max(width, 1), 3), np.uint8)
        base = self.palette().color(QPalette.ColorRole.Base)
        rgb[:] = (base.red(), base.green(), base.blue())
        if self.index_map is not None and self._colours:
            n = len(self.index_map.levels)
            low, high = self._span
            centres = low + (np.arange(width, dtype=np.float64) + 0.5) * ((high - low) / max(width, 1))
            edge = np.array([60, 60, 60] if not is_dark(self.palette()) else [20, 20, 20], np.uint8)
            for depth, band in enumerate(self.index_map.levels):
                top, bottom = round(depth * height / n), round((depth + 1) * height / n)
                if bottom <= top or not len(band):
                    continue
                at = np.searchsorted(band.x0, centres, side="right") - 1
                inside = (at >= 0) & (centres < band.x1[np.maximum(at, 0)])
                row = np.empty((width, 3), np.uint8)
                row[:] = rgb[top, 0]
                row[inside] = self._colours[depth][at[inside]]
                border = np.zeros(width, bool)
                border[1:] = (at[1:] != at[:-1]) & inside[1:]
                if width and border.sum() * 2 < width:  # borders only where nodes are wider than 2 pixels
                    row[border] = edge
                strip = rgb[top:bottom]
                strip[:] = row[None, :, :]
                strip[-1:] = edge  # the line between bands
                odd = np.flatnonzero(band.state != OK)  # unreadable nodes: a red tick where they are
                if odd.size:
                    px = ((band.x0[odd] - low) / max(high - low, 1e-12) * width).astype(np.int64)
                    px = px[(px >= 0) & (px < width)]
                    for dx in (0, 1):
                        strip[:, np.minimum(px + dx, width - 1)] = FLAG_RGB[2.0]
        data = np.ascontiguousarray(rgb)
        image = QImage(data.data, data.shape[1], data.shape[0], data.strides[0], QImage.Format.Format_RGB888)
        return image.copy()  # own the pixels (the array goes away)

    def paintEvent(self, event: QPaintEvent) -> None:
        started = time.perf_counter()
        ratio = self.devicePixelRatioF()
        width, height = max(1, math.ceil(self.width() * ratio)), max(1, math.ceil(self.height() * ratio))
        key = (width, height, self._span, id(self._colours), self.palette().color(QPalette.ColorRole.Base).rgb())
        if self._image is None or self._image_key != key:
            self._image = self.render_image(width, height)
            self._image.setDevicePixelRatio(ratio)
            self._image_key = key
        painter = QPainter(self)
        painter.drawImage(0, 0, self._image)
        if self.selected is not None:
            rect = self.node_rect(*self.selected)
            if rect is not None:
                if rect.width() < 10:  # a node narrower than a few pixels: still outlined, centred on it
                    rect = QRectF(rect.center().x() - 5, rect.y(), 10, rect.height())
                pen = QPen(self.palette().color(QPalette.ColorRole.Highlight), 3)
                painter.setPen(pen)
                painter.drawRect(rect.adjusted(1.5, 1.5, -1.5, -1.5))
                painter.setPen(QPen(QColor("white") if is_dark(self.palette()) else QColor("black"), 1))
                painter.drawRect(rect.adjusted(3.5, 3.5, -3.5, -3.5))
        painter.end()
        self.last_draw_seconds = time.perf_counter() - started

    # -- interaction ----------------------------------------------------------------------------
    def hover_facts(self, pos: QPointF | QPoint) -> str:
        found = self.node_at(pos)
        if found is None or self.index_map is None:
            return ""
        overlays = [o for o in [self.overlay, *self.extra_facts] if o is not None]
        return "\n".join(self.index_map.facts(*found, list(dict.fromkeys(overlays))))

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        pos = event.position()
        if self._press is not None and event.buttons() & Qt.MouseButton.LeftButton:
            low, high = self._press_span
            shift = (pos.x() - self._press.x()) / max(self.width(), 1) * (high - low)
            self.set_span(low - shift, high - shift)
            return
        text = self.hover_facts(pos)
        if text != self.hover_text:
            self.hover_text = text
            if text:
                QToolTip.showText(event.globalPosition().toPoint(), text, self)
            else:
                QToolTip.hideText()

    def leaveEvent(self, event: object) -> None:
        self.hover_text = ""

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self._press = event.position().toPoint()
            self._press_span = self._span

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        press, self._press = self._press, None
        if press is None or event.button() != Qt.MouseButton.LeftButton:
            return
        if (event.position().toPoint() - press).manhattanLength() <= CLICK_SLOP:
            found = self.node_at(event.position())
            if found is not None and self.index_map is not None:
                self.node_clicked.emit(self.index_map.path_of(*found))

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        self.reset_view()

    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = event.angleDelta().y() / 120
        if steps:
            self.zoom(ZOOM_STEP ** steps, event.position().x())

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if key in (Qt.Key.Key_Home, Qt.Key.Key_0):
            self.reset_view()
        elif key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.zoom(ZOOM_STEP * ZOOM_STEP)
        elif key == Qt.Key.Key_Minus:
            self.zoom(1 / (ZOOM_STEP * ZOOM_STEP))
        elif key in (Qt.Key.Key_Left, Qt.Key.Key_Right):
            low, high = self._span
            step = (high - low) / 5 * (-1 if key == Qt.Key.Key_Left else 1)
            self.set_span(low + step, high + step)
        else:
            super().keyPressEvent(event)


class MapLegend(QWidget):
    """The scale of the overlay shown: a colour bar with its ends (or the flags' swatches) and its text."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.overlay: MapOverlay | None = None
        self.setMinimumHeight(self.fontMetrics().height() * 3 + 10)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_overlay(self, overlay: MapOverlay | None) -> None:
        self.overlay = overlay
        self.setToolTip("" if overlay is None else overlay.legend)
        self.update()

    def text(self) -> str:
        """What the legend says (its title, scale ends and text), for tests and screen readers."""
        o = self.overlay
        if o is None:
            return ""
        return f"{o.name}: {' | '.join(self.labels())} — {o.legend}"

    def labels(self) -> list[str]:
        o = self.overlay
        if o is None:
            return []
        if o.kind == "flag":
            return ["none", "note", "warning", "error"]
        top = o.scale_top()
        if o.kind == "diverging":
            return [o.format(o.centre - top), o.format(o.centre), o.format(o.centre + top)]
        return [o.format(0.0), o.format(top / 2), o.format(top)]

    def scale_geometry(self) -> tuple[QRectF, list[tuple[QRectF, str]]]:
        """The colour bar and each scale label with the rectangle its text takes: the bar is as wide as
        its labels side by side (a third of the legend at least, up to its whole width), and a middle
        label that would still not fit is left out (at 650 pixels "0.12 x median", "1.00 x median"
        and "8.00 x median" were drawn over each other)."""
        fm = self.fontMetrics()
        line = fm.height()
        labels = self.labels()
        gap = 2 * fm.averageCharWidth()
        widths = [fm.horizontalAdvance(text) for text in labels]
        flags = self.overlay is not None and self.overlay.kind == "flag"
        needed = (max(widths, default=0) + gap) * len(labels) if flags else sum(widths) + gap * (len(labels) - 1)
        room = max(self.width() - 8, 1)
        bar_w = float(min(max(min(320, max(120, self.width() // 3)), needed), room))
        bar = QRectF(4, 4, bar_w, line)
        placed: list[tuple[QRectF, str]] = []
        below = bar.bottom() + 2
        if flags:
            each = bar_w / max(len(labels), 1)
            placed = [(QRectF(bar.x() + j * each, below, min(widths[j], each), line), text)
                      for j, text in enumerate(labels)]
        elif labels:
            ends = [0, len(labels) - 1] if needed > bar_w else range(len(labels))
            for j in ends:
                share = j / max(len(labels) - 1, 1)  # left, centred, right along the bar
                x = bar.x() + share * (bar_w - widths[j])
                placed.append((QRectF(x, below, widths[j], line), labels[j]))
        return bar, placed

    def paintEvent(self, event: QPaintEvent) -> None:
        o = self.overlay
        painter = QPainter(self)
        fm = self.fontMetrics()
        line = fm.height()
        text_pen = self.palette().color(QPalette.ColorRole.WindowText)
        painter.setPen(text_pen)
        if o is None:
            painter.end()
            return
        bar, placed = self.scale_geometry()
        bar_w = int(bar.width())
        if o.kind == "flag":
            each = bar_w / len(FLAG_RGB)
            for j, colour in enumerate(FLAG_RGB.values()):
                painter.fillRect(QRectF(bar.x() + j * each, bar.y(), each - 2, line), QColor(*colour))
        else:
            lut = lookup_table(DIVERGING_MAP if o.kind == "diverging" else SEQUENTIAL_MAP)
            strip = np.ascontiguousarray(np.repeat(lut[None, :, :], 2, axis=0))
            image = QImage(strip.data, strip.shape[1], 2, strip.strides[0], QImage.Format.Format_RGB888)
            painter.drawImage(bar, image)
        for rect, text in placed:
            painter.drawText(rect, Qt.AlignmentFlag.AlignLeft, text)
        rect, title = self.title_geometry()
        painter.drawText(rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, title)
        painter.end()

    def title_geometry(self) -> tuple[QRectF, str]:
        """The title (the colouring's name and what it says), elided to its place: beside the bar, or on
        a line under the scale where the bar leaves less than the name beside it (at 1.5x it read "s…")."""
        o = self.overlay
        if o is None:
            return QRectF(), ""
        fm = self.fontMetrics()
        line = fm.height()
        bar, _placed = self.scale_geometry()
        beside = self.width() - bar.width() - 24
        text = f"{o.name}: {o.legend}"
        if beside >= fm.horizontalAdvance(f"{o.name}: …"):
            rect = QRectF(bar.width() + 16, 4, beside + 4, 2 * line + 4)
        else:
            rect = QRectF(4, bar.bottom() + line + 4, self.width() - 8, line)
        return rect, fm.elidedText(text, Qt.TextElideMode.ElideRight, int(rect.width()))
