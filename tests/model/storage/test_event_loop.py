"""The model's own event loop: results and failures come back to the caller, with its context."""

from __future__ import annotations

import asyncio
import contextvars
import os
import subprocess
import sys
import threading

import pytest
from locations import REPO  # tests/ is on sys.path (conftest)

from ecpfs_viewer.model.storage import event_loop

_WHO = contextvars.ContextVar("who", default="nobody")


async def _answer(value: int) -> tuple[int, str, str]:
    await asyncio.sleep(0)
    return value, _WHO.get(), threading.current_thread().name


def test_results_failures_and_the_callers_context_come_back() -> None:
    _WHO.set("caller")
    assert event_loop.run(_answer(4)) == (4, "caller", "ecpfs_io")

    async def fail() -> None:
        raise KeyError("gone")

    with pytest.raises(KeyError, match="gone"):
        event_loop.run(fail())


def test_many_threads_share_the_one_loop() -> None:
    found: list[int] = []
    threads = [threading.Thread(target=lambda i=i: found.append(event_loop.run(_answer(i))[0])) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(found) == list(range(8))


def test_waiting_for_the_loop_from_inside_it_is_an_error_not_a_hang() -> None:
    async def nested() -> None:
        event_loop.run(_answer(1))

    with pytest.raises(event_loop.LoopReentryError):
        event_loop.run(nested())


_LEAVES = """
import atexit, threading
def after():  # registered before the model's handler, so it runs after it (atexit is last in, first out)
    alive = any(t.name == "ecpfs_io" and t.is_alive() for t in threading.enumerate())
    print("loop thread alive" if alive else "loop thread stopped")
atexit.register(after)
from ecpfs_viewer.model.storage import event_loop
async def one():
    return 1
print(event_loop.run(one()))
"""


def test_the_loop_thread_is_stopped_when_the_program_leaves() -> None:
    """As zarr does for its own loop: no loop left running while the interpreter finalises (an
    obstore call ending then would call back into it, and pyo3 aborts the process)."""
    done = subprocess.run([sys.executable, "-c", _LEAVES], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "loop", "thread", "stopped"], done.stdout + done.stderr
