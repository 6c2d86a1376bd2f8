"""Compare ▸ Map: two indexes on one embedding map, side by side.

Index A and index B placed on A's axes (model/diagnostics/embedding_map/two_indexes.py: items matched
by item id), each drawn by an :class:`EmbeddingMapView` coloured by the leaf each item is in (B's
leaves in the colour of the A leaf most of their items came from), the two views' pan and zoom
linked (``setXLink``/``setYLink``: one place is the same place in each), the items that moved
ringed in ink and the items only one index holds crossed in red, with the count. The placement
runs in a worker, with progress and Cancel, when the tab is first shown (the comparison's other
jobs first); Place runs it again. Save PNG… writes the picture ``map A --against B`` writes.
"""

from __future__ import annotations

import html
import threading
from dataclasses import dataclass

import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QPalette, QShowEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.diagnostics.embedding_view import EmbeddingMapView
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.run_controls import RunControls
from ecpfs_viewer.model.diagnostics.embedding_map import ColourSums, DensityIndex, colour_sums
from ecpfs_viewer.model.diagnostics.embedding_map.placement import FIT_ITEMS
from ecpfs_viewer.model.diagnostics.embedding_map.render import write_png
from ecpfs_viewer.model.diagnostics.embedding_map.render_pair import ONLY_HERE, render_pair, thinned
from ecpfs_viewer.model.diagnostics.embedding_map.two_indexes import TwoMaps, place_both
from ecpfs_viewer.model.search.reader import NodeReader
from ecpfs_viewer.model.tasks import ProgressCallback, TaskError

WAITING = "The map of both indexes is placed when this tab is shown."
#: rings drawn at most per view (evenly spaced among the moved items; the count says so when thinned)
RINGS_SHOWN = 5000
#: pixels of each picture in Save PNG…
EXPORT_SIZE = 450


@dataclass(frozen=True)
class PairData:
    """What the placement job hands over: both placements, their density indexes and colour sums."""

    two: TwoMaps
    density_a: DensityIndex
    density_b: DensityIndex
    sums_a: ColourSums
    sums_b: ColourSums


def pair_job(a: NodeReader, b: NodeReader, fit_items: int, progress: ProgressCallback | None = None,
             cancel: threading.Event | None = None) -> PairData:
    two = place_both(a, b, fit_items=fit_items, progress=progress, cancel=cancel)
    density_a, density_b = DensityIndex(two.a.placement), DensityIndex(two.b.placement)
    return PairData(two, density_a, density_b, colour_sums(density_a, two.colours_a),
                    colour_sums(density_b, two.colours_b))


def export_job(two: TwoMaps, path: str) -> str:
    title = f"{two.label_a} (A) against {two.label_b} (B): embedding map by leaf, on A's axes"
    write_png(path, render_pair(two, EXPORT_SIZE, EXPORT_SIZE, title=title))
    return path


class CompareMapPage(QWidget):
    """A and B side by side on one map (module docstring); ``show_indexes`` gives it both readers."""

    placed = Signal(object)  # PairData, once both views have it
    exported = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._readers: tuple[NodeReader, NodeReader] | None = None
        self._runner, self._export_runner = BackgroundRunner(self), BackgroundRunner(self)
        self.data: PairData | None = None
        self.fit_items = FIT_ITEMS
        self.controls = RunControls(self, WAITING, "Place", run=self.place, one_line=True,
                                    can_run=lambda: self._readers is not None, runners=(self._runner,))
        self.controls.run_button.setToolTip("Place both indexes again on A's axes")
        self.controls.run_button.setEnabled(False)
        self.status, self.progress = self.controls.summary, self.controls.progress
        self.rings_box = QCheckBox("Mark moved items")
        self.rings_box.setChecked(True)
        self.rings_box.setToolTip("Ring the items that moved to another leaf and cross the items only one index holds")
        self.rings_box.toggled.connect(lambda _on: self._draw_marks())
        self.all_button = QPushButton("Show all")
        self.save_button = QPushButton("Save PNG…")
        self.save_button.setToolTip("Both maps with a title, the legend and the moved count, as `map A --against B`")
        self.save_button.setEnabled(False)
        self.save_button.clicked.connect(lambda: self.export_png())
        line = QHBoxLayout()
        widgets: tuple[QWidget, ...] = (self.controls.run_button, self.controls.cancel_button, self.progress)
        for widget in widgets:
            line.addWidget(widget)
        line.addWidget(self.status, 1)
        for widget in (self.rings_box, self.all_button, self.save_button):
            line.addWidget(widget)

        self.view_a, self.view_b = EmbeddingMapView(), EmbeddingMapView()
        self.view_b.setXLink(self.view_a)  # one pan or zoom moves both: the same place in each
        self.view_b.setYLink(self.view_a)
        self.all_button.clicked.connect(self.view_a.reset_view)
        self.caption_a, self.caption_b = QLabel("A"), QLabel("B")
        self._rings: list[pg.ScatterPlotItem] = []
        self._crosses: list[pg.ScatterPlotItem] = []
        maps = QHBoxLayout()
        for view, caption in ((self.view_a, self.caption_a), (self.view_b, self.caption_b)):
            view.on_error = self.controls.failed
            view.getPlotItem().getAxis("left").setWidth(view.fontMetrics().horizontalAdvance("-00.0") + 12)
            # the same width of axis beside each: both plots the same size, so linked ranges agree on both axes
            rings = pg.ScatterPlotItem(symbol="o", size=8, brush=None)
            crosses = pg.ScatterPlotItem(symbol="x", size=8, pen=None, brush=pg.mkBrush(*ONLY_HERE))
            for item, z in ((rings, 30), (crosses, 31)):
                item.setZValue(z)
                view.addItem(item)
            self._rings.append(rings)
            self._crosses.append(crosses)
            column = QVBoxLayout()
            caption.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            caption.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # columns of one width
            column.addWidget(caption)
            column.addWidget(view, 1)
            maps.addLayout(column, 1)
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(line)
        layout.addLayout(maps, 1)
        layout.addWidget(self.legend)
        self._ink()
        for view in (self.view_a, self.view_b):
            view.apply_background()

    # -- running ---------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return (self.controls.busy or self._export_runner.busy or self.view_a.busy or self.view_b.busy)

    def show_indexes(self, a: NodeReader, b: NodeReader) -> None:
        """Both indexes opened by the comparison: placed now if the tab is on screen, else when shown."""
        self._readers = (a, b)
        self.controls.idle()
        if self.isVisible():
            self.place()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._readers is not None and self.data is None and not self.controls.busy:
            self.place()

    def place(self) -> None:
        """Place both indexes on A's axes (in a worker), the views and counts replaced when done."""
        if self._readers is None:
            return
        self.controls.started("Placing A (its own map) and then B on A's axes …")
        self._runner.run(pair_job, *self._readers, self.fit_items, on_result=self._on_placed,
                         on_error=self.controls.failed, on_progress=self.controls.show_progress, heavy=True)

    def stop(self) -> None:
        """Drop what runs (the comparison window closes)."""
        self.controls.drop(None)
        self._export_runner.invalidate()

    # -- showing ---------------------------------------------------------------------------------
    def _on_placed(self, data: PairData) -> None:
        self.data = data
        two = data.two
        self.view_a.show_index(data.density_a, data.sums_a, two.colours_a.leaf_rgb())
        self.view_b.show_index(data.density_b, data.sums_b, two.colours_b.leaf_rgb())
        x0, x1, y0, y1 = two.bounds()  # one view around both (B's items may lie past A's)
        self.view_a.getViewBox().setRange(xRange=(x0, x1), yRange=(y0, y1))
        for caption, name, label, placement in ((self.caption_a, "A", two.label_a, two.a.placement),
                                                (self.caption_b, "B", two.label_b, two.b.placement)):
            caption.setText(f"<b>{name}</b> {html.escape(label)}: {placement.count:,} items in "
                            f"{placement.leaf_ids.size:,} leaves")
        self._draw_marks()
        self._show_legend(two)
        self.save_button.setEnabled(True)
        m = two.moved
        notes = "".join(f" {n}." for n in two.notes)
        self.controls.finished(f"{m.moved:,} of the {m.common:,} items both hold moved ({m.share:.1%}).{notes} "
                               "Wheel zooms and drag pans both maps.")
        self.placed.emit(data)

    def _draw_marks(self) -> None:
        data = self.data
        on = self.rings_box.isChecked() and data is not None
        for i in range(2):
            if not on or data is None:
                self._rings[i].clear()
                self._crosses[i].clear()
                continue
            m, placement = data.two.moved, (data.two.a if i == 0 else data.two.b).placement
            moved = thinned(m.moved_a if i == 0 else m.moved_b, RINGS_SHOWN)
            only = thinned(m.only_in_a if i == 0 else m.only_in_b, RINGS_SHOWN)
            xy, xo = placement.coords[moved], placement.coords[only]
            self._rings[i].setData(x=xy[:, 0], y=xy[:, 1])
            self._crosses[i].setData(x=xo[:, 0], y=xo[:, 1])

    def rings_shown(self) -> tuple[int, int]:
        """Rings drawn on A and on B (at most RINGS_SHOWN each)."""
        return len(self._rings[0].data), len(self._rings[1].data)

    def _show_legend(self, two: TwoMaps) -> None:
        m, colours = two.moved, two.colours_a
        rows = "".join(f"<td style='background-color:rgb{rgb}'>&nbsp;&nbsp;&nbsp;</td><td>&nbsp;{html.escape(t)}"
                       "&nbsp;&nbsp;</td>" for rgb, t in colours.legend(8))
        thin = (f" Rings on {RINGS_SHOWN:,} of them per map, evenly spaced."
                if max(m.moved_a.size, m.moved_b.size) > RINGS_SHOWN else "")
        note = f" <i>{html.escape(colours.note)}</i>" if colours.note else ""
        self.legend.setText(
            f"<b>{m.moved:,} items moved</b> ({m.share:.1%} of the {m.common:,} both hold): ringed, they are not in "
            f"the B leaf most of their A leaf went to (the rule of the Migration tab).{thin} Crossed in red: "
            f"{m.only_a:,} items only in A, {m.only_b:,} only in B.<br>A by the leaf an item is in; "
            f"{html.escape(two.colours_b.meaning)}.{note}<table cellspacing='1'><tr>{rows}</tr></table>")

    def _ink(self) -> None:
        ink = self.palette().color(QPalette.ColorRole.Text)
        for rings in self._rings:
            rings.setPen(pg.mkPen(ink, width=1.2))

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and "_rings" in self.__dict__:
            self._ink()

    # -- export ----------------------------------------------------------------------------------
    def export_png(self, path: str | None = None) -> str | None:
        """Both maps as `map A --against B` draws them, written in a worker (``exported`` says when)."""
        if self.data is None:
            return None
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self, "Save the map of both indexes", "compare_map.png",
                                                  "PNG image (*.png)")
            if not path:
                return None
        self.save_button.setEnabled(False)
        self._export_runner.run(export_job, self.data.two, path, on_result=self._on_exported,
                                on_error=lambda error: self._on_exported(None, error))
        return path

    def _on_exported(self, path: str | None, error: TaskError | None = None) -> None:
        self.save_button.setEnabled(True)
        self.controls.say(f"Could not save the map: {error}" if error is not None else f"Saved {path}",
                          error=error is not None)
        if path is not None:
            self.exported.emit(path)
