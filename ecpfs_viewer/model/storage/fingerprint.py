"""A store's identity and fingerprint: which entries of the cache folder belong to it, and whether
they still describe it.

The fingerprint is taken from the documents a caller names (for an index: those read to open it)
each time a store is opened, and changes when any of them does: a local file's identity, size, mtime_ns and ctime_ns,
a zip member's CRC-32 and sizes in the central directory (not the archive's own mtime: a
zip re-saved with the same members keeps its cache), a remote object's validators (ETag, Last-Modified, size). A store
that gives no such evidence (a memory store, a server that sends no validators) has no
fingerprint, and nothing of it is cached.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ecpfs_viewer.model.storage.disk_cache import StoreCache
from ecpfs_viewer.model.storage.zip_stamps import ALWAYS, COMPARED, archive_directory, stamp_members

if TYPE_CHECKING:  # a local folder's identity and fingerprint are taken without zarr (saved_locate)
    from ecpfs_viewer.model.storage.opening import OpenedStore


def store_identity(opened: OpenedStore) -> str | None:
    """What names the store across processes: its resolved path or URL (with the endpoint)."""
    if opened.kind == "local" and opened.local_path is not None:
        return local_identity(opened.local_path)
    if opened.kind == "zip" and opened.archive_path is not None:
        return f"zip:{opened.archive_path.resolve()}#{opened.root}"
    options = getattr(opened.zarr_store.wrapped, "options", None)
    if opened.kind == "remote" and options is not None:
        return f"remote:{opened.label.rstrip('/')} {options.identity()}"
    return None


#: What a fingerprint read on the way, by store key: bytes, None (absent) or the failure.
Read = dict[str, bytes | Exception | None]


def store_fingerprint(opened: OpenedStore, keys: Sequence[str]) -> tuple[str | None, Read]:
    """Evidence that the documents at keys (relative to the Zarr root) are as they were, None when
    the store cannot give it; and, for a remote store, the documents as read to take it (one
    request each, the requests the opening makes anyway)."""
    if opened.kind == "local" and opened.local_path is not None:
        return local_fingerprint(opened.local_path, [opened.key(key) for key in keys]), {}
    directory = archive_directory(opened.archive_sizes) if opened.kind == "zip" else None
    if directory is not None:  # each document's member stamp: a re-saved zip of the same members keeps its cache
        members = stamp_members(directory, [(opened.key(key), ALWAYS) for key in keys], walk=False)
        return "\n".join(f"{path}:{':'.join(map(str, row))}" for path, row in  # the compared values, not the hint
                         zip(members.paths, members.values[:, COMPARED].tolist(), strict=True)), {}
    reader = getattr(opened.zarr_store.wrapped, "read_with_validators", None)
    if opened.kind != "remote" or reader is None:
        return None, {}
    found = opened.run_bounded([functools.partial(reader, opened.key(key)) for key in keys])
    read: Read = {}
    stamps: list[str | None] = []
    for key, answer in zip(keys, found, strict=True):
        if isinstance(answer, Exception):
            read[opened.key(key)] = answer
            stamps.append(None)
            continue
        read[opened.key(key)] = answer[0]
        stamps.append(None if answer[1] is None else f"{key}:{answer[1]}")
    opened.counter.add_read(sum(len(v) for v in read.values() if isinstance(v, bytes)), requests=len(keys))
    return (None if None in stamps else "\n".join(s for s in stamps if s is not None)), read


def local_identity(folder: Path) -> str:
    """The identity of the store a local folder holds (its resolved path)."""
    return f"local:{folder.resolve()}"


def local_fingerprint(folder: Path, keys: Sequence[str]) -> str:
    """The fingerprint of a local folder's documents at keys (store keys): identity, size, mtime
    and ctime of each (a rewrite whose size and mtime were put back still changes the ctime)."""
    return "\n".join(_file_stamp(os.path.join(folder, key)) for key in keys)


def _file_stamp(path: str) -> str:
    try:
        info = os.stat(path)
    except OSError:
        return f"{path}:absent"
    return f"{path}:{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"


def store_cache(opened: OpenedStore, keys: Sequence[str]) -> tuple[StoreCache | None, Read]:
    """The cache entries of the store as it is now (those of an earlier state deleted), None when
    the store has no identity or fingerprint (nothing of it may be kept); and what was read to
    tell (see :func:`store_fingerprint`)."""
    identity = store_identity(opened)
    if identity is None:
        return None, {}
    fingerprint, read = store_fingerprint(opened, keys)
    return (None if fingerprint is None else StoreCache(identity, fingerprint)), read
