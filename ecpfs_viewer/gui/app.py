"""Start the desktop application: QApplication, names for QSettings, icon, the main window."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtGui import QGuiApplication, QIcon
from PySide6.QtWidgets import QApplication

from ecpfs_viewer.gui.runtime import scheduling
from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.gui.runtime.collector import GuiThreadCollector
from ecpfs_viewer.gui.runtime.shutdown import enable_crash_trace, shut_down
from ecpfs_viewer.gui.runtime.theme import apply_theme, saved_theme
from ecpfs_viewer.gui.window.main_window import MainWindow
from ecpfs_viewer.gui.window.select_request import SelectRequest
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.storage.remote_helper import use_helper_process
from ecpfs_viewer.process_exit import leave_process, remote_clients_made
from ecpfs_viewer.resources import APP_ID, ICON_SVG

#: how long --screenshot waits for the selected page to load before it takes the picture anyway
SCREENSHOT_PATIENCE_S = 120.0


def application_icon() -> QIcon | None:
    """The application icon shipped in ecpfs_viewer.resources (a checkout, a wheel or a bundle alike)."""
    icon = Path(str(files("ecpfs_viewer.resources") / ICON_SVG))
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
    # Wayland compositors match windows to the desktop entry (APP_ID.desktop) by this name
    QGuiApplication.setDesktopFileName(APP_ID)
    icon = application_icon()
    if icon is not None:
        QApplication.setWindowIcon(icon)
    apply_theme(saved_theme(), app)  # type: ignore[arg-type]
    return app  # type: ignore[return-value]


def create_main_window(location: str | None = None, demo: bool = False,
                       remote: RemoteOptions | None = None, select: str | None = None,
                       remember_recent: bool = True) -> MainWindow:
    """A main window that starts opening location (or the demo index); used by run_gui and tests.
    select: a path to select once the store is open (``--select lvl_3/node_812``); the request is
    kept as ``window.select_request``."""
    ensure_application()
    # a remote store's requests are made in a helper process: obstore's completions then take
    # that process's interpreter lock, not the one the GUI thread needs
    use_helper_process(True)
    window = MainWindow()
    window.session.remember_recent = remember_recent
    if select:
        window.select_request = SelectRequest(window, select)
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

    With screenshot, the window is saved to that PNG once the selected page has loaded (or the
    store failed to open, or the selected path does not exist), and the application quits: exit 0
    when it opened, 1 when it could not or the path could not be selected (said on stderr too), 3
    when the page was still loading after SCREENSHOT_PATIENCE_S (the picture shows how far it got).
    Packaging smoke tests and the README's pictures use it. remote: options for a URL (the
    per-request timeout).

    Quitting never waits on a stuck task: background work is cancelled and given about a second;
    a task still running after that (a stalled server, a long computation) is abandoned and the
    process leaves at once (settings and log flushed), as interpreter shutdown would wait for it.
    A crash leaves the stacks of every thread in the log folder (gui/runtime/shutdown.py).
    """
    crash_trace = enable_crash_trace()
    app = ensure_application()
    collector = tune_interpreter_for_gui()
    window = create_main_window(location, demo, remote, select=select, remember_recent=not screenshot)
    collector.follow_index(window.store_opened, window.store_dropped)
    if screenshot:
        window.resize(1280, 800)  # the same picture on every machine
    window.show()
    if screenshot:
        def capture(code: int) -> None:
            window.grab().save(screenshot)
            app.exit(code)

        capture_when_loaded(window, select, capture, waiting=bool(location or demo))
    code = int(app.exec())
    clean = shut_down(window, [collector.timer])
    if crash_trace is not None:
        crash_trace.close()
    if not clean or remote_clients_made():  # obstore's threads crash interpreter shutdown
        app_settings.settings().sync()  # the layout and recent list saved on close
        leave_process(code)
    return code


def page_loaded(window: MainWindow, select: str | None) -> bool:
    """The selected node (select, once revealed) and the pages showing it have finished reading."""
    if window.session.busy:
        return False
    item = window.current_item()
    if select is not None and (item is None or item.path != select.strip("/")):
        return False
    overview = window.node_page if window.overview_stack.currentWidget() is window.node_page else window.overview
    return not (overview.busy or window.metadata.is_busy() or window.plot.busy)


def capture_when_loaded(window: MainWindow, select: str | None, capture: Callable[[int], None],
                        waiting: bool = True, patience_s: float = SCREENSHOT_PATIENCE_S) -> None:
    """Call capture(code) once, when the selected page has loaded after the store opened (0), the
    store failed to open or the selected path could not be selected (1, said on stderr), or
    patience_s passed with the page still loading (3).

    Loaded means loaded at two polls in a row: what the last result put on the page is laid out
    (and what it replaced deleted) by the event loop in between, so the picture shows it."""
    started = time.monotonic()
    state = {"opened": not waiting, "done": False, "loaded_once": False, "failure_shown": False}
    poll = QTimer(window)
    poll.setInterval(50)

    def finish(code: int) -> None:
        if not state["done"]:
            state["done"] = True
            poll.stop()
            capture(code)

    request = window.select_request

    def check() -> None:
        failure = request.failure if request is not None else None
        if failure is not None and state["opened"]:
            if state["failure_shown"]:  # the banner saying so was laid out at the last poll
                print(f"ecpfs-viewer: error: {failure}", file=sys.stderr)
                finish(1)
            state["failure_shown"] = True
            return
        loaded = state["opened"] and page_loaded(window, select if waiting else None)
        if loaded and state["loaded_once"]:
            finish(0)
        state["loaded_once"] = loaded
        if not state["done"] and time.monotonic() - started > patience_s:
            print(f"ecpfs-viewer: the page was still loading after {patience_s:g} s; saved it as it was",
                  file=sys.stderr)
            finish(3)

    def opened() -> None:
        state["opened"] = True

    window.store_opened.connect(lambda *_: opened())
    def open_failed(location: str, message: str) -> None:
        print(f"ecpfs-viewer: error: could not open {location}: {message}", file=sys.stderr)
        QTimer.singleShot(0, lambda: finish(1))  # after the message shows

    window.open_failed.connect(open_failed)
    poll.timeout.connect(check)
    poll.start()
