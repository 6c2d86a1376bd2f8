"""The stamps of what was read from a zip, member by member, from its central directory.

The directory is read anyway to open the zip (model/storage/zip_directory.py), so stamping and
checking cost no read: a member's stamp is its CRC-32 and its stored and declared sizes, what
its bytes are, not where they lie: its local header offset is left out, so that one member grown
or shrunk does not shift every member after it out of its facts (and a zip re-saved in another
order keeps them; each read goes through the offsets of the directory it checked). A row also
keeps the member's place in the sorted directory, a hint only (not compared): an unchanged zip
is checked without a search per member.
A folder stamped for itself (a level's, whose entries an answer depends on) is stamped by the
names directly below it. A zip rewritten with two leaf folders swapped changes the CRCs of
their members; a zip re-saved with the same members keeps every stamp, and one member changed
makes stale only what was derived from it. Members are read only when their bytes match the CRC
declared here (model/storage/zip_store.py), so what was read is what was stamped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from ecpfs_viewer.model.storage.stamps import ALWAYS, STAMP_FIELDS, Stamps
from ecpfs_viewer.model.storage.zip_directory import StoredSizes, ZipDirectory

_MEMBER, _FOLDER = 1, 2  # the last value of a row: what the row stamps
_HINT = 3  # the column of a member's place in the directory: where to look first, never compared
COMPARED = [0, 1, 2, 4]  # the columns a stamp is compared on
_NO_MEMBER = (-1, -1, -1, -1, _MEMBER)
_EMPTY_FOLDER = (0, 0, 0, 0, _FOLDER)  # nothing below it: a member added there changes it
assert len(_NO_MEMBER) == STAMP_FIELDS

__all__ = ["ALWAYS", "COMPARED", "archive_directory", "members_unchanged", "stamp_members"]


def archive_directory(sizes: object) -> ZipDirectory | None:
    """The central directory an opened zip's listing was read from (its ``archive_sizes``)."""
    return sizes.directory if isinstance(sizes, StoredSizes) else None


def _member_row(directory: ZipDirectory, index: int) -> tuple[int, ...]:
    return (int(directory.crc[index]), int(directory.compressed[index]), int(directory.size[index]), index, _MEMBER)


def _folder_row(directory: ZipDirectory, key: str) -> tuple[int, ...]:
    """The names directly below a folder, as a digest: an entry added, removed or renamed changes it."""
    names = list(directory.children(key))
    if not names:
        return _EMPTY_FOLDER
    digest = hashlib.blake2b("\n".join(names).encode("utf-8", "surrogateescape"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True), len(names), 0, 0, _FOLDER


def stamp_members(directory: ZipDirectory, groups: Sequence[tuple[str, int]], *, walk: bool = True) -> Stamps:
    """The stamps of each (key, owner) of a zip (keys are member names): a member stands for itself;
    a folder, with walk, for every member below it (its rows taken from the directory's arrays at
    once), else (and a key with nothing below it) for the names directly below it."""
    paths: list[str] = []
    owners: list[np.ndarray] = []
    rows: list[np.ndarray] = []
    for key, owner in groups:
        first, stop = directory.span(key.rstrip("/") + "/") if walk else (0, 0)
        if stop > first:
            names = [directory.name(i) for i in range(first, stop)]
            found = np.stack([directory.crc[first:stop].astype(np.int64), directory.compressed[first:stop],
                              directory.size[first:stop], np.arange(first, stop, dtype=np.int64),
                              np.full(stop - first, _MEMBER, np.int64)], axis=1)
        else:
            index = directory.find(key)
            # a member; else a folder stamped for itself, or a key with nothing below it (a member added changes it)
            found = np.asarray([_folder_row(directory, key) if index is None else _member_row(directory, index)],
                               np.int64)
            names = [key]
        paths.extend(names)
        owners.append(np.full(len(names), owner, np.int64))
        rows.append(found)
    return Stamps("zip", tuple(paths), np.concatenate(owners) if owners else np.zeros(0, np.int64),
                  np.concatenate(rows) if rows else np.zeros((0, STAMP_FIELDS), np.int64))


def _place(directory: ZipDirectory, key: str, hint: int) -> int:
    """Where the member named key is in the directory (-1: nowhere), looking at the hint first."""
    if 0 <= hint < len(directory) and directory[hint] == key.encode("utf-8", "surrogateescape"):
        return hint
    found = directory.find(key)
    return -1 if found is None else found


def members_unchanged(directory: ZipDirectory, stamps: Stamps, owners: Sequence[int] | None = None) -> bool:
    """Whether every stamped key of the given owners (and of ALWAYS; all when None) still has its
    stamp in the directory: the zip as this process reads it."""
    if owners is None:
        picked = np.arange(len(stamps.paths))
    else:
        picked = np.flatnonzero(np.isin(stamps.owners, np.asarray([ALWAYS, *owners], np.int64)))
    values = stamps.values[picked]
    folders = values[:, -1] == _FOLDER
    for path, row in zip(stamps.path_list.strings(picked[folders]), values[folders].tolist(), strict=True):
        if _folder_row(directory, path) != tuple(row):
            return False
    members = values[~folders]
    at = np.fromiter((_place(directory, path, hint) for path, hint in
                      zip(stamps.path_list.strings(picked[~folders]), members[:, _HINT].tolist(), strict=True)),
                     np.int64, len(members))
    held = at >= 0
    now = np.full((len(members), STAMP_FIELDS), -1, np.int64)
    now[held, 0] = directory.crc[at[held]]
    now[held, 1] = directory.compressed[at[held]]
    now[held, 2] = directory.size[at[held]]
    now[:, -1] = _MEMBER
    return bool(np.array_equal(now[:, COMPARED], members[:, COMPARED]))
