"""The model's one event loop: runs zarr's async store and array calls for synchronous code.

zarr-python runs its own synchronous API on a private loop (in an internal module that
changes between releases). The model does not borrow it: every coroutine the model awaits on a
store of an :class:`~ecpfs_viewer.model.storage.opening.OpenedStore` (reads, listings, array reads) runs
here, on one loop in one daemon thread, so a client bound to the loop that first used it always
sees the same loop. Worker threads submit and wait; the context of
the caller (the I/O tally of its action) goes with the coroutine.
"""

from __future__ import annotations

import asyncio
import atexit
import contextvars
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


class LoopReentryError(RuntimeError):
    """A synchronous call waited for the model's loop from inside that loop (it would never end)."""


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    loop.run_forever()


def _running_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive():
            _loop = asyncio.new_event_loop()
            _thread = threading.Thread(target=_serve, args=(_loop,), name="ecpfs_io", daemon=True)
            _thread.start()
        return _loop


def current_loop() -> asyncio.AbstractEventLoop:
    """The model's loop, started on first use (for code that installs something on it)."""
    return _running_loop()


def _forget_after_fork() -> None:
    # a forked child has the loop object but not its thread: start a fresh one on first use
    global _loop, _thread
    _loop, _thread = None, None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)

#: how long leaving the program waits for the loop to finish what it is running
STOP_WAIT_S = 5.0


def stop() -> None:
    """Stop the loop and its thread (at exit, as zarr does with its own): a client call finishing
    later (obstore's Rust threads) must find no loop to call back into a finalising interpreter."""
    global _loop, _thread
    with _lock:
        loop, thread = _loop, _thread
        _loop, _thread = None, None
    if loop is None or thread is None or not thread.is_alive():
        return
    loop.call_soon_threadsafe(loop.stop)
    thread.join(STOP_WAIT_S)
    if not thread.is_alive():
        loop.close()


atexit.register(stop)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """The result of coro, run on the model's loop; blocks the calling thread until it ends.

    Raises what the coroutine raised. Called from inside that loop (a coroutine of ours calling
    synchronous model code) it raises LoopReentryError instead of waiting forever."""
    loop = _running_loop()
    if threading.current_thread() is _thread:
        coro.close()
        raise LoopReentryError("a synchronous read was called from inside the model's event loop")
    context = contextvars.copy_context()
    future = asyncio.run_coroutine_threadsafe(_in_context(coro, context), loop)
    try:
        return future.result()
    except BaseException:
        future.cancel()  # an interrupt while waiting: the coroutine must not go on alone
        raise


async def _in_context(coro: Coroutine[Any, Any, T], context: contextvars.Context) -> T:
    """coro as a task of the caller's context (what it reads counts for the caller's action)."""
    return await asyncio.get_running_loop().create_task(coro, context=context)
