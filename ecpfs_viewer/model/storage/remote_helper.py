"""A remote store whose requests a helper process makes: answers arrive as bytes, in batches.

obstore completes each request twice in Python (the answer's headers, then its body), each time
taking the interpreter lock from one of its Rust threads. A level of 40,000 documents at 128 in
flight is a stream of such wake-ups from many threads at once, queued on the lock before the GUI
thread. :class:`HelperStore` sends its requests to a child process
(model/storage/remote_helper_child.py) that runs the in-process
:class:`~ecpfs_viewer.model.storage.remote.BoundedStore` with all its guards, and gets the answers
back in frames: one thread of this process reads them, and the model's event loop is woken once
per frame (:attr:`HelperClient.wakeups` counts them).

The window opens remote stores so (:func:`use_helper_process`);
the CLI, with no GUI thread to keep free, keeps them in process.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import itertools
import os
import pickle
import queue
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable
from typing import IO, Any

from zarr.abc.buffer import Buffer, BufferPrototype
from zarr.abc.store import ByteRequest, Store

from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.limits import current_limits
from ecpfs_viewer.model.storage import helper_zygote
from ecpfs_viewer.model.storage.adaptive_limit import ServerHealth
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.storage.remote import (
    BoundedStore,
    ListingUnavailableError,
    RemoteError,
    RemoteTimeoutError,
    _refuse_long_range,
    open_remote,
)
from ecpfs_viewer.model.storage.remote_helper_child import HelperState, read_frame, write_frame
from ecpfs_viewer.model.storage.stored_bound import stored_bound

#: a helper: an interpreter started for it, or one forked by the zygote (pipes and kill() alike)
HelperProcess = subprocess.Popen[bytes] | helper_zygote.ForkedHelper

#: seconds past the store's timeout a helper may stay silent while requests wait on it
SILENCE_GRACE_S = 10.0


class HelperEndedError(RemoteTimeoutError):
    """The helper process ended (or hung) before answering: worth a retry (a new one is started)."""


class HelperHealth(ServerHealth):
    """The helper's view of the server's health, as its last frame reported it."""

    def __init__(self, timeout_s: float, client: HelperClient) -> None:
        super().__init__(timeout_s)
        self._client = client
        self._reported: tuple[str, float] | None = None  # the first request not answered, until when

    def report(self, down: tuple[str, float] | None) -> None:
        with self._lock:
            self._reported = None if down is None else (down[0], time.monotonic() + down[1])

    def down(self) -> str | None:
        with self._lock:
            if self._reported is None or time.monotonic() >= self._reported[1]:
                return None
            return self._reported[0]

    def reset(self) -> None:
        with self._lock:
            self._reported = None
        self._client.send_retry()


#: how much nicer than the thread that asked for helpers (the GUI thread) a helper runs
HELPER_NICENESS = 2


class _Launcher:
    """Starts helper processes from one thread. A process started from a thread runs as nice as
    that thread, and may not be made less nice again: started from a worker thread the window made
    nicer, a helper would get a core last on a busy machine and every level would wait on it.
    :meth:`serve_from_here` makes the calling thread's priority the helpers' (plus HELPER_NICENESS)."""

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[tuple[threading.Event, list[Any]]] | None = None

    def serve_from_here(self) -> None:
        """Start helpers from now on from a thread made by (and as nice as) the calling thread."""
        if self._requests is not None:
            return
        requests: queue.SimpleQueue[tuple[threading.Event, list[Any]]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, args=(requests,), name="ecpfs_helper_launcher", daemon=True).start()
        self._requests = requests

    def _serve(self, requests: queue.SimpleQueue[tuple[threading.Event, list[Any]]]) -> None:
        while True:
            done, slot = requests.get()
            try:
                slot.append(self._popen(slot.pop()))
            except BaseException as exc:
                slot.append(exc)
            done.set()

    @staticmethod
    def _popen(reader: Callable[[HelperProcess], None]) -> HelperProcess:
        process: HelperProcess | None = helper_zygote.start_helper()
        if process is None:  # no zygote here: a new interpreter
            process = subprocess.Popen([sys.executable, "-c", helper_zygote.HELPER_COMMAND],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True)
        threading.Thread(target=reader, args=(process,), name="ecpfs_remote_helper", daemon=True).start()
        return process

    def start(self, reader: Callable[[HelperProcess], None]) -> HelperProcess:
        """A new helper process, its answers read by `reader` in a thread as nice as this launcher's
        (a reader made nicer than the GUI thread could be preempted holding the interpreter lock)."""
        if self._requests is None:
            return self._popen(reader)
        done, slot = threading.Event(), list[Any]([reader])
        self._requests.put((done, slot))
        if not done.wait(SILENCE_GRACE_S):
            raise OSError("the thread that starts it did not answer")
        if isinstance(slot[0], BaseException):
            raise slot[0]
        started: HelperProcess = slot[0]
        return started


_LAUNCHER = _Launcher()
serve_from_here = _LAUNCHER.serve_from_here


class _Helper:
    """One child process, the requests waiting on it, and the thread that reads its answers."""

    def __init__(self, client: HelperClient) -> None:
        self.client = client
        self.lock = threading.Lock()
        self.pending: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = {}
        self.write_lock = threading.Lock()
        self.last_frame = time.monotonic()
        self.ended: str | None = None
        try:
            self.process = _LAUNCHER.start(self._read_answers)
        except OSError as exc:
            raise HelperEndedError(f"{client.url}: the process to read from the server could not be started "
                                   f"({describe_exception(exc)}); retry") from exc
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin: IO[bytes] = self.process.stdin
        try:
            self.send((client.url, client.options, client.lists, HELPER_NICENESS))
        except OSError:
            self.end("the process reading from the server could not be reached")

    def send(self, value: Any) -> None:
        with self.write_lock:
            write_frame(self.stdin, value)

    def _read_answers(self, process: HelperProcess) -> None:
        stream = process.stdout
        assert stream is not None
        try:
            while True:
                answers, state = read_frame(stream)
                self.last_frame = time.monotonic()
                self.client.take_state(state)
                waiting: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], bool, Any]]] = {}
                with self.lock:
                    for ident, ok, value in answers:
                        entry = self.pending.pop(ident, None)
                        if entry is not None:
                            waiting.setdefault(entry[0], []).append((entry[1], ok, value))
                for loop, answered in waiting.items():
                    self.client.wakeups += 1
                    with contextlib.suppress(RuntimeError):  # a loop closed meanwhile: nobody waits
                        loop.call_soon_threadsafe(_resolve, answered)
        except EOFError:
            self.end("the process reading from the server ended")
        except Exception as exc:  # a frame that cannot be read: nothing after it can be trusted
            self.end(f"the process reading from the server sent what could not be read ({describe_exception(exc)})")

    def end(self, why: str) -> None:
        """Stop the process and fail what waits on it (a request made later starts a new one)."""
        with self.lock:
            if self.ended is not None:
                return
            self.ended = why
            pending, self.pending = self.pending, {}
        stdin, process = getattr(self, "stdin", None), getattr(self, "process", None)  # None: ended starting
        with contextlib.suppress(OSError):
            if stdin is not None:
                stdin.close()
        with contextlib.suppress(OSError):
            if process is not None:
                process.kill()
        for loop, future in pending.values():
            error = HelperEndedError(f"{self.client.url}: {why} before answering; retry")
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_fail, future, error)


def _resolve(answered: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
    for future, ok, value in answered:
        if future.done():
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(_unpack_error(*value))


def _fail(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)


def _unpack_error(data: bytes | None, message: str, text: str) -> BaseException:
    """The helper's exception as itself where it pickled, else a RemoteError with its message; its
    traceback in the helper is kept as a note for the log."""
    error: BaseException | None = None
    if data is not None:
        with contextlib.suppress(Exception):
            error = pickle.loads(data)
    if not isinstance(error, BaseException):
        error = RemoteError(message)
    error.add_note(f"in the remote helper process:\n{text}")
    return error


_CLIENTS: weakref.WeakSet[HelperClient] = weakref.WeakSet()


def close_all() -> None:
    """End every helper process (at exit; each also ends when its pipe closes)."""
    for client in list(_CLIENTS):
        client.close()


atexit.register(close_all)


class HelperClient:
    """Sends one store's requests to its helper process (started on the first, again after it ended)."""

    def __init__(self, url: str, options: RemoteOptions, lists: bool) -> None:
        self.url, self.options, self.lists = url, options, lists
        self.health = HelperHealth(options.timeout_s, self)
        self.state = HelperState(None, 0.0, 0.0, options.max_in_flight)
        self.wakeups = 0  # frames of answers handed to an event loop: each wakes it once
        self.requests = 0
        self._lock = threading.Lock()
        self._helper: _Helper | None = None
        self._ids = itertools.count()
        self._outgoing: list[tuple[int, str, tuple[Any, ...]]] = []
        self._flush_on: asyncio.AbstractEventLoop | None = None
        self._watching: set[asyncio.AbstractEventLoop] = set()
        _CLIENTS.add(self)

    def take_state(self, state: HelperState) -> None:
        self.state = state
        self.health.report(state.down)

    def _current(self) -> _Helper:
        if self._helper is None or self._helper.ended is not None:
            self._helper = _Helper(self)
        return self._helper

    async def call(self, op: str, *args: Any) -> Any:
        """The helper's answer to one request (its exception raised as itself)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        with self._lock:
            helper = self._current()
            ident = next(self._ids)
            with helper.lock:
                if helper.ended is not None:  # ended as it started: the next request tries a new one
                    raise HelperEndedError(f"{self.url}: {helper.ended}; retry")
                helper.pending[ident] = (loop, future)
            self._outgoing.append((ident, op, args))
            self.requests += 1
            flush = self._flush_on is None
            if flush:
                self._flush_on = loop
            watch = loop not in self._watching
            self._watching.add(loop)
        if flush:
            loop.call_soon(self._flush)
        if watch:
            loop.call_later(1.0, self._watch, loop)
        try:
            return await future
        except asyncio.CancelledError:
            with helper.lock:
                asked = helper.pending.pop(ident, None) is not None
            if asked:
                self._queue_only(ident, "cancel")
            raise

    def _queue_only(self, ident: int, op: str) -> None:
        """A message with no answer (cancel, retry), sent with the next frame."""
        with self._lock:
            self._outgoing.append((ident, op, ()))
            if self._helper is None or self._helper.ended is not None or self._flush_on is not None:
                return
        self._flush()

    def send_retry(self) -> None:
        self._queue_only(-1, "retry")

    def _flush(self) -> None:
        with self._lock:
            self._flush_on = None
            requests, self._outgoing = self._outgoing, []
            helper = self._helper
        if not requests or helper is None or helper.ended is not None:
            return
        try:
            helper.send((current_limits(), requests))
        except OSError:
            helper.end("the process reading from the server could not be reached")

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """End a helper that stays silent past every deadline of its requests (hung)."""
        helper = self._helper
        with self._lock:
            busy = helper is not None and helper.ended is None and bool(helper.pending)
            if not busy:
                self._watching.discard(loop)
                return
        assert helper is not None
        silent = time.monotonic() - helper.last_frame
        if silent > self.options.timeout_s + SILENCE_GRACE_S:
            helper.end(f"the process reading from the server stopped answering ({silent:.0f} s)")
        loop.call_later(1.0, self._watch, loop)

    def close(self) -> None:
        with self._lock:
            helper, self._helper = self._helper, None
        if helper is not None:
            helper.end("the store was closed")


class HelperStore(BoundedStore):
    """A BoundedStore whose requests its helper process makes (guards and all), answered in batches."""

    def __init__(self, store: Store, *, url: str, options: RemoteOptions, lists: bool = True,
                 health: ServerHealth | None = None, client: HelperClient | None = None) -> None:
        self.client = client or HelperClient(url, options, lists)
        super().__init__(store, url=url, options=options, lists=lists, health=self.client.health)

    def _with_store(self, store: Store) -> HelperStore:
        return type(self)(store, url=self.url, options=self.options, lists=self.lists, client=self.client)

    def __reduce__(self) -> tuple[Callable[[Store], BoundedStore], tuple[Store]]:
        """Pickled (to a dask worker), it arrives as an in-process BoundedStore over the same store."""
        return functools.partial(BoundedStore, url=self.url, options=self.options, lists=self.lists), (self._store,)

    def in_flight_limit(self) -> int:
        return self.client.state.in_flight_limit

    def typical_answer_s(self) -> float:
        return self.client.state.typical_s

    def quickest_answer_s(self) -> float:
        return self.client.state.quickest_s

    async def get(self, key: str, prototype: BufferPrototype,
                  byte_range: ByteRequest | None = None) -> Buffer | None:
        _refuse_long_range(self.where(key), key, byte_range)
        bound = stored_bound(key) if byte_range is None else None  # the caller's, in this process
        found = await self.client.call("get", key, byte_range, bound)
        return None if found is None else prototype.buffer.from_bytes(found)

    async def read_with_validators(self, key: str) -> tuple[bytes | None, str | None]:
        found: tuple[bytes | None, str | None] = await self.client.call("validators", key)
        return found

    async def exists(self, key: str) -> bool:
        return bool(await self.client.call("exists", key))

    async def getsize(self, key: str) -> int:
        return int(await self.client.call("getsize", key))

    async def _helper_listing(self, op: str, prefix: str) -> list[str]:
        if not self.lists:
            raise ListingUnavailableError(f"{self.where(prefix)}: the server does not list folders")
        names: list[str] = await self.client.call(op, prefix)
        return names

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        for name in await self._helper_listing("list_dir", prefix):
            yield name

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for name in await self._helper_listing("list_prefix", prefix):
            yield name

    def close(self) -> None:
        self.client.close()
        super().close()


#: whether open_remote_store's stores make their requests in a helper process (use_helper_process)
_HELPER = {"on": False}


def use_helper_process(on: bool = True) -> None:
    """Make the requests of remote stores opened from now on in a helper process whose answers
    arrive in batches: the window's choice, so that a level's thousands of requests do not queue
    obstore's threads on the interpreter lock before the GUI thread. ECPFS_REMOTE_HELPER=0 or 1
    overrides it. Call it from the thread whose priority the helpers should have (the GUI thread):
    they are started from a thread it makes."""
    _HELPER["on"] = on
    if on:
        serve_from_here()


def helper_process_used() -> bool:
    """Whether open_remote_store makes a helper-process store (use_helper_process, or ECPFS_REMOTE_HELPER)."""
    forced = os.environ.get("ECPFS_REMOTE_HELPER", "").strip()
    return forced == "1" if forced in ("0", "1") else _HELPER["on"]


def open_remote_store(url: str, options: RemoteOptions, helper: bool | None = None) -> BoundedStore:
    """open_remote's store, its requests made in a helper process when `helper` (None:
    :func:`helper_process_used`)."""
    store = open_remote(url, options)
    if not (helper_process_used() if helper is None else helper):
        return store
    return HelperStore(store.wrapped, url=store.url, options=options, lists=store.lists)
