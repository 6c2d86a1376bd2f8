"""View ▸ Embedding Map: every item of the index placed in 2-D (model/diagnostics/embedding_map/: PCA,
or a t-SNE layout of the representatives, as the Placement choice says, remembered),
drawn as a density image with level of detail, coloured by the tree or a diagnostic, with the
representatives as marks, what is under the pointer, a box or lasso selection (embedding_selection.py),
a click that opens the leaf most present under the pointer, the tree's selection and the last
search on it. Progressive: the placement job (heavy) answers from the index's cache at once when it
still holds; else it reports the PCA's sample as a first picture, then pictures of the leaves
placed so far as blocks arrive (model/diagnostics/embedding_map/progressive.py), with progress and
a cancel, the view kept where the user moved it. Everything else is made in workers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMenu,
    QToolButton,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.diagnostics import embedding_jobs as jobs
from ecpfs_viewer.gui.diagnostics.embedding_jobs import MapData
from ecpfs_viewer.gui.diagnostics.embedding_selection import SelectionList, mode_buttons
from ecpfs_viewer.gui.diagnostics.embedding_view import EmbeddingMapView
from ecpfs_viewer.gui.diagnostics.placement_choice import PlacementChoice
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.display import panes, scrolling_side
from ecpfs_viewer.gui.widgets.fields import hbox
from ecpfs_viewer.gui.widgets.run_controls import RunControls
from ecpfs_viewer.gui.widgets.wrapping_row import WrappingRow
from ecpfs_viewer.model.diagnostics.embedding_map import (
    MAP_COLOURINGS,
    ColourSums,
    DensityIndex,
    ItemColours,
    QueryOverlay,
    Selection,
    ViewRect,
    by_level,
    from_overlay,
    items_beneath,
    leaves_under,
    query_overlay,
    size_colours,
)
from ecpfs_viewer.model.diagnostics.embedding_map.placement import FIT_ITEMS
from ecpfs_viewer.model.diagnostics.embedding_map.progressive import BLOCK_LEAVES
from ecpfs_viewer.model.diagnostics.index_map import IndexMap, MapOverlay
from ecpfs_viewer.model.ecpfs.paths import node_containing, node_path
from ecpfs_viewer.model.search.explore import Exploration
from ecpfs_viewer.model.search.reader import NodeReader
from ecpfs_viewer.model.tasks import TaskError

NO_INDEX = "Open an index to see its embedding map."
SELECTED_SHOWN = 4000  # rings at most for the tree's selection (evenly spaced among its items)
#: the colourings whose input another panel makes (the Index map panel holds them, by colouring id)
FROM_DIAGNOSTICS = {"misses": "run a recall sweep (Search ▸ Recall)", "workload": "replay a workload (Diagnostics)",
                    "strays": "run the self-reachability check (Diagnostics)",
                    "boundary": "colour the Index map by boundary items first"}


class EmbeddingMapPanel(QWidget):
    """The map, its colour-by choice and legend, representatives, the box or lasso selection's list."""

    node_requested = Signal(str)
    placed = Signal(object)  # MapData: every item placed (not the first picture)
    first_shown = Signal(object)  # MapData: the PCA sample's picture, before every item is placed
    exported = Signal(str)  # the path a PNG was written to
    picture_shown = Signal(object)  # MapData: every picture on the way (the first too), once drawn

    def __init__(self, overlays_of: Callable[[], tuple[IndexMap | None, Mapping[str, MapOverlay]]] = lambda: (None, {}),
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._overlays_of = overlays_of
        self._reader_of: Callable[[], NodeReader] | None = None
        self._runner, self._sums_runner = BackgroundRunner(self), BackgroundRunner(self)
        self._marks_runner, self._export_runner = BackgroundRunner(self), BackgroundRunner(self)
        self.data: MapData | None = None
        self.colours: ItemColours | None = None
        self.query: QueryOverlay | None = None
        self._exploration: Exploration | None = None
        self._marks: dict[int, np.ndarray] = {}
        self.hover_text = ""
        self._selected_path, self.selected_items = "", np.zeros(0, np.int64)  # the tree's selection, ringed
        self.fit_items, self.block_leaves = FIT_ITEMS, BLOCK_LEAVES  # the sample the axes are fitted on; leaves a block

        self.placement_choice = PlacementChoice()  # PCA or t-SNE of the representatives, remembered
        self.placement_choice.chosen.connect(self._placement_chosen)
        self.placement_choice.refused.connect(self._placement_refused)
        self.colour_combo = QComboBox()
        self.colour_combo.setToolTip("What the items' colours say")
        self.colour_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.colour_combo.currentIndexChanged.connect(lambda _i: self._recolour())
        self.marks_button = QToolButton()
        self.marks_button.setText("Representatives")
        self.marks_button.setToolTip("Mark the representatives of a level's nodes, placed like the items")
        self.marks_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.marks_menu = QMenu(self.marks_button)
        self.marks_button.setMenu(self.marks_menu)
        self.view = EmbeddingMapView()
        self.box_button, self.lasso_button = mode_buttons(self.view)
        self.all_button = QToolButton()
        self.all_button.setText("Show all")
        self.export_button = QToolButton()
        self.export_button.setText("Export PNG …")
        self.export_button.setToolTip("The view as a PNG with its title, legend and the colour's meaning")
        self.export_button.clicked.connect(lambda: self.export_png())
        self.controls = RunControls(self, NO_INDEX, cancel=self.cancel, runners=(self._runner,))
        self.progress, self.status = self.controls.progress, self.controls.summary
        self.progress.setMinimumWidth(self.fontMetrics().horizontalAdvance("leaves 10,000,000/10,000,000") + 24)
        # the choices, then the buttons: one line where they fit, two where they do not (at 1.5x)
        self.controls_row = WrappingRow(
            hbox(QLabel("Placement"), self.placement_choice, QLabel("Colour by"), self.colour_combo, stretch=None),
            hbox(self.marks_button, self.box_button, self.lasso_button, self.all_button, self.export_button,
                 stretch=None))
        state = QHBoxLayout()  # what happened on its own line: it is long (the placement's figures)
        state.addWidget(self.progress)
        state.addWidget(self.controls.cancel_button)
        state.addWidget(self.status, 1)

        self.view.on_error = self.controls.failed
        self.view.hovered.connect(self._hovered)
        self.view.clicked.connect(self._clicked)
        self.view.box_selected.connect(self.select_rect)
        self.view.lasso_selected.connect(self.select_polygon)
        self.all_button.clicked.connect(self.view.reset_view)
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.hover_label = QLabel("Hover the map for the leaves under the pointer.")
        self.hover_label.setWordWrap(True)
        self.selection_list = SelectionList(self.controls.failed)
        self.selection_list.node_requested.connect(self.node_requested)
        side = QWidget()
        side_layout = QVBoxLayout(side)
        side_layout.setContentsMargins(0, 0, 0, 0)
        side_layout.addWidget(self.legend)
        side_layout.addWidget(self.hover_label)
        side_layout.addWidget(self.selection_list, 1)
        side.setMinimumWidth(240)  # scrolls where lower than its texts: at 1.5x they were drawn over each other
        body = panes(Qt.Orientation.Horizontal, (self.view, 3), (scrolling_side(side, 240), 1))
        body.setSizes([780, 300])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.controls_row)
        layout.addLayout(state)
        layout.addWidget(body, 1)
        self._fill_combo()
        self.view.apply_background()

    # -- showing an index ----------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        return (self.controls.busy or self._sums_runner.busy or self._marks_runner.busy or self.selection_list.busy
                or self._export_runner.busy or self.view.busy)

    def show_index(self, reader_of: Callable[[], NodeReader]) -> None:
        """Place the open index's items (from the cache when it still holds), the sample first."""
        self._reader_of = reader_of
        self.controls.drop(None)
        self.controls.started("Placing every item (a first picture of a sample comes first) …")
        self._runner.run(jobs.placement_job, reader_of, self.placement_choice.method(), self.fit_items,
                         self.block_leaves, on_result=self._on_placed,
                         on_error=self.controls.failed, on_progress=self._on_progress, heavy=True)

    def _placement_chosen(self, _method: str) -> None:
        if self._reader_of is not None:  # the map shown is made again the new way
            self.show_index(self._reader_of)

    def _placement_refused(self, why: str) -> None:
        self.controls.say(why, error=True)

    def clear(self) -> None:
        """Another index (or none): everything of the old one is dropped."""
        self.controls.drop(None)
        for runner in (self._sums_runner, self._marks_runner):
            runner.invalidate()
        self.data = self.colours = self.query = None
        self._exploration = None
        self._marks.clear()
        self.view.show_index(None, None, None)
        self.selection_list.clear()
        self.hover_text = ""
        self.hover_label.setText("Hover the map for the leaves under the pointer.")
        self.legend.clear()
        self._fill_combo()
        self.controls.finished(NO_INDEX)

    def cancel(self) -> None:
        data = self.data
        if data is None or not data.placement.sample or not self.controls.busy:
            self.controls.drop()
            return
        shown = f", {data.stand_in} (not finished)" if data.stand_in else ""
        self.controls.drop(f"Cancelled: the map shows {data.placement.count:,} items from {data.placed_leaves:,} of "
                           f"{data.leaves:,} leaves{shown}; showing the panel again places them all.")

    def _on_progress(self, report: object) -> None:
        if isinstance(report, MapData):
            previous = self.data
            first = previous is None or (previous.placement.projection is not report.placement.projection
                                         and not previous.stand_in)  # the stand-in was this job's first
            self._adopt(report, first=True)
            rest = ("checking the rest against the index before the cache answers …" if report.placement.from_cache
                    else "placing the rest …")
            shown = f", {report.stand_in}" if report.stand_in else ""
            picture = f"{'A first picture' if first else 'A picture'} of "
            self.controls.say(picture + (
                f"{report.placement.count:,} items from {report.placed_leaves:,} of {report.leaves:,} leaves drawn "
                f"at random{shown}; {'then ' if shown else ''}{rest}" if report.placement.sample
                else f"all {report.placement.count:,} items{shown} …"))
            if first:
                self.first_shown.emit(report)
            self.picture_shown.emit(report)
        else:
            self.controls.show_progress(report)

    def _on_placed(self, data: MapData) -> None:
        self._adopt(data, first=False)
        p = data.placement
        how = p.projection.describe + (" (kept in the cache)" if p.from_cache else "")
        note = f" {p.note}." if p.note else ""
        self.controls.finished(f"{p.count:,} items in {p.leaf_ids.size:,} leaves; {how}.{note} Wheel zooms, drag "
                               "pans, Shift-drag selects a box, a click opens the leaf under the pointer.")
        self.placed.emit(data)

    def _adopt(self, data: MapData, first: bool) -> None:
        same_job = self.data is not None and self.data.placement.projection is data.placement.projection
        keep_view = same_job and self.view.moved()  # a picture on the way: where the user looks, else all of it
        fresh_map = self.data is None or self.data.index_map is not data.index_map
        self.data = data
        if fresh_map:
            self._fill_combo()
        self.view.show_index(data.density, None, None, keep_view=keep_view)
        self._recolour()
        self._fill_marks_menu()
        self._draw_selected()
        if not first:
            self._marks.clear()
            for action in self.marks_menu.actions():
                if action.isChecked():
                    self._ask_marks(int(action.data()))
            self._draw_query()

    # -- colour by -----------------------------------------------------------------------------------
    def _fill_combo(self) -> None:
        current = self.colour_combo.currentData() or "level1"
        self.colour_combo.blockSignals(True)
        self.colour_combo.clear()
        levels = len(self.data.index_map.levels) if self.data is not None else 0
        offered = self._diagnostics()
        for c in MAP_COLOURINGS:
            if c.id == "level":
                for level in range(2, levels):
                    self.colour_combo.addItem(f"lvl_{level} node", f"level:{level}")
                continue
            self.colour_combo.addItem(c.title, c.id)
            if c.id in FROM_DIAGNOSTICS and c.id not in offered:
                i = self.colour_combo.count() - 1
                self.colour_combo.setItemData(i, f"{c.meaning}: {FROM_DIAGNOSTICS[c.id]} first",
                                              Qt.ItemDataRole.ToolTipRole)
                item = self.colour_combo.model().item(i)  # type: ignore[attr-defined]
                item.setEnabled(False)
        at = self.colour_combo.findData(current)
        self.colour_combo.setCurrentIndex(at if at >= 0 and self._enabled(at) else 0)
        self.colour_combo.blockSignals(False)

    def _diagnostics(self) -> Mapping[str, MapOverlay]:
        """The Index map panel's overlays by key, when laid on the same nodes as this map (else none)."""
        theirs, overlays = self._overlays_of()
        mine = None if self.data is None else self.data.index_map
        if theirs is None or mine is None or not jobs.same_nodes(theirs, mine):
            return {}
        return overlays

    def _enabled(self, i: int) -> bool:
        return bool(self.colour_combo.model().item(i).isEnabled())  # type: ignore[attr-defined]

    def refresh_colourings(self) -> None:
        """The diagnostics' inputs changed (a sweep ran, a workload was replayed): offer them."""
        self._fill_combo()
        self._recolour()

    def colour_by(self, key: str) -> None:
        i = self.colour_combo.findData(key)
        if i < 0 or not self._enabled(i):
            raise ValueError(f"the embedding map offers no colouring {key!r} now")
        self.colour_combo.setCurrentIndex(i)

    def current(self) -> str:
        return str(self.colour_combo.currentData())

    def item_colours(self, key: str) -> ItemColours | None:
        """The colours of that key for the map shown (None when its input is not there)."""
        if self.data is None:
            return None
        index_map = self.data.index_map
        levels = len(index_map.levels)
        if key == "level1":
            return by_level(index_map, 1)
        if key == "leaf":
            return by_level(index_map, levels)
        if key.startswith("level:"):
            return by_level(index_map, int(key.split(":")[1]))
        if key == "size":
            return size_colours(index_map)
        overlay = self._diagnostics().get(key)
        if overlay is None:
            return None
        return from_overlay(index_map, overlay, along_path=key == "misses")

    def _recolour(self) -> None:
        data = self.data
        if data is None:
            return
        colours = self.item_colours(self.current())
        self.colours = colours
        self._show_legend(colours)
        if colours is None:
            self.view.set_sums(None, None)
            return
        self._sums_runner.run(jobs.sums_job, data.density, colours, on_result=self._on_sums,
                              on_error=self.controls.failed)

    def _on_sums(self, result: tuple[DensityIndex, ColourSums, np.ndarray]) -> None:
        density, sums, leaf_rgb = result
        if self.data is not None and density is self.data.density:
            self.view.set_sums(sums, leaf_rgb)

    def _show_legend(self, colours: ItemColours | None) -> None:
        self.legend.setText(jobs.legend_html(colours))

    def legend_text(self) -> str:
        return self.legend.text()

    # -- representatives -----------------------------------------------------------------------------
    def _fill_marks_menu(self) -> None:
        levels = len(self.data.index_map.levels) if self.data is not None else 0
        if len(self.marks_menu.actions()) == levels:
            return
        self.marks_menu.clear()
        for level in range(1, levels + 1):
            action = QAction(f"lvl_{level}", self.marks_menu)
            action.setCheckable(True)
            action.setData(level)
            action.toggled.connect(lambda on, lv=level: self.show_marks(lv, on))
            self.marks_menu.addAction(action)

    def show_marks(self, level: int, on: bool = True) -> None:
        """Switch the marks of a level's representatives on or off."""
        action = next((a for a in self.marks_menu.actions() if a.data() == level), None)
        if action is not None and action.isChecked() != on:
            action.setChecked(on)  # comes back here through toggled
            return
        if on:
            self._ask_marks(level)
        else:
            self._marks.pop(level, None)
            self._draw_marks()

    def _ask_marks(self, level: int) -> None:
        if self.data is None or self._reader_of is None:
            return
        self._marks_runner.run(jobs.marks_job, self._reader_of, self.data.placement, level, supersede=False,
                               on_result=self._on_marks, on_error=self.controls.failed)

    def _on_marks(self, result: tuple[int, np.ndarray]) -> None:
        level, xy = result
        if any(a.data() == level and a.isChecked() for a in self.marks_menu.actions()):
            self._marks[level] = xy
        self._draw_marks()

    def _draw_marks(self) -> None:
        shown = [xy for xy in self._marks.values() if len(xy)]
        self.view.set_marks(np.concatenate(shown) if shown else None)

    def marks_shown(self) -> dict[int, int]:
        return {level: len(xy) for level, xy in self._marks.items()}

    # -- hover and box ---------------------------------------------------------------------------------
    def _hovered(self, rect: ViewRect) -> None:
        data = self.data
        if data is None:
            return
        found = leaves_under(data.density, rect)
        levels = len(data.index_map.levels)
        self.hover_text = "\n".join(share.describe(levels) for share in found)
        self.hover_label.setText("Under the pointer: " + ("; ".join(s.describe(levels) for s in found)
                                                           if found else "no items"))
        if found:
            QToolTip.showText(self.view.cursor().pos(), self.hover_text, self.view)

    def _clicked(self, rect: ViewRect) -> None:
        """A click on the map (no drag): the leaf most present under the pointer is opened (the tree
        selects it, so it is ringed here and outlined on the Index map); on empty space nothing."""
        data = self.data
        found = leaves_under(data.density, rect, top=1) if data is not None else []
        if data is not None and found:
            self.node_requested.emit(node_path(len(data.index_map.levels), found[0].leaf_id))

    def select_rect(self, rect: ViewRect) -> None:
        """List the nodes and items inside rect (in a worker)."""
        if self.data is not None:
            self.selection_list.list_inside("box", jobs.box_job, self.data.density, self.data.index_map, rect)

    def select_polygon(self, vertices: np.ndarray) -> None:
        """List the nodes and items inside a lasso ((k, 2) vertices in placement units; in a worker)."""
        if self.data is not None:
            self.selection_list.list_inside("lasso", jobs.lasso_job, self.data.density, self.data.index_map, vertices)

    @property
    def selection(self) -> Selection | None:
        """What the last box or lasso holds (None: none since the index opened)."""
        return self.selection_list.selection

    def selected_nodes(self) -> list[str]:
        return self.selection_list.nodes()

    # -- the tree's selection -------------------------------------------------------------------------
    def select_path(self, path: str) -> None:
        """The node selected in the tree (or the node a path lies in): rings on its items; else none."""
        self._selected_path = path
        self._draw_selected()

    def _draw_selected(self) -> None:
        ref, data = node_containing(self._selected_path), self.data
        found = items_beneath(data.placement, data.index_map, *ref) if ref and ref[0] >= 1 and data else None
        self.selected_items = np.zeros(0, np.int64) if found is None else found
        shown = self.selected_items[::max(1, -(-self.selected_items.size // SELECTED_SHOWN))]  # at most that many
        self.view.show_selected(data.placement.coords[shown] if data is not None and shown.size else None)

    # -- the last search -------------------------------------------------------------------------------
    def set_exploration(self, exploration: Exploration | None) -> None:
        """The Search panel's search on screen (None: none): drawn on the map."""
        self._exploration = exploration
        self._draw_query()

    def _draw_query(self) -> None:
        found, data = self._exploration, self.data
        if found is None or data is None or data.placement.sample:
            self.query = None
            self.view.clear_query()
            return
        placement = data.placement
        missed = [(m.location.leaf, m.location.row) for m in found.misses]
        overlay = query_overlay(placement, found.query, found.result, missed)
        self.query = overlay
        coords = placement.coords
        scanned = np.concatenate(overlay.scanned) if overlay.scanned else np.zeros(0, np.int64)
        centres = np.array([coords[s].mean(axis=0) for s in overlay.scanned if s.size], np.float32).reshape(-1, 2)
        self.view.show_query(overlay.query_xy, centres, coords[scanned], overlay.visit_rank,
                             coords[overlay.results[overlay.results >= 0]],
                             coords[overlay.missed[overlay.missed >= 0]])

    # -- export --------------------------------------------------------------------------------------
    def export_png(self, path: str | None = None) -> str | None:
        """The view as the CLI draws it (title, legend, the colour's meaning), to a file the user names;
        drawn and written in a worker (``exported`` says when). The path asked for, None when nothing."""
        data = self.data
        if data is None:
            self.controls.say("Nothing to export: no map is shown.", error=True)
            return None
        if path is None:
            path, _ = QFileDialog.getSaveFileName(self, "Export the embedding map", "embedding_map.png",
                                                  "PNG image (*.png)")
            if not path:
                return None
        self.export_button.setEnabled(False)
        self.controls.say(f"Exporting the map to {path} …")
        self._export_runner.run(jobs.export_job, data, self.colours, self.view.view_rect(), path,
                                on_result=self._on_exported,
                                on_error=lambda error: self._on_exported(None, error))
        return path

    def _on_exported(self, path: str | None, error: TaskError | None = None) -> None:
        self.export_button.setEnabled(True)
        failed = f"Could not export the map: {error}" if error is not None else ""
        self.controls.say(failed or f"Saved {path}", error=bool(failed))
        if path is not None:
            self.exported.emit(path)

