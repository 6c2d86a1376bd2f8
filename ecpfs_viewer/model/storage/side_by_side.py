"""Work in other threads: the caller's context carried along, and many small local file operations
done in order, side by side once the disk answers.

From the page cache a small file reads (or stats) in microseconds, and one thread doing one file
after another is fastest (threads only add hand-overs of the interpreter lock). From a cold disk
each file waits on the device (its inode, then its data) and one thread waits for each in turn: the
16,000 files of a 200,000-item map's leaves took 3.2 s one after another and 1.45 s four at a time.
So :func:`in_order` starts one file after another and, when its first :data:`PROBE_FILES` were not
in the page cache (where the system tells: :func:`cache_says_cold`) or else took more than
:data:`COLD_SECONDS` each (their median: :func:`looks_cold`), does the rest
:data:`SIDE_BY_SIDE` at a time, in threads that end with the batch (none is left behind). Imports
no zarr (the stamps use it).
"""

from __future__ import annotations

import contextvars
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

#: files done one after another before a batch is timed
PROBE_FILES = 8
#: seconds the median file of those took past which the rest of the batch is done side by side
COLD_SECONDS = 40e-6
#: files done at once from a cold disk (benchmarks/README.md: 4 left a cold 10M pass slower)
SIDE_BY_SIDE = 16
#: files a thread takes at a time from a cold batch: one task (a Future, its lock and condition)
#: per file grew with the batch (ThreadPoolExecutor.map ignores chunksize)
FILES_PER_TASK = 16

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


def carry_context(fn: Callable[P, R]) -> Callable[P, R]:
    """fn, to be run in another thread (a ThreadPoolExecutor) inside the caller's context: the reads
    it makes count for the caller's action. Each call runs in a fresh copy (a context cannot be
    entered by two threads at once)."""
    context = contextvars.copy_context()

    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return context.copy().run(fn, *args, **kwargs)

    return run


def looks_cold(seconds: Sequence[float], cold: float | None = None) -> bool:
    """Whether the disk looks cold from the times single files took: their median past `cold`
    (COLD_SECONDS when None). The median, not the sum: a pause of the whole process (a garbage
    collection takes 10-15 ms) made a warm disk look cold, and its files were then done by
    threads, slower."""
    return bool(seconds) and statistics.median(seconds) > (COLD_SECONDS if cold is None else cold)


def cache_says_cold(cached: Sequence[bool | None]) -> bool | None:
    """Whether the disk is cold from the page cache's word on the first files (True: in memory):
    cold when at least a quarter of them were not; None when it could not tell for every one."""
    if not cached or any(told is None for told in cached):
        return None
    return sum(not told for told in cached) * 4 >= len(cached)


def in_order(calls: Sequence[Callable[[], T]], cold: Callable[[], bool | None] | None = None) -> list[T]:
    """Each call's value, in order: one after another, the rest side by side (in the caller's
    context) once the first PROBE_FILES were slow (module docstring). A call must not raise.

    ``cold``, asked after the first PROBE_FILES, says from the page cache whether they waited on
    the disk, in place of their times: with other threads of the process busy, a warm file waits
    for the interpreter lock as long as a cold one waits for the disk, and more threads only add
    turns. When it cannot tell (None) the times decide."""
    found: list[T] = []
    took: list[float] = []
    for at, call in enumerate(calls):
        if at == PROBE_FILES and len(calls) > 2 * PROBE_FILES and _is_cold(cold, took):
            rest = calls[at:]
            tasks = [rest[start:start + FILES_PER_TASK] for start in range(0, len(rest), FILES_PER_TASK)]
            with ThreadPoolExecutor(SIDE_BY_SIDE, thread_name_prefix="cold_reads") as pool:
                for values in pool.map(carry_context(_call_each), tasks):
                    found.extend(values)
            return found
        started = time.perf_counter()
        found.append(call())
        if at < PROBE_FILES:
            took.append(time.perf_counter() - started)
    return found


def _is_cold(cold: Callable[[], bool | None] | None, took: Sequence[float]) -> bool:
    told = cold() if cold is not None else None
    return looks_cold(took) if told is None else told


def _call_each(calls: Sequence[Callable[[], T]]) -> list[T]:
    return [call() for call in calls]
