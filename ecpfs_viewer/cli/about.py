"""What `ecpfs-viewer --version --verbose` prints for a bug report: the versions of what the program
runs on, and the Qt platform plugin it would use, without opening a window (creating the
application object would load the plugin, and abort where it cannot load: that is often the bug)."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import sys
from pathlib import Path

from ecpfs_viewer import __version__

#: (label, distributions tried in order): the libraries whose versions change what a user sees
LIBRARIES = (
    ("zarr", ("zarr",)),
    ("numpy", ("numpy",)),
    ("numcodecs", ("numcodecs",)),
    ("obstore", ("obstore",)),
    ("fsspec", ("fsspec",)),
    ("pyqtgraph", ("pyqtgraph",)),
    ("PySide6", ("PySide6-Essentials", "PySide6")),
)


def distribution_version(names: tuple[str, ...]) -> str:
    """The installed version of the first of names that is installed, else "not installed"."""
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "not installed"


def qt_runtime() -> tuple[str, Path | None]:
    """The version of the Qt libraries PySide6 loads, and their plugin folder; the reason when they
    cannot be loaded (a missing system library names itself here)."""
    try:
        from PySide6.QtCore import QLibraryInfo, qVersion
    except ImportError as exc:
        return f"cannot be loaded ({exc})", None
    return qVersion(), Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath))


def platform_plugin(plugins: Path | None) -> str:
    """Which platform plugin Qt would load, by the rules it follows, and which are installed."""
    chosen = os.environ.get("QT_QPA_PLATFORM", "").strip()
    if chosen:
        choice = f"{chosen} (QT_QPA_PLATFORM)"
    elif sys.platform == "darwin":
        choice = "cocoa (Qt's default on macOS)"
    elif sys.platform == "win32":
        choice = "windows (Qt's default on Windows)"
    elif os.environ.get("WAYLAND_DISPLAY") or os.environ.get("XDG_SESSION_TYPE") == "wayland":
        choice = "wayland, else xcb (QT_QPA_PLATFORM unset; a Wayland session)"
    else:
        display = os.environ.get("DISPLAY")
        choice = f"xcb (QT_QPA_PLATFORM unset; DISPLAY={display})" if display else \
            "xcb (QT_QPA_PLATFORM unset; no DISPLAY or WAYLAND_DISPLAY: the window cannot open)"
    installed = sorted(_plugin_name(p) for p in (plugins / "platforms").glob("*")) if plugins else []
    listed = ", ".join(n for n in installed if n) or "none found"
    return f"{choice}; not loaded by this command; installed: {listed}"


def _plugin_name(path: Path) -> str:
    """'libqxcb.so' -> 'xcb', 'qwindows.dll' -> 'windows', 'libqcocoa.dylib' -> 'cocoa'."""
    stem = path.name.split(".")[0]
    stem = stem.removeprefix("lib")
    return stem[1:] if stem.startswith("q") else ""


def version_report() -> str:
    """Lines of "name: version" for a bug report."""
    qt, plugins = qt_runtime()
    libc = " ".join(part for part in platform.libc_ver() if part)
    lines = [
        f"ecpfs-viewer {__version__}",
        f"Python: {platform.python_version()} ({platform.python_implementation()}, {sys.executable})",
        *[f"{label}: {distribution_version(names)}" for label, names in LIBRARIES],
        f"Qt runtime: {qt}",
        f"Qt platform plugin: {platform_plugin(plugins)}",
        f"Platform: {platform.platform()} ({platform.machine()}{', ' + libc if libc else ''})",
    ]
    return "\n".join(lines)
