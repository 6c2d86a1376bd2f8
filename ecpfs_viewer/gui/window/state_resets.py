"""The one place where "another index opened" resets what every panel shows.

A panel's label, filter or count describes the index it was made for; when the session lets go of
that index (closing it, opening another, or failing to open one) every panel forgets it here, in
the order registered, before anything of the next index is shown. A panel added later registers
its reset once (``register``); nothing else in the window clears a panel's text, so no label can
outlive the store it described.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal


class StoreResets(QObject):
    """Every panel's reset, run when the store on screen changes (``store_changed``)."""

    reset_done = Signal()  # every panel forgot the old index (for tests and the monkey's checks)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._resets: list[tuple[str, Callable[[], object]]] = []

    def register(self, name: str, *resets: Callable[[], object]) -> None:
        """Run resets (in this order) whenever the store changes; name says whose they are."""
        self._resets.extend((name, reset) for reset in resets)

    @property
    def names(self) -> list[str]:
        return list(dict.fromkeys(name for name, _ in self._resets))

    def store_changed(self) -> None:
        """The index on screen went (closed, replaced, or failed to open): every panel forgets it."""
        for _name, reset in self._resets:
            reset()
        self.reset_done.emit()
