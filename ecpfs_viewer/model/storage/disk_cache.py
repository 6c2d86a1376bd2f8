"""The app's one cache folder on disk: what later processes may reuse of an index, never past a change.

Everything lives under :func:`cache_root` (``~/.cache/ecpfs-viewer`` on Linux; the demo index
too). What is kept of one store goes into a folder named by a hash of the store's identity (its
resolved path or URL), and every entry's file name carries a hash of the store's *fingerprint*
(the validators of the documents read to open it): an entry made under another fingerprint is
never read, and is deleted when the store is next opened. The entries of all stores together
stay under ``Limits.max_cache_bytes``, the least recently used evicted first.

Two kinds of entry: a whole file written atomically (a temporary file renamed over it), and an
append-only pack of small documents (each record framed with its length and a CRC, so a record
cut short by a crash or a concurrent writer is skipped, never misread).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import struct
import tempfile
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeAlias

import platformdirs

from ecpfs_viewer import APP_DIR_NAME
from ecpfs_viewer.model.guarded_json import parse_json
from ecpfs_viewer.model.limits import current_limits

#: a part of an entry: its bytes, or what writes them into the entry's file (a 10M-item map's
#: placement goes straight to the file: made as bytes first, it was 160 MB more at the peak)
EntryPart: TypeAlias = bytes | memoryview | Callable[[BinaryIO], object]

#: Environment variable that overrides the cache folder (tests point it at a tmp dir).
CACHE_ENV = "ECPFS_VIEWER_CACHE"
#: The folder below the cache root that holds what is kept per store (the budget covers it).
STORES = "stores"
_RECORD = struct.Struct("<III")  # key length, value length, CRC32 of key + value
#: Records StoreCache.add_later keeps waiting before it writes them anyway.
FLUSH_BYTES = 1 << 20


def cache_root() -> Path:
    """The user cache folder of ecpfs-viewer, or the folder ECPFS_VIEWER_CACHE names."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_cache_dir(APP_DIR_NAME, appauthor=False))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass(frozen=True)
class CacheUsage:
    """What the per-store cache holds: how many stores, files and bytes."""

    stores: int
    files: int
    nbytes: int


def cache_usage(root: Path | None = None) -> CacheUsage:
    """Stores, files and bytes kept under the cache folder (the demo index not counted)."""
    files = _entry_files((root or cache_root()) / STORES)
    return CacheUsage(len({path.parent for path, _, _ in files}), len(files), sum(size for _, size, _ in files))


def clear_cache(root: Path | None = None) -> CacheUsage:
    """Delete every kept entry of every store; what was freed. The demo index stays (it is rebuilt
    on demand, and an open window may be showing it)."""
    folder = (root or cache_root()) / STORES
    freed = cache_usage(root)
    shutil.rmtree(folder, ignore_errors=True)
    return freed


def _entry_files(folder: Path) -> list[tuple[Path, int, int]]:
    """(path, size, mtime_ns) of every file below folder, none when it does not exist."""
    found: list[tuple[Path, int, int]] = []
    with contextlib.suppress(OSError):
        for store in os.scandir(folder):
            with contextlib.suppress(OSError):
                for entry in os.scandir(store.path):
                    with contextlib.suppress(OSError):
                        if entry.is_file(follow_symlinks=False):
                            info = entry.stat(follow_symlinks=False)
                            found.append((Path(entry.path), info.st_size, info.st_mtime_ns))
    return found


def evict(budget: int, keep: frozenset[Path] = frozenset(), root: Path | None = None) -> int:
    """Delete the least recently used entries until all fit in budget bytes; the bytes freed.

    Files in `keep` (the entries in use) go last."""
    files = sorted(_entry_files((root or cache_root()) / STORES), key=lambda f: (f[0] in keep, f[2]))
    total = sum(size for _, size, _ in files)
    freed = 0
    for path, size, _ in files:
        if total - freed <= budget:
            break
        with contextlib.suppress(OSError):
            path.unlink()
            freed += size
    return freed


class StoreCache:
    """What is kept of one store at one fingerprint. Opening it deletes the store's entries made
    under any other fingerprint; reads and writes never fail the caller (a cache that cannot be
    written is a cache that misses)."""

    def __init__(self, identity: str, fingerprint: str, root: Path | None = None) -> None:
        self.folder = self.folder_of(identity, root)
        self.tag = self.tag_of(fingerprint)
        self._lock = threading.Lock()
        self._packs: dict[str, Pack] = {}
        self._appending: dict[str, int] = {}  # pack name -> file descriptor open for appending
        self._waiting: dict[str, list[bytes]] = {}  # pack name -> records not written yet (add_later)
        self._waiting_bytes = 0
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.folder):
                if not entry.name.startswith(self.tag):
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)  # another fingerprint: the index changed since

    @staticmethod
    def folder_of(identity: str, root: Path | None = None) -> Path:
        """The folder of a store's entries."""
        return (root or cache_root()) / STORES / _digest(identity)

    @staticmethod
    def tag_of(fingerprint: str) -> str:
        """What starts the name of every entry made under a fingerprint."""
        return _digest(fingerprint)

    def path(self, name: str) -> Path:
        return self.folder / f"{self.tag}.{name}"

    # -- whole files --------------------------------------------------------------------------------
    def read(self, name: str) -> bytes | None:
        """The entry's bytes, or None when there is none (or it cannot be read)."""
        path = self.path(name)
        try:
            data = path.read_bytes()
            os.utime(path)  # recently used: evicted last
        except OSError:
            return None
        return data

    def open(self, name: str) -> BinaryIO | None:
        """The entry's file opened for reading (the caller closes it), or None when there is none: an
        entry too large to be read whole and then parsed."""
        path = self.path(name)
        try:
            handle = path.open("rb")
        except OSError:
            return None
        try:
            os.utime(path)  # recently used: evicted last
        except OSError:  # as read does: not kept as used, not an answer (and the file is not left open)
            handle.close()
            return None
        return handle

    def write(self, name: str, data: EntryPart, *more: EntryPart) -> None:
        """Replace the entry (data, then each of more) atomically, then keep the cache within its budget."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(prefix=".tmp-", dir=self.folder)
            try:
                with os.fdopen(fd, "wb") as handle:
                    for part in (data, *more):
                        if callable(part):
                            part(handle)
                        else:
                            handle.write(part)
                os.replace(temporary, self.path(name))
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        except OSError:
            return
        self.fit()

    # -- one process at a time --------------------------------------------------------------------
    def claim(self, name: str) -> int | None:
        """An open descriptor holding the exclusive lock ``name`` of this store, for as long as it
        stays open here or in a process it was handed to; None while another process holds it.
        OSError where no lock can be taken (no ``fcntl``, a folder that cannot be written)."""
        try:
            import fcntl
        except ImportError as exc:  # Windows
            raise OSError("no file locks here") from exc
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path(name), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except OSError:
            os.close(fd)
            raise
        return fd

    # -- packs of small documents ------------------------------------------------------------------
    def pack(self, name: str) -> Pack:
        """The documents of a pack (key -> bytes), read once per process; damaged records skipped."""
        with self._lock:
            if name not in self._packs:
                self._packs[name] = Pack(self.read(name) or b"")
            return self._packs[name]

    def add(self, name: str, key: str, value: bytes) -> None:
        """Append one document to a pack (one write, so concurrent appenders do not interleave)."""
        self.add_later(name, key, value)
        self.flush()

    def add_later(self, name: str, key: str, value: bytes) -> None:
        """Append one document to a pack, written with the others added since the last
        :meth:`flush` (one write for a whole batch of reads; at most FLUSH_BYTES wait)."""
        raw = key.encode("utf-8", "surrogatepass")
        record = _RECORD.pack(len(raw), len(value), zlib.crc32(raw + value)) + raw + value
        with self._lock:
            self._packs.setdefault(name, Pack()).add(key, value)
            waiting = self._waiting.setdefault(name, [])
            waiting.append(record)
            self._waiting_bytes += len(record)
            full = self._waiting_bytes >= FLUSH_BYTES
        if full:
            self.flush()

    def flush(self) -> None:
        """Write what :meth:`add_later` keeps waiting, one write per pack (so concurrent appenders
        interleave whole batches of records, never parts of one)."""
        with self._lock:
            waiting, self._waiting, self._waiting_bytes = self._waiting, {}, 0
            for name, records in waiting.items():
                try:
                    fd = self._appending.get(name)
                    if fd is None:
                        self.folder.mkdir(parents=True, exist_ok=True)
                        fd = self._appending[name] = os.open(self.path(name), os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                                                             0o644)
                    os.write(fd, b"".join(records))
                except OSError:
                    continue

    def close(self) -> None:
        """Write what waits, then close the packs being appended to (a cleared folder's are written
        to nowhere until then)."""
        self.flush()
        with self._lock:
            for fd in self._appending.values():
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._appending.clear()

    def __del__(self) -> None:
        if hasattr(self, "_appending"):
            self.close()

    def fit(self) -> None:
        """Keep the whole cache within its budget, this store's entries evicted last."""
        try:
            keep = frozenset(self.folder / entry for entry in os.listdir(self.folder) if entry.startswith(self.tag))
        except OSError:
            keep = frozenset()
        evict(current_limits().max_cache_bytes, keep, self.folder.parent.parent)


class Pack(Mapping[str, bytes]):
    """The documents of one pack file, a record's CRC checked when its key is asked for.

    Opening frames the records (lengths and keys only) without checking a CRC or copying a value:
    a later process asks for a few hundred of the 84,000 documents a 2M index's pack holds. A
    record whose CRC fails is a miss (so are records framed after a torn one, whose CRCs fail
    alike); framing stops where a record runs past the end (cut short by a crash). Documents
    added in this process are answered from memory."""

    def __init__(self, data: bytes = b"") -> None:
        self._data = data
        self._at: dict[bytes, int] = {}  # key (UTF-8) -> offset of its last record
        self._added: dict[str, bytes] = {}
        at, size, unpack, header = 0, len(data), _RECORD.unpack_from, _RECORD.size
        while at + header <= size:
            key_len, value_len, _ = unpack(data, at)
            stop = at + header + key_len + value_len
            if stop > size:
                break  # cut short: the rest was never written whole
            self._at[data[at + header:at + header + key_len]] = at
            at = stop

    def add(self, key: str, value: bytes) -> None:
        self._added[key] = value

    def __getitem__(self, key: str) -> bytes:
        value = self._added.get(key)
        if value is not None:
            return value
        at = self._at.get(key.encode("utf-8", "surrogatepass"))
        if at is None:
            raise KeyError(key)
        key_len, value_len, crc = _RECORD.unpack_from(self._data, at)
        start = at + _RECORD.size
        body = self._data[start:start + key_len + value_len]
        if zlib.crc32(body) != crc:
            raise KeyError(key)  # a torn or damaged record: never misread
        return body[key_len:]

    def __iter__(self) -> Iterator[str]:
        yield from self._added
        for raw in self._at:
            try:
                key = raw.decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:
                continue  # misframed after a torn record (its CRC would fail too)
            if key not in self._added and key in self:
                yield key

    def __len__(self) -> int:
        return sum(1 for _ in self)


#: The pack of a remote store's small documents (metadata, ids arrays).
DOCUMENTS = "documents.pack"
_ABSENT = "!"  # prefix of a record saying the key had no object
_LISTING = "?"  # prefix of a record holding a folder's listing (a JSON list of names)


#: Bytes of held documents (DocumentCache.hold) kept at most.
HELD_BYTES = 16 << 20


class DocumentCache:
    """The small documents of a remote store: whole-object reads of the keys `keeps` accepts are
    answered from memory or the pack on disk (while the store's fingerprint is unchanged), with no
    request. Without a StoreCache (no fingerprint) only what was seeded is answered."""

    def __init__(self, cache: StoreCache | None, keeps: Callable[[str], bool]) -> None:
        self.cache = cache
        self.keeps = keeps
        self.seeded: dict[str, bytes] = {}  # documents read on the way or found inside others
        self.absent: set[str] = set()  # keys read on the way and found absent
        self.failed: dict[str, Exception] = {}  # keys whose read on the way failed: raised once
        self.hits = 0  # reads answered from the cache folder
        self.held: OrderedDict[str, bytes] = OrderedDict()  # answered once (see hold)
        self._held_bytes = 0
        self._held_lock = threading.Lock()

    def seed(self, read: dict[str, bytes | Exception | None]) -> None:
        """Take what was read on the way (the fingerprint's documents) so it is not asked again; a
        failure is what the next read of its key raises, once (the same request would fail alike)."""
        for key, value in read.items():
            if isinstance(value, Exception):
                self.failed[key] = value
            elif value is None:
                self.absent.add(key)
            else:
                self.seeded[key] = value

    def hold(self, key: str, data: bytes) -> None:
        """Answer the next whole read of key with data, once: the bytes a stamp was just taken of
        (model/ecpfs/http_stamps.py), so what is read is what was stamped, with no second request.
        Past HELD_BYTES the oldest held are let go (read again when asked for)."""
        with self._held_lock:
            self._held_bytes += len(data) - len(self.held.pop(key, b""))
            self.held[key] = data
            while self._held_bytes > HELD_BYTES and self.held:
                self._held_bytes -= len(self.held.popitem(last=False)[1])

    def let_go(self) -> None:
        """Forget every held document (a refresh: what is read next is asked for)."""
        with self._held_lock:
            self.held.clear()
            self._held_bytes = 0

    async def prepare(self, key: str) -> None:
        """Make ready to answer key (a stamped cache lists what proves it unchanged); nothing here."""

    async def prepare_folder(self, folder: str | None) -> None:
        """Make ready to answer a listing below folder; nothing here."""

    def _seeded_answer(self, key: str) -> tuple[bool, bytes | None] | None:
        """What this process was told of ``key`` (a failure raised once, known absent, seeded bytes)."""
        failure = self.failed.pop(key, None)
        if failure is not None:
            raise failure
        with self._held_lock:
            held = self.held.pop(key, None)
            self._held_bytes -= len(held or b"")
        if held is not None:
            return True, held
        if key in self.absent:
            return True, None
        value = self.seeded.get(key)
        return None if value is None else (True, value)

    def get(self, key: str) -> tuple[bool, bytes | None]:
        """(True, bytes or None for an object known absent) on a hit; (False, None) on a miss.
        Raises a failure seeded for the key, once."""
        known = self._seeded_answer(key)
        if known is not None:
            return known
        if self.cache is None or not self.keeps(key):
            return False, None
        documents = self.cache.pack(DOCUMENTS)
        value = documents.get(key)
        if value is None and _ABSENT + key not in documents:
            return False, None
        self.hits += 1
        return True, value

    def put(self, key: str, value: bytes | None) -> None:
        if self.cache is not None and self.keeps(key) and key not in self.seeded and key not in self.absent:
            # written with the rest of its batch (OpenedStore flushes after each multi-key read)
            self.cache.add_later(DOCUMENTS, key if value is not None else _ABSENT + key, value or b"")

    def listing(self, prefix: str) -> list[str] | None:
        """The names a folder listing gave, when kept."""
        kept = None if self.cache is None else self.cache.pack(DOCUMENTS).get(_LISTING + prefix)
        if kept is None:
            return None
        try:
            names = parse_json(kept, f"the cache's listing of {prefix or '/'}")
        except ValueError:
            return None
        self.hits += 1
        return [str(name) for name in names] if isinstance(names, list) else None

    def keep_listing(self, prefix: str, names: list[str]) -> None:
        if self.cache is not None:
            self.cache.add(DOCUMENTS, _LISTING + prefix, json.dumps(names).encode())
