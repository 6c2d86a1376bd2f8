"""The main window's sizes: first-start geometry fitted to the screen, the tree's share of the width,
what is remembered between runs, and View ▸ Reset Layout.

At 1280 x 800, at 1.5x (a logical 853 x 533) and at 1920 x 1080 the tree keeps room for a node's
names ("embeddings" never elided) and the central area the rest; a size saved on a larger screen or
at another scale is clamped to the screen it opens on.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize, QTimer
from PySide6.QtWidgets import QMainWindow, QSplitter

from ecpfs_viewer.gui.runtime import settings as app_settings

#: The first size of the window (fitted to smaller screens).
FIRST_SIZE = QSize(1280, 800)
#: The tree's width: its share of the window, within these bounds.
TREE_SHARE, TREE_MIN, TREE_MAX = 0.27, 290, 400


def tree_width(window_width: int) -> int:
    """The tree's first width for a window this wide."""
    return max(TREE_MIN, min(TREE_MAX, int(window_width * TREE_SHARE)))


class WindowLayout(QObject):
    """Restores, saves and resets the window's geometry and its two splitters."""

    KEYS = ("main_window", "main_splitter", "metadata_splitter")

    def __init__(self, window: QMainWindow, splitter: QSplitter, metadata_splitter: QSplitter) -> None:
        super().__init__(window)
        self.window, self.splitter, self.metadata_splitter = window, splitter, metadata_splitter
        self._metadata_sizes = metadata_splitter.sizes()
        self._fit_when_shown = False  # no saved splitter: the tree's share is set once the width is known

    def restore(self) -> None:
        if not app_settings.restore_widget_state("main_window", self.window):
            self._first_size()
        app_settings.clamp_to_screen(self.window)  # a geometry saved at another scale or on a larger screen
        if not app_settings.restore_widget_state("main_splitter", self.splitter):
            self._fit_when_shown = True
            self.splitter.installEventFilter(self)
        app_settings.restore_widget_state("metadata_splitter", self.metadata_splitter)

    def save(self) -> None:
        app_settings.save_widget_state("main_window", self.window)
        app_settings.save_widget_state("main_splitter", self.splitter)
        app_settings.save_widget_state("metadata_splitter", self.metadata_splitter)

    def reset(self) -> None:
        """View ▸ Reset Layout: the first-start size and splitters; nothing saved is kept."""
        store = app_settings.settings()
        for key in self.KEYS:
            store.remove(f"layout/{key}")
        store.sync()
        if self.window.isMaximized() or self.window.isFullScreen():
            self.window.showNormal()
        self._first_size()
        app_settings.clamp_to_screen(self.window)
        self.fit_splitter()
        if self._metadata_sizes and any(self._metadata_sizes):
            self.metadata_splitter.setSizes(self._metadata_sizes)

    def fit_splitter(self) -> None:
        """The tree at its share of the window's width, the central area the rest (the tree shown again
        when it was dragged shut)."""
        width = max(self.splitter.width(), 1)
        tree = tree_width(self.window.width())
        self.splitter.setSizes([tree, max(1, width - tree)])

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """The splitter's first layout at its real width (before it is shown, setSizes is scaled)."""
        if watched is self.splitter and self._fit_when_shown and event.type() == QEvent.Type.Show:
            self._fit_when_shown = False
            self.splitter.removeEventFilter(self)
            QTimer.singleShot(0, self.fit_splitter)  # once the window's layout gave it its width
        return False

    def _first_size(self) -> None:
        screen = self.window.screen()
        self.window.resize(FIRST_SIZE if screen is None else
                           app_settings.fitted_size(FIRST_SIZE, screen.availableGeometry()))
