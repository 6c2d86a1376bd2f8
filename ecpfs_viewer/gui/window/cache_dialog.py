"""File > Clear Cache…: say what the cache folder holds, empty it on confirmation, say what was freed.

The folder is measured and emptied on the worker pool; the two message boxes are window-modal
and opened, not exec'd, so the window keeps painting meanwhile.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QMessageBox, QWidget

from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.model.formatting import format_bytes
from ecpfs_viewer.model.storage.disk_cache import CacheUsage, cache_root, cache_usage, clear_cache
from ecpfs_viewer.model.tasks import TaskError


def _holding(usage: CacheUsage) -> str:
    return f"{format_bytes(usage.nbytes)} in {usage.files} file(s) for {usage.stores} index(es)"


class ClearCacheFlow(QObject):
    """The Clear Cache… command: a question with the folder's size, then what was freed."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.parent_widget = parent
        self.runner = BackgroundRunner(self)
        self.box: QMessageBox | None = None  # the box on screen (the question, then the answer)

    def start(self) -> None:
        self.runner.run(cache_usage, on_result=self._ask, on_error=self._failed)

    def _show(self, icon: QMessageBox.Icon, title: str, text: str,
              buttons: QMessageBox.StandardButton = QMessageBox.StandardButton.Ok) -> QMessageBox:
        if self.box is not None:
            self.box.close()
        box = QMessageBox(icon, title, text, buttons, self.parent_widget)
        box.setInformativeText(f"Folder: {cache_root()}")
        box.setWindowModality(Qt.WindowModality.WindowModal)
        self.box = box
        box.open()
        return box

    def _ask(self, usage: CacheUsage) -> None:
        if not usage.files:
            self._show(QMessageBox.Icon.Information, "Clear Cache", "The cache is empty.")
            return
        box = self._show(QMessageBox.Icon.Question, "Clear Cache",
                         f"The cache holds {_holding(usage)}: item maps and the metadata of remote "
                         "indexes, each used only while its index is unchanged.\n\nDelete it? What is "
                         "needed again is read from the index again.",
                         QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.accepted.connect(self._clear)

    def _clear(self) -> None:
        self.runner.run(clear_cache, on_result=self._cleared, on_error=self._failed)

    def _cleared(self, freed: CacheUsage) -> None:
        self._show(QMessageBox.Icon.Information, "Clear Cache", f"Freed {_holding(freed)}.")

    def _failed(self, error: TaskError) -> None:
        self._show(QMessageBox.Icon.Warning, "Clear Cache", f"Could not clear the cache: {error}")
