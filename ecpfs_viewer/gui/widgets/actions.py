"""One way to make a menu action with a keyboard shortcut, for the window and the features alike.

Explicit key sequences (not Qt's standard bindings, which differ per platform) in the window's
shortcut context, so the shortcuts list (F1) and the docs name the same keys everywhere.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QWidget

from ecpfs_viewer.gui.widgets.icons import standard_icon


def window_action(window: QWidget, text: str, slot: Callable[[], object], shortcut: str | None = None,
                  icon: str | None = None) -> QAction:
    """An action of ``window`` (its shortcut works wherever the focus is in it) that calls ``slot``."""
    action = QAction(text, window)
    if shortcut is not None:
        action.setShortcut(QKeySequence(shortcut))
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    if icon:
        action.setIcon(standard_icon(icon))
    action.triggered.connect(lambda _checked=False: slot())
    window.addAction(action)
    return action
