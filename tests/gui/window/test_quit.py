"""Quitting never waits on stuck work: Ctrl+Q or closing the window ends the process within 2 s.

Each case runs the real application (`ecpfs_viewer.cli.main`, as the `ecpfs-viewer` command does)
in a subprocess while a worker is stuck, once on a loopback server that never answers (with a
60 s timeout) and once in a computation that ignores its cancel flag; the time from the close to
the end of the process is measured with the system's monotonic clock.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import remote_fixtures

QUIT_SECONDS = 2.0  # the promise: from Ctrl+Q / window close to the process gone

# Runs the application; once `ready()` holds and the parent said "go" (a file appears), quits the
# way argv[1] says and prints the monotonic time of that moment.
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

def ignores_cancel():  # CPU-bound Python that never looks at a cancel flag
    started.set()
    end = time.monotonic() + 300
    while time.monotonic() < end:
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
    print("ready; closing at", time.monotonic(), flush=True)
    if how == "ctrl+q":
        QTest.keyClick(win, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    else:
        win.close()
    QTimer.singleShot(10_000, lambda: print("still running 10 s after the close", flush=True))

QTimer.singleShot(0, poll)
sys.exit(main([location, *sys.argv[5:]]))
"""


def _quit_while_stuck(tmp_path: Path, how: str, case: str, location: str, *args: str,
                      go_when: object = None) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Start the application, signal it once go_when() holds, return (close-to-exit seconds, result)."""
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
        process.wait(timeout=60)
        ended = time.monotonic()
    finally:
        if process.poll() is None:
            process.kill()
        stdout, stderr = process.communicate()
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    closing = [line for line in stdout.splitlines() if line.startswith("ready; closing at")]
    assert closing, f"never got ready: {stdout!r} {stderr!r}"
    return ended - float(closing[0].split()[-1]), done


def _assert_clean_quit(seconds: float, done: subprocess.CompletedProcess[str], tmp_path: Path) -> None:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "panicked" not in done.stderr, done.stderr
    assert seconds < QUIT_SECONDS, f"{seconds:.2f} s from close to exit"
    saved = "".join(p.read_text(errors="replace") for p in (tmp_path / "config").rglob("*.conf"))
    assert "main_window" in saved  # the layout saved on close survives the abandoned worker


def test_ctrl_q_quits_while_a_worker_waits_on_a_stalled_server(tmp_path: Path, two_clusters_path: Path) -> None:
    pytest.importorskip("obstore", reason="obstore is part of the remote extra")
    with remote_fixtures.serve_hostile(two_clusters_path.parent, "stall") as (url, tally):
        seconds, done = _quit_while_stuck(tmp_path, "ctrl+q", "stalled", f"{url}/two_clusters.zarr",
                                          "--timeout", "60", go_when=lambda: tally.total >= 1)
    _assert_clean_quit(seconds, done, tmp_path)


def test_closing_the_window_quits_during_a_long_computation(tmp_path: Path, two_clusters_path: Path) -> None:
    seconds, done = _quit_while_stuck(tmp_path, "close", "computation", str(two_clusters_path))
    _assert_clean_quit(seconds, done, tmp_path)


@pytest.mark.parametrize("mode", remote_fixtures.HOSTILE_MODES)
def test_screenshot_of_a_hostile_server_exits_1_within_the_timeout(tmp_path: Path, two_clusters_path: Path,
                                                                    mode: str) -> None:
    """`ecpfs-viewer URL --timeout 2 --screenshot PNG` on a server that stalls, cuts or trickles."""
    pytest.importorskip("obstore", reason="obstore is part of the remote extra")
    shot = tmp_path / "window.png"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "config"))

    def screenshot(url: str) -> tuple[subprocess.CompletedProcess[str], float]:
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "ecpfs_viewer", f"{url}/two_clusters.zarr", "--timeout", "2",
                               "--screenshot", str(shot)], env=env, capture_output=True, text=True, timeout=120)
        return done, time.perf_counter() - started

    with remote_fixtures.serve_static(two_clusters_path.parent) as (url, _tally):
        healthy, healthy_seconds = screenshot(url)  # start-up, the pages loading and the picture, at this load
    assert healthy.returncode == 0, healthy.stderr
    shot.unlink()
    with remote_fixtures.serve_hostile(two_clusters_path.parent, mode) as (url, _tally):
        done, elapsed = screenshot(url)
    assert done.returncode == 1, done.stderr
    assert shot.is_file() and "panicked" not in done.stderr and "Traceback" not in done.stderr
    assert elapsed < healthy_seconds + 2 + 1 + 3, (elapsed, healthy_seconds)  # one timeout and our deadline's grace
