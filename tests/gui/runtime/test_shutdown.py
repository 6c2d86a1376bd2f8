"""Ending the window's work in order (gui/runtime/shutdown.py) and the stack a crash leaves behind."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import shiboken6
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QWidget

from ecpfs_viewer.gui.runtime import workers
from ecpfs_viewer.gui.runtime.shutdown import CRASH_TRACE_NAME, enable_crash_trace, shut_down
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner

_CRASH = """
import faulthandler, sys
from pathlib import Path
from ecpfs_viewer.gui.runtime.shutdown import enable_crash_trace
trace = enable_crash_trace(Path(sys.argv[1]))
def deep_in_the_viewer():
    faulthandler._sigsegv()
if sys.argv[2] == "crash":
    deep_in_the_viewer()
trace.close()
"""


def _run(folder: Path, mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _CRASH, str(folder), mode], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))


def test_a_crash_leaves_every_threads_stack_and_a_normal_end_leaves_nothing(tmp_path: Path) -> None:
    done = _run(tmp_path, "crash")
    assert done.returncode != 0
    trace = (tmp_path / CRASH_TRACE_NAME).read_text()
    assert "ecpfs-viewer" in trace and "process " in trace
    assert "Segmentation fault" in trace and "in deep_in_the_viewer" in trace
    done = _run(tmp_path, "normal")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / CRASH_TRACE_NAME).read_text() == trace  # the crash is kept, the clean run left nothing


def test_a_crash_trace_that_cannot_be_written_is_no_failure(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    assert enable_crash_trace(blocker) is None


def test_shutting_down_stops_timers_and_waits_for_tasks_that_stop(qtbot) -> None:
    window = QWidget()
    runner = BackgroundRunner(window)
    timer = QTimer()
    timer.start(10)
    results: list[str] = []

    def polite(*, progress, cancel) -> str:
        while not cancel.is_set():
            time.sleep(0.005)
        return "stopped"

    qtbot.waitUntil(lambda: workers.thread_pool().activeThreadCount() == 0, timeout=30_000)  # earlier tests' tasks
    runner.run(polite, on_result=results.append, on_progress=lambda _v: None)
    qtbot.waitUntil(lambda: workers.thread_pool().activeThreadCount() > 0, timeout=5_000)
    assert shut_down(window, [timer]) is True
    assert not timer.isActive() and workers.thread_pool().activeThreadCount() == 0


def test_shutting_down_says_so_when_a_task_does_not_stop(qtbot) -> None:
    release = threading.Event()
    runner = BackgroundRunner()
    runner.run(lambda: release.wait(30), on_result=lambda _v: None)  # looks at no cancel flag
    qtbot.waitUntil(lambda: workers.thread_pool().activeThreadCount() > 0, timeout=5_000)
    try:  # False while the task still waits (30 s): shut_down's wait for it was bounded
        assert shut_down(None) is False  # the caller must leave without interpreter shutdown
        assert not release.is_set() and workers.thread_pool().activeThreadCount() > 0
    finally:
        release.set()
        workers.wait_for_workers(10_000)


def test_a_job_that_ends_after_its_runners_signals_were_deleted_raises_nothing(qtbot, capfd) -> None:
    """A script that exits without closing its window: Qt deletes what the job would tell."""
    release = threading.Event()
    runner = BackgroundRunner()
    got: list[object] = []
    qtbot.waitUntil(lambda: workers.thread_pool().activeThreadCount() == 0, timeout=30_000)  # earlier tests' tasks
    runner.run(lambda: release.wait(30) and "done", on_result=got.append, on_error=got.append)
    qtbot.waitUntil(lambda: workers.thread_pool().activeThreadCount() > 0, timeout=5_000)
    shiboken6.delete(runner._signals)
    release.set()
    qtbot.waitUntil(lambda: workers.thread_pool().activeThreadCount() == 0, timeout=30_000)
    assert got == []
    assert "Signal source has been deleted" not in capfd.readouterr().err
