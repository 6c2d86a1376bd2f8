"""Open what a user types or drops as a read-only Zarr store, and count what each action reads.

Every read the model makes goes through :class:`OpenedStore`, whether it uses a fast local path
or zarr-python; both report to one :class:`IOCounter`, so the GUI can show what an action cost.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from zarr.abc.store import ByteRequest, Store
from zarr.buffer import default_buffer_prototype
from zarr.buffer.cpu import Buffer as CpuBuffer
from zarr.storage import MemoryStore

from ecpfs_viewer.model.errors import UserError, describe_exception
from ecpfs_viewer.model.storage import event_loop, schemes
from ecpfs_viewer.model.storage import remote as remote_stores
from ecpfs_viewer.model.storage.counted_io import (
    METADATA_KEYS,
    CountingStore,
    IOCounter,
    IOStats,
    UnreadableFile,
    cut_to_range,
)
from ecpfs_viewer.model.storage.disk_cache import StoreCache
from ecpfs_viewer.model.storage.guarded import GuardedLocalStore
from ecpfs_viewer.model.storage.local_files import read_file, read_file_range
from ecpfs_viewer.model.storage.local_listing import local_sizes
from ecpfs_viewer.model.storage.local_reads import read_local
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.storage.stored_bound import ChunkBoundedStore, StoredBound, stored_bounds
from ecpfs_viewer.model.storage.zip_directory import NoEndRecord, StoredSizes, ZipFormatError
from ecpfs_viewer.model.storage.zip_store import GuardedZipStore

# The counter, its wrapper store and the file reads live in counted_io; they are still used as stores.*
__all__ = [
    "DEFAULT_MAX_IN_FLIGHT", "METADATA_KEYS", "REMOTE_EXTRA_HINT", "CountingStore", "IOCounter", "IOStats",
    "OpenedStore", "StoreOpenError", "UnreadableFile", "is_url", "join_key", "open_memory", "open_store",
    "read_file", "read_file_range", "zip_root",
]

REMOTE_EXTRA_HINT = schemes.OBSTORE_EXTRA_HINT


class StoreOpenError(UserError):
    """A location could not be opened as a Zarr store; the message is meant for the user."""


#: At most this many requests of one multi-key read are in flight at once (remote and zip stores).
DEFAULT_MAX_IN_FLIGHT = 32

T = TypeVar("T")
Value = bytes | Exception | None  # what one key of a multi-key read gives


def _is_dir(entry: os.DirEntry[str]) -> bool | None:
    """Whether a listed entry is a folder; None when that cannot be told (a symlink loop), so the
    entry becomes an error node of its own instead of failing the whole listing."""
    try:
        return entry.is_dir()
    except OSError:
        return None


def join_key(*parts: str) -> str:
    """Join store key parts with '/', ignoring empty parts (the root is ''); parts carry no outer '/'."""
    return "/".join([p for p in parts if p])


async def _collect(iterator: AsyncIterator[str]) -> list[str]:
    return [item async for item in iterator]


@dataclass(frozen=True)
class RequestFloor:
    """The least time a store's requests can take: requests / in flight x the server's answer time
    (its quickest answer)."""

    requests: int
    in_flight: int
    answer_s: float
    from_cache: int  # documents answered from the cache folder instead (no request)

    @property
    def seconds(self) -> float:
        return -(-self.requests // max(1, self.in_flight)) * self.answer_s

    def describe(self) -> str:
        """'8,351 requests (floor: 66 round trips of 128 in flight x 52 ms = 3.4 s), 40 from the cache folder'."""
        trips = -(-self.requests // max(1, self.in_flight))
        return (f"{self.requests:,} requests (floor: {trips:,} round trip(s) of {self.in_flight} in flight x "
                f"{self.answer_s * 1000:.0f} ms = {self.seconds:.1f} s), "
                f"{self.from_cache:,} document(s) from the cache folder")


class OpenedStore:
    """A store opened read-only, with the prefix of its Zarr root and one I/O counter.

    Paths given to the methods are relative to the Zarr root (''), keys are store keys. Every
    multi-key read goes through :meth:`read_ranges`, with at most ``max_in_flight`` requests
    outstanding at once.
    """

    def __init__(self, store: Store, *, label: str, kind: str, root: str = "",
                 local_path: Path | None = None, archive_path: Path | None = None,
                 archive_sizes: Mapping[str, int] | None = None,
                 max_in_flight: int = DEFAULT_MAX_IN_FLIGHT) -> None:
        self.counter = IOCounter()
        self.zarr_store = ChunkBoundedStore(store, self.counter)
        self.label = label
        self.kind = kind  # "local", "zip", "remote", "memory", "store"
        self.root = root.strip("/")
        self.local_path = local_path  # directory on disk when kind == "local"
        self.archive_path = archive_path  # the .zip file when kind == "zip"
        # stored size of every member of that zip, from its central directory (a view of the store's listing)
        self.archive_sizes = archive_sizes
        self.max_in_flight = max_in_flight
        self.unlisted: RemoteOptions | None = None  # set when the store lists no folders (plain HTTP)
        self.disk: StoreCache | None = None  # what the cache folder keeps of this store, once fingerprinted
        self.fingerprint_tried = False  # once per opened store: a document that failed is not asked again

    # -- keys -----------------------------------------------------------------------------------
    def key(self, path: str, *rest: str) -> str:
        return join_key(self.root, path, *rest)

    # -- reads ----------------------------------------------------------------------------------
    def read(self, key: str) -> bytes | None:
        """The whole value stored at key, or None when absent."""
        if self.local_path is not None:
            data = read_file(os.path.join(self.local_path, key))
            self.counter.add_read(len(data) if data is not None else 0)
            return data
        buffer = self.zarr_store.get_sync(key, prototype=default_buffer_prototype())
        return None if buffer is None else buffer.to_bytes()

    def read_many(self, keys: Sequence[str]) -> list[bytes | None]:
        """Read several keys (None for an absent one); raises the first failure."""
        found: list[bytes | None] = []
        for value in self.read_many_or_errors(keys):
            if isinstance(value, Exception):
                raise value
            found.append(value)
        return found

    def read_many_or_errors(self, keys: Sequence[str], bounds: Mapping[str, StoredBound] | None = None) -> list[Value]:
        """Like read_many, but a failed key (permission denied, I/O error, stored past its bound in
        `bounds`: model/storage/stored_bound.py) gives its exception in place, not hiding its siblings."""
        with stored_bounds(bounds):
            return self.read_ranges([(key, None) for key in keys])

    def read_ranges(self, requests: Sequence[tuple[str, ByteRequest | None]]) -> list[Value]:
        """The bytes of each (key, byte range) request (None: the whole value), in order.

        An absent key gives None, a failed one its exception in place. Local stores read one file
        after another (faster than any event loop); others overlap at most ``max_in_flight``
        requests. A server that ignores Range headers sends whole objects: the wanted bytes are
        cut from them (the counter still sees what was transferred).
        """
        if self.local_path is not None:
            return self._read_local(requests)
        prototype = default_buffer_prototype()

        async def one(key: str, byte_range: ByteRequest | None) -> bytes | None:
            buffer = await self.zarr_store.get(key, prototype, byte_range)
            return None if buffer is None else cut_to_range(buffer.to_bytes(), byte_range)

        return self._bounded([functools.partial(one, key, byte_range) for key, byte_range in requests])

    def _read_local(self, requests: Sequence[tuple[str, ByteRequest | None]]) -> list[Value]:
        found: list[Value] = list(read_local(str(self.local_path) + os.sep, requests))
        self.counter.add_read(sum(len(data) for data in found if isinstance(data, bytes)), requests=len(requests))
        return found

    def run_bounded(self, calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T | Exception]:
        """Run async calls on the model's event loop like a multi-key read (see :meth:`_bounded`)."""
        return self._bounded(calls)

    def _bounded(self, calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T | Exception]:
        """Run the calls on the model's event loop, at most max_in_flight at once; results in order,
        a call that failed gives its exception in place (cancellation and interrupts propagate).

        max_in_flight workers take the calls in turn: 8,000 reads are 128 tasks, not 8,000 made at
        once (a burst of Python that holds the interpreter while the GUI waits)."""
        if not calls:
            return []
        found: list[T | BaseException | None] = [None] * len(calls)
        turns = iter(range(len(calls)))  # shared: each call is taken by one worker

        async def worker() -> None:
            for i in turns:
                try:
                    found[i] = await calls[i]()
                except BaseException as exc:  # a failed key is a value: its siblings go on
                    found[i] = exc

        async def run_all() -> None:
            async with asyncio.TaskGroup() as group:
                for _ in range(min(max(1, self.max_in_flight), len(calls))):
                    group.create_task(worker())

        try:
            event_loop.run(run_all())
        finally:
            if self.disk is not None:
                self.disk.flush()  # the documents this batch keeps, in one write
        # a cancellation or an interrupt is no failed key: raised as itself (a worker that let it
        # out would have ended the group with an exception group, or silently, for a cancellation)
        stop = next((f for f in found if isinstance(f, BaseException) and not isinstance(f, Exception)), None)
        if stop is not None:
            raise stop
        return found  # type: ignore[return-value]  # every slot was filled, with no BaseException left

    # -- listings -------------------------------------------------------------------------------
    def list_dir(self, path: str) -> list[tuple[str, bool | None]]:
        """Names directly below path, with whether each is a directory (None when unknown)."""
        if self.local_path is not None:
            self.counter.add_listing()
            directory = os.path.join(self.local_path, self.key(path))
            with os.scandir(directory) as entries:
                return [(e.name, _is_dir(e)) for e in entries]
        names = event_loop.run(_collect(self.zarr_store.list_dir(self.key(path))))
        return [(name.rstrip("/"), None) for name in names]

    def list_prefix(self, path: str) -> list[str]:
        """Every key below path, relative to it."""
        prefix = self.key(path)
        if self.local_path is not None:
            self.counter.add_listing()
            top = os.path.join(self.local_path, prefix)
            found: list[str] = []
            for directory, _dirs, files in os.walk(top):
                rel = os.path.relpath(directory, top)
                for name in files:
                    found.append(name if rel == "." else f"{rel.replace(os.sep, '/')}/{name}")
            return found
        full = prefix + "/" if prefix else ""
        keys = event_loop.run(_collect(self.zarr_store.list_prefix(full)))
        return [k[len(full):] for k in keys]

    def sizes_below(self, path: str, problems: list[str] | None = None) -> dict[str, int]:
        """Stored size of every key below path (relative keys), with one listing where possible.

        Local folders below path that cannot be listed are described in `problems` (when given)
        instead of failing the whole listing.
        """
        prefix = self.key(path)
        if self.local_path is not None:
            self.counter.add_listing()
            return local_sizes(os.path.join(self.local_path, prefix), problems)
        full = prefix + "/" if prefix else ""
        if isinstance(self.archive_sizes, StoredSizes):
            self.counter.add_listing()
            return self.archive_sizes.below(full)
        if self.archive_sizes is not None:
            self.counter.add_listing()
            return {k[len(full):]: size for k, size in self.archive_sizes.items() if k.startswith(full)}
        keys = self.list_prefix(path)
        sizes = self._bounded([functools.partial(self.zarr_store.getsize, full + k) for k in keys])
        found: dict[str, int] = {}
        for key, size in zip(keys, sizes, strict=True):
            if isinstance(size, Exception):
                raise size
            found[key] = size
        return found

    def stats(self) -> IOStats:
        return self.counter.snapshot()

    def retry(self) -> None:
        """Ask again after failures on the way: a server taken for not answering is asked again."""
        retry = getattr(self.zarr_store.wrapped, "retry", None)
        if callable(retry):
            retry()

    def waits_on(self) -> tuple[str, float] | None:
        """(host, timeout in seconds) of the server reads wait on; None for a local or memory store."""
        bounded = self.zarr_store.wrapped
        options = getattr(bounded, "options", None)
        host = getattr(bounded, "host", None)
        return None if options is None or host is None else (str(host), float(options.timeout_s))

    def request_floor(self) -> RequestFloor | None:
        """What the requests made so far must take at least on a remote store (None elsewhere)."""
        quickest = getattr(self.zarr_store.wrapped, "quickest_answer_s", None)
        if quickest is None:
            return None
        documents = self.zarr_store.documents
        return RequestFloor(self.counter.snapshot().requests, self.max_in_flight, float(quickest()),
                            0 if documents is None else documents.hits)

    def server_not_answering(self) -> bool:
        """True while the remote server is taken for not answering (requests fail at once)."""
        health = getattr(self.zarr_store.wrapped, "health", None)
        return health is not None and health.down() is not None

    def close(self) -> None:
        # closing is best effort; a failed close must not hide the real work
        with contextlib.suppress(Exception):
            self.zarr_store.close()
        if self.disk is not None:
            self.disk.close()

    def __repr__(self) -> str:
        return f"OpenedStore({self.label!r}, kind={self.kind!r}, root={self.root!r})"


def listing_unavailable(opened: OpenedStore) -> bool:
    """True when the opened store cannot list folders."""
    return opened.unlisted is not None


is_url = schemes.is_url  # a URL or an fsspec chain (opened by a remote client), not a local path

def open_store(location: str | os.PathLike[str] | Store, *, remote: RemoteOptions | None = None) -> OpenedStore:
    """Open a directory, a .zip, a URL or an existing zarr Store, always read-only.

    URLs go through the client model/storage/schemes.py names for them, with `remote` options:
    obstore (the `remote` extra) for s3, gs, az and http(s), fsspec (the `fsspec` extra) for others.
    """
    if isinstance(location, Store):
        return OpenedStore(location.with_read_only(True) if not location.read_only else location,
                           label=repr(location), kind="memory" if isinstance(location, MemoryStore) else "store")
    text = os.fspath(location)
    if isinstance(text, bytes):
        text = text.decode()
    if is_url(text):
        return _open_url(text, remote)
    if text.startswith("file://"):
        text = text[len("file://"):]
    if "\0" in text:  # no file system has such a name (os.stat would raise a bare ValueError)
        raise StoreOpenError(f"{text[:200]!r}: not a path (it holds a NUL character)")
    path = Path(text).expanduser()
    try:
        mode = path.stat().st_mode
    except FileNotFoundError as exc:
        raise StoreOpenError(f"{path}: no such file or directory") from exc
    except OSError as exc:  # a looping link, a folder on the way that cannot be searched
        raise StoreOpenError(f"{path}: cannot open ({(exc.strerror or str(exc)).lower()})") from exc
    if stat.S_ISDIR(mode):
        return _open_directory(path)
    if not stat.S_ISREG(mode):  # a FIFO would block the zip check forever, /dev/zero never end
        raise StoreOpenError(f"{path}: not a Zarr store (not a folder or a regular file)")
    return _open_file(path)


def _open_file(path: Path) -> OpenedStore:
    """A regular file: a zip, a damaged zip (said what is wrong), or something else."""
    try:
        with open(path, "rb") as file:
            head = file.read(4)
        store = GuardedZipStore(path)
    except NoEndRecord as exc:
        if head.startswith(b"PK") or path.suffix.lower() == ".zip":
            raise StoreOpenError(f"{path}: damaged zip file: {exc}") from exc
        raise StoreOpenError(f"{path}: not a Zarr store (expected a folder or a .zip file)") from exc
    except ZipFormatError as exc:
        raise StoreOpenError(f"{path}: damaged zip file ({exc})") from exc
    except OSError as exc:
        raise StoreOpenError(f"{path}: cannot open ({(exc.strerror or str(exc)).lower()})") from exc
    return _open_zip(path, store)


def _open_directory(path: Path) -> OpenedStore:
    if not os.access(path, os.R_OK | os.X_OK):
        raise StoreOpenError(f"{path}: permission denied")
    try:
        names = os.listdir(path)
    except PermissionError as exc:
        raise StoreOpenError(f"{path}: permission denied") from exc
    if not names:
        raise StoreOpenError(f"{path}: the folder is empty, not a Zarr store")
    if not _holds_zarr_metadata(path, names, depth=2):
        raise StoreOpenError(f"{path}: not a Zarr store (no zarr.json, .zgroup or .zarray found)")
    store = GuardedLocalStore(path, read_only=True)
    return OpenedStore(store, label=str(path), kind="local", local_path=path.resolve())


def _holds_zarr_metadata(directory: Path, names: list[str], depth: int) -> bool:
    """True when directory, or a folder up to `depth` levels below it, holds Zarr metadata.

    Looks at the folder's own names first, so an index root answers without listing lvl_N.
    """
    if any(name in METADATA_KEYS for name in names):
        return True
    if depth == 0:
        return False
    for name in names:
        child = directory / name
        if child.is_dir():
            try:
                if _holds_zarr_metadata(child, os.listdir(child), depth - 1):
                    return True
            except OSError:
                continue
    return False


def _open_zip(path: Path, store: GuardedZipStore) -> OpenedStore:
    """The zip whose central directory the store read, rooted at the folder holding the Zarr root."""
    directory = store.directory
    if any(directory.find(key) is not None for key in METADATA_KEYS):
        root: str | None = ""
    else:
        root = zip_root(directory.names_below(""))
    if root is None:
        store.close()
        raise StoreOpenError(f"{path}: the zip holds no Zarr metadata (zarr.json, .zgroup, .zarray)")
    # chunk statistics list their stored sizes from the same listing
    return OpenedStore(store, label=str(path) + (f"#{root}" if root else ""), kind="zip", root=root,
                       archive_path=path, archive_sizes=directory.stored_sizes())


def zip_root(names: Iterable[str]) -> str | None:
    """The folder inside a zip that holds the Zarr root: '' for the top, else the shallowest one."""
    best: str | None = None
    for name in names:
        base = name.rsplit("/", 1)
        leaf = base[-1]
        if leaf not in METADATA_KEYS:
            continue
        folder = base[0] if len(base) == 2 else ""
        if best is None or folder.count("/") < best.count("/") or (folder == ""):
            best = folder
        if best == "":
            return ""
    return best


def _open_url(url: str, remote: RemoteOptions | None = None) -> OpenedStore:
    settings, scheme = remote or RemoteOptions(), schemes.scheme_of(url)
    bounded: remote_stores.BoundedStore
    try:
        if schemes.opener_for(url) == "fsspec":
            from ecpfs_viewer.model.storage.fsspec_store import open_fsspec

            bounded, settings = open_fsspec(url, settings)
        elif settings.storage_options:
            raise StoreOpenError(f"{url}: storage options are for fsspec URLs; {scheme}:// is read by obstore "
                                 "(use --endpoint, --region, --anon), or give a chain such as simplecache::URL")
        elif not remote_stores.obstore_available():
            raise StoreOpenError(f"{url}: opening {scheme}:// URLs needs obstore; {REMOTE_EXTRA_HINT}")
        else:
            from ecpfs_viewer.model.storage.remote_helper import open_remote_store

            bounded = open_remote_store(url, settings)
    except remote_stores.RemoteOpenError as exc:
        raise StoreOpenError(str(exc)) from exc
    opened = OpenedStore(bounded, label=url, kind="remote", max_in_flight=settings.max_in_flight)
    if not bounded.lists:
        opened.unlisted = settings
    _check_remote_metadata(opened, url, first=["zarr.json"])
    return opened


def _check_remote_metadata(opened: OpenedStore, url: str, first: list[str] | None = None) -> None:
    """Refuse a URL with no Zarr metadata at its root; v3 first, so an index costs one request."""
    try:
        found = opened.read_many(first or ["zarr.json", ".zgroup", ".zarray"])
        if first and not any(found):
            found = opened.read_many([".zgroup", ".zarray"])
    except Exception as exc:
        raise StoreOpenError(f"{url}: could not read ({describe_exception(exc)})") from exc
    if not any(found):
        raise StoreOpenError(f"{url}: no Zarr metadata found (zarr.json, .zgroup or .zarray)")


def open_memory(entries: dict[str, bytes]) -> OpenedStore:
    """An in-memory read-only store from key -> bytes, for tests and generated data."""
    store = MemoryStore({k: CpuBuffer.from_bytes(v) for k, v in entries.items()}, read_only=True)
    return OpenedStore(store, label="memory", kind="memory")
