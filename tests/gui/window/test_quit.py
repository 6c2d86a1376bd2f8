"""Quitting never waits on stuck work: Ctrl+Q or closing the window ends the process while it is stuck.

Each case runs the real application (`ecpfs_viewer.cli.main`, as the `ecpfs-viewer` command does)
in a subprocess while a worker is stuck for good, once on a loopback server that never answers
(with a 600 s timeout) and once in a computation that ignores its cancel flag and never ends. The
process can only end by abandoning that work, so an exit at all (0, clean, the layout saved) is
the proof; no clock is read.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import remote_fixtures

# Runs the application; once `ready()` holds and the parent said "go" (a file appears), quits the
# way argv[1] says and prints that it did.
_DRIVER = """
import sys, threading, time
from pathlib import Path
from PySide6.QtCore import Qt, QTimer
from PySide6.QtTest import QTest
from ecpfs_viewer.cli import main
from ecpfs_viewer.gui.app import ensure_application
from ecpfs_viewer.gui.window.main_window import MainWindow
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner

how, case, go, location = sys.argv[1:5]
app = ensure_application()
started = threading.Event()
state = {}

def ignores_cancel():  # CPU-bound Python that never looks at a cancel flag and never ends
    started.set()
    while True:
        sum(range(1000))

def window():
    return next((w for w in app.topLevelWidgets() if isinstance(w, MainWindow)), None)

def ready():
    win = window()
    if win is None:
        return False
    if how == "ctrl+q" and not win.isActiveWindow():  # shortcuts reach only the active window
        win.activateWindow()
        return False
    if case == "stalled":
        return win.is_busy()
    if "runner" not in state and win.session.location and not win.is_busy():
        state["runner"] = BackgroundRunner(win)
        state["runner"].run(ignores_cancel, on_result=print, heavy=True)
    return started.is_set()

def poll():
    if not (ready() and Path(go).exists()):
        QTimer.singleShot(20, poll)
        return
    win = window()
    print("ready; closing", flush=True)
    if how == "ctrl+q":
        QTest.keyClick(win, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    else:
        win.close()
    QTimer.singleShot(10_000, lambda: print("still running 10 s after the close", flush=True))

QTimer.singleShot(0, poll)
sys.exit(main([location, *sys.argv[5:]]))
"""


def _quit_while_stuck(tmp_path: Path, how: str, case: str, location: str, *args: str,
                      go_when: object = None) -> subprocess.CompletedProcess[str]:
    """Start the application, tell it to quit once go_when() holds; the finished process."""
    go = tmp_path / "go"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "config"))
    process = subprocess.Popen([sys.executable, "-c", _DRIVER, how, case, str(go), location, *args], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while go_when is not None and not go_when():  # type: ignore[operator]
            assert time.monotonic() < deadline and process.poll() is None, "the server never got the request"
            time.sleep(0.02)
        go.touch()
        process.wait(timeout=120)  # a guard against a hang only: the stuck work would never end
    finally:
        if process.poll() is None:
            process.kill()
        stdout, stderr = process.communicate()
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    assert "ready; closing" in stdout, f"never got ready: {stdout!r} {stderr!r}"
    return done


def _assert_clean_quit(done: subprocess.CompletedProcess[str], tmp_path: Path) -> None:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "panicked" not in done.stderr, done.stderr
    saved = "".join(p.read_text(errors="replace") for p in (tmp_path / "config").rglob("*.conf"))
    assert "main_window" in saved  # the layout saved on close survives the abandoned worker


def test_ctrl_q_quits_while_a_worker_waits_on_a_stalled_server(tmp_path: Path, two_clusters_path: Path) -> None:
    pytest.importorskip("obstore", reason="obstore is part of the remote extra")
    with remote_fixtures.serve_hostile(two_clusters_path.parent, "stall") as (url, tally):
        done = _quit_while_stuck(tmp_path, "ctrl+q", "stalled", f"{url}/two_clusters.zarr",
                                 "--timeout", "600", go_when=lambda: tally.total >= 1)
    _assert_clean_quit(done, tmp_path)


def test_closing_the_window_quits_during_a_long_computation(tmp_path: Path, two_clusters_path: Path) -> None:
    done = _quit_while_stuck(tmp_path, "close", "computation", str(two_clusters_path))
    _assert_clean_quit(done, tmp_path)


@pytest.mark.parametrize("mode", remote_fixtures.HOSTILE_MODES)
def test_screenshot_of_a_hostile_server_exits_1_within_the_timeout(tmp_path: Path, two_clusters_path: Path,
                                                                    mode: str) -> None:
    """`ecpfs-viewer URL --timeout 2 --screenshot PNG` on a server that stalls, cuts or trickles."""
    pytest.importorskip("obstore", reason="obstore is part of the remote extra")
    shot = tmp_path / "window.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "config"))

    with remote_fixtures.serve_hostile(two_clusters_path.parent, mode) as (url, _tally):
        done = subprocess.run([sys.executable, "-m", "ecpfs_viewer", f"{url}/two_clusters.zarr", "--timeout", "2",
                               "--screenshot", str(shot)], env=env, capture_output=True, text=True, timeout=120)
    # 1 is "could not open" (the request timeout ended it); the screenshot's own give-up would be 3
    assert done.returncode == 1, done.stderr
    assert shot.is_file() and "panicked" not in done.stderr and "Traceback" not in done.stderr
