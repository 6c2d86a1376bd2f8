"""BackgroundRunner: results in the GUI thread, and CPU-heavy jobs one at a time."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from ecpfs_viewer.gui.runtime.scheduling import MOST_NICE, WORKER_NICENESS
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner, thread_pool, wait_for_workers
from ecpfs_viewer.logs import LOG_DIR_ENV, configure_logging
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.tasks import Cancelled, TaskError
from ecpfs_viewer.model.zarrtree.subset import SelectionTooLarge


def test_heavy_jobs_run_one_at_a_time_while_light_jobs_go_on(qtbot):
    runner = BackgroundRunner()
    lock = threading.Lock()
    running: list[int] = [0]
    overlap: list[int] = []
    release = threading.Event()

    def heavy(n: int) -> int:
        with lock:
            running[0] += 1
            overlap.append(running[0])
        release.wait(5)  # the first one holds its turn until every job has started
        with lock:
            running[0] -= 1
        return n

    results: list[int] = []
    for n in range(3):
        runner.run(heavy, n, on_result=results.append, supersede=False, heavy=True)
    runner.run(lambda: -1, on_result=results.append, supersede=False)
    qtbot.waitUntil(lambda: results == [-1], timeout=5000)  # the light job did not wait behind the heavy ones
    qtbot.waitUntil(lambda: thread_pool().activeThreadCount() == 3, timeout=5000)  # all three heavy ones started
    release.set()
    qtbot.waitUntil(lambda: len(results) == 4, timeout=5000)
    assert max(overlap) == 1  # never two heavy jobs at once: they would share the GIL with the GUI
    assert sorted(results[1:]) == [0, 1, 2]
    assert wait_for_workers()


def test_superseded_heavy_result_is_dropped(qtbot):
    runner = BackgroundRunner()
    results: list[str] = []
    runner.run(lambda: "old", on_result=results.append, heavy=True)
    runner.run(lambda: "new", on_result=results.append, heavy=True)
    qtbot.waitUntil(lambda: not runner.busy, timeout=5000)
    assert results == ["new"]
    assert wait_for_workers()


def test_heavy_job_superseded_while_waiting_never_runs(qtbot):
    runner = BackgroundRunner()
    started: list[str] = []
    release = threading.Event()

    def slow(name: str) -> str:
        started.append(name)
        release.wait(5)
        return name

    results: list[str] = []
    runner.run(slow, "first", on_result=results.append, supersede=False, heavy=True)
    qtbot.waitUntil(lambda: started == ["first"], timeout=5000)
    runner.run(slow, "waiting", on_result=results.append, heavy=True)  # supersedes "first"
    runner.run(slow, "latest", on_result=results.append, heavy=True)  # supersedes "waiting" before its turn
    release.set()
    qtbot.waitUntil(lambda: not runner.busy, timeout=5000)
    assert started == ["first", "latest"]  # the superseded job was skipped, not computed for nothing
    assert results == ["latest"]
    assert wait_for_workers()


def test_a_failing_job_shows_a_message_and_logs_its_traceback(qtbot, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(LOG_DIR_ENV, str(tmp_path / "logs"))
    log_file = configure_logging()
    assert log_file is not None and log_file.parent == tmp_path / "logs"

    def explode_in_worker() -> None:
        raise ValueError("the index is on fire")

    runner = BackgroundRunner()
    messages: list[str] = []
    runner.run(explode_in_worker, on_result=messages.append, on_error=messages.append)
    qtbot.waitUntil(lambda: bool(messages), timeout=5000)
    assert messages == ["the index is on fire"]  # what the UI shows: one line
    logged = log_file.read_text()
    assert "ERROR ecpfs_viewer.gui.runtime.workers" in logged
    assert "Traceback (most recent call last)" in logged and "in explode_in_worker" in logged
    assert "ValueError: the index is on fire" in logged
    assert wait_for_workers()


def test_a_user_error_is_logged_as_its_message_without_a_traceback(qtbot, tmp_path: Path, monkeypatch) -> None:
    """A traceback in the log means a bug: an answer written for the user (a bad id) is logged as a line."""
    monkeypatch.setenv(LOG_DIR_ENV, str(tmp_path / "logs"))
    log_file = configure_logging()
    assert log_file is not None

    def refuse_in_worker() -> None:
        raise UserError("item 12 is not in this index")

    runner = BackgroundRunner()
    messages: list[str] = []
    runner.run(refuse_in_worker, on_result=messages.append, on_error=messages.append)
    qtbot.waitUntil(lambda: bool(messages), timeout=5000)
    assert messages == ["item 12 is not in this index"]
    logged = log_file.read_text()
    assert "INFO ecpfs_viewer.gui.runtime.workers" in logged and "item 12 is not in this index" in logged
    assert "Traceback" not in logged
    assert wait_for_workers()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="thread priorities are set on Linux only")
def test_workers_run_below_the_gui_threads_priority(qtbot) -> None:
    """A worker (and a thread it starts, as zarr and obstore do) yields the CPU to the GUI thread."""

    def priorities() -> tuple[int, int]:
        inner: list[int] = []

        def in_child() -> None:
            inner.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

        child = threading.Thread(target=in_child)
        child.start()
        child.join()
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id()), inner[0]

    runner = BackgroundRunner()
    got: list[tuple[int, int]] = []
    runner.run(priorities, on_result=got.append)
    qtbot.waitUntil(lambda: bool(got), timeout=5_000)
    gui = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    worker = min(MOST_NICE, gui + WORKER_NICENESS)  # also when the tests themselves run under nice
    assert got[0] == (worker, worker) and (gui < worker or gui == MOST_NICE)


def test_a_cancelled_task_stops_at_its_next_checkpoint_with_the_one_cancelled_type(qtbot) -> None:
    runner = BackgroundRunner()
    looping = threading.Event()
    errors: list[TaskError] = []

    def loop(progress, cancel) -> None:
        while True:
            looping.set()
            cancel.checkpoint()

    request = runner.run(loop, on_result=lambda _: None, on_error=errors.append, on_progress=lambda _: None)
    qtbot.waitUntil(looping.is_set, timeout=5000)
    runner.cancel(request)
    qtbot.waitUntil(lambda: bool(errors), timeout=5000)
    assert errors[0].kind is Cancelled and errors[0].cancelled and errors[0] == "cancelled"
    assert wait_for_workers()


def test_the_error_callback_gets_the_exceptions_type_and_traceback(qtbot) -> None:
    def refuse() -> None:
        raise SelectionTooLarge(10, 5)

    runner = BackgroundRunner()
    errors: list[TaskError] = []
    runner.run(refuse, on_result=lambda _: None, on_error=errors.append)
    qtbot.waitUntil(lambda: bool(errors), timeout=5000)
    assert errors[0].is_a(SelectionTooLarge) and "in refuse" in errors[0].traceback
    assert wait_for_workers()


def test_a_background_job_waits_at_its_progress_reports_while_a_heavy_job_runs(qtbot) -> None:
    runner = BackgroundRunner()
    release_heavy, reached = threading.Event(), threading.Event()
    order: list[str] = []  # list.append is atomic: the two threads' steps in the order they happened

    heavy_started = threading.Event()

    def heavy() -> str:
        heavy_started.set()
        release_heavy.wait(5)
        order.append("heavy done")
        return "heavy"

    def background(progress, cancel) -> str:
        reached.set()
        progress(1)  # a step boundary: the heavy job goes first
        order.append("background went on")
        return "background"

    results: list[str] = []
    runner.run(heavy, on_result=results.append, supersede=False, heavy=True)
    qtbot.waitUntil(heavy_started.is_set, timeout=5000)
    runner.run(background, on_result=results.append, on_progress=lambda _: None, supersede=False, background=True)
    qtbot.waitUntil(reached.is_set, timeout=5000)
    qtbot.wait(100)  # time enough for a background job that did not wait to go on
    release_heavy.set()
    qtbot.waitUntil(lambda: len(results) == 2, timeout=5000)
    assert results == ["heavy", "background"]
    assert order == ["heavy done", "background went on"]


def test_a_cancelled_background_job_stops_waiting_for_heavy_ones(qtbot) -> None:
    runner = BackgroundRunner()
    release_heavy, reached = threading.Event(), threading.Event()
    errors: list[str] = []

    def background(progress, cancel) -> None:
        reached.set()
        progress(1)
        if cancel.is_set():
            raise RuntimeError("stopped")

    heavy_started = threading.Event()
    BackgroundRunner().run(lambda: heavy_started.set() or release_heavy.wait(5), on_result=lambda _: None,
                           heavy=True)
    qtbot.waitUntil(heavy_started.is_set, timeout=5000)
    request = runner.run(background, on_result=lambda _: None, on_error=errors.append, on_progress=lambda _: None,
                         background=True)
    qtbot.waitUntil(reached.is_set, timeout=5000)
    runner.cancel(request)  # while the heavy job still runs
    qtbot.waitUntil(lambda: errors == ["stopped"], timeout=5000)  # while the heavy job runs on
    release_heavy.set()
