"""The lowest layer of every read: a counter of requests and bytes, the zarr store wrapper that
reports to it, and raw reads of local files (faster than any event loop for many small files)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, Store, SuffixByteRequest
from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype
from zarr.core.sync import sync
from zarr.storage import WrapperStore

from ecpfs_viewer.model.formatting import count_noun, format_bytes


@dataclass(frozen=True)
class IOStats:
    """A snapshot of the I/O counter; subtract two to get what an action cost."""

    requests: int = 0
    bytes_read: int = 0
    listings: int = 0
    seconds: float = 0.0

    def __sub__(self, other: IOStats) -> IOStats:
        return IOStats(
            self.requests - other.requests,
            self.bytes_read - other.bytes_read,
            self.listings - other.listings,
            self.seconds - other.seconds,
        )

    def describe(self) -> str:
        return (f"{count_noun(self.requests, 'request')}, {format_bytes(self.bytes_read)} read, "
                f"{count_noun(self.listings, 'listing')}")


class IOCounter:
    """Thread-safe tally of requests and bytes, shared by every view of one opened store."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests = 0
        self._bytes = 0
        self._listings = 0
        self._started = time.perf_counter()

    def add_read(self, nbytes: int, requests: int = 1) -> None:
        with self._lock:
            self._requests += requests
            self._bytes += nbytes

    def add_listing(self) -> None:
        with self._lock:
            self._requests += 1
            self._listings += 1

    def snapshot(self) -> IOStats:
        with self._lock:
            return IOStats(self._requests, self._bytes, self._listings, time.perf_counter() - self._started)


class CountingStore(WrapperStore[Store]):
    """A read-only wrapper that reports every request zarr-python makes to an IOCounter."""

    def __init__(self, store: Store, counter: IOCounter | None = None) -> None:
        super().__init__(store)
        self.counter = counter or IOCounter()

    def _with_store(self, store: Store) -> CountingStore:
        return CountingStore(store, self.counter)

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        result = await self._store.get(key, prototype, byte_range)
        self.counter.add_read(len(result) if result is not None else 0)
        return result

    def get_sync(self, key: str, *, prototype: BufferPrototype | None = None, byte_range: Any = None) -> Buffer | None:
        prototype = prototype or default_buffer_prototype()
        inner = getattr(self._store, "get_sync", None)
        result: Buffer | None
        if inner is not None:
            result = inner(key, prototype=prototype, byte_range=byte_range)
        else:
            result = sync(self._store.get(key, prototype, byte_range))
        self.counter.add_read(len(result) if result is not None else 0)
        return result

    async def get_partial_values(
        self, prototype: BufferPrototype, key_ranges: Iterable[tuple[str, ByteRequest | None]]
    ) -> list[Buffer | None]:
        results = await self._store.get_partial_values(prototype, key_ranges)
        for result in results:
            self.counter.add_read(len(result) if result is not None else 0)
        return results

    async def exists(self, key: str) -> bool:
        self.counter.add_read(0)
        return await self._store.exists(key)

    async def getsize(self, key: str) -> int:
        self.counter.add_read(0)
        return await self._store.getsize(key)

    def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        self.counter.add_listing()
        return self._store.list_prefix(prefix)

    def list_dir(self, prefix: str) -> AsyncIterator[str]:
        self.counter.add_listing()
        return self._store.list_dir(prefix)


_O_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0)
_ABSENT = (FileNotFoundError, NotADirectoryError, IsADirectoryError)

def read_file(path: str) -> bytes | None:
    """A whole local file, or None when it does not exist (or is a directory).

    Uses raw descriptors: listing 4,000 nodes reads 4,000 small files, and a buffered open() per
    file costs about three times as much.
    """
    try:
        fd = os.open(path, _O_READ)
    except _ABSENT:
        return None
    try:
        data = os.read(fd, 1 << 16)
        if len(data) < 1 << 16:
            return data
        parts = [data]
        while block := os.read(fd, 1 << 20):
            parts.append(block)
        return b"".join(parts)
    except IsADirectoryError:  # Linux opens a directory read-only and fails on read
        return None
    finally:
        os.close(fd)


def read_file_range(path: str, byte_range: ByteRequest) -> bytes | None:
    """A byte range of a local file (clipped to its size), or None when it does not exist."""
    try:
        fd = os.open(path, _O_READ)
    except _ABSENT:
        return None
    try:
        start, stop = _bounds(byte_range, os.fstat(fd).st_size)
        os.lseek(fd, start, os.SEEK_SET)  # not os.pread: Windows has none
        parts = []
        while start < stop and (block := os.read(fd, stop - start)):
            parts.append(block)
            start += len(block)
        return b"".join(parts)
    except IsADirectoryError:
        return None
    finally:
        os.close(fd)


def _bounds(byte_range: ByteRequest, size: int) -> tuple[int, int]:
    """[start, stop) of a byte request within an object of `size` bytes."""
    if isinstance(byte_range, RangeByteRequest):
        return min(byte_range.start, size), min(byte_range.end, size)
    if isinstance(byte_range, OffsetByteRequest):
        return min(byte_range.offset, size), size
    return max(0, size - byte_range.suffix), size


def cut_to_range(data: bytes, byte_range: ByteRequest | None) -> bytes:
    """The requested bytes when a server ignored the Range header and sent the whole object."""
    if isinstance(byte_range, RangeByteRequest) and len(data) > byte_range.end - byte_range.start:
        return data[byte_range.start:byte_range.end]
    if isinstance(byte_range, SuffixByteRequest) and len(data) > byte_range.suffix:
        return data[len(data) - byte_range.suffix:]
    return data


def local_sizes(top: str) -> dict[str, int]:
    """Size of every file below a directory, keyed by '/'-joined relative path."""
    sizes: dict[str, int] = {}
    stack = [("", top)]
    while stack:
        rel, directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            name = f"{rel}/{entry.name}" if rel else entry.name
            if entry.is_dir():
                stack.append((name, entry.path))
            else:
                sizes[name] = entry.stat().st_size
    return sizes
