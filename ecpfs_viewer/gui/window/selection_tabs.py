"""Each tab of the right-hand side shows the selection, as silx view and HDFView do.

Overview shows the page of the node the selection belongs to (an array's node, the index for the
arrays at the root), Data shows the selected array or a node's ``embeddings``, and Metadata the
selection itself. The tab on screen is filled at once; a tab the user has not opened is filled
when they open it, so selecting a node does not read its vectors for a Data tab nobody looks at.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QStackedWidget, QTabWidget

from ecpfs_viewer.gui.data.plot_pane import PlotPane
from ecpfs_viewer.gui.overview.node_page import NodePage
from ecpfs_viewer.gui.overview.panel import IndexOverviewPanel
from ecpfs_viewer.model.ecpfs.nodes import node_ref_of
from ecpfs_viewer.model.ecpfs.paths import ROOT_EMBEDDINGS, parse_level
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

TAB_OVERVIEW, TAB_METADATA, TAB_DATA = range(3)


@dataclass(frozen=True)
class Targets:
    """What each tab shows for one selection."""

    path: str  # the selection
    is_array: bool
    overview: str | None  # the node, level or index ('') the Overview shows; None: nothing to show
    data: str | None  # the array the Data tab shows (a node's embeddings for a node); None: nothing to plot

    @property
    def own_page(self) -> bool:
        """The selection has a page of its own (the index, a level, a node group)."""
        return self.overview == self.path and not self.is_array


def targets(path: str, *, is_array: bool, is_index: bool, broken: bool) -> Targets:
    """Which page and which array stand for path in the Overview and Data tabs."""
    if not is_index:
        return Targets(path, is_array, None, path if is_array and not broken else None)
    ref = node_ref_of(path)
    if is_array:
        node = ref.path if ref is not None else ""  # an array at the root (rep_embeddings, info/...): the index
        return Targets(path, True, node, None if broken else path)
    if broken:  # its message is on the Metadata tab
        return Targets(path, False, None, None)
    if ref is not None and ref.path == path:
        embeddings = ROOT_EMBEDDINGS if ref.is_root else f"{path}/embeddings"
        return Targets(path, False, path, embeddings)
    if path == "" or parse_level(path) is not None:
        return Targets(path, False, path, None)
    return Targets(path, False, None, None)


def tab_for(target: Targets, current: int) -> int:
    """The tab to show for a new selection: the one on screen when it can show it.

    A page of its own opens Overview (a node's embeddings are one click away, on Data); an array
    selected on Overview opens Metadata (its node page is one click away); a tab with nothing for
    the selection gives way to Metadata, which shows everything."""
    if target.own_page:
        return TAB_OVERVIEW
    if current == TAB_OVERVIEW and (target.is_array or target.overview is None):
        return TAB_METADATA
    if current == TAB_DATA and target.data is None:
        return TAB_METADATA
    return current


class SelectionTabs(QObject):
    """Fills the Overview and Data tabs for the selection: the one on screen now, the others when opened."""

    def __init__(self, tabs: QTabWidget, overview_stack: QStackedWidget, overview: IndexOverviewPanel,
                 node_page: NodePage, plot: PlotPane) -> None:
        super().__init__(tabs)
        self.tabs, self.overview_stack, self.overview = tabs, overview_stack, overview
        self.node_page, self.plot = node_page, plot
        self._hierarchy: Hierarchy | None = None
        self._targets: Targets | None = None
        self._shown: set[int] = set()  # tabs filled for the current selection
        tabs.currentChanged.connect(self._fill)

    @property
    def current(self) -> Targets | None:
        return self._targets

    def show(self, hierarchy: Hierarchy, target: Targets) -> None:
        """Show a new selection: pick the tab (a page of its own opens Overview), fill what is on screen.

        An array is plotted at once (what it holds is what the user asked for); a node's
        embeddings and an array's node page wait until their tab is opened."""
        self._hierarchy, self._targets, self._shown = hierarchy, target, set()
        if target.is_array:
            self._fill_data()
        else:
            self.plot.clear()
        current = self.tabs.currentIndex()
        wanted = tab_for(target, current)
        if wanted == current:
            self._fill(current)
        else:
            self.tabs.setCurrentIndex(wanted)  # fills it (currentChanged)

    def forget(self) -> None:
        """The index is let go: nothing is shown until the next selection."""
        self._hierarchy, self._targets, self._shown = None, None, set()

    def _fill(self, tab: int) -> None:
        if self._targets is None or self._hierarchy is None or tab in self._shown:
            return
        self._shown.add(tab)
        if tab == TAB_OVERVIEW:
            self._fill_overview()
        elif tab == TAB_DATA and not self._targets.is_array:
            self._fill_data()

    def _fill_overview(self) -> None:
        target, hierarchy = self._targets, self._hierarchy
        assert target is not None and hierarchy is not None
        if target.overview is None:
            return
        ref = node_ref_of(target.overview)
        if ref is not None and ref.path == target.overview:
            if not target.is_array or self.node_page.shown != (hierarchy, ref):  # an array's node: kept if shown
                self.node_page.show_node(hierarchy, ref)
            self.overview_stack.setCurrentWidget(self.node_page)
            return
        self.overview_stack.setCurrentWidget(self.overview)
        level = parse_level(target.overview)
        if level is not None:
            self.overview.show_level(hierarchy, level)
        else:
            self.overview.show_index(hierarchy)

    def _fill_data(self) -> None:
        target, hierarchy = self._targets, self._hierarchy
        assert target is not None and hierarchy is not None
        self._shown.add(TAB_DATA)
        if target.data is None:
            self.plot.clear()
            return
        assert target.data is not None
        self.plot.show_array(hierarchy, target.data)  # its path is above the plot
