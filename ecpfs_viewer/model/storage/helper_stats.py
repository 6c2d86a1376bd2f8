"""Files statted by a second process while this one stats others.

From the page cache a stat is a couple of microseconds, nearly all of it the kernel's, and threads
of one interpreter take turns at its lock around every call, so they are slower than one thread.
A second interpreter has a lock of its own: two processes on two CPUs take about half the time
(``info`` and ``locate`` of the 10M-item index in benchmarks/bench_scale.py). The helper is a bare
interpreter (no site, no numpy, no package of ours) that reads NUL-separated paths and writes each
one's stamp row back as int64.

An answer never depends on the helper: when it cannot be started, fails, or misses its deadline,
:meth:`HelperStats.rows` says None and the caller stats those paths itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence

import numpy as np

#: seconds the helper may take for its share before it is stopped (its share is then statted here)
DEADLINE = 60.0
_FIELDS = 5  # st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns: model/storage/stamps.py's row
# the helper: the prefix, then the paths below it, NUL-separated on stdin; rows as native int64 on
# stdout, (-1,) * 5 for a path that cannot be statted (stamps.stat_row's absent row)
_HELPER = """
import os, sys
from array import array
prefix, *paths = sys.stdin.buffer.read().split(b"\\0")
rows = array("q")
absent = (-1,) * 5
for path in paths:
    try:
        info = os.stat(prefix + path)
    except OSError:
        rows.extend(absent)
        continue
    rows.extend((info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns))
sys.stdout.buffer.write(rows.tobytes())
"""


def helper_possible() -> bool:
    """Whether a second process can help: two CPUs for this process, and an interpreter to start
    (a frozen application's executable is not one)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return cpus >= 2 and not getattr(sys, "frozen", False) and bool(sys.executable)


class HelperStats:
    """The stamp rows of paths (below prefix) statted by a helper process started at once; used as
    a context manager, so that the helper never outlives the check that started it."""

    def __init__(self, prefix: str, paths: Sequence[str]) -> None:
        self._count = len(paths)
        self._out: bytes | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        data = os.fsencode("\0".join([prefix, *paths]))
        try:
            self._proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", _HELPER], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError:
            self._thread = None
            return
        self._thread = threading.Thread(target=self._talk, args=(data,), name="helper_stats", daemon=True)
        self._thread.start()

    def _talk(self, data: bytes) -> None:
        assert self._proc is not None
        try:
            out, _ = self._proc.communicate(data, timeout=DEADLINE)
        except (subprocess.TimeoutExpired, OSError, ValueError):
            return
        if self._proc.returncode == 0:
            self._out = out

    def rows(self) -> np.ndarray | None:
        """The rows, (paths, 5) int64, once the helper is done; None when it failed or took past
        its deadline."""
        if self._thread is None:
            return None
        self._thread.join()
        out = self._out
        if out is None or len(out) != self._count * _FIELDS * 8:
            return None
        return np.frombuffer(out, np.int64).reshape(self._count, _FIELDS)

    def stop(self) -> None:
        """Stop the helper if it still runs, and wait for it to end."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.kill()
        if self._thread is not None:
            self._thread.join()
        self._proc.wait()

    def __enter__(self) -> HelperStats:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()
