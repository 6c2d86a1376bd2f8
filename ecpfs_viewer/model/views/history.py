"""Back and Forward through what was selected, as a web browser or HDFView keeps it.

Qt-free so its rules are tested alone: a new selection after going back drops the forward
entries (a browser does the same), while the selection that going back or forward makes is
not a new entry; selecting the entry already current adds nothing.
"""

from __future__ import annotations

#: Entries kept; the oldest go first (a long session of clicks never grows without bound).
MAX_ENTRIES = 200


class SelectionHistory:
    """The paths selected, oldest first, and the place of the one on screen; each entry also keeps
    the view it was last seen in (the window's tab), which going back to it restores."""

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self._entries: list[str] = []
        self._views: list[str | None] = []
        self._place = -1
        self._max = max(1, max_entries)

    @property
    def current(self) -> str | None:
        return self._entries[self._place] if self._entries else None

    @property
    def current_view(self) -> str | None:
        """The view the current entry was last seen in (None: not noted)."""
        return self._views[self._place] if self._entries else None

    def note_view(self, view: str) -> None:
        """The current entry is now seen in ``view``."""
        if self._entries:
            self._views[self._place] = view

    @property
    def entries(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def can_go_back(self) -> bool:
        return self._place > 0

    def can_go_forward(self) -> bool:
        return 0 <= self._place < len(self._entries) - 1

    def visit(self, path: str) -> None:
        """The user selected path: it becomes the newest entry, dropping what lay ahead."""
        if path == self.current:
            return
        del self._entries[self._place + 1:]
        del self._views[self._place + 1:]
        self._entries.append(path)
        self._views.append(None)
        if len(self._entries) > self._max:
            del self._views[: len(self._entries) - self._max]
            del self._entries[: len(self._entries) - self._max]
        self._place = len(self._entries) - 1

    def back(self) -> str | None:
        """The entry before the current one (it becomes current), or None at the start."""
        if not self.can_go_back():
            return None
        self._place -= 1
        return self._entries[self._place]

    def forward(self) -> str | None:
        """The entry after the current one (it becomes current), or None at the end."""
        if not self.can_go_forward():
            return None
        self._place += 1
        return self._entries[self._place]

    def clear(self) -> None:
        """Another index (or none) is shown: its paths mean nothing there."""
        self._entries.clear()
        self._views.clear()
        self._place = -1
