"""How the window stays responsive while workers run: every knob of that policy, in one place.

CPython runs Python on one thread at a time, and Qt calls Python on the GUI thread for every
paint and model lookup; a worker busy in Python makes the GUI thread wait for the interpreter.
The policy, knob by knob (``benchmarks/bench_gui_stalls.py --off KNOB`` measures each one):

- ``heavy_turns``: long CPU-bound jobs (decoding a level's node ids, searches) run one at a time,
  and background jobs (validating the index just opened) wait at their progress reports while
  one runs, so at most one worker competes with the GUI thread for the interpreter.
- ``nice``: worker threads (and the threads zarr and obstore start from them) run
  :data:`WORKER_NICENESS` steps nicer than the GUI thread, so the GUI thread gets a core first when
  the machine is busy (Linux); also when the whole app was started under ``nice``.
- ``switch_interval``: a thread holding the interpreter while another waits for it gives it up
  after :data:`GIL_SWITCH_INTERVAL_S` instead of Python's 5 ms.
- ``gc_freeze``: objects that survived a full collection are frozen, so later full collections
  (on the GUI thread, see collector.py) walk only what came since.

``ECPFS_VIEWER_SCHEDULING_OFF`` (comma-separated knob names) turns knobs off, for measuring.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass

log = logging.getLogger(__name__)

#: environment variable naming the knobs to turn off (benchmarks measure what each one is worth)
KNOBS_OFF_ENV = "ECPFS_VIEWER_SCHEDULING_OFF"
KNOBS = ("heavy_turns", "nice", "switch_interval", "gc_freeze")

#: worker threads of the one pool (heavy jobs waiting their turn must not starve store requests)
MAX_WORKER_THREADS = 6
#: how much nicer than the GUI thread worker threads run (nice values end at 19)
WORKER_NICENESS = 10
MOST_NICE = 19
#: seconds a thread may hold the GIL while another waits for it (Python's default is 5 ms). The GUI
#: thread takes the interpreter once per call from Qt into Python, over a thousand in one repaint of
#: the tree, and waits up to this long for each while a worker runs Python: so it is tiny
GIL_SWITCH_INTERVAL_S = 0.00002


@dataclass(frozen=True)
class Knobs:
    """Which parts of the policy are on (all, unless the environment turns some off)."""

    heavy_turns: bool = True
    nice: bool = True
    switch_interval: bool = True
    gc_freeze: bool = True

    @classmethod
    def without(cls, names: str) -> Knobs:
        """All knobs but those named (comma-separated); ValueError for a name that is no knob."""
        off = {name.strip() for name in names.split(",") if name.strip()}
        unknown = off - set(KNOBS)
        if unknown:
            raise ValueError(f"unknown knob(s) {', '.join(sorted(unknown))}; known: {', '.join(KNOBS)}")
        return cls(**{name: name not in off for name in KNOBS})

    @classmethod
    def from_environment(cls) -> Knobs:
        return cls.without(os.environ.get(KNOBS_OFF_ENV, ""))

    def describe(self) -> str:
        off = [name for name in KNOBS if not getattr(self, name)]
        return f"knobs off: {', '.join(off)}" if off else "all knobs on"


#: the policy in force (read as ``scheduling.KNOBS_ON``: :func:`use_knobs` replaces it)
KNOBS_ON = Knobs.from_environment()


def use_knobs(knobs: Knobs) -> None:
    """Put knobs in force (a benchmark turning one off, before the window starts)."""
    global KNOBS_ON
    KNOBS_ON = knobs


def tune_interpreter() -> None:
    """Shorten the GIL switch interval (once, as the application starts)."""
    if KNOBS_ON.switch_interval:
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)


# -- one heavy job at a time ----------------------------------------------------------------------

class HeavyTurns:
    """Heavy jobs take turns; background jobs wait until none runs or waits.

    Waiting for a turn releases the GIL, so queued jobs cost nothing meanwhile.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self._count = 0

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """Wait for this job's turn and hold it (counted from the moment it starts waiting)."""
        if not KNOBS_ON.heavy_turns:
            yield
            return
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


HEAVY = HeavyTurns()


# -- worker priority ------------------------------------------------------------------------------

_LOWERED = threading.local()


def worker_niceness() -> int:
    """The nice value of worker threads: WORKER_NICENESS above the GUI (main) thread's, at most 19.
    On Linux the main thread's id is the process id."""
    return min(MOST_NICE, os.getpriority(os.PRIO_PROCESS, os.getpid()) + WORKER_NICENESS)


def lower_thread_priority() -> None:
    """Give the calling worker thread a lower CPU priority than the GUI thread, once per thread.

    Linux only (where a thread id names one thread for setpriority); elsewhere nothing changes.
    """
    if not KNOBS_ON.nice or getattr(_LOWERED, "done", False):
        return
    _LOWERED.done = True
    if not sys.platform.startswith("linux"):
        return
    tid = threading.get_native_id()
    try:
        target = worker_niceness()
        if os.getpriority(os.PRIO_PROCESS, tid) < target:
            os.setpriority(os.PRIO_PROCESS, tid, target)
    except OSError as exc:  # a sandbox may refuse it: the thread runs at normal priority
        log.debug("could not lower a worker thread's priority: %s", exc)
