"""The far end of a pass over every leaf's item_ids, read by a helper process.

A first pass over the leaves of a local index is the interpreter's work, file after file: stat,
read, parse, decode (benchmarks/README.md). A second interpreter has a lock of its own, so on two
CPUs a helper that reads the leaves from the far end down while this process reads from the near
end up halves the pass. The helper runs the same batch reader and the same read stamps
(model/ecpfs/index_cache.py) on its own opening of the folder, and sends each batch back as the
item ids it read and the stamps taken before reading them.

Both ends read batches on one grid anchored at the far end, so a batch is read whole by one of
them, or by both when they meet (the helper's copy is then dropped). This process never waits for
the helper: it reads up to the lowest batch the helper has finished, then takes the helper's
batches. A helper that cannot start, fails, or is slow only leaves more to this process; a
failure of a leaf is met again, and said, when this process reads that leaf itself.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
import traceback
import weakref
from collections.abc import Sequence
from typing import IO, Any

import numpy as np

import ecpfs_viewer
from ecpfs_viewer.model.ecpfs.paths import level_path, node_array_path
from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.limits import current_limits, set_limits
from ecpfs_viewer.model.search.item_map import _Run
from ecpfs_viewer.model.storage.helper_stats import helper_possible
from ecpfs_viewer.model.storage.remote_helper_child import read_frame, write_frame
from ecpfs_viewer.model.storage.stamps import Stamps

#: a pass with at least this many leaves left starts a helper (fewer are read before it has started)
HELPER_MIN_LEAVES = 16384
# the helper imports this package from where this process did, when it would not find it itself
_COMMAND = ("import sys; sys.path.append(sys.argv[1]) if sys.argv[1] not in sys.path else None; "
            "from ecpfs_viewer.model.search.leaf_helper import serve; serve()")
_PACKAGE_HOME = os.path.dirname(os.path.dirname(os.path.abspath(ecpfs_viewer.__file__)))
log = logging.getLogger(__name__)

Batch = tuple[int, _Run, list[Stamps | None]]  # (index of its first leaf, its ids, its stamps)


class LeafHelper:
    """item_ids of ``leaves[low:]`` read by a helper process, a batch of ``step`` leaves at a time
    from the far end down (batches end at ``len(leaves) - k * step``), down to ``start``."""

    def __init__(self, folder: str, root_key: str, levels: int, leaves: Sequence[int], start: int, step: int) -> None:
        self.end = len(leaves)
        self.step = step
        self._leaves, self._start = leaves, start
        self._lock = threading.Lock()
        self._batches: list[Batch] = []  # as they arrive: the far end first
        self._low = self.end  # leaves[low:] are in self._batches
        self.failure: str | None = None  # why the helper stopped early, as it said
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
        request = (folder, root_key, levels, list(leaves[start:]), start, step, current_limits())
        self._thread = threading.Thread(target=self._talk, args=(request,), name="leaf_helper", daemon=True)
        self._thread.start()

    @staticmethod
    def possible(store_kind: str, folder: str | None, left: int) -> bool:
        """Whether a pass with ``left`` leaves to read of a store is worth a helper."""
        return store_kind == "local" and folder is not None and left >= HELPER_MIN_LEAVES and helper_possible()

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
                _, first, ids, leaves, sizes, stamps = frame
                run = _Run(ids, leaves, sizes)
                if not self._expected(first, run):
                    self._failed(f"the helper sent leaves {first}: not the batch asked for next", "")
                    return
                with self._lock:
                    self._batches.append((first, run, stamps))
                    self._low = first
        except EOFError:  # killed by stop(), or it ended on its own
            if not self._stopped:
                self._failed(f"the helper ended before it was done (exit status {proc.poll()})", "")
        except Exception as exc:  # a broken frame: what arrived before is kept
            self._failed(f"the helper's answer could not be read: {describe_exception(exc)}",
                         "".join(traceback.format_exception(exc)))

    def _expected(self, first: int, run: _Run) -> bool:
        """Whether a batch is the next one down the grid and holds only its own leaves."""
        low = self._low
        if first != max(self._start, low - self.step) or first >= low:
            return False
        return len(run.sizes) == len(run.leaves) and bool(np.isin(run.leaves, self._leaves[first:low]).all())

    def _failed(self, why: str, trace: str) -> None:
        self.failure = why
        log.info("%s; this process reads its leaves itself\n%s", why, trace)

    def low(self) -> int:
        """The first leaf (index into the pass's leaves) of the helper's batches read so far."""
        with self._lock:
            return self._low

    def batch_end(self, at: int) -> int:
        """Where the batch on the grid that holds leaf ``at`` ends."""
        return self.end - ((self.end - at - 1) // self.step) * self.step

    def take(self, at: int) -> list[Batch] | None:
        """The helper's batches from leaf ``at`` to the end, ascending (``at`` on the grid); None when
        they do not cover that span without a gap."""
        with self._lock:
            kept = sorted((b for b in self._batches if b[0] >= at), key=lambda b: b[0])
        expected = at
        for first, _run, _stamps in kept:
            if first != expected:
                return None
            expected = self.batch_end(first)
        return kept if expected == self.end else None

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
    """Read the leaves asked for, from the far end down, and send each batch back as it is read."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever a library prints must not break a frame
    try:
        request = read_frame(sys.stdin.buffer)
    except EOFError:
        return
    try:
        _serve(out, *request)
        write_frame(out, ("done",))
    except BrokenPipeError:
        pass  # the parent stopped listening
    except Exception as exc:  # said to the parent, which reads these leaves itself
        with contextlib.suppress(OSError):
            write_frame(out, ("failed", describe_exception(exc), "".join(traceback.format_exception(exc))))
    finally:
        with contextlib.suppress(OSError):
            out.close()


def _serve(out: IO[bytes], folder: str, root_key: str, levels: int, leaves: list[int], start: int,
           step: int, limits: Any) -> None:
    from ecpfs_viewer.model.ecpfs.index_cache import IndexCache
    from ecpfs_viewer.model.storage.opening import open_store
    from ecpfs_viewer.model.zarrtree.array_batch import ArrayBatchReader
    from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

    set_limits(limits)
    store = open_store(folder)
    if store.kind != "local" or store.local_path is None or store.key(level_path(levels)) != root_key:
        raise RuntimeError(f"{folder} opens as another store in the helper")
    hierarchy = Hierarchy(store)
    stamper, reader = IndexCache(hierarchy), ArrayBatchReader(hierarchy)
    end = start + len(leaves)
    high = end
    while high > start:
        low = max(start, high - step)
        part = leaves[low - start:high - start]
        paths = [node_array_path(levels, n, "item_ids") for n in part]
        stamps: list[Stamps | None] = []
        with stamper.stamped_reads(list(zip(paths, part, strict=True)), stamps) as before_chunks:
            arrays = reader.read(paths, None, keep_documents=False, before_chunks=before_chunks)
        present = [(leaf, ids.reshape(-1)) for leaf, ids in zip(part, arrays, strict=True) if ids is not None]
        run = _Run.of_leaves([leaf for leaf, _ in present], [ids for _, ids in present])
        write_frame(out, ("batch", low, run.ids, run.leaves, run.sizes, stamps))
        high = low

