"""The windows the main window opens beside itself: Build, Add Vectors, Tune and the comparisons.

Each is opened here, told where its result goes (a built or kept index opens in the main window;
an add into the open index re-reads it), and closed with the main window so none keeps the
application running.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from ecpfs_viewer.gui.build.add_dialog import AddVectorsDialog
from ecpfs_viewer.gui.build.dialog import BuildDialog
from ecpfs_viewer.gui.diagnostics.compare_map import CompareMapPage
from ecpfs_viewer.gui.tuning.compare_view import CompareView
from ecpfs_viewer.gui.tuning.drift_sim_dialog import DriftSimDialog
from ecpfs_viewer.gui.tuning.tune_dialog import TuneDialog
from ecpfs_viewer.gui.window.session import IndexSession
from ecpfs_viewer.model.storage.opening import is_url
from ecpfs_viewer.model.storage.options import RemoteOptions


class SecondaryWindows:
    def __init__(self, parent: QWidget, session: IndexSession, refresh: Callable[[], None]) -> None:
        self._parent = parent
        self._session = session
        self._refresh = refresh
        self.build_dialog: BuildDialog | None = None
        self.add_dialog: AddVectorsDialog | None = None
        self.tune_dialog: TuneDialog | None = None
        self.drift_sim_dialog: DriftSimDialog | None = None
        self._compare_views: list[CompareView] = []

    def _local_index(self) -> str | None:
        location = self._session.location
        return location if location and not is_url(location) and not location.lower().endswith(".zip") else None

    def open_build(self, input_path: str | None = None) -> None:
        dialog = BuildDialog(self._parent, input_path=input_path)
        dialog.index_built.connect(self._session.open_location)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.build_dialog = dialog
        dialog.show()

    def open_add(self) -> None:
        """Build > Add Vectors…: writes only into the folder the user names in it (the open index is
        offered by a button, never taken); the window re-reads its index when that was the one written."""
        dialog = AddVectorsDialog(self._parent, open_index=self._local_index())
        dialog.added.connect(self._after_add)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.add_dialog = dialog
        dialog.show()

    def _after_add(self, index: str) -> None:
        local = self._local_index()
        if local is not None and os.path.abspath(local) == os.path.abspath(index):
            self._refresh()

    def open_tune(self) -> None:
        """Build > Tune…: a kept variant it opens becomes the window's index."""
        dialog = TuneDialog(self._parent)
        dialog.open_requested.connect(self._session.open_location)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.tune_dialog = dialog
        dialog.show()

    def open_drift_simulation(self) -> None:
        """Build > Simulate Drift…: the drift curve of a .npy (nothing of the open index is used)."""
        dialog = DriftSimDialog(self._parent)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.drift_sim_dialog = dialog
        dialog.show()

    def open_comparison(self, location: str, remote: RemoteOptions | None = None) -> None:
        """File > Compare With…: a comparison window of the index on screen and the one at location."""
        opened = self._session.current
        if opened is None:
            return
        view = CompareView(opened.location, location, self._session.remote, remote, parent=self._parent,
                           pages=(("Map", CompareMapPage),))
        view.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        view.destroyed.connect(lambda *_: self._compare_views.remove(view) if view in self._compare_views else None)
        self._compare_views.append(view)
        view.show()

    @property
    def comparisons(self) -> list[CompareView]:
        """The comparison windows open now."""
        return list(self._compare_views)

    def close_all(self) -> None:
        for dialog in (self.build_dialog, self.tune_dialog, self.add_dialog, self.drift_sim_dialog,
                       *self._compare_views):
            if dialog is not None:
                with contextlib.suppress(RuntimeError):  # already deleted by Qt (WA_DeleteOnClose)
                    dialog.close()
        self.build_dialog = self.tune_dialog = self.add_dialog = self.drift_sim_dialog = None
