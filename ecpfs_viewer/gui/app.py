"""Start the desktop application: QApplication, names for QSettings, icon, the main window."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from ecpfs_viewer.gui import settings as app_settings
from ecpfs_viewer.gui.main_window import MainWindow
from ecpfs_viewer.gui.workers import wait_for_workers

ICON_PATH = Path(__file__).resolve().parent.parent.parent / "resources" / "ecpfs-viewer.svg"


def application_icon() -> QIcon | None:
    """The application icon from the resources folder (source checkout or installed wheel)."""
    candidates = [ICON_PATH]
    try:
        from importlib.resources import files

        candidates.insert(0, Path(str(files("ecpfs_viewer.resources") / "ecpfs-viewer.svg")))
    except (ImportError, ModuleNotFoundError, TypeError):
        pass
    for candidate in candidates:
        if candidate.is_file():
            return QIcon(str(candidate))
    return None


def ensure_application(argv: list[str] | None = None) -> QApplication:
    """The running QApplication (created when needed), named so QSettings finds our scope."""
    app = QApplication.instance()
    if app is None:
        app = QApplication(argv if argv is not None else sys.argv[:1])
    app_settings.apply_application_names()
    QApplication.setApplicationDisplayName("ecpfs-viewer")
    icon = application_icon()
    if icon is not None:
        QApplication.setWindowIcon(icon)
    return app  # type: ignore[return-value]


def create_main_window(location: str | None = None, demo: bool = False,
                       storage_options: dict[str, Any] | None = None) -> MainWindow:
    """A main window that starts opening location (or the demo index); used by run_gui and tests."""
    ensure_application()
    window = MainWindow()
    if location:
        window.open_location(location, storage_options)
    elif demo:
        window.open_demo()
    return window


def run_gui(location: str | None = None, demo: bool = False) -> int:
    """Run the application until the window closes; returns the exit code."""
    app = ensure_application()
    window = create_main_window(location, demo)
    window.show()
    try:
        return int(app.exec())
    finally:
        wait_for_workers()
