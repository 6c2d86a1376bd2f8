"""A 2-D PCA picture of a node, a leaf or a whole level, computed in the background.

What is drawn comes from :mod:`ecpfs_viewer.model.views.projection`: points with an id, a class (the
child or parent they belong to) and a mark for representatives. Points are drawn with one
scatter item per colour (one style each: gui.widgets.uniform_scatter), each with a legend entry
(more classes than LEGEND_LIMIT are drawn in one muted colour, the current node and its siblings
highlighted), the axes name the share of variance they explain, and a sample says so on the plot.
Hovering a point names it; clicking a point that is a node emits ``node_requested(path)``. A new
request (the selection moved) cancels the one running.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QStackedWidget,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.categorical import MAX_CATEGORIES, category_color
from ecpfs_viewer.gui.widgets.colormaps import plain_numbers, plot_colors, style_plot
from ecpfs_viewer.gui.widgets.uniform_scatter import UniformScatterPlotItem
from ecpfs_viewer.model.ecpfs.nodes import NodeRef
from ecpfs_viewer.model.ecpfs.paths import level_path, node_path
from ecpfs_viewer.model.tasks import Progress, ProgressCallback
from ecpfs_viewer.model.views.projection import Projection, ProjectionKind, project_level, project_node
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

LEGEND_LIMIT = MAX_CATEGORIES  # more classes than this: one muted colour, the current node highlighted
HOVER_PIXELS = 8  # a point this close to the cursor is hovered
POINT_SIZE = 7
MARK_SIZE = 14

NODE, MEMBERS, LEVEL = "node", "members", "level"
#: What the classes of a projection are, (one, many); a leaf's are 'members' and 'representative'.
CLASS_NOUNS = {ProjectionKind.LEVEL: ("parent", "parents"), ProjectionKind.NODE_ROWS: ("child", "children"),
               ProjectionKind.NODE_MEMBERS: ("child", "children")}


@dataclass(frozen=True)
class ProjectionRequest:
    """What to project: a node's rows (members: with a sample of its children's rows), or a level."""

    what: str  # NODE, MEMBERS or LEVEL
    ref: NodeRef
    leaf: bool


def compute_projection(h: Hierarchy, request: ProjectionRequest, *, progress: ProgressCallback,
                       cancel: threading.Event) -> Projection:
    """Run the projection a request names (in a worker)."""
    if request.what == LEVEL:
        return project_level(h, max(1, request.ref.level), progress=progress, cancel=cancel)
    return project_node(h, request.ref, members=request.what == MEMBERS and not request.leaf,
                        progress=progress, cancel=cancel)


class ProjectionView(QWidget):
    """The scatter plot of one projection with its controls, progress and cancel."""

    node_requested = Signal(str)
    shown = Signal()  # a projection (or the message why not) is on screen

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runner = BackgroundRunner(self)
        self._hierarchy: Hierarchy | None = None
        self._ref: NodeRef | None = None
        self._leaf = False
        self._request: ProjectionRequest | None = None
        self._projection: Projection | None = None
        self._running: int | None = None
        self._items: list[pg.ScatterPlotItem] = []
        self._hovered: int | None = None
        self._build_ui()
        self.clear()

    def _build_ui(self) -> None:
        self.mode = QComboBox()
        self.mode.currentIndexChanged.connect(lambda _i: self.start())
        self.members_check = QCheckBox("members")
        self.members_check.setToolTip("Add a sample of the rows under each child, coloured by child")
        self.members_check.toggled.connect(lambda _on: self.start())
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(200)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(lambda _checked=False: self.cancel())
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Show:"))
        bar.addWidget(self.mode)
        bar.addWidget(self.members_check)
        bar.addStretch(1)
        bar.addWidget(self.progress)
        bar.addWidget(self.cancel_button)

        self.plot_widget = pg.PlotWidget(enableMenu=False)  # no context menu, none built
        self.plot: pg.PlotItem = self.plot_widget.getPlotItem()
        plain_numbers(self.plot)  # projected coordinates are small fractions
        self.plot.showGrid(x=True, y=True, alpha=0.15)
        self.legend = self.plot.addLegend(offset=(8, 8), labelTextSize="8pt")
        self.marks = pg.ScatterPlotItem(symbol="star", size=MARK_SIZE, pen=pg.mkPen("k", width=1.2),
                                        brush=pg.mkBrush("#ffd400"))
        self.marks.setZValue(20)
        self.plot.addItem(self.marks)
        self.plot_widget.scene().sigMouseMoved.connect(self.hover)
        self.plot_widget.scene().sigMouseClicked.connect(self._clicked)
        self.message = QLabel()
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.plot_widget)
        self.stack.addWidget(self.message)
        self.info_label = QLabel(" ")
        self.info_label.setWordWrap(True)
        self.info_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.hover_label = QLabel(" ")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.stack, 1)
        layout.addWidget(self.info_label)
        layout.addWidget(self.hover_label)
        self.apply_palette()

    # -- requests ------------------------------------------------------------------------------
    def set_node(self, hierarchy: Hierarchy, ref: NodeRef, leaf: bool) -> None:
        """Offer the projections of a node (nothing is computed until start())."""
        self.clear()
        self._hierarchy, self._ref, self._leaf = hierarchy, ref, leaf
        self.mode.blockSignals(True)
        self.mode.clear()
        if leaf:
            self.mode.addItem("this leaf: members and its representative", NODE)
        else:
            self.mode.addItem("this node: rows coloured by child", NODE)
        level = max(1, ref.level)
        self.mode.addItem(f"{level_path(level)}: every representative, coloured by parent", LEVEL)
        self.mode.blockSignals(False)
        self.members_check.setVisible(not leaf)

    def start(self) -> None:
        """Compute the chosen projection (cancelling the one running)."""
        if self._hierarchy is None or self._ref is None:
            return
        what = self.mode.currentData() or NODE
        if what == NODE and self.members_check.isChecked() and not self._leaf:
            what = MEMBERS
        self.members_check.setEnabled(what != LEVEL)
        request = ProjectionRequest(what, self._ref, self._leaf)
        if request == self._request and (self._projection is not None or self._running is not None):
            return
        self._request = request
        self._projection = None
        self._clear_plot()
        self.progress.setRange(0, 0)
        self.progress.show()
        self.cancel_button.show()
        self.info_label.setText("Projecting…")
        self._running = self._runner.run(compute_projection, self._hierarchy, request, on_result=self._on_result,
                                         on_error=self._on_error, on_progress=self._on_progress, heavy=True)

    def cancel(self) -> None:
        """Stop the projection being computed (the picture stays empty and says so)."""
        self._runner.invalidate()
        self._finish()
        self._request = None
        self.show_message("Cancelled. Pick what to show to start again.")

    def clear(self) -> None:
        """Forget the node and cancel any running projection."""
        self._runner.invalidate()
        self._finish()
        self._hierarchy, self._ref, self._request, self._projection = None, None, None, None
        self._clear_plot()
        self.info_label.setText(" ")
        self.stack.setCurrentWidget(self.plot_widget)

    @property
    def busy(self) -> bool:
        return self._runner.busy

    @property
    def projection(self) -> Projection | None:
        """The projection on screen."""
        return self._projection

    def show_message(self, text: str) -> None:
        self.message.setText(text)
        self.stack.setCurrentWidget(self.message)

    def _finish(self) -> None:
        self._running = None
        self.progress.hide()
        self.cancel_button.hide()

    def _on_progress(self, value: Progress) -> None:
        self.progress.setRange(0, max(value.total, 1))
        self.progress.setValue(value.done)

    def _on_error(self, message: str) -> None:
        self._finish()
        self.info_label.setText(" ")
        self.show_message(f"Cannot project: {message}")
        self.shown.emit()

    def _on_result(self, projection: Projection) -> None:
        self._finish()
        self._projection = projection
        self.stack.setCurrentWidget(self.plot_widget)
        self._draw(projection)
        self.shown.emit()

    # -- drawing -------------------------------------------------------------------------------
    def _clear_plot(self) -> None:
        for item in self._items:
            self.plot.removeItem(item)
        self._items.clear()
        self.marks.setData([], [])
        self.legend.clear()
        self.plot.setTitle(None)
        self.hover_label.setText(" ")
        self._hovered = None

    def _draw(self, p: Projection) -> None:
        self._clear_plot()
        many = len(p.class_names) > LEGEND_LIMIT
        one, classes = CLASS_NOUNS.get(p.kind, ("class", "classes"))
        plain = ~p.marked
        if many:
            self._draw_crowd(p, plain, classes)
        else:
            for cls, name in enumerate(p.class_names):
                chosen = plain & (p.classes == cls)
                if chosen.any():  # a class drawn only as marks (a leaf's representative) is the star's entry
                    self._scatter(p, chosen, pg.mkBrush(category_color(cls)), name)
        if p.marked.any():
            self.marks.setData(x=p.coords[p.marked, 0], y=p.coords[p.marked, 1])
            self.legend.addItem(self.marks, "representative")
        self.legend.setLabelTextColor(plot_colors(self.palette())[1])
        x_share, y_share = p.explained
        self.plot.setLabel("bottom", f"PC1 ({x_share:.1%} of variance)")
        self.plot.setLabel("left", f"PC2 ({y_share:.1%} of variance)")
        if p.sampled:
            self.plot.setTitle(p.note)
        style_plot(self.plot, self.palette())
        self.plot.enableAutoRange()
        self.plot.autoRange()
        found = "; ".join(f.message for f in p.findings[:3])
        crowd = f" (too many to colour apart: hover a point to name its {one})" if many else ""
        self.info_label.setText(
            f"{p.title}: {p.count:,} points in {len(p.class_names):,} {classes}{crowd}; PCA explains "
            f"{x_share:.1%} + {y_share:.1%} of the variance" + (f". Problems: {found}" if found else ""))

    def _scatter(self, p: Projection, chosen: np.ndarray, brush: Any, name: str, *, pen: Any = None,
                 size: int = POINT_SIZE) -> None:
        """One colour of points, with its legend entry."""
        item = UniformScatterPlotItem(x=p.coords[chosen, 0], y=p.coords[chosen, 1], size=size, pen=pen, brush=brush)
        self.plot.addItem(item)
        self._items.append(item)
        self.legend.addItem(item, name)

    def _draw_crowd(self, p: Projection, plain: np.ndarray, classes: str) -> None:
        """More classes than colours tell apart: every point in one muted colour, and on a level
        the current node and its siblings highlighted, so each colour on screen has a legend entry."""
        _, text, accent = plot_colors(self.palette())
        muted = pg.mkColor(text)
        muted.setAlpha(90)
        own = self._current_point(p)
        siblings = plain & (p.classes == p.classes[own]) if own is not None else np.zeros_like(plain)
        rest = plain & ~siblings
        if rest.any():
            other = "other nodes" if own is not None else "rows"
            self._scatter(p, rest, pg.mkBrush(muted), f"{other} ({len(p.class_names):,} {classes}, one colour)")
        if own is not None:
            parent = p.class_names[int(p.classes[own])]
            self._scatter(p, siblings, pg.mkBrush(accent), f"siblings under {parent}")
            this = np.zeros_like(plain)
            this[own] = True
            self._scatter(p, this, pg.mkBrush(accent), f"this node ({self.point_path(own)})",
                          pen=pg.mkPen(text, width=2), size=MARK_SIZE)

    def _current_point(self, p: Projection) -> int | None:
        """The point of the selected node on a level projection (None elsewhere or not sampled)."""
        ref = self._request.ref if self._request is not None else None
        if p.kind is not ProjectionKind.LEVEL or ref is None or ref.level < 1:
            return None
        found = np.flatnonzero((p.ids == ref.node_id) & ~p.id_is_item & ~p.marked)
        return int(found[0]) if found.size else None

    def legend_labels(self) -> list[str]:
        """The legend's entries, top to bottom."""
        return [label.text for _sample, label in self.legend.items]

    def point_path(self, i: int) -> str | None:
        """The node a point is, as a path ('lvl_3/node_812'), or None for an item."""
        p, request = self._projection, self._request
        if p is None or request is None or p.id_is_item[i]:
            return None
        if p.kind is ProjectionKind.LEVEL:
            level = max(1, request.ref.level)
        elif p.kind is ProjectionKind.NODE_MEMBERS and not p.marked[i]:
            level = request.ref.level + 2
        else:
            level = request.ref.level + 1
        return node_path(level, int(p.ids[i]))

    def point_at(self, scene_pos: QPointF) -> int | None:
        """The point nearest a scene position within HOVER_PIXELS, or None."""
        p = self._projection
        if p is None or not p.count or not self.plot.vb.sceneBoundingRect().contains(scene_pos):
            return None
        scene = np.array([[self.plot.vb.mapViewToScene(QPointF(0.0, 0.0)).x(),
                           self.plot.vb.mapViewToScene(QPointF(0.0, 0.0)).y()]])
        unit_x = self.plot.vb.mapViewToScene(QPointF(1.0, 0.0))
        unit_y = self.plot.vb.mapViewToScene(QPointF(0.0, 1.0))
        scale = np.array([unit_x.x() - scene[0, 0], unit_y.y() - scene[0, 1]])
        pixels = p.coords.astype(np.float64) * scale + scene
        distance = np.hypot(pixels[:, 0] - scene_pos.x(), pixels[:, 1] - scene_pos.y())
        nearest = int(np.argmin(distance))
        return nearest if distance[nearest] <= HOVER_PIXELS else None

    def hover(self, scene_pos: QPointF) -> None:
        """Name the point under the cursor (label below the plot and a tooltip)."""
        i = self.point_at(scene_pos)
        self._hovered = i
        if i is None or self._projection is None:
            self.hover_label.setText(" ")
            QToolTip.hideText()
            return
        text = self._projection.label(i) + (" — representative" if self._projection.marked[i] else "")
        if self.point_path(i):
            text += "; click to open it"
        self.hover_label.setText(text)
        view = self.plot_widget.mapFromScene(scene_pos)
        QToolTip.showText(self.plot_widget.viewport().mapToGlobal(view), text, self.plot_widget)

    def hover_text(self) -> str:
        return self.hover_label.text().strip()

    def scene_pos_of(self, i: int) -> QPointF:
        """Where point i is drawn, in scene coordinates (for tests and links)."""
        assert self._projection is not None
        x, y = self._projection.coords[i]
        point: QPointF = self.plot.vb.mapViewToScene(QPointF(float(x), float(y)))
        return point

    def _clicked(self, event: Any) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        i = self.point_at(event.scenePos())
        path = self.point_path(i) if i is not None else None
        if path:
            self.node_requested.emit(path)

    def apply_palette(self) -> None:
        background, text, _ = plot_colors(self.palette())
        self.plot_widget.setBackground(background)
        self.legend.setLabelTextColor(text)
        style_plot(self.plot, self.palette())
        if self._projection is not None and len(self._projection.class_names) > LEGEND_LIMIT:
            self._draw(self._projection)  # the muted and highlight colours come from the palette

    def changeEvent(self, event: Any) -> None:
        from PySide6.QtCore import QEvent

        if event.type() == QEvent.Type.PaletteChange:
            self.apply_palette()
        super().changeEvent(event)
