"""The far end of a long pass, worked by a helper process while this one works from the near end.

A pass over every leaf of a local index is one interpreter's work, file after file: stat, read,
parse, decode (benchmarks/README.md). A second interpreter has a lock of its own, so on two CPUs a
helper that works batches from the far end down while this process works from the near end up
halves the pass.

Both ends cut the pass on one grid anchored at its end, so a batch is done whole by one of them, or
by both when they meet (the helper's is then dropped). This process never waits for the helper: it
works up to the lowest batch the helper has finished, then takes the helper's batches. A helper
that cannot start, fails, sends what was not asked for, or is slow only leaves more to this
process, which meets a failure again, and says it, when it does that batch itself.

The helper runs a job named by module and function: ``job(*setup)`` returns the function that does
one batch, ``batch(low, high)``, whose value goes back pickled. Zarr-free: the jobs live in the
layers that know what a batch is.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import subprocess
import sys
import threading
import traceback
import weakref
from collections.abc import Callable
from typing import IO, Any

import ecpfs_viewer
from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.interpreter import fewer_collections
from ecpfs_viewer.model.limits import current_limits, set_limits
from ecpfs_viewer.model.storage.helper_stats import helper_possible
from ecpfs_viewer.model.storage.remote_helper_child import read_frame, write_frame

# the helper imports this package from where this process did, when it would not find it itself
_COMMAND = ("import sys; sys.path.append(sys.argv[1]) if sys.argv[1] not in sys.path else None; "
            "from ecpfs_viewer.model.storage.far_end import serve; serve()")
_PACKAGE_HOME = os.path.dirname(os.path.dirname(os.path.abspath(ecpfs_viewer.__file__)))
log = logging.getLogger(__name__)

#: whether a batch the helper sent is the one asked for: (its first item, its end, its value)
Accept = Callable[[int, int, Any], bool]


def local_root(store: Any) -> tuple[str, str] | None:
    """(folder, root key) of an opened store a helper can open itself, a local folder; else None."""
    if store.kind != "local" or store.local_path is None:
        return None
    return str(store.local_path), store.key("")


def open_local(folder: str, root_key: str) -> Any:
    """In the helper: the folder its parent opened, opened the same way (RuntimeError otherwise)."""
    from ecpfs_viewer.model.storage.opening import open_store  # zarr, in the helper only

    store = open_store(folder)
    root = local_root(store)
    if root is None or root[1] != root_key:
        raise RuntimeError(f"{folder} opens as another store in the helper")
    return store


def worth_a_helper(left: int, least: int) -> bool:
    """Whether a pass with ``left`` items to do is worth a helper (``least`` or more, and two CPUs)."""
    return left >= least and helper_possible()


class FarEnd:
    """Items ``[start, count)`` of a pass done by a helper process, a batch of ``step`` at a time
    from the far end down (batches end at ``count - k * step``), while this process does the rest."""

    def __init__(self, job: str, setup: tuple[Any, ...], count: int, start: int, step: int,
                 accept: Accept | None = None) -> None:
        self.end, self.step, self._start = count, step, start
        self._accept = accept
        self._lock = threading.Lock()
        self._batches: dict[int, Any] = {}  # first item -> the batch's value
        self._low = count  # items [low, count) are in self._batches
        self.failure: str | None = None  # why the helper stopped early
        self._stopped = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        try:
            self._proc = subprocess.Popen([sys.executable, "-c", _COMMAND, _PACKAGE_HOME], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError as exc:
            self.failure = f"the helper could not start: {exc}"
            return
        self._finalizer = weakref.finalize(self, _kill, self._proc)
        request = (job, setup, start, count, step, current_limits())
        self._thread = threading.Thread(target=self._talk, args=(request,), name="far_end", daemon=True)
        self._thread.start()

    def _talk(self, request: tuple[Any, ...]) -> None:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        try:
            write_frame(proc.stdin, request)
            proc.stdin.close()
            while True:
                frame = read_frame(proc.stdout)
                if frame[0] == "done":
                    return
                if frame[0] != "batch":
                    self._failed(f"the helper stopped: {frame[1]}", frame[2])
                    return
                _, first, value = frame
                low = self._low
                if first != max(self._start, low - self.step) or first >= low or (
                        self._accept is not None and not self._accept(first, low, value)):
                    self._failed(f"the helper sent items from {first}: not the batch asked for next", "")
                    return
                with self._lock:
                    self._batches[first] = value
                    self._low = first
        except EOFError:  # killed by stop(), or it ended on its own
            if not self._stopped:
                self._failed(f"the helper ended before it was done (exit status {proc.poll()})", "")
        except Exception as exc:  # a broken frame: what arrived before is kept
            self._failed(f"the helper's answer could not be read: {describe_exception(exc)}",
                         "".join(traceback.format_exception(exc)))

    def _failed(self, why: str, trace: str) -> None:
        self.failure = why
        log.info("%s; this process does its part itself\n%s", why, trace)

    def low(self) -> int:
        """The first item of the helper's batches done so far (``count``: none yet)."""
        with self._lock:
            return self._low

    def done(self) -> int:
        """How many items the helper has done."""
        return self.end - self.low()

    def batch_end(self, at: int) -> int:
        """Where the batch on the grid that holds item ``at`` ends."""
        return self.end - ((self.end - at - 1) // self.step) * self.step

    def next_end(self, at: int) -> int:
        """Where this process's batch from item ``at`` ends: on the grid, short of the helper's."""
        return min(self.batch_end(at), self.low())

    def take(self, at: int) -> list[Any] | None:
        """Once this process has reached the helper (``at``, on the grid, at or past :meth:`low`): the
        helper stopped and the values of its batches from ``at`` to the end, in order; None when
        they do not cover that span without a gap."""
        self.stop()
        values = []
        with self._lock:
            while at < self.end:
                if at not in self._batches:
                    return None
                values.append(self._batches[at])
                at = self.batch_end(at)
        return values

    def stop(self) -> None:
        """Stop the helper if it still runs; the batches it finished stay."""
        if self._proc is None:
            return
        self._stopped = True
        with contextlib.suppress(OSError):
            self._proc.kill()
        if self._thread is not None:
            self._thread.join()
        self._proc.wait()
        for end in (self._proc.stdin, self._proc.stdout):
            with contextlib.suppress(OSError, ValueError):
                if end is not None:
                    end.close()

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        proc.kill()
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        proc.wait(timeout=5)


# -- the helper process ------------------------------------------------------------------------


def serve() -> None:
    """Do the batches asked for, from the far end down, and send each back as it is done."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever a library prints must not break a frame
    try:
        request = read_frame(sys.stdin.buffer)
    except EOFError:
        return
    try:
        with fewer_collections():  # a command's pass, as in this process's parent (model/interpreter.py)
            _serve(out, *request)
        write_frame(out, ("done",))
    except BrokenPipeError:
        pass  # the parent stopped listening
    except Exception as exc:  # said to the parent, which does these batches itself
        with contextlib.suppress(OSError):
            write_frame(out, ("failed", describe_exception(exc), "".join(traceback.format_exception(exc))))
    finally:
        with contextlib.suppress(OSError):
            out.close()


def _serve(out: IO[bytes], job: str, setup: tuple[Any, ...], start: int, end: int, step: int, limits: Any) -> None:
    set_limits(limits)
    module, _, name = job.partition(":")
    batch = getattr(importlib.import_module(module), name)(*setup)
    high = end
    while high > start:
        low = max(start, high - step)
        write_frame(out, ("batch", low, batch(low, high)))
        high = low
