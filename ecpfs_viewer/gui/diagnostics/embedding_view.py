"""The embedding map's plot: one ImageItem showing the density frame of the current view, and at most
a few ScatterPlotItems on it (the items in view when few enough, representatives, a search's path).

Never one graphics item per point: the frame is aggregated by the model (``density_frame``) off the
GUI thread, the newest view only (BackgroundRunner drops stale frames), at most one every
FRAME_DELAY_MS while a pan or zoom goes on, so a drag does not queue one frame per mouse move.
A box dragged with Shift (or with the panel's box toggle on) is emitted as ``box_selected(ViewRect)``,
a lasso (the lasso toggle on) as ``lasso_selected`` with its vertices (embedding_drag.py draws both);
the pointer's place as ``hovered(ViewRect)`` and a click (no drag) as ``clicked(ViewRect)``, a few
pixels around it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QKeyEvent, QPalette
from PySide6.QtWidgets import QWidget

from ecpfs_viewer.gui.diagnostics.embedding_drag import DragMode, SelectingViewBox
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.model.diagnostics.embedding_map import ColourSums, DensityFrame, DensityIndex, ViewRect, density_frame
from ecpfs_viewer.model.tasks import TaskError

#: ms after the last pan or zoom before the frame of the new view is asked for
FRAME_DELAY_MS = 40
#: half the side of the hover square, in screen pixels
HOVER_PX = 6


def _frame_job(index: DensityIndex, sums: ColourSums | None, rect: ViewRect, width: int, height: int,
               background: tuple[int, int, int]) -> tuple[DensityFrame, np.ndarray]:
    frame = density_frame(index, sums, rect, width, height)
    return frame, np.ascontiguousarray(frame.rgba(background)[::-1])  # row 0 at the bottom, as the plot's y


def _shared_brushes(colours: np.ndarray) -> list[QBrush]:
    """One brush object per distinct colour, repeated per point: pyqtgraph draws a symbol per brush
    object it meets, so a brush made per point drew every point's symbol anew on the GUI thread."""
    distinct, which = np.unique(colours, axis=0, return_inverse=True)
    made = [QBrush(QColor(int(r), int(g), int(b))) for r, g, b in distinct]
    return [made[i] for i in which.reshape(-1).tolist()]


class EmbeddingMapView(pg.PlotWidget):  # type: ignore[misc]
    """The map (see the module docstring); ``show_index`` gives it a density index, ``set_sums`` colours."""

    box_selected = Signal(object)  # ViewRect in placement units
    lasso_selected = Signal(object)  # (k, 2) float64 vertices in placement units
    hovered = Signal(object)  # ViewRect around the pointer
    clicked = Signal(object)  # ViewRect around the pointer: a left click, not a drag
    frame_shown = Signal(object)  # DensityFrame

    def __init__(self, parent: QWidget | None = None) -> None:
        self._box_view = SelectingViewBox(self._boxed, self._lassoed, lambda: self.setFocus(
            Qt.FocusReason.MouseFocusReason))
        super().__init__(parent, viewBox=self._box_view, enableMenu=False)
        self._moved = False  # the user panned or zoomed since the whole map was last put in view
        self._box_view.sigRangeChangedManually.connect(lambda *_: setattr(self, "_moved", True))
        self.setAspectLocked(True)
        self.showGrid(x=False, y=False)
        self.getPlotItem().hideButtons()
        self.image = pg.ImageItem(axisOrder="row-major")
        self.addItem(self.image)
        self.points = pg.ScatterPlotItem(size=4, pen=None)
        self.points.setZValue(5)
        self.addItem(self.points)
        self.marks = pg.ScatterPlotItem(symbol="+", size=11, pen=pg.mkPen((20, 20, 20), width=1.5), brush=None)
        self.marks.setZValue(10)
        self.addItem(self.marks)
        self.selected = pg.ScatterPlotItem(symbol="o", size=5, pen=pg.mkPen((255, 140, 0), width=1), brush=None)
        self.selected.setZValue(15)  # the tree's selection: rings on its items, under a search's marks
        self.addItem(self.selected)
        self.path_line = pg.PlotCurveItem(pen=pg.mkPen((230, 60, 30), width=2))
        self.path_line.setZValue(20)
        self.addItem(self.path_line)
        self.query_items = pg.ScatterPlotItem(pen=None)
        self.query_items.setZValue(21)
        self.addItem(self.query_items)
        self.index: DensityIndex | None = None
        self.sums: ColourSums | None = None
        self.frame: DensityFrame | None = None
        self._leaf_rgb: np.ndarray | None = None  # per leaf position, for the points drawn one by one
        self._runner = BackgroundRunner(self)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(FRAME_DELAY_MS)
        self._timer.timeout.connect(self._ask_frame)
        self.getViewBox().sigRangeChanged.connect(self._range_changed)
        self.scene().sigMouseMoved.connect(self._mouse_moved)
        self.scene().sigMouseClicked.connect(self._mouse_clicked)
        self.on_error: Callable[[TaskError], None] | None = None

    # -- what is shown ---------------------------------------------------------------------------
    @property
    def select_mode(self) -> DragMode:
        """What a drag does: "pan" (Shift: a box), "box" or "lasso"."""
        return self._box_view.mode

    @select_mode.setter
    def select_mode(self, mode: DragMode) -> None:
        self._box_view.mode = mode

    @property
    def boxing(self) -> bool:
        return self._box_view.mode == "box"

    @property
    def drawing(self) -> bool:
        """Whether a box or a lasso is being drawn."""
        return bool(self._box_view.drawing)

    def selection_shape(self) -> np.ndarray:
        """The last lasso's vertices (placement units), empty when none is on the map."""
        return self._box_view.lasso_vertices()

    def keyPressEvent(self, ev: QKeyEvent) -> None:
        if ev.key() == Qt.Key.Key_Escape and self._box_view.cancel_drag():
            ev.accept()
            return
        super().keyPressEvent(ev)

    @property
    def busy(self) -> bool:
        return self._runner.busy or self._timer.isActive()

    def show_index(self, index: DensityIndex | None, sums: ColourSums | None, leaf_rgb: np.ndarray | None,
                   keep_view: bool = False) -> None:
        """A (new) placement's density index and colours; the whole map in view unless keep_view."""
        self.index, self.sums, self._leaf_rgb = index, sums, leaf_rgb
        if index is None:
            self._runner.invalidate()
            self.frame = None
            self.image.clear()
            self.points.clear()
            self.marks.clear()
            self.selected.clear()
            self._box_view.clear_shape()
            self.clear_query()
            return
        if not keep_view:
            self.reset_view()
        self._timer.start()

    def set_sums(self, sums: ColourSums | None, leaf_rgb: np.ndarray | None) -> None:
        self.sums, self._leaf_rgb = sums, leaf_rgb
        self._ask_frame()

    def reset_view(self) -> None:
        if self.index is not None:
            b = self.index.bounds
            self.getViewBox().setRange(xRange=(b.x0, b.x1), yRange=(b.y0, b.y1), padding=0)
        self._moved = False

    def moved(self) -> bool:
        """Whether the user panned or zoomed (wheel, drag) since the whole map was last put in view."""
        return self._moved

    def view_rect(self) -> ViewRect:
        (x0, x1), (y0, y1) = self.getViewBox().viewRange()
        return ViewRect(float(x0), float(x1), float(y0), float(y1))

    def background_rgb(self) -> tuple[int, int, int]:
        colour = self.palette().color(QPalette.ColorRole.Base)
        return colour.red(), colour.green(), colour.blue()

    def apply_background(self) -> None:
        """The plot's background and the marks' ink follow the theme (the frame is redrawn over it)."""
        base = self.palette().color(QPalette.ColorRole.Base)
        self.setBackground(base)
        ink = self.palette().color(QPalette.ColorRole.Text)
        self.marks.setPen(pg.mkPen(ink, width=1.5))
        self.marks.setBrush(pg.mkBrush(base))  # a cross filled with the background: seen on any colour
        for axis in ("left", "bottom"):
            self.getPlotItem().getAxis(axis).setTextPen(ink)
            self.getPlotItem().getAxis(axis).setPen(ink)
        if self.index is not None:
            self._ask_frame()

    def changeEvent(self, event: QEvent) -> None:
        """A theme chosen while the map is shown: this view's own palette has changed by now (the
        panel's change comes first, while the view still has the old palette)."""
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and "marks" in self.__dict__:  # not during __init__
            self.apply_background()

    def set_marks(self, xy: np.ndarray | None) -> None:
        """Representatives' marks (or none)."""
        if xy is None or not len(xy):
            self.marks.clear()
        else:
            self.marks.setData(x=xy[:, 0], y=xy[:, 1])

    def show_query(self, query_xy: np.ndarray, leaf_centres: np.ndarray, scanned_xy: np.ndarray,
                   scanned_rank: np.ndarray, results_xy: np.ndarray, missed_xy: np.ndarray) -> None:
        """A search: its scanned items (shaded by visit order), the path through its leaves' centres,
        its results (rings), the true neighbours it missed (red crosses) and the query (a star)."""
        spots: list[dict[str, object]] = []
        if scanned_xy.size:
            last = max(int(scanned_rank.max()), 1)
            shade = (255 * (1 - 0.7 * (scanned_rank - 1) / last)).astype(int)
            brushes = [pg.mkBrush(255, int(s * 0.6), 0, 220) for s in shade]  # first leaves bright, later darker
            ring = pg.mkPen((60, 20, 0), width=1)
            spots += [{"pos": (float(x), float(y)), "size": 7, "brush": b, "pen": ring, "symbol": "s"}
                      for (x, y), b in zip(scanned_xy, brushes, strict=True)]
        spots += [{"pos": (float(x), float(y)), "size": 12, "brush": None, "symbol": "o",
                   "pen": pg.mkPen((0, 160, 60), width=2)} for x, y in results_xy]
        spots += [{"pos": (float(x), float(y)), "size": 12, "brush": pg.mkBrush(220, 20, 20), "symbol": "x",
                   "pen": pg.mkPen((120, 0, 0))} for x, y in missed_xy]
        spots.append({"pos": (float(query_xy[0]), float(query_xy[1])), "size": 18, "symbol": "star",
                      "brush": pg.mkBrush(255, 215, 0), "pen": pg.mkPen((40, 40, 40), width=1.5)})
        self.query_items.setData(spots)
        path = np.vstack([query_xy.reshape(1, 2), leaf_centres]) if len(leaf_centres) else query_xy.reshape(1, 2)
        self.path_line.setData(x=path[:, 0], y=path[:, 1])

    def show_selected(self, xy: np.ndarray | None) -> None:
        """Rings on the items of the node selected in the tree (None: none)."""
        if xy is None or not len(xy):
            self.selected.clear()
        else:
            self.selected.setData(x=xy[:, 0], y=xy[:, 1])

    def clear_query(self) -> None:
        self.query_items.clear()
        self.path_line.setData(x=[], y=[])

    # -- frames ----------------------------------------------------------------------------------
    def _range_changed(self, *_args: object) -> None:
        """Throttled: at most one frame asked per FRAME_DELAY_MS while a pan or zoom goes on (the
        image moves with the view meanwhile), and the last view's frame always asked."""
        if not self._timer.isActive():
            self._timer.start()

    def _ask_frame(self) -> None:
        index = self.index
        if index is None:
            return
        rect = self.view_rect()
        width, height = max(self.getViewBox().width(), 16.0), max(self.getViewBox().height(), 16.0)
        if rect.width <= 0 or rect.height <= 0:
            return
        self._runner.run(_frame_job, index, self.sums, rect, int(width), int(height), self.background_rgb(),
                         on_result=self._show_frame, on_error=self._frame_failed)

    def _frame_failed(self, error: TaskError) -> None:
        if self.on_error is not None:
            self.on_error(error)

    def _show_frame(self, result: tuple[DensityFrame, np.ndarray]) -> None:
        frame, rgba = result
        self.frame = frame
        r = frame.rect
        self.image.setImage(rgba, autoLevels=False, levels=(0, 255))
        self.image.setRect(QRectF(r.x0, r.y0, r.width, r.height))
        if frame.points is not None and frame.points.size and self.index is not None:
            xy = self.index.placement.coords[frame.points]
            leaf_rgb = self._leaf_rgb
            colours = None if leaf_rgb is None else leaf_rgb[self.index.placement.leaves_of(frame.points)]
            brushes = None if colours is None else _shared_brushes(colours)
            self.points.setData(x=xy[:, 0], y=xy[:, 1], brush=brushes if brushes is not None else pg.mkBrush("b"))
        else:
            self.points.clear()
        self.frame_shown.emit(frame)

    # -- pointer ---------------------------------------------------------------------------------
    def _mouse_moved(self, scene_pos: QPointF) -> None:
        if self.index is None or not self.getViewBox().sceneBoundingRect().contains(scene_pos):
            return
        self.hovered.emit(self.rect_around(scene_pos))

    def rect_around(self, scene_pos: QPointF, pixels: float = HOVER_PX) -> ViewRect:
        box = self.getViewBox()
        a = box.mapSceneToView(scene_pos - QPointF(pixels, pixels))
        b = box.mapSceneToView(scene_pos + QPointF(pixels, pixels))
        return ViewRect(min(a.x(), b.x()), max(a.x(), b.x()), min(a.y(), b.y()), max(a.y(), b.y()))

    def widget_pos(self, x: float, y: float) -> QPointF:
        """Where a placement point is on this widget (for tests and tooltips)."""
        scene = self.getViewBox().mapViewToScene(QPointF(x, y))
        return QPointF(self.mapFromScene(scene))

    def _mouse_clicked(self, ev) -> None:  # type: ignore[no-untyped-def]
        scene_pos = ev.scenePos()
        if (ev.button() == Qt.MouseButton.LeftButton and not ev.double() and self.index is not None
                and self.getViewBox().sceneBoundingRect().contains(scene_pos)):
            self.clicked.emit(self.rect_around(scene_pos))

    def _lassoed(self, vertices: np.ndarray) -> None:
        if len(vertices) >= 3:
            self.lasso_selected.emit(vertices)

    def _boxed(self, rect: QRectF) -> None:
        if rect.width() > 0 and rect.height() > 0:
            self.box_selected.emit(ViewRect(rect.left(), rect.right(), rect.top(), rect.bottom()))
