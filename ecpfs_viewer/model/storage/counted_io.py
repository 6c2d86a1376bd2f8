"""The lowest layer of every read: a counter of requests and bytes, the zarr store wrapper that
reports to it, and raw reads of local files (faster than any event loop for many small files)."""

from __future__ import annotations

import contextvars
import functools
import os
import threading
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

from zarr.abc.buffer import Buffer, BufferPrototype
from zarr.abc.store import ByteRequest, OffsetByteRequest, RangeByteRequest, Store, SuffixByteRequest
from zarr.buffer import default_buffer_prototype
from zarr.storage import LocalStore, MemoryStore, WrapperStore

from ecpfs_viewer.model.errors import TransportError, UserError
from ecpfs_viewer.model.formatting import count_noun, format_bytes, format_value
from ecpfs_viewer.model.limits import current_limits
from ecpfs_viewer.model.storage import event_loop
from ecpfs_viewer.model.storage.disk_cache import DocumentCache


@dataclass(frozen=True)
class IOStats:
    """A snapshot of the I/O counter; subtract two to get what an action cost."""

    requests: int = 0
    bytes_read: int = 0
    listings: int = 0
    seconds: float = 0.0
    unanswered: int = 0  # requests that failed on the way (no answer, a dropped connection)

    def __sub__(self, other: IOStats) -> IOStats:
        return IOStats(
            self.requests - other.requests,
            self.bytes_read - other.bytes_read,
            self.listings - other.listings,
            self.seconds - other.seconds,
            self.unanswered - other.unanswered,
        )

    def describe(self) -> str:
        return (f"{count_noun(self.requests, 'request')}, {format_bytes(self.bytes_read)} read, "
                f"{count_noun(self.listings, 'listing')}")


class ActionTally:
    """What one action read: filled by the IOCounter while the action's code (and the event-loop
    tasks and worker threads it starts with its context) runs, so overlapping actions of other
    threads are not counted in it."""

    def __init__(self, counter: IOCounter) -> None:
        self.counter = counter
        self.requests = 0
        self.bytes_read = 0
        self.listings = 0
        self.unanswered = 0
        self._started = time.perf_counter()
        self._stopped: float | None = None

    def stop(self) -> None:
        self._stopped = time.perf_counter()

    def stats(self) -> IOStats:
        """The requests, bytes and listings counted so far, and the seconds since the action began."""
        end = self._stopped if self._stopped is not None else time.perf_counter()
        with self.counter.lock:
            return IOStats(self.requests, self.bytes_read, self.listings, end - self._started, self.unanswered)


# the tallies of the actions running here (innermost last); asyncio and carry_context copy them on
_ACTIVE: contextvars.ContextVar[tuple[ActionTally, ...]] = contextvars.ContextVar("ecpfs_io_actions", default=())



class IOCounter:
    """Thread-safe tally of requests and bytes, shared by every view of one opened store.

    The totals count everything; :meth:`action` counts what one action read, by context, so the
    status bar never charges an action for a background read that happened to overlap it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._requests = 0
        self._bytes = 0
        self._listings = 0
        self._unanswered = 0
        self._started = time.perf_counter()

    def __reduce__(self) -> tuple[type[IOCounter], tuple[()]]:
        """A pickled counter arrives empty (with a lock of its own): it counts what the copy reads,
        in the process that received it; the original never sees those reads."""
        return IOCounter, ()

    def add_unanswered(self) -> None:
        """One request that failed on the way (counted as a request too)."""
        self._add(requests=1, unanswered=1)

    def add_read(self, nbytes: int, requests: int = 1) -> None:
        self._add(requests=requests, nbytes=nbytes)

    def add_listing(self) -> None:
        self._add(requests=1, listings=1)

    def _add(self, requests: int, nbytes: int = 0, listings: int = 0, unanswered: int = 0) -> None:
        """Add to the totals and to the tally of every action of this counter running in this context."""
        with self.lock:
            self._requests += requests
            self._bytes += nbytes
            self._listings += listings
            self._unanswered += unanswered
            for tally in _ACTIVE.get():
                if tally.counter is self:
                    tally.requests += requests
                    tally.bytes_read += nbytes
                    tally.listings += listings
                    tally.unanswered += unanswered

    @contextmanager
    def action(self) -> Iterator[ActionTally]:
        """Count the reads made by the code inside the with block (this thread and what it starts)."""
        tally = ActionTally(self)
        token = _ACTIVE.set((*_ACTIVE.get(), tally))
        try:
            yield tally
        finally:
            tally.stop()
            _ACTIVE.reset(token)

    def snapshot(self) -> IOStats:
        with self.lock:
            return IOStats(self._requests, self._bytes, self._listings, time.perf_counter() - self._started,
                           self._unanswered)


WrappedStore = TypeVar("WrappedStore", bound=Store)


class ReadingWrapper(WrapperStore[WrappedStore]):
    """A WrapperStore whose every read goes through its own ``get`` and every listing through its
    own ``list_prefix``. zarr's WrapperStore hands ``get_ranges`` (zarr >= 3.2: the chunks of a
    partial shard), ``list`` and ``is_empty`` straight to the wrapped store, past what
    the wrapper does (count, cap, retry, refuse a listing the server cannot give)."""

    async def get_ranges(self, key: str, byte_ranges: Sequence[ByteRequest | None], *, prototype: BufferPrototype,
                         max_concurrency: int | None = None, max_gap_bytes: int | None = None,
                         max_coalesced_bytes: int | None = None) -> AsyncIterator[Sequence[tuple[int, Buffer | None]]]:
        given = {"max_concurrency": max_concurrency, "max_gap_bytes": max_gap_bytes,
                 "max_coalesced_bytes": max_coalesced_bytes}
        coalescing = {name: value for name, value in given.items() if value is not None}
        async for group in Store.get_ranges(self, key, byte_ranges, prototype=prototype, **coalescing):
            yield group

    @property
    def wrapped(self) -> Store:
        """The store this one wraps (WrapperStore keeps it in a private attribute)."""
        return self._store

    def list(self) -> AsyncIterator[str]:
        return self.list_prefix("")

    async def is_empty(self, prefix: str) -> bool:
        return await Store.is_empty(self, prefix)


class CountingStore(ReadingWrapper[Store]):
    """A read-only wrapper that reports every request zarr-python makes to an IOCounter. A pickled
    one (a dask worker's) counts in a counter of its own, empty when it arrives."""

    def __init__(self, store: Store, counter: IOCounter | None = None) -> None:
        super().__init__(store)
        self.counter = counter or IOCounter()
        self.documents: DocumentCache | None = None  # a remote index's documents kept on disk

    def _with_store(self, store: Store) -> CountingStore:
        return CountingStore(store, self.counter)

    async def get(
        self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
    ) -> Buffer | None:
        documents = self.documents if byte_range is None else None
        try:
            if documents is not None:
                await documents.prepare(key)
                hit, kept = documents.get(key)  # raises what its read on the way raised
                if hit:  # no request made now: not counted
                    return None if kept is None else prototype.buffer.from_bytes(kept)
            result = await self._store.get(key, prototype, byte_range)
        except TransportError:
            self.counter.add_unanswered()
            raise
        self.counter.add_read(len(result) if result is not None else 0)
        if documents is not None:
            documents.put(key, None if result is None else result.to_bytes())
        return result

    def get_sync(self, key: str, *, prototype: BufferPrototype | None = None, byte_range: Any = None) -> Buffer | None:
        prototype = prototype or default_buffer_prototype()
        result: Buffer | None
        # only these read synchronously in every supported zarr (3.4's WrapperStore has a get_sync
        # that fails when the wrapped store has none, e.g. a remote or zip store)
        if isinstance(self._store, LocalStore | MemoryStore):
            result = self._store.get_sync(key, prototype=prototype, byte_range=byte_range)
        else:
            return event_loop.run(self.get(key, prototype, byte_range))
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
        if self.documents is not None:
            return self._kept_listing(self.documents, prefix)
        self.counter.add_listing()
        return self._store.list_dir(prefix)

    async def _kept_listing(self, documents: DocumentCache, prefix: str) -> AsyncIterator[str]:
        """A folder's names from the cache folder, else listed (one listing) and kept there."""
        top = prefix.strip("/").split("/", 1)[0]
        await documents.prepare_folder(top or None)
        names = documents.listing(prefix)
        if names is None:
            self.counter.add_listing()
            names = [name async for name in self._store.list_dir(prefix)]
            documents.keep_listing(prefix, names)
        for name in names:
            yield name


#: The names of Zarr metadata documents (capped by Limits.max_metadata_bytes; every other key is a chunk).
METADATA_KEYS = ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata")

class UnreadableFile(UserError, OSError):
    """A stored object that is refused or cannot be read: not a regular file, past a cap, a damaged
    zip member. An OSError, so callers that keep one failed key in place keep this one too."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.message = f"{path}: {problem}"
        self.strerror = problem
        self.filename = path

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[type[UnreadableFile], tuple[str, str]]:
        """Pickled (from the remote helper process) it arrives as itself, naming the same file."""
        return type(self), (str(self.filename), str(self.strerror))


def is_metadata_key(key: str) -> bool:
    """True when key names a metadata document (its last part is zarr.json, .zarray, ...)."""
    return key.rsplit("/", 1)[-1] in METADATA_KEYS


# a key or path ending so is a metadata document (a local path ends in os.sep or '/' + name)
_METADATA_ENDINGS = tuple(sep + name for name in METADATA_KEYS for sep in {"/", os.sep})


def cap_for(key: str) -> tuple[int, str]:
    """The byte cap of one stored object (a key or a local path), and the name of that cap in Limits."""
    limits = current_limits()
    if key in METADATA_KEYS or key.endswith(_METADATA_ENDINGS):
        return limits.max_metadata_bytes, "max_metadata_bytes"
    return limits.max_chunk_bytes, "max_chunk_bytes"


def check_size(path: str, key: str, size: int, what: str = "") -> None:
    """Refuse (UnreadableFile) an object of `size` bytes past the cap for key; `what` says whose size."""
    cap, name = cap_for(key)
    if size > cap:
        too_large(path, name, size, what)


def too_large(path: str, name: str, size: int, what: str = "") -> NoReturn:
    """Raise the UnreadableFile that says an object of `size` bytes is past the cap `name`."""
    kind = "metadata document" if name == "max_metadata_bytes" else "chunk"
    raise UnreadableFile(path, f"{what or 'the file'} is {format_bytes(size)}, over "
                               f"{current_limits().describe(name)} for one {kind}; not read")


def bounds(byte_range: ByteRequest, size: int) -> tuple[int, int]:
    """[start, stop) of a byte request within an object of `size` bytes."""
    if isinstance(byte_range, RangeByteRequest):
        return min(byte_range.start, size), min(byte_range.end, size)
    if isinstance(byte_range, OffsetByteRequest):
        return min(byte_range.offset, size), size
    if isinstance(byte_range, SuffixByteRequest):
        return max(0, size - byte_range.suffix), size
    raise unexpected_range(byte_range)


def range_within(where: str, byte_range: ByteRequest, size: int) -> tuple[int, int]:
    """[start, stop) of a byte request that lies within an object of `size` bytes; a request that
    reaches past its end (or asks for more of its tail than there is) is refused with UnreadableFile
    naming it: a short or empty answer would be taken for what is stored."""
    n = functools.partial(format_value, grouped=True)
    if isinstance(byte_range, RangeByteRequest):
        if byte_range.end < byte_range.start:
            raise UnreadableFile(where, f"bytes {n(byte_range.start)}–{n(byte_range.end)} asked for, an empty range "
                                        "ending before it starts; could not be read")
        if byte_range.end > size:
            raise UnreadableFile(where, f"bytes {n(byte_range.start)}–{n(byte_range.end)} asked for, past the end of "
                                        f"the {n(size)}-byte file; could not be read")
    elif isinstance(byte_range, OffsetByteRequest) and byte_range.offset > size:
        raise UnreadableFile(where, f"bytes from {n(byte_range.offset)} asked for, past the end of the {n(size)}-byte "
                                    "file; could not be read")
    elif isinstance(byte_range, SuffixByteRequest) and byte_range.suffix > size:
        raise UnreadableFile(where, f"the last {n(byte_range.suffix)} bytes asked for, of a {n(size)}-byte file; "
                                    "could not be read")
    return bounds(byte_range, size)


def check_answer(where: str, byte_range: ByteRequest | None, answered: int) -> None:
    """Refuse (UnreadableFile) an answer shorter than the bounded range asked for: the object ends
    before it (or changed while read), and a short answer would be taken for what is stored."""
    if isinstance(byte_range, RangeByteRequest):
        wanted = max(0, byte_range.end - byte_range.start)
    elif isinstance(byte_range, SuffixByteRequest):
        wanted = byte_range.suffix
    else:
        return
    if answered < wanted:
        n = functools.partial(format_value, grouped=True)
        asked = (f"bytes {n(byte_range.start)}–{n(byte_range.end)}" if isinstance(byte_range, RangeByteRequest)
                 else f"the last {n(wanted)} bytes")
        raise UnreadableFile(where, f"{asked} asked for, {n(answered)} answered: the object ends before them; "
                                    "could not be read")


def unexpected_range(byte_range: object) -> TypeError:
    """The error for a byte request of no known kind, in zarr's stores' words (its contract asks them)."""
    return TypeError(f"Unexpected byte_range, got {byte_range!r}.")


def cut_to_range(data: bytes, byte_range: ByteRequest | None) -> bytes:
    """The requested bytes when a server ignored the Range header and sent the whole object."""
    if isinstance(byte_range, RangeByteRequest) and len(data) > byte_range.end - byte_range.start:
        return data[byte_range.start:byte_range.end]
    if isinstance(byte_range, SuffixByteRequest) and len(data) > byte_range.suffix:
        return data[len(data) - byte_range.suffix:]
    return data
