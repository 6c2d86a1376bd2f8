"""Escape closes a secondary window, as it closes a dialog: for the windows that are plain widgets
(Compare, the user guide), which Qt gives no such key."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QWidget


def close_on_escape(window: QWidget) -> QShortcut:
    """Escape anywhere in ``window`` (a child with focus included) closes it."""
    shortcut = QShortcut(QKeySequence(Qt.Key.Key_Escape), window)
    shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
    shortcut.activated.connect(window.close)
    return shortcut
