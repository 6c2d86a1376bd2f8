"""What a drag on the embedding map does: pan (the wheel zooms), or select. ``mode`` is "pan" (a drag
with Shift held draws a box), "box" or "lasso" (a free-hand path, closed from its end back to its
start). The shape follows the pointer while it is drawn and stays on the map, outlining what the
panel lists, until the next selection starts; Escape during the drag cancels it (nothing selected).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPainterPath
from PySide6.QtWidgets import QGraphicsPathItem

DragMode = Literal["pan", "box", "lasso"]
#: screen pixels the pointer moves before a lasso takes another vertex
LASSO_STEP_PX = 3.0
SHAPE_RGB = (255, 170, 0)


class SelectingViewBox(pg.ViewBox):  # type: ignore[misc]
    """Pans and zooms as usual; selects by box or lasso as ``mode`` (and Shift) say (module docstring).
    ``on_box(QRectF)`` and ``on_lasso((k, 2) vertices)`` are called with the finished shape in view
    units; ``on_start()`` when a selecting drag begins (the view takes the keyboard, for Escape)."""

    def __init__(self, on_box: Callable[[QRectF], None], on_lasso: Callable[[np.ndarray], None],
                 on_start: Callable[[], None]) -> None:
        super().__init__(enableMenu=False)  # the map has no context menu: none is built
        self._on_box, self._on_lasso, self._on_start = on_box, on_lasso, on_start
        self.mode: DragMode = "pan"
        self._drag: Literal["pan", "box", "lasso", "cancelled"] = "pan"
        self._vertices: list[QPointF] = []  # the lasso's, in view units
        self._last_scene = QPointF()
        self.band = pg.RectROI((0, 0), (0, 0), movable=False, pen=pg.mkPen(SHAPE_RGB, width=2))
        self.band.setZValue(50)
        for handle in list(self.band.getHandles()):
            self.band.removeHandle(handle)
        self.band.hide()
        self.addItem(self.band, ignoreBounds=True)
        self.lasso = QGraphicsPathItem()
        self.lasso.setPen(pg.mkPen(SHAPE_RGB, width=2))  # cosmetic: as wide at any zoom
        self.lasso.setBrush(QBrush(QColor(*SHAPE_RGB, 30)))
        self.lasso.setZValue(50)
        self.lasso.hide()
        self.addItem(self.lasso, ignoreBounds=True)

    @property
    def drawing(self) -> bool:
        """Whether a selecting drag is under way (not cancelled)."""
        return self._drag in ("box", "lasso")

    def lasso_vertices(self) -> np.ndarray:
        """The lasso drawn (or being drawn), (k, 2) in view units; empty when none."""
        return np.array([(p.x(), p.y()) for p in self._vertices], np.float64).reshape(-1, 2)

    def clear_shape(self) -> None:
        self.band.hide()
        self.lasso.hide()
        self._vertices = []

    def cancel_drag(self) -> bool:
        """Escape: the selecting drag under way is dropped, its shape hidden. Whether there was one."""
        if not self.drawing:
            return False
        self._drag = "cancelled"
        self.clear_shape()
        return True

    def mouseDragEvent(self, ev, axis=None):  # type: ignore[no-untyped-def]
        if ev.isStart():  # a drag keeps its kind from its start to its end, whatever the keys do meanwhile
            shift = bool(ev.modifiers() & Qt.KeyboardModifier.ShiftModifier)
            self._drag = "box" if self.mode == "box" or (self.mode == "pan" and shift) else self.mode
            if self._drag != "pan" and ev.button() == Qt.MouseButton.LeftButton:
                self.clear_shape()
                self._on_start()
        if self._drag == "pan" or ev.button() != Qt.MouseButton.LeftButton:
            super().mouseDragEvent(ev, axis)
            return
        ev.accept()
        if self._drag == "box":
            self._drag_box(ev)
        elif self._drag == "lasso":
            self._drag_lasso(ev)
        if ev.isFinish():
            self._drag = "pan"

    def _drag_box(self, ev) -> None:  # type: ignore[no-untyped-def]
        rect = QRectF(self.mapToView(ev.buttonDownPos()), self.mapToView(ev.pos())).normalized()
        self.band.setPos(rect.topLeft())
        self.band.setSize(rect.size())
        self.band.show()
        if ev.isFinish():
            self._on_box(rect)

    def _drag_lasso(self, ev) -> None:  # type: ignore[no-untyped-def]
        scene = ev.scenePos()
        if ev.isStart():
            self._vertices = [self.mapToView(ev.buttonDownPos())]
            self._last_scene = QPointF(ev.buttonDownScenePos())
        step = scene - self._last_scene
        if ev.isFinish() or abs(step.x()) + abs(step.y()) >= LASSO_STEP_PX:
            self._vertices.append(self.mapToView(ev.pos()))
            self._last_scene = QPointF(scene)
        path = QPainterPath(self._vertices[0])
        for p in self._vertices[1:]:
            path.lineTo(p)
        path.closeSubpath()
        self.lasso.setPath(path)
        self.lasso.show()
        if ev.isFinish():
            self._on_lasso(self.lasso_vertices())
