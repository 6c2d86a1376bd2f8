"""BackgroundRunner: results in the GUI thread, and CPU-heavy jobs one at a time."""

from __future__ import annotations

import threading
import time

from ecpfs_viewer.gui.workers import BackgroundRunner, wait_for_workers


def test_heavy_jobs_run_one_at_a_time_while_light_jobs_go_on(qtbot):
    runner = BackgroundRunner()
    lock = threading.Lock()
    running: list[int] = [0]
    overlap: list[int] = []
    light_done = threading.Event()

    def heavy(n: int) -> int:
        with lock:
            running[0] += 1
            overlap.append(running[0])
        time.sleep(0.05)  # a light job started later must finish while this one holds its turn
        with lock:
            running[0] -= 1
        return n

    results: list[int] = []
    for n in range(3):
        runner.run(heavy, n, on_result=results.append, supersede=False, heavy=True)
    runner.run(light_done.set, on_result=lambda _: results.append(-1), supersede=False)
    qtbot.waitUntil(lambda: len(results) == 4, timeout=5000)
    assert max(overlap) == 1  # never two heavy jobs at once: they would share the GIL with the GUI
    assert results[0] == -1  # the light job did not wait behind the three heavy ones
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
