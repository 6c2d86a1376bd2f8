"""The helper process that makes a remote store's requests (model/storage/remote_helper.py starts it).

It runs an in-process :class:`~ecpfs_viewer.model.storage.remote.BoundedStore` (every guard: caps,
stored bounds, deadlines, retries, the adaptive limit, the server's health) on an event loop of its
own, so obstore's two completions per request take this process's interpreter lock, not the
window's. Answers go back as bytes in frames that each carry every answer completed within
:data:`BATCH_WAIT_S` of the first (at most :data:`BATCH_MAX`): the parent's Python is woken once
per frame, not twice per request.

Frames on both pipes are a 4-byte big-endian length and a pickle. The parent sends
``(url, options, lists, niceness)`` first, then ``(limits, requests)`` with requests ``(id, op, args)``;
this process answers ``(answers, state)`` with answers ``(id, ok, value)`` (value: the result,
or a packed exception) and state a :class:`HelperState`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import struct
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from typing import IO, Any

#: an answer waits at most this long for others to go in its frame
BATCH_WAIT_S = 0.002
#: a frame is sent at once when it holds this many answers
BATCH_MAX = 256
#: while requests are running, a frame (perhaps empty) goes back at least this often: the parent
#: tells a helper that hangs from one that waits on a slow server
HEARTBEAT_S = 1.0

_LENGTH = struct.Struct(">I")


@dataclass(frozen=True)
class HelperState:
    """What the helper's store knows of the server, sent with every frame."""

    down: tuple[str, float] | None  # the first request not answered, and seconds it stays down
    quickest_s: float
    typical_s: float
    in_flight_limit: int


def write_frame(stream: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)))
    stream.write(data)  # not joined to its length: a copy as large as the frame (a helper's setup: tens of MB)
    stream.flush()


def read_frame(stream: IO[bytes]) -> Any:
    """The next frame's value; EOFError when the other side closed its end."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        raise EOFError
    size = _LENGTH.unpack(head)[0]
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)


def pack_error(exc: BaseException) -> tuple[bytes | None, str, str]:
    """(the exception pickled, when it comes back as itself; its message; its traceback)."""
    text = "".join(traceback.format_exception(exc))
    try:
        packed = pickle.dumps(exc, protocol=pickle.HIGHEST_PROTOCOL)
        again = pickle.loads(packed)
        data = packed if type(again) is type(exc) and str(again) == str(exc) else None
    except Exception:
        data = None
    from ecpfs_viewer.model.errors import describe_exception

    return data, describe_exception(exc), text


class _Server:
    """Runs the parent's requests on this process's loop and sends their answers back in frames."""

    def __init__(self, store: Any, out: IO[bytes], loop: asyncio.AbstractEventLoop) -> None:
        from zarr.buffer import default_buffer_prototype

        self.store = store
        self.out = out
        self.loop = loop
        self.prototype = default_buffer_prototype()
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.outbox: list[tuple[int, bool, Any]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._last_sent = time.monotonic()
        loop.call_later(HEARTBEAT_S, self._heartbeat)

    def take(self, limits: Any, requests: list[tuple[int, str, tuple[Any, ...]]]) -> None:
        from ecpfs_viewer.model.limits import set_limits

        set_limits(limits)
        for ident, op, args in requests:
            if op == "cancel":
                task = self.tasks.pop(ident, None)
                if task is not None:
                    task.cancel()
            elif op == "retry":
                self.store.retry()
            else:
                self.tasks[ident] = self.loop.create_task(self._run(ident, op, args))

    async def _run(self, ident: int, op: str, args: tuple[Any, ...]) -> None:
        try:
            value = await self._do(op, *args)
        except asyncio.CancelledError:
            self.tasks.pop(ident, None)  # the parent stopped waiting: no answer
            return
        except Exception as exc:
            answer: tuple[int, bool, Any] = (ident, False, pack_error(exc))
        else:
            answer = (ident, True, value)
        self.tasks.pop(ident, None)
        self.outbox.append(answer)
        if len(self.outbox) >= BATCH_MAX:
            self.flush()
        elif self._timer is None:
            self._timer = self.loop.call_later(BATCH_WAIT_S, self.flush)

    async def _do(self, op: str, *args: Any) -> Any:
        from ecpfs_viewer.model.storage.stored_bound import stored_bounds

        if op == "get":
            key, byte_range, bound = args
            with stored_bounds({key: bound} if bound is not None else None):
                found = await self.store.get(key, self.prototype, byte_range)
            return None if found is None else found.to_bytes()
        if op == "validators":
            return await self.store.read_with_validators(args[0])
        if op == "exists":
            return await self.store.exists(args[0])
        if op == "getsize":
            return await self.store.getsize(args[0])
        if op in ("list_dir", "list_prefix"):
            return [name async for name in getattr(self.store, op)(args[0])]
        raise ValueError(f"the remote helper has no operation {op!r}")

    def state(self) -> HelperState:
        health = self.store.health
        return HelperState(health.down_for(), self.store.quickest_answer_s(), self.store.typical_answer_s(),
                           self.store.in_flight_limit())

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        answers, self.outbox = self.outbox, []
        write_frame(self.out, (answers, self.state()))
        self._last_sent = time.monotonic()

    def _heartbeat(self) -> None:
        if self.tasks and time.monotonic() - self._last_sent >= HEARTBEAT_S:
            self.flush()
        self.loop.call_later(HEARTBEAT_S, self._heartbeat)


def _read_requests(stream: IO[bytes], loop: asyncio.AbstractEventLoop, server: _Server) -> None:
    try:
        while True:
            limits, requests = read_frame(stream)
            loop.call_soon_threadsafe(server.take, limits, requests)
    except (EOFError, OSError):
        pass
    loop.call_soon_threadsafe(loop.stop)


def preload() -> None:
    """Import what a helper imports on its way (a zygote does it once for the helpers it forks)."""
    import zarr.buffer  # noqa: F401

    import ecpfs_viewer.model.errors
    import ecpfs_viewer.model.limits
    import ecpfs_viewer.model.storage.remote
    import ecpfs_viewer.model.storage.stored_bound  # noqa: F401


def main() -> None:
    """Serve one remote store to the parent over stdin/stdout until the parent closes stdin."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever a library prints must not break a frame
    stream = sys.stdin.buffer
    try:
        url, options, lists, niceness = read_frame(stream)
    except EOFError:
        os._exit(0)
    if niceness and hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(niceness)
    from ecpfs_viewer.model.storage.remote import open_remote

    store = open_remote(url, options)
    store.lists = lists
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    server = _Server(store, out, loop)
    threading.Thread(target=_read_requests, args=(stream, loop, server), daemon=True).start()
    try:
        loop.run_forever()
    finally:
        # requests still running belong to a parent that is gone; the client's threads must not
        # call back into an interpreter that is finalising
        sys.stderr.flush()
        os._exit(0)

