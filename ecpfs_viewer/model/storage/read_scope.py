"""Array reads that leave nothing running behind them when they fail or are interrupted.

zarr-python reads the chunks of one selection as one ``asyncio.gather`` of a task per chunk on its
event-loop thread. When one chunk fails, ``gather`` hands the error back at once and the other tasks
go on: with a grid of 100,000 tiny chunks they went on reading (and holding memory) for a minute
after the caller had its answer, and a program that ended meanwhile printed zarr's tasks destroyed
while pending and "cannot schedule new futures after shutdown". Inside :func:`drained_reads` every
task a read starts on the loop is known (a task factory on that loop records the tasks created
under the block's context); when the block ends with an exception, those still pending are
cancelled and waited for before the exception goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import threading
from collections.abc import Coroutine, Generator, Iterator
from contextlib import contextmanager
from typing import Any

from ecpfs_viewer.model.storage import event_loop


class _Scope:
    """The tasks started on the loop by the code of one ``drained_reads`` block (loop thread only)."""

    def __init__(self) -> None:
        # in creation order: cancelled so, each leaves the front of the semaphore queue zarr-python's
        # tasks wait in (taking them in another order makes draining quadratic in the task count)
        self.tasks: dict[asyncio.Future[Any], None] = {}


_SCOPE: contextvars.ContextVar[_Scope | None] = contextvars.ContextVar("ecpfs_read_scope", default=None)
_LOCK = threading.Lock()
_installed: list[asyncio.AbstractEventLoop] = []  # the loop our factory is installed on (one at most)


def _track(loop: asyncio.AbstractEventLoop, coro: Generator[Any, None, Any] | Coroutine[Any, Any, Any],
           **kwargs: Any) -> asyncio.Future[Any]:
    """The loop's task factory: an ordinary Task, recorded in the scope of the context creating it
    (a task started by a read's task, or by the call that handed the read to the loop)."""
    task = asyncio.Task(coro, loop=loop, **kwargs)
    scope = _SCOPE.get()
    if scope is not None:
        scope.tasks[task] = None
        task.add_done_callback(lambda done: scope.tasks.pop(done, None))
    return task


async def _install() -> None:
    loop = asyncio.get_running_loop()
    if loop.get_task_factory() is None:
        loop.set_task_factory(_track)
    _installed[:] = [loop]


def _ensure_tracking() -> None:
    """Put the factory on the model's loop once (again on a new loop, after a fork or a stop)."""
    with _LOCK:
        if _installed and _installed[0] is event_loop.current_loop():
            return
        token = _SCOPE.set(None)
        try:
            event_loop.run(_install())
        finally:
            _SCOPE.reset(token)


async def _cancel_and_wait(scope: _Scope) -> None:
    while pending := [task for task in scope.tasks if not task.done()]:
        for task in pending:
            task.cancel()
        await asyncio.wait(pending)
    scope.tasks.clear()


@contextmanager
def drained_reads() -> Iterator[None]:
    """Run zarr reads inside the block; when it ends, cancel every loop task its reads left pending
    (those of a chunk read whose sibling failed, or of an interrupted read) and wait for them, so
    the block's result or error arrives with nothing of its reads still running."""
    _ensure_tracking()
    scope = _Scope()
    token = _SCOPE.set(scope)
    try:
        yield
    finally:
        _SCOPE.reset(token)
        if scope.tasks:  # a read that succeeded leaves none (done tasks leave the set on the loop)
            # a RuntimeError: the model's loop has stopped (the interpreter is ending), nothing runs on it
            with contextlib.suppress(RuntimeError):
                event_loop.run(_cancel_and_wait(scope))


def _forget_loop() -> None:
    _installed.clear()  # a forked child gets a new model loop, without our factory


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_loop)
