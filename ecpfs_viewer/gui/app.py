"""Start the desktop application: QApplication, names for QSettings, icon, the main window."""

from __future__ import annotations

import sys
from importlib.resources import files
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QGuiApplication, QIcon
from PySide6.QtWidgets import QApplication

from ecpfs_viewer.gui.runtime import scheduling
from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.gui.runtime.collector import GuiThreadCollector
from ecpfs_viewer.gui.runtime.theme import apply_theme, saved_theme
from ecpfs_viewer.gui.runtime.workers import stop_workers
from ecpfs_viewer.gui.window.main_window import MainWindow
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.process_exit import abandoned_remote_requests, leave_process


def application_icon() -> QIcon | None:
    """The application icon shipped in ecpfs_viewer.resources (a checkout, a wheel or a bundle alike)."""
    icon = Path(str(files("ecpfs_viewer.resources") / "ecpfs-viewer.svg"))
    return QIcon(str(icon)) if icon.is_file() else None


def ensure_application(argv: list[str] | None = None) -> QApplication:
    """The running QApplication (created when needed), named so QSettings finds our scope, in the
    theme chosen last (View > Theme)."""
    app_settings.apply_application_names()
    app = QApplication.instance()
    if app is None:
        # argv[0] names the window class on X11 (WM_CLASS); under `python -m` it would be
        # '__main__.py', which matches no desktop entry
        app = QApplication(["ecpfs-viewer", *(argv if argv is not None else sys.argv)[1:]])
    QApplication.setApplicationDisplayName("ecpfs-viewer")
    # Wayland compositors match windows to ecpfs-viewer.desktop by this name
    QGuiApplication.setDesktopFileName("ecpfs-viewer")
    icon = application_icon()
    if icon is not None:
        QApplication.setWindowIcon(icon)
    apply_theme(saved_theme(), app)  # type: ignore[arg-type]
    return app  # type: ignore[return-value]


def create_main_window(location: str | None = None, demo: bool = False,
                       remote: RemoteOptions | None = None, select: str | None = None,
                       remember_recent: bool = True) -> MainWindow:
    """A main window that starts opening location (or the demo index); used by run_gui and tests.
    select: a path to select once the store is open (``--select lvl_3/node_812``)."""
    ensure_application()
    window = MainWindow()
    window.session.remember_recent = remember_recent
    if select:
        window.store_opened.connect(lambda *_: window.reveal_path(select))
    if location:
        window.open_location(location, remote)
    elif demo:
        window.open_demo()
    return window


def tune_interpreter_for_gui() -> GuiThreadCollector:
    """Set the interpreter up for a responsive window (gui/runtime/scheduling.py); keep the collector.

    Garbage is collected on the GUI thread in short pauses (see gui/runtime/collector.py; give it the
    window's store_opened and store_dropped with follow_index).
    """
    scheduling.tune_interpreter()
    return GuiThreadCollector()


def run_gui(location: str | None = None, demo: bool = False, screenshot: str | None = None,
            select: str | None = None, remote: RemoteOptions | None = None) -> int:
    """Run the application until the window closes; returns the exit code.

    With screenshot, the window is saved to that PNG once the store has opened (or failed to),
    and the application quits: exit 0 when it opened, 1 when it could not. Packaging smoke tests
    and the README's pictures use it. remote: options for a URL (the per-request timeout).

    Quitting never waits on a stuck task: background work is cancelled and given about a second;
    a task still running after that (a stalled server, a long computation) is abandoned and the
    process leaves at once (settings and log flushed), as interpreter shutdown would wait for it.
    """
    app = ensure_application()
    collector = tune_interpreter_for_gui()
    window = create_main_window(location, demo, remote, select=select, remember_recent=not screenshot)
    collector.follow_index(window.store_opened, window.store_dropped)
    if screenshot:
        window.resize(1280, 800)  # the same picture on every machine
    window.show()
    if screenshot:
        _capture_when_settled(app, window, screenshot, waiting=bool(location or demo))
    code = int(app.exec())
    collector.timer.stop()
    if not stop_workers() or abandoned_remote_requests():
        app_settings.settings().sync()  # the layout and recent list saved on close
        leave_process(code)
    return code


def _capture_when_settled(app: QApplication, window: MainWindow, path: str, waiting: bool) -> None:
    """Save the window to path after opening settles, then quit with 0 (opened) or 1 (failed)."""
    settle_ms, give_up_ms = 2000, 120_000

    def capture(code: int) -> None:
        QTimer.singleShot(settle_ms, lambda: (window.grab().save(path), app.exit(code)))

    window.store_opened.connect(lambda *_: capture(0))
    window.open_failed.connect(lambda *_: capture(1))
    if not waiting:
        capture(0)
    QTimer.singleShot(give_up_ms, lambda: app.exit(3))
