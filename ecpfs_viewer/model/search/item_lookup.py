"""The item map of an index as one file of the cache folder that a later process memory-maps:
``locate`` of one item reads a few pages of it (a binary search of the sorted ids) and stats only
the documents its answer depends on, whatever the size of the index.

The file holds the map (item ids ascending, each one's leaf and row) and the stamps of the
documents it was made from, sorted by owner (model/storage/stamps.py), so that the stamps of one
leaf are one contiguous run found by a binary search too. A present item's answer is checked
against its leaf's stamps and those every answer depends on (the leaf level's folder: a leaf
added, removed or renamed); an absent item's against every stamp (any leaf's item_ids may have
been rewritten in place to hold it), statted in parallel.

The item ids, leaves and rows are kept in the types the map holds them in (uint32 ids, int32
leaves and rows where every one fits: 12 bytes an item, not 24), named in the header. The file
is written whole and renamed into place (StoreCache.write); one that does not read back with the
layout its header gives is not answered from. Zarr-free (model/search/saved_locate.py).
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ecpfs_viewer.model.search.item_map import ItemMap, narrowed
from ecpfs_viewer.model.storage.disk_cache import EntryPart
from ecpfs_viewer.model.storage.stamps import ALWAYS, STAMP_FIELDS, Stamps, rows_unchanged

_MAGIC = b"ECPFSLKP"
_VERSION = 2  # 1 kept every array as int64
_HEAD = struct.Struct("<8sIQ")  # magic, version, length of the JSON header that follows
_ALIGN = 8
_WIDEN_STEP = 1 << 20
_UINT32_MAX = int(np.iinfo(np.uint32).max)
#: the types the item ids, leaves and rows may be kept in (any other is written as int64)
_ITEM_TYPES = frozenset({"<u4", "<i4", "<i8"})


def _pad(size: int) -> int:
    return -size % _ALIGN


def lookup_parts(item_map: ItemMap, stamps: Stamps) -> list[EntryPart]:
    """The file of a complete map and the stamps of what it was made from, as parts written one
    after another (the arrays' own memory where it is laid out as the file's, else written as int64
    a step at a time: copied and then joined, a large map was two transient copies of itself)."""
    order = np.argsort(stamps.owners, kind="stable")
    paths = stamps.path_list.taken(order)  # their bytes and offsets as this file lays them out
    blob, offsets = paths.blob, paths.offsets
    items = (item_map.item_ids, item_map.leaves, item_map.rows)
    types = [_kept_type(array) for array in items]
    header = json.dumps({"kind": stamps.kind, "items": len(item_map), "stamps": len(paths),
                         "blob": len(blob), "types": types}).encode()
    head = _HEAD.pack(_MAGIC, _VERSION, len(header)) + header
    parts: list[EntryPart] = [head, b"\0" * _pad(len(head))]
    for array, kept in zip(items, types, strict=True):
        parts.append(_part(array, np.dtype(kept)))
        parts.append(b"\0" * _pad(len(array) * np.dtype(kept).itemsize))
    for array in (stamps.owners[order], stamps.values[order], offsets):
        parts.append(_part(array, np.dtype("<i8")))
    parts.append(blob)
    return parts


def _kept_type(array: np.ndarray) -> str:
    """The type an item array is kept in: its own where the file may hold it, else int64."""
    kept = array.dtype.newbyteorder("<").str
    return kept if kept in _ITEM_TYPES else "<i8"


def _part(array: np.ndarray, kept: np.dtype) -> EntryPart:
    """The array's own memory where it is laid out as the file keeps it, else widened to int64."""
    if array.dtype == kept:
        return memoryview(np.ascontiguousarray(array)).cast("B")
    return _widened(array)


def _copied(mapped: np.ndarray) -> np.ndarray:
    """Leaves or rows out of the file, as int32 where they fit (never the file's own memory)."""
    held = narrowed(mapped)
    return np.array(held) if held is mapped else held


def _widened(array: np.ndarray) -> Callable[[BinaryIO], None]:
    """A part that writes the array as int64 a step at a time (a type the file does not keep)."""
    def write(handle: BinaryIO) -> None:
        flat = array.reshape(-1)
        for low in range(0, len(flat), _WIDEN_STEP):
            handle.write(memoryview(flat[low:low + _WIDEN_STEP].astype(np.int64)).cast("B"))
    return write


class MappedLookup:
    """A lookup file opened read-only through a memory map (see the module's docstring)."""

    def __init__(self, kind: str, ids: np.ndarray, leaves: np.ndarray, rows: np.ndarray, owners: np.ndarray,
                 values: np.ndarray, offsets: np.ndarray, blob: np.ndarray) -> None:
        self.kind = kind
        self.ids, self.leaves, self.rows = ids, leaves, rows
        self.owners, self.values, self.offsets, self.blob = owners, values, offsets, blob

    @classmethod
    def open(cls, path: Path) -> MappedLookup | None:
        """The lookup file at path; None when there is none or it is not one."""
        try:
            with open(path, "rb") as handle:
                head = handle.read(_HEAD.size)
                if len(head) < _HEAD.size:
                    return None
                magic, version, length = _HEAD.unpack(head)
                if magic != _MAGIC or version != _VERSION or length > 1 << 16:
                    return None
                header = json.loads(handle.read(length))
                size = os.fstat(handle.fileno()).st_size
            kind, items, count, blob = str(header["kind"]), int(header["items"]), int(header["stamps"]), \
                int(header["blob"])
            types = [np.dtype(str(t)) for t in header["types"]] if header["types"] and all(
                str(t) in _ITEM_TYPES for t in header["types"]) else []
            start = _HEAD.size + length
            start += _pad(start)
            item_bytes = [items * t.itemsize + _pad(items * t.itemsize) for t in types] if items >= 0 else []
            if len(types) != 3 or min(items, count, blob) < 0 or kind not in ("local", "zip", "remote", "http") \
                    or size != start + sum(item_bytes) + 8 * (count * (1 + STAMP_FIELDS) + count + 1) + blob:
                return None
            raw = np.memmap(path, np.uint8, mode="r") if size else np.empty(0, np.uint8)
            os.utime(path)  # recently used: evicted last
        except (OSError, ValueError, TypeError, KeyError, UnicodeDecodeError):
            return None
        arrays = []
        for kept, stored in zip(types, item_bytes, strict=True):
            arrays.append(np.frombuffer(raw, kept, items, start))
            start += stored
        for n in (count, count * STAMP_FIELDS, count + 1):
            arrays.append(np.frombuffer(raw, np.int64, n, start))
            start += 8 * n
        blob_array = np.frombuffer(raw, np.uint8, blob, start)
        ids, leaves, rows, owners, values, offsets = arrays
        if int(offsets[0]) != 0 or int(offsets[-1]) != blob:
            return None
        return cls(kind, ids, leaves, rows, owners, values.reshape(count, STAMP_FIELDS), offsets, blob_array)

    def place(self, item_id: int) -> tuple[int, int] | None:
        """(leaf, row) of an item as the map holds it (the first leaf of a duplicated id), None
        when it holds none: a binary search, a few pages read."""
        held = np.iinfo(self.ids.dtype)
        if not held.min <= item_id <= held.max:
            return None  # no id of the map's type
        at = int(np.searchsorted(self.ids, item_id))
        if at >= len(self.ids) or int(self.ids[at]) != item_id:
            return None
        leaf, row = int(self.leaves[at]), int(self.rows[at])
        if leaf < 0 or row < 0 or (at and int(self.ids[at - 1]) > item_id):
            return None  # not a map this viewer wrote: its neighbourhood out of order
        return leaf, row

    def _picked(self, owners: Sequence[int] | None) -> list[int]:
        if owners is None:
            return list(range(len(self.owners)))
        picked: list[int] = []
        for owner in sorted({ALWAYS, *owners}):
            low = int(np.searchsorted(self.owners, owner, "left"))
            high = int(np.searchsorted(self.owners, owner, "right"))
            picked.extend(range(low, high))
        return picked

    def _path(self, i: int) -> str:
        return self.blob[int(self.offsets[i]):int(self.offsets[i + 1])].tobytes().decode("utf-8", "surrogatepass")

    def unchanged(self, base: str, owners: Sequence[int] | None = None) -> bool:
        """Whether the documents of the given owners (all when None), and those every answer
        depends on, still have their stamps (a local folder's; False for any other kind)."""
        if self.kind != "local":
            return False
        picked = self._picked(owners)
        if owners is None:
            paths = self.blob.tobytes().decode("utf-8", "surrogatepass")
            cut = self.offsets.tolist()
            names = [paths[cut[i]:cut[i + 1]] for i in range(len(cut) - 1)] if paths.isascii() else \
                [self._path(i) for i in picked]
            return rows_unchanged(base, names, self.values)
        return rows_unchanged(base, [self._path(i) for i in picked], self.values[picked])

    def item_map(self) -> ItemMap | None:
        """The whole map, copied out of the file (ids as uint32 where all fit, as the leaves store
        them); None when its ids are out of order."""
        ids = self.ids
        if len(ids) and (bool((ids[1:] < ids[:-1]).any()) or int(self.leaves.min()) < 0 or int(self.rows.min()) < 0):
            return None
        fit = not len(ids) or (int(ids[0]) >= 0 and int(ids[-1]) <= _UINT32_MAX)  # ascending: the ends bound them
        return ItemMap(ids.astype(np.uint32) if fit else np.array(ids), _copied(self.leaves), _copied(self.rows))

    def stamps(self) -> Stamps:
        """The stamps of what the map was made from, copied out of the file."""
        return Stamps(self.kind, tuple(self._path(i) for i in range(len(self.owners))), np.array(self.owners),
                      np.array(self.values))
