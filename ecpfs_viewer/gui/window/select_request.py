"""``--select PATH``: the path to select once the store is open, and how that ended."""

from __future__ import annotations

from typing import Any, Protocol

from PySide6.QtCore import QObject


class _Window(Protocol):
    """What a request uses of the main window (which creates it: no import back to it)."""

    store_opened: Any  # Signal
    tree_model: Any  # HierarchyTreeModel: path_revealed, listing_failed
    banner: Any  # shows a message where the user looks

    def reveal_path(self, path: str) -> Any: ...


class SelectRequest(QObject):
    """A path to select once the store is open (``--select``), and how that ended.

    A path that does not exist (or whose way down could not be listed) is said where the user
    looks, in the window's banner, and kept in ``failure`` for ``--screenshot`` to report and exit 1.
    Only the first answer counts: what the user selects afterwards is none of its business.
    """

    def __init__(self, window: _Window, path: str) -> None:
        super().__init__(window)  # type: ignore[arg-type]  # the window is a QObject
        self.path = path
        self.wanted = path.strip("/")
        self.failure: str | None = None
        self.answered = False
        self._window = window
        window.store_opened.connect(self._start)
        window.tree_model.path_revealed.connect(self._revealed)
        window.tree_model.listing_failed.connect(self._failed)

    def _start(self, *_args: object) -> None:
        self.answered, self.failure = False, None
        self._window.reveal_path(self.path)

    def _revealed(self, *_args: object) -> None:
        self.answered = True

    def _failed(self, path: str, message: str) -> None:
        """'no such node' for the path, or a listing on the way to it that failed."""
        path = path.strip("/")
        if self.answered or not (path in (self.wanted, self.path) or not path
                                 or self.wanted.startswith(path + "/")):
            return
        self.answered, self.failure = True, message
        self._window.banner.show_message(f"Could not select {self.wanted or '/'}\n{message}")
