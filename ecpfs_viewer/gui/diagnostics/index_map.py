"""The Index map panel: the whole tree as one picture, a colour-by choice with its legend, and the
"where recall is lost" list once a recall sweep gave a miss map.

The colour-by choices are the colourings of the registry (model/diagnostics/colourings.py), each
combo item's data the overlay's key (the colouring's id, plus a variant such as a search_exp). The
panel keeps the inputs (validation report, miss map, boundary items, per-node values of the
Diagnostics dialogs) apart from the map, and rebuilds every overlay from them whenever either
changes: so whatever order they arrive in, every colouring whose input exists is offered.
The layout and boundary items are computed in workers (BackgroundRunner). Clicking a node (on the
map or in the list) emits ``node_requested(path)``; the window opens it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.diagnostics.map_view import IndexMapView, MapLegend
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.display import panes
from ecpfs_viewer.gui.widgets.rows_table import RowsModel, fitted_widths, rows_view, titled
from ecpfs_viewer.gui.widgets.run_controls import RunControls
from ecpfs_viewer.model.diagnostics.boundary import DEFAULT_TOLERANCE, BoundaryReport, boundary_items
from ecpfs_viewer.model.diagnostics.colourings import COLOURINGS, Need
from ecpfs_viewer.model.diagnostics.index_map import (
    IndexMap,
    MapOverlay,
    fill_overlay,
    findings_overlay,
    overlay_from_nodes,
    size_overlay,
)
from ecpfs_viewer.model.diagnostics.index_map_layout import shared_layout
from ecpfs_viewer.model.diagnostics.miss_map import MissMap
from ecpfs_viewer.model.ecpfs.paths import node_containing
from ecpfs_viewer.model.search.reader import NodeReader
from ecpfs_viewer.model.tasks import ProgressCallback
from ecpfs_viewer.model.validation import ValidationReport

#: the headers are short enough for the table's narrow place (1280x800); their tooltips say them whole
LOST_HEADERS = ("node", "misses", "share")
LOST_TIPS = {"misses": "true neighbours lost here: the first node on their path the search never opened",
             "share": "this node's share of all misses"}
LOST_MIN_WIDTH = 220  # the table's place at least: its title and node names readable at 1.5x
NO_INDEX = "Open an index to see its map."


def _layout_job(reader_of: Callable[[], NodeReader], progress: ProgressCallback | None = None,
                cancel: threading.Event | None = None) -> IndexMap:
    def sketch(first_picture: IndexMap) -> None:  # handed over on the progress channel, as the embedding map's
        if progress is not None:
            progress(first_picture)  # type: ignore[arg-type]

    return shared_layout(reader_of(), progress, cancel, on_sketch=sketch)


def _boundary_job(reader_of: Callable[[], NodeReader], index_map: IndexMap, progress: ProgressCallback | None = None,
                  cancel: threading.Event | None = None) -> BoundaryReport:
    return boundary_items(reader_of(), index_map, progress=progress, cancel=cancel)


class IndexMapPanel(QWidget):
    """The map, its colour-by choice and legend, and where recall is lost."""

    node_requested = Signal(str)
    map_ready = Signal(object)  # IndexMap
    sketch_shown = Signal(object)  # IndexMap: a first picture of the tree as listed, drawn (never map_ready's)
    #: a miss map or boundary items arrived or were dropped (pages and tree show them)
    diagnostics_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runner = BackgroundRunner(self)
        self._boundary_runner = BackgroundRunner(self)
        self._reader_of: Callable[[], NodeReader] | None = None
        self.index_map: IndexMap | None = None
        self.miss_map: MissMap | None = None
        self.boundary: BoundaryReport | None = None
        self._report: ValidationReport | None = None
        #: per-node values of the Diagnostics dialogs: colouring id -> (values by (level, node id), legend)
        self._node_values: dict[str, tuple[Mapping[tuple[int, int], float], str]] = {}
        self._overlays: dict[str, MapOverlay] = {}  # by key, rebuilt from the inputs (_rebuild)
        self._wanted = "size"  # the key of the colouring the user chose last

        self.colour_combo = QComboBox()
        self.colour_combo.setToolTip("What the nodes' colours say")
        self.colour_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.colour_combo.currentIndexChanged.connect(self._colour_chosen)
        self.reset_button = QPushButton("Show all")
        self.reset_button.setToolTip("Zoom out to the whole index (Home; a double-click on the map does the same)")
        self.controls = RunControls(self, NO_INDEX, cancel=self.cancel,
                                    runners=(self._runner, self._boundary_runner))
        self.progress, self.cancel_button, self.status = (self.controls.progress, self.controls.cancel_button,
                                                          self.controls.summary)
        self.progress.setMaximumWidth(200)
        top = QHBoxLayout()
        top.addWidget(QLabel("Colour by"))
        top.addWidget(self.colour_combo)
        top.addWidget(self.reset_button)
        top.addWidget(self.progress)
        top.addWidget(self.cancel_button)
        top.addStretch(1)

        self.view = IndexMapView()
        self.view.node_clicked.connect(self.node_requested)
        self.reset_button.clicked.connect(self.view.reset_view)
        self.legend = MapLegend()
        map_box = QWidget()
        map_layout = QVBoxLayout(map_box)
        map_layout.setContentsMargins(0, 0, 0, 0)
        map_layout.addWidget(self.view, 1)
        map_layout.addWidget(self.legend)

        self.lost_filter = QComboBox()
        self.lost_filter.setToolTip("The misses of one search_exp, or of all")
        self.lost_filter.currentIndexChanged.connect(self._show_lost)
        self.lost_label = QLabel("Where recall is lost: run a recall sweep (Search ▸ Recall)")
        self.lost_label.setWordWrap(True)
        self.lost_model = RowsModel(LOST_HEADERS, self, header_tips=LOST_TIPS, kinds=("", "", "percent"))
        self.lost_view = rows_view(self.lost_model, self._lost_activated)
        self.lost_view.setToolTip("Double-click a node to open its page")
        self.lost_box = titled(self.lost_view, self.lost_label, self.lost_filter)
        self._fit_lost()

        body = panes(Qt.Orientation.Horizontal, (map_box, 3), (self.lost_box, 1))
        body.setSizes([750, 300])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        # a row of its own: beside the controls a wrapping line was laid out for a width it no longer
        # had (four to eleven lines at 1.5x, taking the map's height)
        layout.addWidget(self.status)
        layout.addWidget(body, 1)

    # -- what is shown --------------------------------------------------------------------------
    def set_reader(self, reader_of: Callable[[], NodeReader] | None) -> None:
        """Where the open index is read (called in a worker): what the layout and boundary items read."""
        self._reader_of = reader_of

    def show_index(self, reader_of: Callable[[], NodeReader] | None = None) -> None:
        """Lay out the open index; the inputs arrived so far are kept and laid on the new map."""
        if reader_of is not None:
            self._reader_of = reader_of
        if self._reader_of is None:
            return
        self.controls.drop(None)
        self.controls.started("Laying out the tree …")
        self._runner.run(_layout_job, self._reader_of, on_result=self._on_map, on_error=self.controls.failed,
                         on_progress=self._on_layout_progress, heavy=True)

    def clear(self) -> None:
        """Another index (or none): the map and every input are dropped."""
        self.controls.drop(None)
        self.index_map = self.miss_map = self.boundary = None
        self._report = None
        self._node_values.clear()
        self._wanted = "size"  # a choice made for another index (boundary items: a long computation) is not carried
        self.view.set_map(None)
        self._rebuild()
        self._show_lost_filter()
        self.controls.finished(NO_INDEX)
        self.diagnostics_changed.emit()

    @property
    def busy(self) -> bool:
        return self.controls.busy

    def cancel(self) -> None:
        shown = self.view.index_map
        if self.index_map is None and shown is not None and shown.sketch and self._runner.busy:
            self.controls.drop("Cancelled: the map shows the tree as listed, each leaf one unit wide; showing the "
                               "panel again reads the leaves' sizes.")
            return
        self.controls.drop()

    def overlays(self) -> dict[str, MapOverlay]:
        """The overlays offered, by key (a copy)."""
        return dict(self._overlays)

    def overlay_names(self) -> list[str]:
        """The colour-by choices as the user reads them."""
        return [self.colour_combo.itemText(i) for i in range(self.colour_combo.count())]

    def offered(self) -> list[str]:
        """The colour-by choices by key (a colouring's id, ``misses:4`` for one search_exp)."""
        return [str(self.colour_combo.itemData(i)) for i in range(self.colour_combo.count())]

    def current(self) -> str | None:
        """The key of the colouring chosen."""
        key = self.colour_combo.currentData()
        return None if key is None else str(key)

    def colour_by(self, key: str) -> None:
        """Colour by the colouring of that key (boundary items are computed first when needed)."""
        self._wanted = key
        i = self.colour_combo.findData(key)
        if i >= 0:
            if i == self.colour_combo.currentIndex():
                self._apply_colour()
            else:
                self.colour_combo.setCurrentIndex(i)

    def set_report(self, report: ValidationReport | None) -> None:
        """A validation report: its findings become an overlay (now, or when the map is laid out)."""
        self._report = report
        self._rebuild()

    def set_node_values(self, colouring_id: str, by_node: Mapping[tuple[int, int], float] | None, legend: str,
                        show: bool = True) -> None:
        """Per-node values of a Diagnostics result (None: dropped); shown at once if asked."""
        if by_node is None:
            self._node_values.pop(colouring_id, None)
        else:
            self._node_values[colouring_id] = (by_node, legend)
            if show:
                self._wanted = colouring_id
        self._rebuild()

    def set_miss_map(self, miss_map: MissMap | None) -> None:
        """A recall sweep's miss map: shown on the map (coloured by it) and as the list."""
        self.miss_map = miss_map
        if miss_map is not None:
            self._wanted = "misses"
            if self.index_map is None or not _same_layout(self.index_map, miss_map.index_map):
                self._adopt(miss_map.index_map)
        self._rebuild()
        self._show_lost_filter()
        self.diagnostics_changed.emit()

    def select_path(self, path: str) -> None:
        """Outline the node at path (the tree's selection); anything else: no outline."""
        ref = node_containing(path)
        self.view.select(*(ref if ref is not None and ref[0] >= 1 else (None, None)))

    # -- workers --------------------------------------------------------------------------------
    def _on_layout_progress(self, report: object) -> None:
        if not isinstance(report, IndexMap):
            self.controls.show_progress(report)
        elif self.index_map is None:  # a first picture; a map shown already (a miss map's) is kept
            self.view.set_map(report)
            self.controls.say(f"A first picture: the tree as listed ({report.node_count:,} nodes over "
                              f"{len(report.levels)} levels), each leaf one unit wide; reading the leaves' sizes "
                              "for widths in items …")
            self.sketch_shown.emit(report)

    def _on_map(self, index_map: IndexMap) -> None:
        self._adopt(index_map)

    def _adopt(self, index_map: IndexMap) -> None:
        if self.boundary is not None and not _same_layout(self.boundary.index_map, index_map):
            self.boundary = None
        self.index_map = index_map
        self.view.set_map(index_map)
        self._rebuild()
        if not self.busy:
            self.controls.finished(f"{index_map.node_count:,} nodes over {len(index_map.levels)} levels, "
                                   f"{int(index_map.total):,} items. Hover a node for its facts, click to open it; "
                                   f"wheel zooms, drag pans.")
        self.map_ready.emit(index_map)

    def _start_boundary(self) -> None:
        if self._reader_of is None or self.index_map is None or self._boundary_runner.busy:
            return
        self.controls.started("Scoring every item against its candidate representatives …")
        self._boundary_runner.run(_boundary_job, self._reader_of, self.index_map, on_result=self._on_boundary,
                                  on_error=self.controls.failed, on_progress=self.controls.show_progress, heavy=True)

    def _on_boundary(self, report: BoundaryReport) -> None:
        if self.index_map is None or not _same_layout(self.index_map, report.index_map):
            return  # for a map no longer shown
        self.boundary = report
        self._wanted = "boundary"
        self._rebuild()
        shares = ", ".join(f"lvl_{b.level} {report.level_share(b.level) or 0:.0%}" for b in report.index_map.levels)
        self.controls.finished(f"Boundary items: {report.scored:,} items scored; {shares}")
        self.diagnostics_changed.emit()

    # -- colour by ------------------------------------------------------------------------------
    def _rebuild(self) -> None:
        """Every overlay whose input exists, laid on the map shown, in the registry's order."""
        index_map = self.index_map
        found: list[MapOverlay] = []
        if index_map is not None:
            found += [size_overlay(index_map), fill_overlay(index_map)]
            if self._report is not None:
                found.append(findings_overlay(index_map, self._report.findings))
            miss_map = self.miss_map
            if miss_map is not None and _same_layout(index_map, miss_map.index_map):
                found += [miss_map.overlay()] + [miss_map.overlay(exp) for exp in miss_map.search_exps]
            if self.boundary is not None:
                found.append(self.boundary.overlay())
            found += [overlay_from_nodes(index_map, cid, by_node, legend)
                      for cid, (by_node, legend) in self._node_values.items()]
        order = {c.id: i for i, c in enumerate(COLOURINGS)}
        found.sort(key=lambda o: order[o.id])  # stable: a colouring's variants keep their order
        self._overlays = {o.key: o for o in found}
        self._fill_combo()

    def _fill_combo(self) -> None:
        items = [(o.name, key) for key, o in self._overlays.items()]
        if self.index_map is not None and self._reader_of is not None:
            for c in COLOURINGS:  # computed when chosen: offered before it exists
                if c.needs is Need.ON_DEMAND and not any(o.id == c.id for o in self._overlays.values()):
                    items.append((f"{c.title} ({DEFAULT_TOLERANCE:.0%})", c.id))
        items.sort(key=lambda item: [c.id for c in COLOURINGS].index(item[1].split(":")[0]))
        self.colour_combo.blockSignals(True)
        self.colour_combo.clear()
        for text, key in items:
            self.colour_combo.addItem(text, key)
        at = self.colour_combo.findData(self._wanted)
        self.colour_combo.setCurrentIndex(at if at >= 0 else 0)
        self.colour_combo.blockSignals(False)
        self._apply_colour()

    def _colour_chosen(self, _index: int) -> None:
        key = self.current()
        if key is not None:
            self._wanted = key
        self._apply_colour()

    def _apply_colour(self) -> None:
        key = self.current()
        overlay = None if key is None else self._overlays.get(key)
        if overlay is None and key == "boundary" and self.boundary is None:
            self._start_boundary()  # the map stays uncoloured until they arrive, the progress shown
        self.view.extra_facts = [o for k, o in self._overlays.items()
                                 if k != key and not (o.id == "misses" and o.variant)]
        self.view.set_overlay(overlay)
        self.legend.set_overlay(overlay)

    # -- where recall is lost ---------------------------------------------------------------------
    def _show_lost_filter(self) -> None:
        self.lost_filter.blockSignals(True)
        self.lost_filter.clear()
        if self.miss_map is not None:
            self.lost_filter.addItem("every search_exp", None)
            for exp in self.miss_map.search_exps:
                self.lost_filter.addItem(f"search_exp {exp}", exp)
        self.lost_filter.blockSignals(False)
        self._show_lost()

    def _show_lost(self) -> None:
        miss_map = self.miss_map
        if miss_map is None:
            self.lost_model.set_rows([])
            self.lost_label.setText("Where recall is lost: run a recall sweep (Search ▸ Recall)")
            self._fit_lost()
            return
        exp = self.lost_filter.currentData()
        rows = miss_map.lost(50, exp)
        self.lost_model.set_rows([(r.path, r.misses, r.share) for r in rows])
        self._fit_lost()
        what = "every search_exp" if exp is None else f"search_exp {exp}"
        self.lost_label.setText(f"Where recall is lost ({miss_map.total(exp):,} true neighbours missed, {what}): "
                                "each counted at the first node of its path the search never opened")

    def _fit_lost(self) -> None:
        """Columns as wide as their texts, and the table's place as wide as its columns (at 1.5x the
        third column was clipped); the last column keeps filling the table where there is more room."""
        view, header = self.lost_view, self.lost_view.horizontalHeader()
        widths = fitted_widths(view)
        for column, width in widths.items():
            header.resizeSection(column, width)
        needed = sum(widths.values()) + 2 * view.frameWidth() + view.verticalScrollBar().sizeHint().width()
        self.lost_box.setMinimumWidth(max(LOST_MIN_WIDTH, needed))

    def lost_rows(self) -> list[str]:
        return [str(self.lost_model.index(r, 0).data()) for r in range(self.lost_model.rowCount())]

    def _lost_activated(self, row: int) -> None:
        path = self.lost_model.index(row, 0).data()
        if path:
            self.node_requested.emit(str(path))


def _same_layout(a: IndexMap, b: IndexMap) -> bool:
    return len(a.levels) == len(b.levels) and all(
        len(x) == len(y) and bool((x.node_ids == y.node_ids).all()) for x, y in zip(a.levels, b.levels, strict=True))
