"""The Index map panel wired into the window: opened from the index overview (or View ▸ Index Map),
outlining the tree's selection, opening the node clicked, and spreading a recall sweep's miss map
and the boundary items to the tree (a mark per node), the node pages and the level pages."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QObject
from PySide6.QtWidgets import QMainWindow

from ecpfs_viewer.gui.diagnostics.index_map import IndexMapPanel
from ecpfs_viewer.gui.overview.level_page import LevelPage
from ecpfs_viewer.gui.overview.node_page import NodePage
from ecpfs_viewer.gui.overview.panel import IndexOverviewPanel
from ecpfs_viewer.gui.search.recall_view import RecallView
from ecpfs_viewer.gui.tree.item_model import HierarchyTreeModel
from ecpfs_viewer.gui.tree.marks import MarkKind, RowMark
from ecpfs_viewer.gui.tree.panel import TreePanel
from ecpfs_viewer.gui.widgets.panel_places import PanelPlaces
from ecpfs_viewer.gui.window.diagnostics_menu import DiagnosticsMenu
from ecpfs_viewer.model.diagnostics.boundary import boundary_miss_correlation
from ecpfs_viewer.model.diagnostics.colourings import colouring
from ecpfs_viewer.model.diagnostics.miss_map import MissMap
from ecpfs_viewer.model.diagnostics.overlays import STRAYS_LEGEND, VISITS_LEGEND, stray_share_by_node, visits_by_node
from ecpfs_viewer.model.diagnostics.reachability import ReachabilityReport
from ecpfs_viewer.model.diagnostics.workload import Workload
from ecpfs_viewer.model.ecpfs.paths import node_path, parse_node_path
from ecpfs_viewer.model.search.reader import NodeReader
from ecpfs_viewer.model.validation import ValidationReport

#: The tree-marks layer of the miss map.
MISSES_LAYER = "misses"


def miss_marks(miss_map: MissMap | None) -> dict[str, RowMark]:
    """A mark on every node where the sweep lost true neighbours, saying how many and their share."""
    if miss_map is None:
        return {}
    total = miss_map.total()
    marks: dict[str, RowMark] = {}
    for level, counts in miss_map.per_node().items():
        ids = miss_map.index_map.band(level).node_ids
        for i in np.flatnonzero(counts):
            n = int(counts[i])
            marks[node_path(level, int(ids[i]))] = RowMark(
                MarkKind.INFO, f"recall sweep: {n:,} true neighbours lost here ({n / total:.1%} of all misses)")
    return marks


class IndexMapFeature(QObject):
    """Owns the Index map panel (a tab or its own window, in ``places``, shown from View ▸ Panels);
    ``reader_of`` gives the index reader (called in a worker)."""

    def __init__(self, host: QMainWindow, *, tree_model: HierarchyTreeModel, reader_of: Callable[[], NodeReader],
                 reveal: Callable[[str], None], node_page: NodePage, level_page: LevelPage,
                 places: PanelPlaces) -> None:
        super().__init__(host)
        self.host, self.tree_model, self._reader_of = host, tree_model, reader_of
        self.node_page, self.level_page = node_page, level_page
        self.panel = IndexMapPanel()
        self.dock = places.panel("index_map", "Index map", self.panel, self.show_map, "Ctrl+Shift+M")
        self.show_action = places.action("index_map")
        self._selected = ""
        self.panel.set_reader(reader_of)
        self.panel.node_requested.connect(reveal)
        self.panel.diagnostics_changed.connect(self._spread)
        self.panel.map_ready.connect(lambda _map: self.panel.select_path(self._selected))
        tree_model.modelReset.connect(self._on_tree_reset)  # a store shown, or closed
        node_page.extra_facts = self.node_facts
        level_page.extra_facts = self.level_facts

    def follow(self, overview: IndexOverviewPanel, recall_view: RecallView, tree_panel: TreePanel,
               diagnostics: DiagnosticsMenu) -> None:
        """What the map shows and where it opens from: the overview's button and validation report, the
        recall sweep's miss map, the tree's selection, the Diagnostics dialogs' results."""
        overview.index_page.map_requested.connect(self.show_map)
        overview.report_ready.connect(self.set_report)
        recall_view.miss_map_ready.connect(self.set_miss_map)
        tree_panel.item_chosen.connect(lambda item: self.select(item.path))
        diagnostics.reachability_ready.connect(self.set_reachability)
        diagnostics.workload_ready.connect(self.set_workload)

    @property
    def busy(self) -> bool:
        return self.panel.busy

    def show_map(self) -> None:
        """Show the dock, laying out the index on first use."""
        self.dock.show()
        if self.panel.index_map is None and not self.panel.busy:
            self.panel.show_index(self._reader_of)

    def select(self, path: str) -> None:
        """The tree's selection: outlined on the map."""
        self._selected = path
        self.panel.select_path(path)

    def set_report(self, report: ValidationReport) -> None:
        self.panel.set_report(report)

    def set_miss_map(self, miss_map: MissMap | None) -> None:
        self.panel.set_miss_map(miss_map)

    def set_reachability(self, report: ReachabilityReport | None) -> None:
        """A self-reachability report: each leaf's share of strays, on the map."""
        self.panel.set_node_values("strays", None if report is None else stray_share_by_node(report), STRAYS_LEGEND)

    def set_workload(self, work: Workload | None) -> None:
        """A replayed workload: how many queries read each node, on the map."""
        self.panel.set_node_values("workload", None if work is None else visits_by_node(work), VISITS_LEGEND)

    def _on_tree_reset(self) -> None:
        self.panel.clear()
        if self.dock.isVisible() and self.tree_model.rowCount() > 0:
            self.panel.show_index(self._reader_of)

    def _spread(self) -> None:
        """A miss map or boundary items arrived (or went): the tree's marks and the pages show them."""
        self.tree_model.set_marks(MISSES_LAYER, miss_marks(self.panel.miss_map))
        self.node_page.refresh_extra_facts()
        self.level_page.refresh_extra_facts()

    # -- facts for the pages ----------------------------------------------------------------------
    def node_facts(self, path: str) -> list[tuple[str, str]]:
        """Lines for a node page: misses lost at the node, its boundary items, other overlays' values."""
        ref = parse_node_path(path)
        if ref is None or ref[0] < 1:
            return []
        level, node_id = ref
        rows: list[tuple[str, str]] = []
        miss_map = self.panel.miss_map
        if miss_map is not None and level <= len(miss_map.index_map.levels):
            n = miss_map.node_misses(level, node_id)
            per_exp = ", ".join(f"search_exp {e}: {miss_map.node_misses(level, node_id, e):,}"
                                for e in miss_map.search_exps)
            share = n / miss_map.total() if miss_map.total() else 0.0
            rows.append(("Recall lost here", f"{n:,} true neighbours of the last recall sweep ({share:.1%} of its "
                                             f"misses) turned away at this node; {per_exp}"))
        boundary = self.panel.boundary
        if boundary is not None and level <= len(boundary.index_map.levels):
            line = boundary.describe(level, node_id)
            if line:
                rows.append(("Boundary items", line.removeprefix("boundary items: ")))
        index_map = self.panel.index_map
        if index_map is not None and level <= len(index_map.levels):
            i = index_map.band(level).index_of(node_id)
            for overlay in self.panel.overlays().values():
                if i is None or not colouring(overlay.id).node_fact:
                    continue
                value = overlay.value(level, i)
                if value is not None:
                    rows.append((overlay.name[:1].upper() + overlay.name[1:], overlay.format(value)))
        return rows

    def level_facts(self, level: int) -> list[tuple[str, str]]:
        """Lines for a level page: the misses at its nodes and how they go with its boundary items."""
        miss_map = self.panel.miss_map
        if miss_map is None or not 1 <= level <= len(miss_map.index_map.levels):
            return []
        counts = miss_map.per_node()[level]
        total = miss_map.total()
        here = int(counts.sum())
        rows = [("Recall lost at this level", f"{here:,} of the {total:,} true neighbours the last recall sweep "
                                              f"missed ({here / total if total else 0:.1%}) turned away at a node "
                                              f"of lvl_{level}")]
        top = [row for row in miss_map.lost(10_000) if row.level == level][:3]
        if top:
            rows.append(("Most lost at", ", ".join(f"{r.path} ({r.misses:,})" for r in top)))
        boundary = self.panel.boundary
        if boundary is not None and len(boundary.index_map.band(level)) == counts.size:
            rho = boundary_miss_correlation(boundary, counts, level)
            rows.append(("Boundary items vs misses",
                         "not enough variation to rank" if rho is None else
                         f"rank correlation {rho:+.2f} over the nodes of lvl_{level} (share of boundary items "
                         f"against misses lost there)"))
        return rows
