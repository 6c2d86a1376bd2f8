"""The opened index: which store is open, opening it in a worker, letting it go, the recent list.

Kept out of the main window so that one object owns the store's lifetime: everything that reads
the hierarchy gets it from here, and dropping it (closing, or opening another) follows one order:
pending openings are cancelled, the views let go of what they show (``dropping``), then the store
is closed (``dropped``). The window only turns these signals into what the screen shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, QUrl, Signal

from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.gui.runtime.action_cost import Measured
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.model.build.demo import ensure_demo_index
from ecpfs_viewer.model.ecpfs import IndexLayout, detect_index
from ecpfs_viewer.model.ecpfs.opened_index import open_index
from ecpfs_viewer.model.storage.opening import is_url
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


@dataclass(frozen=True)
class OpenedIndex:
    """What the opening worker hands back: the hierarchy, and what kind of index it holds."""

    location: str
    hierarchy: Hierarchy
    layout: IndexLayout


def open_hierarchy(location: str, remote: RemoteOptions | None = None) -> OpenedIndex:
    """Open a store and probe its root and index layout (runs in a worker)."""
    hierarchy = open_index(location, remote=remote).hierarchy
    hierarchy.root()
    return OpenedIndex(location, hierarchy, detect_index(hierarchy))


def display_label(location: str) -> str:
    """A short name for the tree's root row: the folder or file name, or the URL."""
    if is_url(location):
        return location.rstrip("/")
    return Path(location).expanduser().name or location


def location_from_drop(text: str) -> str:
    """A dropped URL or path as something open_store accepts."""
    text = text.strip().splitlines()[0].strip() if text.strip() else ""
    url = QUrl(text)
    if url.isLocalFile():
        return url.toLocalFile()
    return text


class IndexSession(QObject):
    """The index on screen (``current``), where it came from (``location``) and its recent list."""

    opening = Signal(str)  # the location now being opened
    opened = Signal(object, object)  # OpenedIndex, Measured (what opening it read)
    failed = Signal(str, str)  # the location and why it could not be opened
    dropping = Signal()  # the views let go of the index: its store is closed right after
    dropped = Signal()  # an opened index was let go and its store closed
    recent_changed = Signal(list)  # the recent locations, newest first
    demo_progress = Signal(object)  # BuildProgress of the demo index being built
    demo_finished = Signal(str)  # "" once no demo index is built any more (ready and opened next, or given
    # up for another index opened meanwhile), else why it could not be built

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.current: OpenedIndex | None = None  # set only here: the index opened, None while opening
        self.location: str | None = None  # what was asked for last (kept when opening failed: F5 retries)
        self.remote: RemoteOptions | None = None  # the options it was asked with (a URL's timeout …)
        self.remember_recent = True  # False for --screenshot runs: they are no user's recent stores
        self._open_runner = BackgroundRunner(self)
        self._demo_runner = BackgroundRunner(self)

    @property
    def hierarchy(self) -> Hierarchy | None:
        return self.current.hierarchy if self.current is not None else None

    @property
    def busy(self) -> bool:
        """An index being opened, or the demo index being built to be opened."""
        return self._open_runner.busy or self._demo_runner.busy

    # -- opening --------------------------------------------------------------------------------
    def open_location(self, location: str, remote: RemoteOptions | None = None) -> None:
        """Open a folder, zip or URL in the background, letting go of the index open before.

        A demo index still being built is given up: the user chose this index after it, and the
        demo opening when its build ends would replace this one under them."""
        location = location.strip()
        if not location:
            return
        self._give_up_demo()
        self.drop()
        self.location, self.remote = location, remote
        self.opening.emit(location)
        self._open_runner.run(open_hierarchy, location, remote, on_result=self._on_opened,
                              on_error=lambda message: self._on_failed(location, message))

    def reopen(self) -> None:
        """Open the last location again (F5 after it failed to open)."""
        if self.current is None and self.location:
            self.open_location(self.location, self.remote)

    def open_recent(self, location: str) -> None:
        """Open an entry of the recent list: a URL with the options it last opened with."""
        self.open_location(location, app_settings.remote_options_for(location) if is_url(location) else None)

    def _on_opened(self, opened: OpenedIndex) -> None:
        self.current = opened
        cost = Measured(None, opened.hierarchy.store.stats(), self._open_runner.last_seconds)
        if self.remember_recent:
            app_settings.add_recent_location(opened.location)
            if is_url(opened.location):
                app_settings.add_recent_url(opened.location, self.remote or RemoteOptions())
            self.recent_changed.emit(self.recent())
        self.opened.emit(opened, cost)

    def _on_failed(self, location: str, message: str) -> None:
        self.current = None
        self.failed.emit(location, message)

    def drop(self) -> None:
        """Let go of the opened index (closing, or before another opens)."""
        self._open_runner.invalidate()
        self.dropping.emit()
        dropped, self.current = self.current, None
        self.location, self.remote = None, None
        if dropped is not None:
            dropped.hierarchy.store.close()
            self.dropped.emit()

    def open_demo(self) -> None:
        """Build the demo index on first use (in the background, with progress), then open it."""
        self._demo_runner.run(ensure_demo_index, on_result=self._on_demo_ready,
                              on_error=self.demo_finished.emit, on_progress=self.demo_progress.emit)

    def _on_demo_ready(self, path: Path) -> None:
        self.demo_finished.emit("")
        self.open_location(str(path))

    def _give_up_demo(self) -> None:
        """Stop building the demo index and drop its result (it would open over the index opened now)."""
        if self._demo_runner.busy:
            self._demo_runner.invalidate()
            self.demo_finished.emit("")

    def stop(self) -> None:
        """The window closes: nothing more is opened, the open index is let go."""
        self._demo_runner.invalidate()
        self.drop()

    # -- recent ---------------------------------------------------------------------------------
    def recent(self) -> list[str]:
        return app_settings.recent_locations()

    def clear_recent(self) -> None:
        app_settings.clear_recent_locations()
        self.recent_changed.emit(self.recent())

    def dialog_start(self) -> str:
        """Where an Open dialog starts: beside the last local index opened, else the home folder."""
        recent = [r for r in self.recent() if not is_url(r)]
        return str(Path(recent[0]).parent) if recent else str(Path.home())
