"""Secondary windows (Build, Tune, Compare, the diagnostics, the guide) sized to the screen they open on.

Each asks for the size it is designed for; it gets at most what the screen has (at 1.5x a 1,320 x 860
Tune window is larger than a 1280 x 800 screen), its remembered geometry comes back clamped to the
screen (saved on a larger screen or at another scale), and it is remembered again when it closes.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRect, QSize
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget

from ecpfs_viewer.gui.runtime import settings as app_settings


def available_geometry(window: QWidget) -> QRect:
    """The free area of the screen the window opens on: its parent's screen, else its own or the primary."""
    parent = window.parentWidget()
    screen = (parent.screen() if parent is not None else None) or window.screen() or QGuiApplication.primaryScreen()
    return screen.availableGeometry()


def fit_to_screen(window: QWidget, width: int, height: int, key: str | None = None) -> None:
    """Size a secondary window: its remembered geometry (key) or width x height, within the screen;
    clamped again each time it is shown, and remembered (key) when it is hidden."""
    restored = key is not None and app_settings.restore_widget_state(f"window/{key}", window)
    if not restored:
        window.resize(app_settings.fitted_size(QSize(width, height), available_geometry(window)))
    _ScreenKeeper(window, key)


class _ScreenKeeper(QObject):
    """Clamps the window to its screen when shown and saves its geometry when hidden."""

    def __init__(self, window: QWidget, key: str | None) -> None:
        super().__init__(window)
        self._key = key
        window.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.parent() and isinstance(watched, QWidget):
            if event.type() == QEvent.Type.Show:
                app_settings.clamp_to_screen(watched, available_geometry(watched))
            elif event.type() == QEvent.Type.Hide and self._key is not None:
                app_settings.save_widget_state(f"window/{self._key}", watched)
        return False
