"""Run model calls off the GUI thread and hand results back by signal, dropping stale ones.

Every panel owns a :class:`BackgroundRunner`. ``runner.run(fn, *args, on_result=..., on_error=...)``
executes ``fn`` on the one thread pool; ``on_result`` gets its value and ``on_error`` a
:class:`~ecpfs_viewer.model.tasks.TaskError`, in the GUI thread, unless a newer request was started
with ``supersede=True`` (the default) or :meth:`BackgroundRunner.invalidate` was called since:
results for a node the user already left are thrown away (a generation counter, as napari does).
How workers share the interpreter with the window is scheduling.py's business.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from PySide6.QtCore import QObject, QThreadPool, Signal, Slot

from ecpfs_viewer.gui.runtime import scheduling
from ecpfs_viewer.gui.runtime.action_cost import measured
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.tasks import Cancelled, CancelToken, TaskError

log = logging.getLogger(__name__)
_POOL: QThreadPool | None = None


def thread_pool() -> QThreadPool:
    """The application's one pool (store I/O and the one-at-a-time heavy jobs; GIL shared)."""
    global _POOL
    if _POOL is None:
        _POOL = QThreadPool()
        _POOL.setMaxThreadCount(scheduling.MAX_WORKER_THREADS)
    return _POOL


#: how long closing the window waits for background tasks, then quitting once more before it
#: abandons them: close to exit stays under 2 s
QUIT_WAIT_MS, LAST_WAIT_MS = 700, 300
# the cancel flag of every task queued or running, so quitting can ask all of them to stop
_LIVE: weakref.WeakSet[CancelToken] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


def wait_for_workers(timeout_ms: int = QUIT_WAIT_MS) -> bool:
    """Block until every background task is done, at most timeout_ms; False if some still run."""
    return thread_pool().waitForDone(timeout_ms)


def cancel_all_workers() -> int:
    """Ask every queued or running task to stop (each sees its cancel flag); returns how many."""
    with _LIVE_LOCK:
        flags = list(_LIVE)
    for flag in flags:
        flag.cancel()
    return len(flags)


def stop_workers(timeout_ms: int = LAST_WAIT_MS) -> bool:
    """Before quitting: cancel every task, drop the queued ones, wait at most timeout_ms.

    False when some task is still running (a request to a stalled server, a computation that does
    not look at its cancel flag): the caller must then leave without interpreter shutdown
    (``ecpfs_viewer.process_exit.leave_process``), which would wait for that task or crash under it."""
    cancel_all_workers()
    thread_pool().clear()  # queued, not started: never run them
    return wait_for_workers(timeout_ms)


R = TypeVar("R")


@dataclass(frozen=True)
class _Request(Generic[R]):
    """The callbacks and the cancel token of one request."""

    on_result: Callable[[R], None]
    on_error: Callable[[TaskError], None] | None
    on_progress: Callable[[Any], None] | None
    cancel: CancelToken


class _TaskSignals(QObject):
    result = Signal(int, object, float)
    error = Signal(int, object)
    progress = Signal(int, object)


class _Task:
    """One job, started as a plain callable (QThreadPool.start(task.run)). Not a QRunnable subclass:
    PySide keeps the Python side of some started QRunnables alive (referenced from the pool) after Qt
    deleted them, and with it the job's arguments: every index opened stayed in memory with its
    caches and, for a zip, its open file."""

    def __init__(self, request: int, fn: Callable[..., Any], args: tuple[Any, ...], signals: _TaskSignals,
                 wants_progress: bool, cancel: CancelToken, heavy: bool, background: bool) -> None:
        self.request, self.fn, self.args, self.signals = request, fn, args, signals
        self.wants_progress, self.cancel, self.heavy, self.background = wants_progress, cancel, heavy, background

    def run(self) -> None:
        scheduling.lower_thread_priority()
        threading.current_thread().name = f"job {_job_name(self.fn, self.args)}"  # in logs and profilers
        try:
            self._run_in_turn()
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(self.cancel)

    def _report(self, progress: Any) -> None:
        if self.background:  # a point where the job holds nothing a heavy job may wait for
            scheduling.HEAVY.wait_for_none(self.cancel)
        self._tell("progress", self.request, progress)

    def _run_in_turn(self) -> None:
        if self.heavy:
            with scheduling.HEAVY.turn():
                if self.cancel.is_set():  # superseded while waiting its turn (e.g. the user moved on)
                    log.debug("%s: cancelled before it started", _name(self.fn))
                    self._tell("error", self.request, TaskError("cancelled before it started", Cancelled))
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
        except BaseException as exc:  # every failure becomes a value the UI can show and decide on
            error = TaskError.of(exc)
            # a job stopped on request is no error; a UserError is an answer written for the user (a
            # bad id, a damaged node), logged as such; anything else is a bug: its traceback is logged
            if self.cancel.is_set():
                log.debug("%s failed: %s", _name(self.fn), error, exc_info=True)
            elif isinstance(exc, UserError):
                log.info("%s: %s", _name(self.fn), error)
            else:
                log.error("%s failed: %s", _name(self.fn), error, exc_info=True)
            self._tell("error", self.request, error)
            return
        seconds = time.perf_counter() - started
        log.debug("%s done in %.3f s", _name(self.fn), seconds)
        self._tell("result", self.request, value, seconds)

    def _tell(self, signal: str, *args: Any) -> None:
        """Emit one of the runner's signals, unless they are gone: a script or test that ends
        without closing its window lets Qt delete the runner's signals while a job still runs, and
        the job's last emit raised "Signal source has been deleted" in its thread. Nobody is
        left to tell then."""
        try:
            getattr(self.signals, signal).emit(*args)
        except RuntimeError as exc:
            if "deleted" not in str(exc):
                raise
            log.debug("%s: its %s had nobody left to tell (%s)", _name(self.fn), signal, exc)


def _name(fn: Callable[..., Any]) -> str:
    """A readable name of a job for the log ("Hierarchy.details", "partial(measured)")."""
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _job_name(fn: Callable[..., Any], args: tuple[Any, ...]) -> str:
    """The job's function, or the one it measures (``measured(store, validate, ...)``)."""
    if fn is measured and len(args) > 1 and callable(args[1]):
        return _name(args[1])
    return _name(fn)


class BackgroundRunner(QObject):
    """Submits model calls to the pool; delivers results in the GUI thread, newest request only."""

    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._next = 0
        self._generation_floor = 0  # results of requests below this are dropped
        self._requests: dict[int, _Request[Any]] = {}
        self._signals = _TaskSignals()
        self._signals.result.connect(self._on_result)
        self._signals.error.connect(self._on_error)
        self._signals.progress.connect(self._on_progress)
        self.last_seconds = 0.0

    def run(self, fn: Callable[..., R], *args: Any, on_result: Callable[[R], None],
            on_error: Callable[[TaskError], None] | None = None, on_progress: Callable[[Any], None] | None = None,
            supersede: bool = True, heavy: bool = False, background: bool = False) -> int:
        """Start fn(*args) in the pool. With on_progress, fn is called with progress= and cancel=.

        on_error gets a TaskError: a str (the message to show), with the exception's type to decide on.
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
        cancel = CancelToken()
        self._requests[request] = _Request(on_result, on_error, on_progress, cancel)
        self.busy_changed.emit(True)
        with _LIVE_LOCK:
            _LIVE.add(cancel)
        task = _Task(request, fn, args, self._signals, on_progress is not None, cancel, heavy, background)
        thread_pool().start(task.run)
        return request

    def invalidate(self, keep_from: int | None = None) -> None:
        """Drop results of every request started before keep_from (all, by default); ask them to stop."""
        floor = self._next + 1 if keep_from is None else keep_from
        self._generation_floor = max(self._generation_floor, floor)
        for request in [r for r in self._requests if r < self._generation_floor]:
            self._requests.pop(request).cancel.cancel()
        if not self._requests:
            self.busy_changed.emit(False)

    def cancel(self, request: int) -> None:
        """Ask one running request to stop (at its next checkpoint); its result is still delivered."""
        entry = self._requests.get(request)
        if entry is not None:
            entry.cancel.cancel()

    @property
    def busy(self) -> bool:
        return bool(self._requests)

    def _finish(self, request: int) -> _Request[Any] | None:
        entry = self._requests.pop(request, None)
        if not self._requests:
            self.busy_changed.emit(False)
        return entry

    @Slot(int, object, float)
    def _on_result(self, request: int, value: Any, seconds: float) -> None:
        entry = self._finish(request)
        if entry is not None:
            self.last_seconds = seconds
            entry.on_result(value)

    @Slot(int, object)
    def _on_error(self, request: int, error: TaskError) -> None:
        entry = self._finish(request)
        if entry is not None and entry.on_error is not None:
            entry.on_error(error)

    @Slot(int, object)
    def _on_progress(self, request: int, value: Any) -> None:
        entry = self._requests.get(request)
        if entry is not None and entry.on_progress is not None:
            entry.on_progress(value)
