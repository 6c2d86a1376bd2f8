"""The advisory lock one writer of ours holds on an index folder while it adds vectors.

On POSIX the lock is ``flock`` on the index folder itself, so nothing is written into (or beside)
the user's index; on Windows it is a lock file in the temporary folder named after the index's
real path. Either way it only keeps two writers *of this app* apart: upstream's ``ecp add-data``
and ``ecpfs.Index.insert`` take no lock across processes (format document §3.8) and are not
covered, so they must not run on the same index at the same time.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.tasks import checkpoint

#: What every message about the lock adds: which writers it does not keep out.
UPSTREAM_NOT_COVERED = ("the lock keeps out other ecpfs-viewer writers only; upstream's `ecp add-data` and "
                        "ecpfs.Index.insert take no lock and must not run on this index at the same time")

_POLL_SECONDS = 0.05


class IndexLocked(UserError):
    """Another writer of ours holds the index's lock and did not let go before the deadline."""


def _try_lock(fd: int) -> bool:
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    else:
        import fcntl

        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True


def _open_lock_target(index: Path) -> int:
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        key = hashlib.sha256(str(index.resolve()).encode()).hexdigest()[:32]
        folder = Path(tempfile.gettempdir()) / "ecpfs-viewer-locks"
        folder.mkdir(exist_ok=True)
        return os.open(folder / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    return os.open(index, os.O_RDONLY)


@contextmanager
def index_write_lock(index: str | os.PathLike[str], wait_seconds: float = 0.0,
                     cancel: threading.Event | None = None) -> Iterator[None]:
    """Hold the write lock of ``index`` for the block; wait up to ``wait_seconds`` for it, then refuse."""
    path = Path(index)
    fd = _open_lock_target(path)
    try:
        deadline = time.monotonic() + max(0.0, wait_seconds)
        while not _try_lock(fd):
            checkpoint(cancel)
            if time.monotonic() >= deadline:
                waited = f" after waiting {wait_seconds:g} s" if wait_seconds > 0 else ""
                raise IndexLocked(f"{path}: another ecpfs-viewer writer is adding to this index{waited}; "
                                  f"try again when it has finished ({UPSTREAM_NOT_COVERED})")
            time.sleep(_POLL_SECONDS)
        yield  # the lock goes with the descriptor
    finally:
        os.close(fd)
