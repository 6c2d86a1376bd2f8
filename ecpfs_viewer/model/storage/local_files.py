"""Whole local files and byte ranges of them, read through raw descriptors, refused past their caps
and when they are not regular files."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable

from zarr.abc.store import ByteRequest

from ecpfs_viewer.model.formatting import format_value
from ecpfs_viewer.model.storage import page_cache
from ecpfs_viewer.model.storage.counted_io import UnreadableFile, cap_for, check_size, range_within, too_large

# O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused right after, by fstat)
_O_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
_ABSENT = (FileNotFoundError, NotADirectoryError, IsADirectoryError)
_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _open_stamped(path: str, stamp: Callable[[os.stat_result | None], None] | None) -> int | None:
    """A descriptor of path opened for reading, None when there is no such file; ``stamp`` is
    handed the open file's fstat (None when absent). An open that fails otherwise leaves nothing
    to fstat: the path is statted, then opened once more, so the stamp is still older than the read."""
    try:
        fd = os.open(path, _O_READ)
    except _ABSENT:
        if stamp is not None:
            stamp(None)
        return None
    except OSError:
        if stamp is None:
            raise
        try:
            info: os.stat_result | None = os.stat(path)
        except OSError:
            info = None
        stamp(info)
        try:
            fd = os.open(path, _O_READ)
        except _ABSENT:
            return None
    else:
        if stamp is not None:
            try:
                stamp(os.fstat(fd))
            except BaseException:
                os.close(fd)
                raise
    return fd


def _regular_size(fd: int, path: str) -> int | None:
    """The size of the regular file open at fd; None for a directory. A FIFO, device or socket is
    refused (UnreadableFile) instead of blocking forever or streaming without end (/dev/zero)."""
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode):
        return info.st_size
    if stat.S_ISDIR(info.st_mode):
        return None
    kind = next((name for test, name in _KINDS if test(info.st_mode)), "a special file")
    raise UnreadableFile(path, f"not a regular file but {kind}; not read")


def _open_regular(path: str) -> tuple[int, int] | None:
    """(descriptor, size) of a regular file opened for reading; None when absent or a directory."""
    try:
        fd = os.open(path, _O_READ)
    except _ABSENT:
        return None
    try:
        size = _regular_size(fd, path)
    except OSError:
        os.close(fd)
        raise
    if size is None:
        os.close(fd)
        return None
    return fd, size


_FIRST_READ = 1 << 16
_buffers = threading.local()


def _first_read(fd: int) -> bytes:
    """Up to _FIRST_READ bytes of fd, read into this thread's buffer and copied out at their size.
    os.read allocates the whole _FIRST_READ for each file and shrinks it after: with threads
    reading side by side from a cold disk that churn left the heap fragmented (a cold
    ``info --leaf-sizes`` at 10M: 884 MB resident, and its CPU time half again)."""
    if not _READV:
        return os.read(fd, _FIRST_READ)
    buffer = getattr(_buffers, "view", None)
    if buffer is None:
        buffer = _buffers.view = memoryview(bytearray(_FIRST_READ))
    return bytes(buffer[:os.readv(fd, [buffer])])


_READV = hasattr(os, "readv")  # not on Windows


def read_file(path: str, check: Callable[[str, int], None] | None = None,
              cached: list[bool | None] | None = None,
              stamp: Callable[[os.stat_result | None], None] | None = None) -> bytes | None:
    """A whole local file, or None when it does not exist (or is a directory).

    Only regular files are read, and only up to the cap for their kind (metadata or chunk, told by
    the file name): a larger one raises UnreadableFile, from its size alone. ``check`` is called
    with (path, size) once the size is known, before the body is read, and raises to refuse it (a
    chunk's bound: ``stored_bound.size_check``). Uses raw descriptors: listing 4,000 nodes
    reads 4,000 small files, and a buffered open() per file costs markedly more (benchmarks/bench_design.py). A small
    file is read with one call and no fstat: opened non-blocking, a FIFO reads as nothing (or
    EAGAIN), a device fills the first read, and both of those cases are told apart by fstat. A
    larger one is read again from its start in one piece (no second copy to join the pieces).
    ``cached``, when given, is told whether the file was in memory (``page_cache.first_page_cached``).
    ``stamp``, when given, is handed the file's stat before anything is read (model/storage/read_stamps.py).
    """
    fd = _open_stamped(path, stamp)
    if fd is None:
        return None
    try:
        if cached is not None:
            cached.append(page_cache.first_page_cached(fd))
        cap, name = cap_for(path)
        try:
            data = _first_read(fd)
        except BlockingIOError:  # a FIFO whose writer has written nothing yet
            data = b""
        if 0 < len(data) < _FIRST_READ:
            if len(data) > cap:
                too_large(path, name, len(data))
            if check is not None:
                check(path, len(data))
            return data
        size = _regular_size(fd, path)
        if size is None:
            return None
        if size > cap:
            too_large(path, name, size)
        if check is not None:
            check(path, size)
        os.lseek(fd, 0, os.SEEK_SET)
        parts: list[bytes] = []
        total = 0
        while block := os.read(fd, max(1 << 20, size - total + 1)):
            parts.append(block)
            total += len(block)
            if total > cap:
                too_large(path, name, total, "the file (still growing)")
            if check is not None:
                check(path, total)
        return parts[0] if len(parts) == 1 else b"".join(parts)
    except IsADirectoryError:  # Linux opens a directory read-only and fails on read
        return None
    finally:
        os.close(fd)


def read_file_range(path: str, byte_range: ByteRequest) -> bytes | None:
    """A byte range of a local regular file, or None when it does not exist; a range past its end
    is refused (UnreadableFile), never answered short. All of it is read, or the file changed while
    read (refused too)."""
    opened = _open_regular(path)
    if opened is None:
        return None
    fd, size = opened
    try:
        start, stop = range_within(path, byte_range, size)
        check_size(path, path, stop - start, "the requested range")
        os.lseek(fd, start, os.SEEK_SET)  # not os.pread: Windows has none
        parts = []
        wanted = stop - start
        while start < stop and (block := os.read(fd, stop - start)):
            parts.append(block)
            start += len(block)
        data = b"".join(parts)
        if len(data) != wanted:
            raise UnreadableFile(path, f"{format_value(wanted, grouped=True)} bytes asked for, "
                                       f"{format_value(len(data), grouped=True)} there: the file shrank while read; "
                                       "could not be read")
        return data
    except IsADirectoryError:
        return None
    finally:
        os.close(fd)
