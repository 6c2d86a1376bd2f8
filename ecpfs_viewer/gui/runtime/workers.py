"""Run model calls off the GUI thread and hand results back by signal, dropping stale ones.

Every panel owns a :class:`BackgroundRunner`. ``runner.run(fn, on_result)`` executes ``fn`` on a
thread pool; ``on_result`` is called in the GUI thread, unless a newer request was started with
``supersede=True`` (the default) or :meth:`BackgroundRunner.invalidate` was called since: results
for a node the user already left are thrown away (a generation counter, as napari does).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from PySide6.QtCore import QObject, QThreadPool, QTimer, Signal, Slot

from ecpfs_viewer.model import foreground
from ecpfs_viewer.model.errors import UserError, describe_exception

log = logging.getLogger(__name__)
_POOL: QThreadPool | None = None


class _HeavyTurns:
    """Long CPU-bound Python jobs (decoding a level's node_ids, searches) run one at a time.

    Every Python call Qt makes in the GUI thread (model index/data, paint overrides) must take the
    GIL, and with several threads busy in Python the GUI thread waits behind all of them (stalls of
    200-300 ms). Waiting for a turn releases the GIL, so queued jobs cost nothing meanwhile. The
    jobs running or waiting are counted: background jobs wait until there are none.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self._count = 0

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Wait for this job's turn and hold it (counted from the moment it starts waiting)."""
        self._add(1)
        try:
            with self._lock:
                yield
        finally:
            self._add(-1)

    def wait_for_none(self, cancel: threading.Event) -> None:
        """Return once no heavy job runs or waits (or cancel is set); waiting releases the GIL."""
        with self._changed:
            while self._count and not cancel.is_set():
                self._changed.wait(0.05)

    def _add(self, n: int) -> None:
        with self._changed:
            self._count += n
            self._changed.notify_all()


_HEAVY = _HeavyTurns()


def thread_pool() -> QThreadPool:
    """The application's one pool (store I/O and the one-at-a-time heavy jobs; GIL shared)."""
    global _POOL
    if _POOL is None:
        _POOL = QThreadPool()
        _POOL.setMaxThreadCount(6)  # heavy jobs waiting their turn must not starve I/O requests
    return _POOL


#: how long closing the window waits for background tasks, then quitting once more before it
#: abandons them: close to exit stays under 2 s
QUIT_WAIT_MS, LAST_WAIT_MS = 700, 300
# the cancel flag of every task queued or running, so quitting can ask all of them to stop
_LIVE: weakref.WeakSet[threading.Event] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


def wait_for_workers(timeout_ms: int = QUIT_WAIT_MS) -> bool:
    """Block until every background task is done, at most timeout_ms; False if some still run."""
    return thread_pool().waitForDone(timeout_ms)


def cancel_all_workers() -> int:
    """Ask every queued or running task to stop (each sees its cancel flag); returns how many."""
    with _LIVE_LOCK:
        flags = list(_LIVE)
    for flag in flags:
        flag.set()
    return len(flags)


def stop_workers(timeout_ms: int = LAST_WAIT_MS) -> bool:
    """Before quitting: cancel every task, drop the queued ones, wait at most timeout_ms.

    False when some task is still running (a request to a stalled server, a computation that does
    not look at its cancel flag): the caller must then leave without interpreter shutdown
    (``ecpfs_viewer.process_exit.leave_process``), which would wait for that task or crash under it."""
    _HEARTBEAT.stop()  # the GUI thread now blocks on purpose: no task should wait for it
    cancel_all_workers()
    thread_pool().clear()  # queued, not started: never run them
    return wait_for_workers(timeout_ms)


#: nice value of worker threads: the GUI thread (nice 0) gets a core first when all are busy
WORKER_NICENESS = 10
_LOWERED = threading.local()


def lower_thread_priority() -> None:
    """Give the calling worker thread a lower CPU priority than the GUI thread, once per thread.

    On a machine with few cores, workers decoding chunks (and the threads zarr and obstore start
    from them, which inherit the value) would otherwise take an equal share of the CPU from the
    GUI thread: it then needs 3 to 5 times its own work in wall time to paint. Linux only (where a
    thread id names one thread for setpriority); elsewhere, nothing changes.
    """
    if getattr(_LOWERED, "done", False):
        return
    _LOWERED.done = True
    if not sys.platform.startswith("linux"):
        return
    tid = threading.get_native_id()
    try:
        current = os.getpriority(os.PRIO_PROCESS, tid)
        if current < WORKER_NICENESS:
            os.setpriority(os.PRIO_PROCESS, tid, WORKER_NICENESS)
    except OSError as exc:  # a sandbox may refuse it: the thread runs at normal priority
        log.debug("could not lower a worker thread's priority: %s", exc)


class _Heartbeat:
    """Beats for model.foreground from the GUI thread while any background task is live, so that
    workers give way to the GUI thread whenever it falls behind (see that module)."""

    INTERVAL_MS = 10

    def __init__(self) -> None:
        self._timer: QTimer | None = None

    def start(self) -> None:
        """Beat now and every INTERVAL_MS until no task is live (call from the GUI thread)."""
        if self._timer is None:
            self._timer = QTimer()
            self._timer.setInterval(self.INTERVAL_MS)
            self._timer.timeout.connect(self._beat)
        foreground.beat()
        if not self._timer.isActive():
            self._timer.start()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        foreground.stop_beating()

    def _beat(self) -> None:
        with _LIVE_LOCK:
            live = bool(_LIVE)
        if live:
            foreground.beat()
        else:
            self.stop()


_HEARTBEAT = _Heartbeat()


# on_result, on_error, on_progress and the cancel flag of one request
_Callbacks = tuple[Callable[[Any], None], Callable[[str], None] | None, Callable[[Any], None] | None, threading.Event]


class _TaskSignals(QObject):
    result = Signal(int, object, float)
    error = Signal(int, str, str)
    progress = Signal(int, object)


class _Task:
    """One job, started as a plain callable (QThreadPool.start(task.run)). Not a QRunnable subclass:
    PySide keeps the Python side of some started QRunnables alive (referenced from the pool) after Qt
    deleted them, and with it the job's arguments: every index opened stayed in memory with its
    caches and, for a zip, its open file."""

    def __init__(self, request: int, fn: Callable[..., Any], args: tuple[Any, ...], signals: _TaskSignals,
                 wants_progress: bool, cancel: threading.Event, heavy: bool, background: bool) -> None:
        self.request, self.fn, self.args, self.signals = request, fn, args, signals
        self.wants_progress, self.cancel, self.heavy, self.background = wants_progress, cancel, heavy, background

    def run(self) -> None:
        lower_thread_priority()
        try:
            self._run_in_turn()
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(self.cancel)

    def _report(self, progress: Any) -> None:
        if self.background:  # a point where the job holds nothing a heavy job may wait for
            _HEAVY.wait_for_none(self.cancel)
        self.signals.progress.emit(self.request, progress)

    def _run_in_turn(self) -> None:
        if self.heavy:
            with _HEAVY.turn():
                if self.cancel.is_set():  # superseded while waiting its turn (e.g. the user moved on)
                    log.debug("%s: cancelled before it started", _name(self.fn))
                    self.signals.error.emit(self.request, "cancelled before it started", "")
                    return
                self._run()
        else:
            self._run()

    def _run(self) -> None:
        started = time.perf_counter()
        try:
            if self.wants_progress:
                value = self.fn(*self.args, progress=self._report, cancel=self.cancel)
            else:
                value = self.fn(*self.args)
        except BaseException as exc:  # every failure becomes a message the UI can show
            message = describe_exception(exc)
            # a job stopped on request is no error; a UserError is an answer written for the user (a
            # bad id, a damaged node), logged as such; anything else is a bug: its traceback is logged
            if self.cancel.is_set():
                log.debug("%s failed: %s", _name(self.fn), message, exc_info=True)
            elif isinstance(exc, UserError):
                log.info("%s: %s", _name(self.fn), message)
            else:
                log.error("%s failed: %s", _name(self.fn), message, exc_info=True)
            self.signals.error.emit(self.request, message, traceback.format_exc())
            return
        seconds = time.perf_counter() - started
        log.debug("%s done in %.3f s", _name(self.fn), seconds)
        self.signals.result.emit(self.request, value, seconds)


def _name(fn: Callable[..., Any]) -> str:
    """A readable name of a job for the log ("Hierarchy.details", "partial(measured)")."""
    return getattr(fn, "__qualname__", None) or type(fn).__name__


class BackgroundRunner(QObject):
    """Submits model calls to the pool; delivers results in the GUI thread, newest request only."""

    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._next = 0
        self._generation_floor = 0  # results of requests below this are dropped
        self._callbacks: dict[int, _Callbacks] = {}
        self._signals = _TaskSignals()
        self._signals.result.connect(self._on_result)
        self._signals.error.connect(self._on_error)
        self._signals.progress.connect(self._on_progress)
        self.last_seconds = 0.0

    def run(self, fn: Callable[..., Any], *args: Any, on_result: Callable[[Any], None],
            on_error: Callable[[str], None] | None = None, on_progress: Callable[[Any], None] | None = None,
            supersede: bool = True, heavy: bool = False, background: bool = False) -> int:
        """Start fn(*args) in the pool. With on_progress, fn is called with progress= and cancel=.

        heavy=True: fn is CPU-bound Python; it waits for the other heavy jobs to finish first.
        background=True: work the user did not just ask for (validating the index they opened);
        at each progress report it waits while a heavy job runs, so those come first. fn must
        report progress only where it holds no lock a heavy job may need (between steps)."""
        if heavy and background:
            raise ValueError("a job is heavy (one at a time) or background (after heavy ones), not both")
        self._next += 1
        request = self._next
        if supersede:
            self.invalidate(keep_from=request)
        cancel = foreground.YieldingEvent()  # each look at it is a checkpoint where the task gives way
        self._callbacks[request] = (on_result, on_error, on_progress, cancel)
        self.busy_changed.emit(True)
        with _LIVE_LOCK:
            _LIVE.add(cancel)
        _HEARTBEAT.start()
        task = _Task(request, fn, args, self._signals, on_progress is not None, cancel, heavy, background)
        thread_pool().start(task.run)
        return request

    def invalidate(self, keep_from: int | None = None) -> None:
        """Drop results of every request started before keep_from (all, by default); ask them to stop."""
        floor = self._next + 1 if keep_from is None else keep_from
        self._generation_floor = max(self._generation_floor, floor)
        for request in [r for r in self._callbacks if r < self._generation_floor]:
            self._callbacks.pop(request)[3].set()
        if not self._callbacks:
            self.busy_changed.emit(False)

    def cancel(self, request: int) -> None:
        """Ask one running request to stop (fn sees cancel.is_set()); its result is still delivered."""
        entry = self._callbacks.get(request)
        if entry is not None:
            entry[3].set()

    @property
    def busy(self) -> bool:
        return bool(self._callbacks)

    def _finish(self, request: int) -> _Callbacks | None:
        entry = self._callbacks.pop(request, None)
        if not self._callbacks:
            self.busy_changed.emit(False)
        return entry

    @Slot(int, object, float)
    def _on_result(self, request: int, value: Any, seconds: float) -> None:
        entry = self._finish(request)
        if entry is not None:
            self.last_seconds = seconds
            entry[0](value)

    @Slot(int, str, str)
    def _on_error(self, request: int, message: str, details: str) -> None:
        entry = self._finish(request)
        if entry is not None and entry[1] is not None:
            entry[1](message)

    @Slot(int, object)
    def _on_progress(self, request: int, value: Any) -> None:
        entry = self._callbacks.get(request)
        if entry is not None and entry[2] is not None:
            entry[2](value)
