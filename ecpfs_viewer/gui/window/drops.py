"""A folder, zip, URL or .npy file dropped on the window: opened, or offered to the Build dialog."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QWidget

from ecpfs_viewer.gui.window.session import location_from_drop
from ecpfs_viewer.model.storage.opening import is_url


class StoreDrops(QObject):
    """Watches the window's drag and drop events: a store opens (``open``), a local .npy goes to
    the Build dialog (``build``)."""

    def __init__(self, window: QWidget, open_store: Callable[[str], None], build: Callable[[str], None]) -> None:
        super().__init__(window)
        self._open, self._build = open_store, build
        window.setAcceptDrops(True)
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if isinstance(event, QDragEnterEvent):
            mime = event.mimeData()
            if mime.hasUrls() or mime.hasText():
                event.acceptProposedAction()
            else:
                event.ignore()
            return True
        if isinstance(event, QDragMoveEvent) and event.type() == QEvent.Type.DragMove:
            event.acceptProposedAction()
            return True
        if isinstance(event, QDropEvent) and event.type() == QEvent.Type.Drop:
            self._dropped(event)
            return True
        return False

    def _dropped(self, event: QDropEvent) -> None:
        mime = event.mimeData()
        if mime.hasUrls() and mime.urls():
            url = mime.urls()[0]
            location = url.toLocalFile() if url.isLocalFile() else url.toString()
        elif mime.hasText():
            location = location_from_drop(mime.text())
        else:
            event.ignore()
            return
        event.acceptProposedAction()
        if location.lower().endswith(".npy") and not is_url(location):
            self._build(location)
        else:
            self._open(location)
