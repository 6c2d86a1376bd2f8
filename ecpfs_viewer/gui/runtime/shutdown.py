"""Ending the window's work in order, and keeping the stack of a crash.

Whatever is still running when the interpreter shuts down breaks the exit: an active QTimer
destroyed after the application object ("QObject::killTimer: Timers cannot be stopped from
another thread"), a worker whose read is still on the model's event loop when ``atexit`` closes
it ("RuntimeError: Event loop is closed", once per pending read), and the thread pool's
destructor, which waits for a task that never ends (a hang). So the application (and a
benchmark driving the window) ends in this order: timers stop, every task is cancelled and given
a bounded time, the window is deleted while the event loop can still run its deferred deletes;
and when a task is still running after that, the caller leaves the process without interpreter
shutdown (``ecpfs_viewer.process_exit.leave_process``).

A crash (a segfault in Qt or a native library) leaves its stack in ``crash-trace.txt`` in the
log folder, through :mod:`faulthandler`; a run that ends normally removes what it wrote there.
"""

from __future__ import annotations

import contextlib
import datetime
import faulthandler
import os
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from PySide6.QtCore import QCoreApplication, QEvent, QTimer
from PySide6.QtWidgets import QWidget

from ecpfs_viewer import __version__
from ecpfs_viewer.gui.runtime.workers import stop_workers
from ecpfs_viewer.logs import log_dir

CRASH_TRACE_NAME = "crash-trace.txt"
#: a trace file larger than this is started afresh (old crashes are in the backup beside it)
CRASH_TRACE_BYTES = 256 * 1024


def shut_down(window: QWidget | None, timers: Iterable[QTimer] = ()) -> bool:
    """Stop timers, cancel and wait for every task (bounded), delete the window; True when nothing
    is left running, False when the caller must leave the process without interpreter shutdown.

    The window is not closed here (a user closed it, or a screenshot leaves without saving its
    layout); the tasks of every runner are cancelled all the same."""
    for timer in timers:
        timer.stop()
    clean = stop_workers()
    if clean and window is not None:  # else the process leaves at once: no time spent on destructors
        window.deleteLater()  # now, in order, not in interpreter shutdown (Qt's destructors crashed there)
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    return clean


class CrashTrace:
    """faulthandler writing to a file for the life of the process; :meth:`close` after a normal
    end removes this run's header, so the file holds only runs that crashed."""

    def __init__(self, path: Path, stream: IO[str], start: int) -> None:
        self.path, self._stream, self._start = path, stream, start

    def close(self) -> None:
        """The run ended normally: stop tracing and drop what this run wrote."""
        with contextlib.suppress(OSError, ValueError):
            faulthandler.disable()
            self._stream.truncate(self._start)
            self._stream.close()


def enable_crash_trace(folder: Path | None = None) -> CrashTrace | None:
    """Send the stacks of a fatal error (segfault, abort) of every thread to a file in folder (the
    log folder by default); None when it cannot be written (the run goes on without it)."""
    path = (folder or log_dir()) / CRASH_TRACE_NAME
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_file() and path.stat().st_size > CRASH_TRACE_BYTES:
            os.replace(path, path.with_suffix(".txt.1"))
        stream = path.open("a", encoding="utf-8")
        start = stream.tell()
        stream.write(f"--- ecpfs-viewer {__version__}, process {os.getpid()}, started "
                     f"{datetime.datetime.now().astimezone().isoformat(timespec='seconds')}\n")
        stream.flush()
        faulthandler.enable(stream, all_threads=True)
    except OSError:
        return None
    return CrashTrace(path, stream, start)
