"""What a cache entry was derived from, and whether it still is: the stamps of the files read.

Every entry of an index's cache (model/ecpfs/index_cache.py) carries the stamps of the documents
it was made from, taken *before* they were read (a change while reading leaves the stamp older
than what was read, so the entry is stale at its first check, never wrongly fresh):

- a local folder: each file's identity (st_dev, st_ino), st_size, st_mtime_ns and st_ctime_ns.
  A rename, a copy over it, or a rewrite in place whose size and mtime were put back (ctime
  cannot be put back) all change it; a folder that is stamped too (a level's) also changes when
  an entry is added, removed or renamed in it.
- a zip: each member's CRC-32 and sizes from the central directory the zip was opened
  with (model/storage/zip_stamps.py): a re-saved zip with the same members keeps its entries, one
  member changed makes stale only what was derived from it.

Each stamped path belongs to an *owner* (a leaf, a parent node; -1 for what every answer depends
on, such as a level's folder), so that an answer that depends on one leaf is checked with a few
``os.stat`` calls, and only a claim about every leaf (an absent item) stats them all.

Zarr-free: ``locate`` in a later process checks entries before importing zarr
(model/search/saved_locate.py).
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import struct
import threading
import time
import zipfile
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO

import numpy as np
from numpy.lib import format as npy_format

from ecpfs_viewer.model.storage.helper_stats import HelperStats, helper_possible
from ecpfs_viewer.model.storage.path_list import PathList
from ecpfs_viewer.model.storage.side_by_side import COLD_SECONDS, in_order, looks_cold

if TYPE_CHECKING:
    from ecpfs_viewer.model.storage.disk_cache import EntryPart

#: Owner of a stamped path that every answer of an entry depends on.
ALWAYS = -1
_FIELDS = 5  # st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns
#: The values of one stamp (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns).
STAMP_FIELDS = _FIELDS
#: Stamps checked one after another, a block at a time, while the disk answers from its cache (a
#: stat is microseconds there, and threads only hand the interpreter lock back and forth: 600,000
#: leaf documents 2.4 s one after another, 3.6 s by eight threads). When the median of the first
#: PROBE_STATS took more than STAT_COLD_SECONDS (side_by_side.looks_cold: a cold disk, where a stat
#: waits on the device with the lock released and the device serves several at once) and at least
#: PARALLEL_STATS are left, the rest are checked by STAT_THREADS threads. Many stamps of a warm disk
#: are split with a second process instead (HELPER_STATS below), which has an interpreter lock of its own.
PROBE_STATS = 256
STAT_BLOCK = 4096
STAT_COLD_SECONDS = COLD_SECONDS
PARALLEL_STATS = 4096
STAT_THREADS = 8
#: stamps left after the probe of a warm disk past which a second process checks half of them
#: (model/storage/helper_stats.py: starting the helper costs about what 15,000 stats do)
HELPER_STATS = 50_000
#: paths stamped at a time: their stat rows, as Python tuples, cost about 250 bytes each until copied
#: into the stamps' array (600,000 documents of a 10M index's leaves: 360 MB at once)
STAMP_BLOCK = 32_768
_ABSENT = (-1,) * _FIELDS
_MAGIC = b"ECPFSENT"
_HEAD = struct.Struct("<8sIQ")  # magic, format, length of the stamps that follow


def stat_row(path: str) -> tuple[int, ...]:
    """A file's stamp row (st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns); all -1 when it cannot be statted."""
    try:
        info = os.stat(path)
    except OSError:
        return _ABSENT
    return row_of(info)


def row_of(info: os.stat_result | None) -> tuple[int, ...]:
    """The stamp row of a stat result (an open file's fstat); all -1 for None (no such file)."""
    if info is None:
        return _ABSENT
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def digest_pair(*parts: bytes) -> tuple[int, int]:
    """A 16-byte BLAKE2b digest of parts (in order) as the two int64 fields of a stamp row."""
    digest = hashlib.blake2b(digest_size=16)
    for part in parts:
        digest.update(part)
    raw = digest.digest()
    return int.from_bytes(raw[:8], "little", signed=True), int.from_bytes(raw[8:], "little", signed=True)


@dataclass(frozen=True)
class Stamps:
    """The stamps of the paths (relative to the store's base) an entry was derived from."""

    kind: str  # "local" (below a folder), "zip" (members: model/storage/zip_stamps.py), "remote"
    # (remote_stamps.py), "http" (model/ecpfs/http_stamps.py)
    paths: Sequence[str]  # held as a PathList, whatever sequence is given
    owners: np.ndarray  # int64 per path
    values: np.ndarray  # int64 (paths, 5)

    def __post_init__(self) -> None:
        object.__setattr__(self, "paths", PathList.of(self.paths))

    @property
    def path_list(self) -> PathList:
        assert isinstance(self.paths, PathList)
        return self.paths

    @staticmethod
    def joined(parts: Iterable[Stamps | None]) -> Stamps | None:
        """The stamps of several reads as one; None when any read could not be stamped."""
        kept = Stamps.joinable(parts)
        if kept is None:
            return None
        return Stamps(kept[0].kind, PathList.joined([p.path_list for p in kept]),
                      np.concatenate([p.owners for p in kept]), np.concatenate([p.values for p in kept]))

    @staticmethod
    def joinable(parts: Iterable[Stamps | None]) -> list[Stamps] | None:
        """The stamps of several reads, to be saved as one (:func:`frame_parts` joins them as it writes
        them); None when any read could not be stamped."""
        found = list(parts)
        kept = [p for p in found if p is not None]
        if not kept or len(kept) != len(found) or len({p.kind for p in kept}) != 1:
            return None
        return kept

    def subset(self, owners: Sequence[int]) -> Stamps:
        """The stamps of the given owners' paths and of those every answer depends on."""
        picked = np.flatnonzero(np.isin(self.owners, np.asarray([ALWAYS, *owners], np.int64)))
        return Stamps(self.kind, self.path_list.taken(picked), self.owners[picked], self.values[picked])

    def unchanged(self, base: str, owners: Sequence[int] | None = None) -> bool:
        """Whether every path of the given owners (and those every answer depends on) still has
        its stamp; all paths when owners is None. A batch of os.stat calls (a zip's stamps are
        checked against its central directory instead: model/storage/zip_stamps.py)."""
        if self.kind == "zip":
            return False
        if owners is None:
            return rows_unchanged(base, self.path_list.strings(), self.values)
        picked = np.flatnonzero(np.isin(self.owners, np.asarray([ALWAYS, *owners], np.int64)))
        return rows_unchanged(base, self.path_list.strings(picked), self.values[picked])

    def to_bytes(self) -> memoryview:
        """The stamps as an .npz (what :meth:`from_bytes` reads), in memory."""
        out = io.BytesIO()
        write_joined([self], out)
        return out.getbuffer()

    @classmethod
    def from_bytes(cls, data: bytes) -> Stamps:
        """Stamps saved by :meth:`to_bytes`; ValueError for anything else."""
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as saved:
                kind = saved["kind"].tobytes().decode()
                paths = PathList.read_back(saved["path_bytes"].tobytes(), saved["path_offsets"])
                owners, values = saved["owners"], saved["values"]
        except (OSError, EOFError, KeyError, ValueError, UnicodeDecodeError, zipfile.BadZipFile) as exc:
            raise ValueError(f"not stamps: {exc}") from None
        if (kind not in ("local", "zip", "remote", "http") or owners.dtype != np.int64 or values.dtype != np.int64
                or owners.shape != (len(paths),) or values.shape != (len(paths), _FIELDS)):
            raise ValueError("not stamps: their arrays do not agree")
        return cls(kind, paths, owners, values)


def rows_unchanged(base: str, paths: Sequence[str], values: np.ndarray) -> bool:
    """Whether each path (below base) still has its row of stamp values, stopping at the first
    change: a block at a time in this thread (half of many in a helper process meanwhile), by
    several threads once the disk is seen to be cold (the constants above)."""
    prefix = base + os.sep if base else ""
    count = len(paths)
    probed = min(count, PROBE_STATS)
    rows, cold = _probe(prefix, paths[:probed])
    if not np.array_equal(rows, values[:probed]):
        return False
    if not cold:
        if count - probed >= HELPER_STATS and helper_possible():
            return _match_with_helper(prefix, paths, values, probed, count)
        return _match(prefix, paths, values, probed, count, None)
    if count - probed < PARALLEL_STATS:
        return _match(prefix, paths, values, probed, count, None)
    changed = threading.Event()
    step = -(-(count - probed) // (4 * STAT_THREADS))
    with ThreadPoolExecutor(STAT_THREADS, thread_name_prefix="stamps") as pool:
        found = list(pool.map(lambda start: _match(prefix, paths, values, start, min(start + step, count), changed),
                              range(probed, count, step)))
    return all(found)


def _probe(prefix: str, paths: Sequence[str]) -> tuple[np.ndarray, bool]:
    """The stamp rows of the first paths of many, statted one after another, and whether their
    times say the disk is cold (STAT_COLD_SECONDS)."""
    took: list[float] = []
    rows: list[tuple[int, ...]] = []
    for path in paths:
        started = time.perf_counter()
        rows.append(stat_row(prefix + path))
        took.append(time.perf_counter() - started)
    return np.array(rows, dtype=np.int64).reshape(len(rows), _FIELDS), looks_cold(took, STAT_COLD_SECONDS)


def _match_with_helper(prefix: str, paths: Sequence[str], values: np.ndarray, start: int, stop: int) -> bool:
    """Whether paths[start:stop] have their rows, the second half statted by a helper process
    meanwhile (its rows compared at once); that half statted here when the helper fails."""
    middle = start + (stop - start) // 2
    with HelperStats(prefix, paths[middle:stop]) as helper:
        if not _match(prefix, paths, values, start, middle, None):
            return False
        rows = helper.rows()
    if rows is None:
        return _match(prefix, paths, values, middle, stop, None)
    return np.array_equal(rows, values[middle:stop])


def _match(prefix: str, paths: Sequence[str], values: np.ndarray, start: int, stop: int,
           changed: threading.Event | None) -> bool:
    """Whether paths[start:stop] have their rows, compared a block at a time (every row is
    statted first, then the block compared at once); False as soon as another thread (changed)
    found one that differs."""
    for block in range(start, stop, STAT_BLOCK):
        if changed is not None and changed.is_set():
            return False
        end = min(block + STAT_BLOCK, stop)
        now = np.array([stat_row(prefix + paths[i]) for i in range(block, end)], dtype=np.int64)
        if not np.array_equal(now, values[block:end]):  # False too when the shapes differ
            if changed is not None:
                changed.set()
            return False
    return True


def stamp_local(folder: str, groups: Sequence[tuple[str, int]], *, walk: bool = True) -> Stamps:
    """The stamps of each (path, owner) below a local folder; with walk, a path that is a folder
    stands for every file below it (its subfolders are not stamped: a chunk added where there
    was none comes with a changed array document), else for itself (a level's folder)."""
    base = folder + os.sep
    if not walk:  # each path stands for itself
        return Stamps("local", tuple(path for path, _ in groups), np.asarray([owner for _, owner in groups], np.int64),
                      _single_files(base, [path for path, _ in groups]))
    paths: list[str] = []
    owners: list[int] = []
    rows: list[tuple[int, ...]] = []
    for path, owner in groups:
        found = _files_below(base + path, path)
        for relative in found if found is not None else [path]:
            paths.append(relative)
            owners.append(owner)
            rows.append(stat_row(base + relative))
    return Stamps("local", tuple(paths), np.asarray(owners, np.int64),
                  np.asarray(rows, np.int64).reshape(len(rows), _FIELDS))


def _single_files(prefix: str, paths: Sequence[str]) -> np.ndarray:
    """The stamp rows of paths below prefix, each a file of its own: statted side by side from a
    cold disk (side_by_side.in_order); from a warm one, when many are left after the probe, the
    second half by a helper process meanwhile (as :func:`rows_unchanged` checks them)."""
    count = len(paths)
    values = np.empty((count, _FIELDS), np.int64)
    if count - PROBE_STATS < HELPER_STATS or not helper_possible():  # in_order's own probe decides
        _stat_blocks(prefix, paths, values, 0, count)  # (a probe of 256 stats here was 256 cold stats in a row)
        return values
    probed = PROBE_STATS
    values[:probed], cold = _probe(prefix, paths[:probed])
    if cold:
        _stat_blocks(prefix, paths, values, probed, count)
        return values
    middle = probed + (count - probed) // 2
    with HelperStats(prefix, paths[middle:]) as helper:
        _stat_blocks(prefix, paths, values, probed, middle)
        rows = helper.rows()
    if rows is None:
        _stat_blocks(prefix, paths, values, middle, count)
    else:
        values[middle:] = rows
    return values


def _stat_blocks(prefix: str, paths: Sequence[str], values: np.ndarray, start: int, stop: int) -> None:
    """Stat paths[start:stop] into values, STAMP_BLOCK at a time (each block's rows are Python
    tuples until copied)."""
    for low in range(start, stop, STAMP_BLOCK):
        high = min(low + STAMP_BLOCK, stop)
        values[low:high] = in_order([functools.partial(stat_row, prefix + paths[at]) for at in range(low, high)])


def _files_below(top: str, relative: str) -> list[str] | None:
    """The files below a folder (relative paths, sorted), None when top is not a folder."""
    found: list[str] = []
    pending = [(top, relative)]
    first = True
    while pending:
        directory, name = pending.pop()
        try:
            with os.scandir(directory) as entries:
                listed = list(entries)
        except NotADirectoryError:
            return None if first else found
        except OSError:
            if first:
                return None
            continue
        first = False
        for entry in listed:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                pending.append((entry.path, f"{name}/{entry.name}"))
            else:
                found.append(f"{name}/{entry.name}")
    return sorted(found)


def frame_parts(data: EntryPart, stamps: Stamps | Sequence[Stamps]) -> tuple[EntryPart, EntryPart]:
    """An entry's bytes with what they were derived from in front (the stamps of one read, or of
    several joined as they are written), as parts written one after another into the entry's file:
    neither the entry nor its stamps is made in memory first (at 10M items the stamps joined and
    then written to a buffer were each 110 MB of the map's peak)."""
    parts = [stamps] if isinstance(stamps, Stamps) else list(stamps)

    def stamped(handle: BinaryIO) -> None:
        start = handle.tell()
        handle.write(_HEAD.pack(_MAGIC, 1, 0))
        write_joined(parts, handle)
        end = handle.tell()
        handle.seek(start)
        handle.write(_HEAD.pack(_MAGIC, 1, end - start - _HEAD.size))
        handle.seek(end)

    return stamped, data


def write_joined(parts: Sequence[Stamps], handle: BinaryIO) -> None:
    """The stamps of ``parts`` (at least one, of one kind), in order, as the one .npz
    :meth:`Stamps.from_bytes` reads, written into ``handle`` a part at a time (seekable), each array's
    bytes flat."""
    shifts = np.concatenate([[0], np.cumsum([len(p.path_list.blob) for p in parts])]).tolist()
    rows = sum(len(p.owners) for p in parts)
    members: list[tuple[str, np.dtype, tuple[int, ...], Iterable[np.ndarray | bytes]]] = [
        ("kind", np.dtype(np.uint8), (len(parts[0].kind.encode()),), [parts[0].kind.encode()]),
        ("path_bytes", np.dtype(np.uint8), (int(shifts[-1]),), (p.path_list.blob for p in parts)),
        ("path_offsets", np.dtype(np.int64), (rows + 1,),
         [*(p.path_list.offsets[:-1] + shift for p, shift in zip(parts, shifts, strict=False)),
          np.asarray([shifts[-1]], np.int64)]),
        ("owners", np.dtype(np.int64), (rows,), (p.owners for p in parts)),
        ("values", np.dtype(np.int64), (rows, _FIELDS), (p.values for p in parts))]
    with zipfile.ZipFile(handle, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, dtype, shape, pieces in members:
            with archive.open(f"{name}.npy", "w", force_zip64=True) as out:
                npy_format.write_array_header_2_0(out, {"descr": npy_format.dtype_to_descr(dtype),
                                                        "fortran_order": False, "shape": shape})
                for piece in pieces:
                    flat = piece if isinstance(piece, bytes) else np.ascontiguousarray(piece, dtype).reshape(-1)
                    out.write(memoryview(flat).cast("B"))


def _stamps_size(head: bytes, available: int) -> int | None:
    """The length of the stamps a framed entry's head announces, None when it is not one's head or
    announces more than the ``available`` bytes after it."""
    if len(head) < _HEAD.size:
        return None
    magic, version, size = _HEAD.unpack_from(head)
    return size if magic == _MAGIC and version == 1 and size <= available else None


def unframe_entry(raw: bytes) -> tuple[bytes, Stamps] | None:
    """(data, stamps) of a framed entry; None for anything else (an entry of an older viewer, a damaged one)."""
    size = _stamps_size(raw, len(raw) - _HEAD.size)
    if size is None:
        return None
    try:
        stamps = Stamps.from_bytes(raw[_HEAD.size:_HEAD.size + size])
    except ValueError:
        return None
    return raw[_HEAD.size + size:], stamps


def read_framed_stamps(handle: BinaryIO) -> Stamps | None:
    """The stamps at the head of a framed entry's file, the file left where its data starts; None for
    anything else. The stamps' length is checked against the file's before they are read."""
    try:
        size = _stamps_size(handle.read(_HEAD.size), os.fstat(handle.fileno()).st_size - _HEAD.size)
        if size is None:
            return None
        return Stamps.from_bytes(handle.read(size))
    except (OSError, ValueError):
        return None
