"""View ▸ Panels ▸ Embedding map wired into the window: placed like the other panels (a tab or its
own window), laid out on first showing, the Search panel's last search drawn on it, the Index map
panel's diagnostics (misses, workload, strays, boundary items) offered as colourings, a node picked
in its box or lasso selection, or the leaf clicked on the map, opened in the tree (and so outlined
on the Index map and ringed on this map), the tree's selection drawn on it, and everything dropped
when another index opens."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QMainWindow

from ecpfs_viewer.gui.diagnostics.embedding_map import EmbeddingMapPanel
from ecpfs_viewer.gui.search.panel import SearchPanel
from ecpfs_viewer.gui.tree.panel import TreePanel
from ecpfs_viewer.gui.widgets.panel_places import PanelPlaces
from ecpfs_viewer.gui.window.diagnostics_menu import DiagnosticsMenu
from ecpfs_viewer.gui.window.index_map_wiring import IndexMapFeature
from ecpfs_viewer.model.search.reader import NodeReader


class EmbeddingMapFeature(QObject):
    """Owns the Embedding map panel; ``reader_of`` gives the index reader (called in a worker)."""

    def __init__(self, host: QMainWindow, *, places: PanelPlaces, reader_of: Callable[[], NodeReader],
                 reveal: Callable[[str], None], index_map: IndexMapFeature, search: SearchPanel,
                 diagnostics: DiagnosticsMenu) -> None:
        super().__init__(host)
        self._reader_of = reader_of
        self.panel = EmbeddingMapPanel(lambda: (index_map.panel.index_map, index_map.panel.overlays()))
        self.dock = places.panel("embedding_map", "Embedding map", self.panel, self.show_map, "Ctrl+Shift+E")
        self.show_action = places.action("embedding_map")
        self.panel.node_requested.connect(reveal)
        self._search = search
        search.finished.connect(lambda: self.panel.set_exploration(search.exploration))
        index_map.panel.diagnostics_changed.connect(self.panel.refresh_colourings)
        for ready in (diagnostics.workload_ready, diagnostics.reachability_ready):
            ready.connect(lambda _result: self.panel.refresh_colourings())

    def follow(self, tree_panel: TreePanel) -> None:
        """The tree's selection drawn on the map (rings on the node's items): a node clicked on the
        Index map or opened from the Path tab reveals it in the tree, and so here too."""
        tree_panel.item_chosen.connect(lambda item: self.panel.select_path(item.path))

    @property
    def busy(self) -> bool:
        return self.panel.busy

    def show_map(self) -> None:
        """Show the panel, placing the open index's items on first use (and after a cancel)."""
        self.dock.show()
        data = self.panel.data
        if (data is None or data.placement.sample) and not self.panel.controls.busy:  # none, or a cancelled sample
            self.panel.show_index(self._reader_of)
            self.panel.set_exploration(self._search.exploration)
        else:
            self.panel.refresh_colourings()

    def clear(self) -> None:
        """Another index (or none): the map forgets the old one."""
        self.panel.clear()
