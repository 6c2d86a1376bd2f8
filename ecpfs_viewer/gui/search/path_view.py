"""The path of one search: per level, the scores of each opened node's children with the ones the
search went into highlighted; below, the leaves it scanned in order with their best item.

Labels never collide: a visit number that would overlap one visited earlier is hidden (its point's
hover says it), and the opened nodes under the axis are thinned to the pixels each one has; both
are laid out again whenever the plot is resized, panned or zoomed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFontMetricsF, QShowEvent
from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout, QWidget

from ecpfs_viewer.gui.search.session import score_header, shown_score
from ecpfs_viewer.gui.widgets.colormaps import plain_numbers, plot_colors, style_plot
from ecpfs_viewer.gui.widgets.rows_table import RowsModel, fit_table, fit_table_pane, rows_view
from ecpfs_viewer.model.ecpfs.paths import INDEX_ROOT, level_path, node_name, node_path
from ecpfs_viewer.model.formatting import count_noun, format_bytes
from ecpfs_viewer.model.search.explore import Exploration, OpenedNode
from ecpfs_viewer.model.search.results import SearchResult

#: Width of one opened node's column of children in the level plots.
_SPREAD = 0.7
#: Where a visit number may sit, as TextItem anchors: above its point, else below it.
_LABEL_ANCHORS = ((0.5, 1.2), (0.5, -0.2))


def ordinal(number: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st: how the path view says when a node was visited."""
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"


@dataclass
class _LevelLabels:
    """What one level plot labels, kept to lay the labels out again at another size or range."""

    ticks: list[str] = field(default_factory=list)  # one per opened parent, left to right
    visits: list[tuple[int, float, float, pg.TextItem]] = field(default_factory=list)  # visit, x, y, label


#: What the table's headers mean (their tooltips).
_LEAF_TIPS: dict[str, str] = {
    "visit": "When the search opened this leaf: its place among all the nodes it visited",
    "leaf": "A node of the last level: it holds items, not child nodes",
    "rank among siblings": "Where this leaf's representative ranked among its parent's children, "
                           "closest to the query first",
    "items scanned": "Items of this leaf compared with the query",
    "results": "Items of this leaf among the search's results",
}

def cost_text(result: SearchResult) -> str:
    """The one line under the summary: what the search cost, in units that do not depend on the machine."""
    cost = result.cost
    return (f"Cost: {cost.distance_computations:,} distance computations, {cost.nodes_visited:,} nodes visited, "
            f"{cost.leaves_scanned:,} leaves scanned, {format_bytes(cost.total_bytes)} read now in "
            f"{count_noun(cost.total_requests, 'request')} ({format_bytes(cost.total_cold_bytes)} cold), "
            f"{result.seconds * 1e3:.2f} ms. Hover for each level.")


def cost_levels(result: SearchResult) -> list[tuple[str, int, int, int, int, int]]:
    """Per level: (name, representatives or items scored, bytes and requests read now, cold bytes and requests)."""
    cost = result.cost
    levels = len(cost.bytes_read)
    scored = [*cost.representatives_scored, cost.items_scored]
    out = []
    for level in range(levels):
        name = INDEX_ROOT if level == 0 else level_path(level) + (" (leaves)" if level == levels - 1 else "")
        out.append((name, scored[level] if level < len(scored) else 0, cost.bytes_read[level], cost.requests[level],
                    cost.cold_bytes[level], cost.cold_requests[level]))
    return out


def cost_tooltip(result: SearchResult) -> str:
    """A table of the cost per level: what each level's nodes were scored against and what they read."""
    cells = "".join(
        f"<tr><td>{name}</td><td align=right>{scored:,}</td><td align=right>{format_bytes(b)}</td>"
        f"<td align=right>{r:,}</td><td align=right>{format_bytes(cb)}</td><td align=right>{cr:,}</td></tr>"
        for name, scored, b, r, cb, cr in cost_levels(result))
    return ("<p>What this search cost. <b>Scored</b>: vectors the query was compared with at each level "
            "(the representatives in index_root and in each opened internal node, the items in each leaf "
            "scanned). <b>Read</b>: bytes and requests this search sent to the store (0 for nodes already read "
            "by an earlier search); <b>cold</b>: what the same search reads with nothing cached.</p>"
            "<table cellspacing=4><tr><th>level</th><th>scored</th><th>read</th><th>requests</th>"
            f"<th>cold read</th><th>cold requests</th></tr>{cells}</table>")


class SearchPathView(QWidget):
    """Per-level children scores of every opened node, and the visited leaves table."""

    node_requested = Signal(str)  # a leaf double-clicked in the table: select it in the tree

    LEAF_HEADERS = ("visit", "leaf", "leaf score", "rank among siblings", "items scanned", "best item", "results")

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._exploration: Exploration | None = None
        self.summary = QLabel("Run a search to see its path through the tree.")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.cost = QLabel()
        self.cost.setWordWrap(True)
        self.cost.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.cost.hide()
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setMinimumHeight(160)
        self.plots: list[pg.PlotItem] = []  # one per level, reused
        self._labels: list[_LevelLabels] = []  # the labels of each plot
        self._shown = 0
        self._drawn = False  # the search set is drawn (the view draws when first shown)
        self.leaves_model = RowsModel(self.LEAF_HEADERS, self, _LEAF_TIPS)
        self.leaves_view = rows_view(self.leaves_model, self._leaf_activated)
        self.leaves_view.setToolTip("Leaves in the order the search scanned them; bold ones gave results. "
                                    "Double-click to select one in the tree.")
        self.splitter = splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.graphics)
        splitter.addWidget(self.leaves_view)
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 0)
        splitter.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.summary)
        layout.addWidget(self.cost)
        layout.addWidget(splitter, 1)
        self._apply_background()

    def clear(self) -> None:
        self._exploration = None
        for plot in self.plots[:self._shown]:
            plot.clear()
            self.graphics.removeItem(plot)  # out of the layout (kept for reuse): no empty column left
        self._shown = 0
        self.leaves_model.clear()
        self.summary.setText("Run a search to see its path through the tree.")
        self.cost.clear()
        self.cost.setToolTip("")
        self.cost.hide()

    def set_exploration(self, exploration: Exploration) -> None:
        """Show one search's path (replaces the previous one); drawn when the view is on screen."""
        self.clear()
        self._exploration = exploration
        self._drawn = False
        if self.isVisible():
            self._draw(exploration)

    def showEvent(self, event: QShowEvent) -> None:
        if self._exploration is not None and not self._drawn:
            self._draw(self._exploration)
        super().showEvent(event)

    def _draw(self, exploration: Exploration) -> None:
        self._drawn = True
        result = exploration.result
        skipped = f", {len(result.skipped)} missing nodes skipped" if result.skipped else ""
        self.summary.setText(
            f"{exploration.label}: {len(result.trace)} nodes visited, {result.leaves_visited} leaves scanned{skipped} "
            f"(k {exploration.params.k}, search_exp {exploration.params.search_exp}). Large points are the "
            f"children the search went into, numbered in the order it visited them (the wheel zooms crowded "
            f"ones apart); hover a point for its node.")
        self.cost.setText(cost_text(result))
        self.cost.setToolTip(cost_tooltip(result))
        self.cost.show()
        for level in range(1, exploration.levels + 1):
            parents = [o for o in exploration.opened if o.level == level - 1]
            if parents:
                self._plot_level(exploration, level, parents)
        metric = exploration.metric
        self.leaves_model.set_headers([*self.LEAF_HEADERS[:2], f"leaf {score_header(metric)}",
                                       *self.LEAF_HEADERS[3:5], f"best item {score_header(metric)}",
                                       self.LEAF_HEADERS[6]])
        rows = [(v.visit, node_path(exploration.levels, v.leaf), shown_score(metric, v.score),
                 f"{v.rank} of {v.siblings}", v.items, None if v.best is None else shown_score(metric, v.best), v.kept)
                for v in exploration.leaves]
        self.leaves_model.set_rows(rows, highlight=[i for i, v in enumerate(exploration.leaves) if v.kept])
        fit_table(self.leaves_view)
        fit_table_pane(self.splitter, self.leaves_view, len(rows))

    def level_rows(self) -> list[tuple[int, list[tuple[str, int, list[int]]]]]:
        """What the level plots show: per child level, each opened parent with its number of children
        and the children entered (in visit order)."""
        exploration = self._exploration
        if exploration is None:
            return []
        out = []
        for level in range(1, exploration.levels + 1):
            parents = [o for o in exploration.opened if o.level == level - 1]
            if parents:
                out.append((level, [(o.path, len(o.child_ids), sorted(o.entered, key=o.entered.__getitem__))
                                    for o in parents]))
        return out

    def _plot_level(self, exploration: Exploration, level: int, parents: list[OpenedNode]) -> None:
        _, text, accent = plot_colors(self.palette())
        plot = self._next_plot()
        labels = self._labels[self._shown - 1]
        what = "rows of index_root" if level == 1 else f"children of the opened {level_path(level - 1)} nodes"
        leaf = " (leaves)" if level == exploration.levels else ""
        plot.setTitle(f"{level_path(level)}{leaf}: {what}")
        plot.setLabel("left", score_header(exploration.metric))
        plot.showGrid(y=True, alpha=0.25)
        plot.setMouseEnabled(x=True, y=False)
        metric = exploration.metric
        muted = QColor(text)
        muted.setAlpha(110)
        points: dict[bool, list[tuple[float, float, str]]] = {False: [], True: []}  # entered -> x, y, tip
        for column, parent in enumerate(parents):
            scores = np.asarray(parent.child_scores, np.float64)
            order = np.argsort(scores, kind="stable")
            n = max(len(order), 1)
            for place, j in enumerate(order.tolist()):
                x = column - _SPREAD / 2 + _SPREAD * (place + 0.5) / n
                y = shown_score(metric, float(scores[j]))
                child = int(parent.child_ids[j])
                visit = parent.entered.get(child)
                tip = (f"{node_path(level, child)}: {score_header(metric)} {y:.6g}, rank {place + 1} of {n} under "
                       f"{parent.path}" + ("" if visit is None else f"; visited {ordinal(visit)}"))
                points[visit is not None].append((x, y, tip))
                if visit is not None:
                    label = pg.TextItem(str(visit), color=text, anchor=(0.5, 1.2))
                    label.setPos(x, y)
                    plot.addItem(label)
                    labels.visits.append((visit, x, y, label))
        for entered, size, brush, pen in ((False, 5, muted, pg.mkPen(None)), (True, 11, accent, pg.mkPen(text))):
            xs, ys, tips = zip(*points[entered], strict=True) if points[entered] else ((), (), ())
            plot.addItem(pg.ScatterPlotItem(x=list(xs), y=list(ys), data=list(tips), size=size,
                                            brush=pg.mkBrush(brush), pen=pen, hoverable=True,
                                            tip=lambda x, y, data: data))
        labels.ticks = [INDEX_ROOT if p.level == 0 else f"{node_name(p.node_id)}, visited {ordinal(p.visit)}"
                        for p in parents]
        labels.visits.sort(key=lambda v: v[0])
        plot.setXRange(-0.5, len(parents) - 0.5, padding=0.02)
        style_plot(plot, self.palette())
        self._fit_labels(plot, labels)

    def _fit_labels(self, plot: pg.PlotItem, labels: _LevelLabels) -> None:
        """Thin the axis names to the pixels each opened node has; put each visit number above its
        point, else below, where it overlaps no number visited before it and is not clipped, else hide it."""
        box = plot.getViewBox()
        axis = plot.getAxis("bottom")
        (left, right), _ = box.viewRange()
        if box.width() <= 0 or right <= left or not labels.ticks:
            axis.setTicks([[(i, text) for i, text in enumerate(labels.ticks)]])
            return
        metrics = QFontMetricsF(axis.style["tickFont"] or self.graphics.font())
        needed = max(metrics.horizontalAdvance(t) for t in labels.ticks) + metrics.horizontalAdvance("  ")
        every = max(1, math.ceil(needed / (box.width() / (right - left))))
        axis.setTicks([[(i, text if i % every == 0 else "") for i, text in enumerate(labels.ticks)]])
        taken: list[QRectF] = []
        inside = box.sceneBoundingRect()
        for _, x, y, label in labels.visits:
            size = label.textItem.boundingRect()
            point = box.mapViewToScene(QPointF(x, y))
            for anchor in _LABEL_ANCHORS:  # above the point, else below it
                rect = QRectF(point.x() - anchor[0] * size.width(), point.y() - anchor[1] * size.height(),
                              size.width(), size.height())
                if inside.contains(rect) and not any(rect.intersects(other) for other in taken):
                    label.setAnchor(anchor)
                    taken.append(rect)
                    label.show()
                    break
            else:
                label.hide()

    def _next_plot(self) -> pg.PlotItem:
        """A cleared plot for the next level, side by side (the dock is wide and low); plots are reused:
        creating a pyqtgraph PlotItem is slow (benchmarks/bench_design.py)."""
        if self._shown == len(self.plots):
            plot, labels = pg.PlotItem(), _LevelLabels()
            plain_numbers(plot)  # scores of 0.2-0.8 stay 0.2-0.8
            box = plot.getViewBox()
            for changed in (box.sigResized, box.sigRangeChanged):
                changed.connect(lambda *_, plot=plot, labels=labels: self._fit_labels(plot, labels))
            self.plots.append(plot)
            self._labels.append(labels)
        plot = self.plots[self._shown]
        self._labels[self._shown].ticks, self._labels[self._shown].visits = [], []
        self.graphics.addItem(plot, row=0, col=self._shown)
        self._shown += 1
        return plot

    @property
    def shown_plots(self) -> list[pg.PlotItem]:
        """The level plots of the search on screen."""
        return self.plots[:self._shown]

    def _leaf_activated(self, row: int) -> None:
        self.node_requested.emit(str(self.leaves_model.row(row)[1]))

    def _apply_background(self) -> None:
        self.graphics.setBackground(plot_colors(self.palette())[0])

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_background()
            if self._exploration is not None:
                self.set_exploration(self._exploration)
        super().changeEvent(event)
