"""Copy Path and its siblings: put where the selected node is on the clipboard and say so.

The texts come from :mod:`copy_paths` (plain text, no Qt); this module is the Qt side: which node
is selected, the clipboard, and the status-bar note.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QGuiApplication

from ecpfs_viewer.gui.tree.tree_item import TreeItem
from ecpfs_viewer.gui.window.copy_paths import full_location, zarr_snippet
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


class NodeClipboard:
    """Copies the selected node's path, full location or a zarr snippet; nothing when none is open."""

    def __init__(self, current_item: Callable[[], TreeItem | None], hierarchy: Callable[[], Hierarchy | None],
                 say: Callable[[str, int], None]) -> None:
        self._current_item = current_item
        self._hierarchy = hierarchy
        self._say = say  # the status bar's showMessage

    def _selected(self) -> tuple[TreeItem, Hierarchy] | None:
        item, hierarchy = self._current_item(), self._hierarchy()
        return None if item is None or hierarchy is None else (item, hierarchy)

    def _copy(self, text: str, said: str) -> None:
        QGuiApplication.clipboard().setText(text)
        self._say(said, 3000)

    def copy_path(self) -> None:
        """The path inside the store, as the tree and the CLI write it."""
        selected = self._selected()
        if selected is not None:
            self._copy("/" + selected[0].path, f"Copied /{selected[0].path}")

    def copy_location(self) -> None:
        """The selected node's file-system path or URL, for a terminal or another program."""
        selected = self._selected()
        if selected is not None:
            location = full_location(selected[1].store, selected[0].path)
            self._copy(location, f"Copied {location}")

    def copy_snippet(self) -> None:
        """Python that opens the selected array (or group) with zarr, read-only."""
        selected = self._selected()
        if selected is not None:
            item, hierarchy = selected
            self._copy(zarr_snippet(hierarchy.store, item.path, item.kind),
                       f"Copied Python that opens /{item.path} with zarr")
