"""What the application remembers between runs: recent stores (URLs with their remote options),
window geometry, splitter sizes.

Everything goes through one QSettings scope named by :data:`ORGANIZATION` / :data:`APPLICATION`,
so tests can redirect it to a temporary folder with :func:`use_settings_dir`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from pathlib import Path

from PySide6.QtCore import QByteArray, QCoreApplication, QRect, QSettings, QSize
from PySide6.QtWidgets import QSplitter, QWidget

from ecpfs_viewer.model.guarded_json import parse_json
from ecpfs_viewer.model.storage.options import RemoteOptions

ORGANIZATION = "ecpfs-viewer"
APPLICATION = "ecpfs-viewer"
MAX_RECENT = 10
_RECENT_KEY = "recent/locations"
_RECENT_URLS_KEY = "recent/urls"  # JSON objects: the URL and the RemoteOptions it opened with


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


def _string_list(key: str) -> list[str]:
    value = settings().value(key, [])
    if isinstance(value, str):  # QSettings returns a bare string for a one-element list
        value = [value]
    return [str(v) for v in value if v] if isinstance(value, list) else []


def recent_locations() -> list[str]:
    """Recently opened stores, newest first."""
    return _string_list(_RECENT_KEY)


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
    store.remove(_RECENT_URLS_KEY)
    store.sync()


def _remote_entry(text: str) -> tuple[str, RemoteOptions] | None:
    """One remembered URL and its options; None for an entry that is not one (a hand-edited file)."""
    try:
        entry = parse_json(text, "a remembered location")
        known = {f.name for f in fields(RemoteOptions)}
        url = entry.pop("url")
        options = RemoteOptions(**{k: v for k, v in entry.items() if k in known})
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    return (url, options) if isinstance(url, str) and url else None


def recent_urls() -> list[tuple[str, RemoteOptions]]:
    """URLs opened lately, newest first, each with the options (endpoint, timeout …) it opened with."""
    entries = (_remote_entry(text) for text in _string_list(_RECENT_URLS_KEY))
    return [entry for entry in entries if entry is not None]


def add_recent_url(url: str, options: RemoteOptions) -> None:
    """Remember url with its options at the top of the recent URLs (once), keeping MAX_RECENT; secret
    storage options (passwords, tokens) are remembered by name only."""
    kept = [json.dumps({"url": url, **asdict(options.remembered())})]
    kept += [json.dumps({"url": u, **asdict(o)}) for u, o in recent_urls() if u != url]
    store = settings()
    store.setValue(_RECENT_URLS_KEY, kept[:MAX_RECENT])
    store.sync()


def remote_options_for(url: str) -> RemoteOptions | None:
    """The options url last opened with, if it is remembered."""
    return next((options for u, options in recent_urls() if u == url), None)


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


def fitted_size(wanted: QSize, available: QRect, margin: float = 0.95) -> QSize:
    """wanted, shrunk to fit within margin of the available screen area (at 1.5x scale a
    1280 x 800 window is larger than a 1080p screen)."""
    return QSize(min(wanted.width(), int(available.width() * margin)),
                 min(wanted.height(), int(available.height() * margin)))


def clamp_to_screen(window: QWidget, available: QRect | None = None) -> None:
    """Shrink and move a window so it lies within the available geometry of its screen."""
    if available is None:
        screen = window.screen()
        if screen is None:
            return
        available = screen.availableGeometry()
    if available.isEmpty():
        return
    frame = window.frameGeometry()  # the title bar and borders count too
    extra = QSize(frame.width() - window.width(), frame.height() - window.height())
    room = QRect(available.topLeft(), available.size() - extra)
    size = fitted_size(window.size(), room, 1.0)
    if size != window.size():
        window.resize(size)
    frame = window.frameGeometry()
    x = min(max(frame.x(), available.left()), available.right() + 1 - frame.width())
    y = min(max(frame.y(), available.top()), available.bottom() + 1 - frame.height())
    if (x, y) != (frame.x(), frame.y()):
        window.move(max(x, available.left()), max(y, available.top()))
