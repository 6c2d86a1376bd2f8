"""The Diagnostics menu: Query Workload and Self-Reachability panels, and the Drift dialog, over the open index.

Each panel is made once per index and kept (a result stays on screen while the user browses), as
a tab of the window or a window of its own (View ▸ Panels); a node it names opens in the tree, and a
self-reachability report goes to the leaf pages. Both use the Search panel's reader of the open
index, so nothing is read twice.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QMainWindow, QMenu

from ecpfs_viewer.gui.diagnostics.drift_view import DriftDialog
from ecpfs_viewer.gui.diagnostics.reachability_view import ReachabilityDialog
from ecpfs_viewer.gui.diagnostics.workload_view import WorkloadDialog
from ecpfs_viewer.gui.overview.node_page import NodePage
from ecpfs_viewer.gui.widgets.actions import window_action
from ecpfs_viewer.gui.widgets.panel_places import PanelPlaces
from ecpfs_viewer.model.search import IndexReader


class DiagnosticsMenu(QObject):
    """Owns the menu and its dialogs."""

    workload_ready = Signal(object)  # the Workload a run replayed (for the index map)
    reachability_ready = Signal(object)  # the ReachabilityReport (for the index map)

    def __init__(self, window: QMainWindow, reader: Callable[[], IndexReader], reveal: Callable[[str], None],
                 node_page: NodePage, places: PanelPlaces) -> None:
        super().__init__(window)
        self.window, self._reader, self._reveal, self._node_page = window, reader, reveal, node_page
        self.places = places  # each dialog is a tab of the window, or a window of its own
        self.workload: WorkloadDialog | None = None
        self.reachability: ReachabilityDialog | None = None
        self.drift: DriftDialog | None = None
        self.workload_action = window_action(window, "Query &Workload…", self.open_workload)
        self.workload_action.setStatusTip("Replay queries: visits per node, leaves per query, hot leaves, skew")
        self.reachability_action = window_action(window, "&Self-Reachability…", self.open_reachability)
        self.reachability_action.setStatusTip("Which items a search with their own vector does not lead home")
        self.drift_action = window_action(window, "&Drift…", self.open_drift)
        self.drift_action.setStatusTip("How far inserts moved the index from a fresh build of its items; "
                                       "whether to rebuild")
        bar = window.menuBar()
        menu = QMenu("&Diagnostics", bar)
        existing = bar.actions()
        if existing:  # before Help, the last menu
            bar.insertMenu(existing[-1], menu)
        else:
            bar.addMenu(menu)
        menu.addAction(self.workload_action)
        menu.addAction(self.reachability_action)
        places.add("workload", "Query workload", self.workload_action.trigger)
        places.add("reachability", "Self-reachability", self.reachability_action.trigger)
        menu.addAction(self.drift_action)
        self.set_enabled(False)

    def set_enabled(self, enabled: bool) -> None:
        self.workload_action.setEnabled(enabled)
        self.reachability_action.setEnabled(enabled)
        self.drift_action.setEnabled(enabled)

    def open_workload(self) -> WorkloadDialog:
        if self.workload is None:
            self.workload = WorkloadDialog(self._reader, self.window)
            self.workload.node_requested.connect(self._reveal)
            self.workload.finished_run.connect(self._workload_done)
            self.places.attach("workload", self.workload)
        self.places.show("workload")
        return self.workload

    def _workload_done(self) -> None:
        if self.workload is not None and self.workload.workload is not None:
            self.workload_ready.emit(self.workload.workload)

    def open_reachability(self) -> ReachabilityDialog:
        if self.reachability is None:
            self.reachability = ReachabilityDialog(self._reader, self.window)
            self.reachability.node_requested.connect(self._reveal)
            self.reachability.report_ready.connect(self._node_page.set_reachability)
            self.reachability.report_ready.connect(self.reachability_ready)
            self.places.attach("reachability", self.reachability)
        self.places.show("reachability")
        return self.reachability

    def open_drift(self) -> DriftDialog:
        if self.drift is None:
            self.drift = DriftDialog(self._reader, self.window)
        self.drift.show()
        self.drift.raise_()
        return self.drift

    def forget(self) -> None:
        """The index was let go: its results no longer apply."""
        self._node_page.set_reachability(None)
        for key, dialog in (("workload", self.workload), ("reachability", self.reachability)):
            if dialog is not None:
                dialog.runner.invalidate()
                self.places.forget(key)
                dialog.deleteLater()
        if self.drift is not None:  # a dialog of its own, not a panel
            self.drift.runner.invalidate()
            self.drift.close()
            self.drift.deleteLater()
        self.workload = self.reachability = self.drift = None
        self.set_enabled(False)

    @property
    def busy(self) -> bool:
        return any(d is not None and d.busy for d in (self.workload, self.reachability, self.drift))
