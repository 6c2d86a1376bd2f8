"""Icons for node kinds and actions, taken from the style, or drawn in the palette's text colour.

The style's icons follow the platform; but Fusion's arrows and play triangle are dark grey
pixmaps, nearly invisible on a dark theme (contrast 1.4). Those are drawn here instead, as
glyphs painted at paint time in the current palette's text colour (disabled: the disabled text
colour), so they follow Light, Dark and a live theme change with nothing to refresh.
"""

from __future__ import annotations

from functools import cache

from PySide6.QtCore import QPointF, QRect, QSize, Qt
from PySide6.QtGui import QColor, QIcon, QIconEngine, QImage, QPainter, QPalette, QPixmap, QPolygonF
from PySide6.QtWidgets import QApplication, QStyle

from ecpfs_viewer.model.zarrtree.nodes import NodeKind

_STANDARD = {
    NodeKind.GROUP: QStyle.StandardPixmap.SP_DirIcon,
    NodeKind.IMPLICIT_GROUP: QStyle.StandardPixmap.SP_DirLinkIcon,
    NodeKind.ARRAY: QStyle.StandardPixmap.SP_FileIcon,
    NodeKind.ERROR: QStyle.StandardPixmap.SP_MessageBoxCritical,
}

#: Glyphs drawn in the palette: (points of a polygon on a 16 x 16 grid).
_ARROW_LEFT = ((2, 8), (8, 2.5), (8, 6), (14, 6), (14, 10), (8, 10), (8, 13.5))
_GLYPHS: dict[str, tuple[tuple[float, float], ...]] = {
    "SP_ArrowBack": _ARROW_LEFT,
    "SP_ArrowForward": tuple((16 - x, y) for x, y in _ARROW_LEFT),
    "SP_ArrowUp": tuple((y, x) for x, y in _ARROW_LEFT),
    "SP_ArrowDown": tuple((y, 16 - x) for x, y in _ARROW_LEFT),
    "SP_MediaPlay": ((4, 2.5), (13.5, 8), (4, 13.5)),
}


def glyph_color(mode: QIcon.Mode) -> QColor:
    """The colour a glyph is drawn in: the application palette's text, or its disabled text."""
    group = QPalette.ColorGroup.Disabled if mode == QIcon.Mode.Disabled else QPalette.ColorGroup.Active
    return QApplication.palette().color(group, QPalette.ColorRole.WindowText)


class _GlyphEngine(QIconEngine):
    """Paints one glyph in the palette's text colour whenever the icon is drawn."""

    def __init__(self, points: tuple[tuple[float, float], ...]) -> None:
        super().__init__()
        self._points = points

    def paint(self, painter: QPainter, rect: QRect, mode: QIcon.Mode, state: QIcon.State) -> None:
        side = min(rect.width(), rect.height())
        scale = side / 16.0
        x0 = rect.x() + (rect.width() - side) / 2
        y0 = rect.y() + (rect.height() - side) / 2
        polygon = QPolygonF([QPointF(x0 + x * scale, y0 + y * scale) for x, y in self._points])
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(glyph_color(mode))
        painter.drawPolygon(polygon)
        painter.restore()

    def pixmap(self, size: QSize, mode: QIcon.Mode, state: QIcon.State) -> QPixmap:
        image = QImage(size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        self.paint(painter, QRect(0, 0, size.width(), size.height()), mode, state)
        painter.end()
        return QPixmap.fromImage(image)

    def clone(self) -> QIconEngine:
        return _GlyphEngine(self._points)


@cache
def kind_icon(kind: NodeKind) -> QIcon:
    """The tree icon for a node kind."""
    return QApplication.style().standardIcon(_STANDARD[kind])


@cache
def standard_icon(name: str) -> QIcon:
    """A style icon by its QStyle.StandardPixmap name, e.g. 'SP_BrowserReload' (arrows and the play
    triangle drawn in the palette's text colour)."""
    if name in _GLYPHS:
        return QIcon(_GlyphEngine(_GLYPHS[name]))
    return QApplication.style().standardIcon(getattr(QStyle.StandardPixmap, name))
