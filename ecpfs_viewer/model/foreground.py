"""Background work gives way while the foreground (the GUI thread) is late.

CPython runs Python on one thread at a time. When the GUI thread paints or handles a result (in
Python: pyqtgraph, model/data overrides) while a worker thread also runs Python, the two take
turns every switch interval, and a 50 ms paint takes 100 ms or more of wall time (three busy
workers: 200 ms). So the GUI thread beats (:func:`beat`, every 10 ms from a timer) while background
tasks run, and background code calls :func:`give_way` at its checkpoints (each store read, each
look at a cancel flag): while the last beat is late, the GUI thread is working or waiting for the
interpreter, and the checkpoint sleeps, which hands the interpreter over, until the beat comes.
A beat later than ``GIVE_UP_S`` means the GUI thread is blocked on purpose (waiting for workers
as the application quits) or busy elsewhere: then nothing waits, so no task is ever held back more
than that in all. Without beats (the CLI, scripts, tests of the model), nothing waits.
"""

from __future__ import annotations

import threading
import time

#: a beat older than this means the foreground is busy (its timer ticks every 10 ms)
LATE_S = 0.025
#: a beat older than this means the foreground is blocked, not busy: work goes on
GIVE_UP_S = 0.25
_NAP_S = 0.002
# the clock and the nap, as names tests can replace
_clock = time.perf_counter
_nap = time.sleep

_state_lock = threading.Lock()
_last_beat: float | None = None  # None: nobody beats, give_way returns at once
_beating_thread: int | None = None


def beat() -> None:
    """Say that the foreground thread is responsive now (call it from that thread's event loop)."""
    global _last_beat, _beating_thread
    with _state_lock:
        _last_beat = _clock()
        _beating_thread = threading.get_ident()


def stop_beating() -> None:
    """No foreground to wait for any more (no background task runs, or the application quits)."""
    global _last_beat, _beating_thread
    with _state_lock:
        _last_beat = _beating_thread = None


def is_beating() -> bool:
    return _last_beat is not None


def foreground_is_late() -> bool:
    """The last beat is late, but not so late that the foreground must be blocked."""
    last = _last_beat
    return last is not None and LATE_S < _clock() - last < GIVE_UP_S


def give_way() -> float:
    """Sleep while the foreground is late; returns the seconds waited (under GIVE_UP_S)."""
    if _last_beat is None or threading.get_ident() == _beating_thread:
        return 0.0
    started = now = _clock()
    while foreground_is_late():
        _nap(_NAP_S)
        now = _clock()
    return now - started


class YieldingEvent(threading.Event):
    """A cancel flag whose every look first gives way to a late foreground.

    Long background loops already look at their cancel flag between steps, so handing them this
    flag makes each step a checkpoint without touching the loops. A flag that is set answers at
    once: a cancelled task must stop promptly even while the foreground is blocked.
    """

    def is_set(self) -> bool:
        if super().is_set():
            return True
        give_way()
        return super().is_set()
