"""Open what a user types or drops as a read-only Zarr store, and count what each action reads.

Every read the model makes goes through :class:`OpenedStore`, whether it uses a fast local path
or zarr-python; both report to one :class:`IOCounter`, so the GUI can show what an action cost.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import threading
import time
import zipfile
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zarr.abc.store import ByteRequest, Store
from zarr.core.buffer import Buffer, BufferPrototype, default_buffer_prototype
from zarr.core.sync import sync
from zarr.storage import LocalStore, MemoryStore, WrapperStore, ZipStore

from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.formatting import count_noun, format_bytes

METADATA_KEYS = ("zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata")
_URL_RE = re.compile(r"^(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*)://")
REMOTE_SCHEMES = {"http", "https", "s3", "gs", "gcs"}
REMOTE_EXTRA_HINT = "install the remote extra: pip install 'ecpfs-viewer[remote]'"


class StoreOpenError(UserError):
    """A location could not be opened as a Zarr store; the message is meant for the user."""


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


def read_file(path: str) -> bytes | None:
    """A whole local file, or None when it does not exist (or is a directory).

    Uses raw descriptors: listing 4,000 nodes reads 4,000 small files, and a buffered open() per
    file costs about three times as much.
    """
    try:
        fd = os.open(path, _O_READ)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
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


class OpenedStore:
    """A store opened read-only, with the prefix of its Zarr root and one I/O counter.

    Paths given to the methods are relative to the Zarr root (''), keys are store keys.
    """

    def __init__(self, store: Store, *, label: str, kind: str, root: str = "",
                 local_path: Path | None = None) -> None:
        self.counter = IOCounter()
        self.zarr_store = CountingStore(store, self.counter)
        self.label = label
        self.kind = kind  # "local", "zip", "remote", "memory"
        self.root = root.strip("/")
        self.local_path = local_path  # directory on disk when kind == "local"
        self._lock = threading.Lock()

    # -- keys -----------------------------------------------------------------------------------
    def key(self, path: str, *rest: str) -> str:
        return join_key(self.root, path, *rest)

    # -- reads ----------------------------------------------------------------------------------
    def read(self, key: str) -> bytes | None:
        """The whole value stored at key, or None when absent."""
        if self.local_path is not None:
            return self._read_local(key)
        buffer = self.zarr_store.get_sync(key, prototype=default_buffer_prototype())
        return None if buffer is None else buffer.to_bytes()

    def read_many(self, keys: list[str]) -> list[bytes | None]:
        """Read several keys; local stores read sequentially (fastest), others concurrently."""
        found = self.read_many_or_errors(keys)
        for value in found:
            if isinstance(value, Exception):
                raise value
        return found  # type: ignore[return-value]

    def read_many_or_errors(self, keys: list[str]) -> list[bytes | Exception | None]:
        """Like read_many, but a key that fails (permission denied, I/O error) gives its exception
        in place, so one unreadable entry does not hide its siblings."""
        if self.local_path is not None:
            base = str(self.local_path) + os.sep
            found: list[bytes | Exception | None] = []
            total = 0
            for key in keys:
                try:
                    data = read_file(base + key)
                except OSError as exc:
                    found.append(exc)
                    continue
                found.append(data)
                if data is not None:
                    total += len(data)
            self.counter.add_read(total, requests=len(keys))
            return found
        if not keys:
            return []

        async def fetch_all() -> list[bytes | Exception | None]:
            semaphore = asyncio.Semaphore(32)
            prototype = default_buffer_prototype()

            async def one(key: str) -> bytes | None:
                async with semaphore:
                    buffer = await self.zarr_store.get(key, prototype)
                    return None if buffer is None else buffer.to_bytes()

            results = await asyncio.gather(*(one(k) for k in keys), return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException) and not isinstance(result, Exception):
                    raise result  # cancellation and interrupts are not per-key failures
            return list(results)  # type: ignore[arg-type]

        return sync(fetch_all())

    def _read_local(self, key: str) -> bytes | None:
        assert self.local_path is not None
        data = read_file(os.path.join(self.local_path, key))
        self.counter.add_read(len(data) if data is not None else 0)
        return data

    def list_dir(self, path: str) -> list[tuple[str, bool | None]]:
        """Names directly below path, with whether each is a directory (None when unknown)."""
        if self.local_path is not None:
            self.counter.add_listing()
            directory = os.path.join(self.local_path, self.key(path))
            with os.scandir(directory) as entries:
                return [(e.name, _is_dir(e)) for e in entries]
        names = sync(_collect(self.zarr_store.list_dir(self.key(path))))
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
        keys = sync(_collect(self.zarr_store.list_prefix(full)))
        return [k[len(full):] for k in keys]

    def sizes_below(self, path: str) -> dict[str, int]:
        """Stored size of every key below path (relative keys), with one listing where possible."""
        prefix = self.key(path)
        if self.local_path is not None:
            self.counter.add_listing()
            top = os.path.join(self.local_path, prefix)
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
        inner = self.zarr_store._store
        if isinstance(inner, ZipStore):
            self.counter.add_listing()
            full = prefix + "/" if prefix else ""
            with inner._lock:
                infos = inner._zf.infolist()
            return {i.filename[len(full):]: i.compress_size for i in infos
                    if i.filename.startswith(full) and not i.filename.endswith("/")}
        keys = self.list_prefix(path)

        async def size_all() -> dict[str, int]:
            semaphore = asyncio.Semaphore(32)

            async def one(rel: str) -> tuple[str, int]:
                async with semaphore:
                    return rel, await self.zarr_store.getsize(join_key(prefix, rel))

            return dict(await asyncio.gather(*(one(k) for k in keys)))

        return sync(size_all())

    def stats(self) -> IOStats:
        return self.counter.snapshot()

    def close(self) -> None:
        # closing is best effort; a failed close must not hide the real work
        with contextlib.suppress(Exception):
            self.zarr_store._store.close()

    def __repr__(self) -> str:
        return f"OpenedStore({self.label!r}, kind={self.kind!r}, root={self.root!r})"








def is_url(location: str) -> bool:
    match = _URL_RE.match(location)
    return bool(match) and match.group("scheme").lower() != "file"


def open_store(location: str | os.PathLike[str] | Store, *, storage_options: dict[str, Any] | None = None
               ) -> OpenedStore:
    """Open a directory, a .zip, a URL or an existing zarr Store, always read-only."""
    if isinstance(location, Store):
        return OpenedStore(location.with_read_only(True) if not location.read_only else location,
                           label=repr(location), kind="memory" if isinstance(location, MemoryStore) else "store")
    text = os.fspath(location)
    if isinstance(text, bytes):
        text = text.decode()
    if is_url(text):
        return _open_url(text, storage_options or {})
    if text.startswith("file://"):
        text = text[len("file://"):]
    path = Path(text).expanduser()
    if not path.exists():
        raise StoreOpenError(f"{path}: no such file or directory")
    if path.is_dir():
        return _open_directory(path)
    if zipfile.is_zipfile(path):
        return _open_zip(path)
    raise StoreOpenError(f"{path}: not a Zarr store (expected a folder or a .zip file)")


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
    store = LocalStore(path, read_only=True)
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


def _open_zip(path: Path) -> OpenedStore:
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise StoreOpenError(f"{path}: unreadable zip file ({exc})") from exc
    root = zip_root(names)
    if root is None:
        raise StoreOpenError(f"{path}: the zip holds no Zarr metadata (zarr.json, .zgroup, .zarray)")
    store = ZipStore(path, mode="r")
    store._sync_open()  # our reads bypass zarr.open, which would otherwise open the archive on first use
    return OpenedStore(store, label=str(path) + (f"#{root}" if root else ""), kind="zip", root=root)


def zip_root(names: list[str]) -> str | None:
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


def _open_url(url: str, storage_options: dict[str, Any]) -> OpenedStore:
    scheme = _URL_RE.match(url).group("scheme").lower()  # type: ignore[union-attr]
    if scheme not in REMOTE_SCHEMES:
        raise StoreOpenError(f"{url}: unsupported URL scheme '{scheme}' (use http, https, s3 or gs)")
    try:
        import fsspec  # noqa: F401
        from zarr.storage import FsspecStore
    except ImportError as exc:
        raise StoreOpenError(f"{url}: opening URLs needs fsspec; {REMOTE_EXTRA_HINT}") from exc
    needed = {"http": "aiohttp", "https": "aiohttp", "s3": "s3fs", "gs": "gcsfs", "gcs": "gcsfs"}[scheme]
    try:
        __import__(needed)
    except ImportError as exc:
        raise StoreOpenError(f"{url}: opening {scheme}:// URLs needs {needed}; {REMOTE_EXTRA_HINT}") from exc
    options = dict(storage_options)
    try:
        store = FsspecStore.from_url(url.rstrip("/"), storage_options=options or None, read_only=True)
    except Exception as exc:  # fsspec raises many types; the user needs the message
        raise StoreOpenError(f"{url}: could not open ({type(exc).__name__}: {exc})") from exc
    opened = OpenedStore(store, label=url, kind="remote")
    try:
        found = opened.read_many(["zarr.json", ".zgroup", ".zarray"])
    except Exception as exc:
        raise StoreOpenError(f"{url}: could not read ({type(exc).__name__}: {exc})") from exc
    if not any(found):
        raise StoreOpenError(f"{url}: no Zarr metadata found (zarr.json, .zgroup or .zarray)")
    return opened


def open_memory(entries: dict[str, bytes]) -> OpenedStore:
    """An in-memory read-only store from key -> bytes, for tests and generated data."""
    from zarr.core.buffer.cpu import Buffer as CpuBuffer

    store = MemoryStore({k: CpuBuffer.from_bytes(v) for k, v in entries.items()}, read_only=True)
    return OpenedStore(store, label="memory", kind="memory")
