"""What the application remembers between runs: recent stores, window geometry, splitter sizes.

Everything goes through one QSettings scope named by :data:`ORGANIZATION` / :data:`APPLICATION`,
so tests can redirect it to a temporary folder with :func:`use_settings_dir`.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QCoreApplication, QSettings
from PySide6.QtWidgets import QSplitter, QWidget

ORGANIZATION = "ecpfs-viewer"
APPLICATION = "ecpfs-viewer"
MAX_RECENT = 10
_RECENT_KEY = "recent/locations"


def apply_application_names() -> None:
    """Name the organisation and application so QSettings() finds our scope."""
    QCoreApplication.setOrganizationName(ORGANIZATION)
    QCoreApplication.setApplicationName(APPLICATION)


def use_settings_dir(directory: str | Path) -> None:
    """Keep settings as INI files below directory (tests use a tmp_path; nothing else is touched)."""
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(directory))


def settings() -> QSettings:
    apply_application_names()
    return QSettings()


def recent_locations() -> list[str]:
    """Recently opened stores, newest first."""
    value = settings().value(_RECENT_KEY, [])
    if isinstance(value, str):  # QSettings returns a bare string for a one-element list
        value = [value]
    return [str(v) for v in value if v] if isinstance(value, list) else []


def add_recent_location(location: str) -> list[str]:
    """Put location at the top of the recent list (once), keeping at most MAX_RECENT entries."""
    entries = [location] + [v for v in recent_locations() if v != location]
    entries = entries[:MAX_RECENT]
    store = settings()
    store.setValue(_RECENT_KEY, entries)
    store.sync()
    return entries


def clear_recent_locations() -> None:
    store = settings()
    store.remove(_RECENT_KEY)
    store.sync()


def save_widget_state(key: str, widget: QWidget) -> None:
    """Remember a window's geometry or a splitter's sizes under key."""
    store = settings()
    if isinstance(widget, QSplitter):
        store.setValue(f"layout/{key}", widget.saveState())
    else:
        store.setValue(f"layout/{key}", widget.saveGeometry())


def restore_widget_state(key: str, widget: QWidget) -> bool:
    """Restore what save_widget_state kept; False when nothing was saved (keep the defaults)."""
    value = settings().value(f"layout/{key}")
    if not isinstance(value, QByteArray) or value.isEmpty():
        return False
    if isinstance(widget, QSplitter):
        return bool(widget.restoreState(value))
    return bool(widget.restoreGeometry(value))
