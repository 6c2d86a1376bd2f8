"""A zip's central directory, read once and kept compactly: one bytes object of sorted names with an
array of where each starts, and the sizes, offsets, methods, flags and CRCs as numpy arrays.

python's zipfile makes a ZipInfo per member (about a kilobyte each with its name); a zip of an index
with its chunks can hold hundreds of thousands of members, so the viewer reads the directory itself.
Names are kept as UTF-8 in byte order, which is code-point order: a key is found, and a prefix
listed, by bisection. A name given twice answers with its last entry, as zipfile does.
"""

from __future__ import annotations

import bisect
import os
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

_END = struct.Struct("<4s4H2LH")  # end of central directory record
_END64 = struct.Struct("<4sQ2H2L4Q")  # its ZIP64 form
_LOCATOR64 = struct.Struct("<4sLQL")  # where the ZIP64 end record is
_ENTRY_SIZE = 46  # fixed part of a central directory entry
_ENTRY = np.dtype([("signature", "<u4"), ("made_by", "<u2"), ("needed", "<u2"), ("flags", "<u2"),
                   ("method", "<u2"), ("time", "<u2"), ("date", "<u2"), ("crc", "<u4"),
                   ("compressed", "<u4"), ("size", "<u4"), ("name_length", "<u2"), ("extra_length", "<u2"),
                   ("comment_length", "<u2"), ("disk", "<u2"), ("internal", "<u2"), ("external", "<u4"),
                   ("offset", "<u4")])
assert _ENTRY.itemsize == _ENTRY_SIZE
_ENTRY_SIGNATURE = 0x02014B50
_BLOCK = 8 << 20  # the central directory is parsed a block at a time
_MAX_COMMENT = 0xFFFF
_FLAG_UTF8 = 0x800
_U32 = 0xFFFFFFFF


class ZipFormatError(ValueError):
    """The file is not a zip whose central directory can be read; the message says what is wrong."""


class NoEndRecord(ZipFormatError):
    """The file has no end-of-archive record: a truncated zip, or no zip at all."""


@dataclass(frozen=True)
class Member:
    """One member as its central directory entry declares it."""

    name: str
    header_offset: int
    compressed: int
    size: int
    crc: int
    method: int
    flags: int


class ZipDirectory:
    """The members of a zip, sorted by name (directory entries, names ending in '/', left out)."""

    def __init__(self, names: bytes, starts: np.ndarray, fields: dict[str, np.ndarray]) -> None:
        self.names = names
        self.starts = starts  # int64, one more than members: name i is names[starts[i]:starts[i + 1]]
        self.header_offset: np.ndarray = fields["header_offset"]  # int64, the member's local header
        self.compressed: np.ndarray = fields["compressed"]  # int64, bytes stored
        self.size: np.ndarray = fields["size"]  # int64, bytes once decompressed, as declared
        self.crc: np.ndarray = fields["crc"]  # uint32
        self.method: np.ndarray = fields["method"]  # uint16: 0 stored, 8 deflated, ...
        self.flags: np.ndarray = fields["flags"]  # uint16: bit 0 encrypted
        self.start_of_directory = 0  # where the central directory begins in the file
        self._starts = memoryview(starts)  # scalar reads as Python ints, for bisection

    def __len__(self) -> int:
        return len(self.starts) - 1

    def __getitem__(self, index: int) -> bytes:
        return self.names[self._starts[index]:self._starts[index + 1]]

    def nbytes(self) -> int:
        """The memory the listing takes."""
        arrays = (self.starts, self.header_offset, self.compressed, self.size, self.crc, self.method, self.flags)
        return len(self.names) + sum(a.nbytes for a in arrays)

    # -- lookups ------------------------------------------------------------------------------------
    def find(self, key: str) -> int | None:
        """The position of the member named key, None when there is none."""
        wanted = key.encode("utf-8", "surrogateescape")
        at = bisect.bisect_left(self, wanted)
        return at if at < len(self) and self[at] == wanted else None

    def member(self, index: int) -> Member:
        return Member(self.name(index), int(self.header_offset[index]), int(self.compressed[index]),
                      int(self.size[index]), int(self.crc[index]), int(self.method[index]), int(self.flags[index]))

    def name(self, index: int) -> str:
        return self[index].decode("utf-8", "surrogateescape")

    def span(self, prefix: str) -> tuple[int, int]:
        """[first, stop) of the members whose names start with prefix."""
        if not prefix:
            return 0, len(self)
        wanted = prefix.encode("utf-8", "surrogateescape")
        first = bisect.bisect_left(self, wanted)
        return first, bisect.bisect_left(self, _after_all_starting_with(wanted), first)

    def names_below(self, prefix: str) -> Iterator[str]:
        """The names that start with prefix, in order."""
        first, stop = self.span(prefix)
        for index in range(first, stop):
            yield self.name(index)

    def children(self, prefix: str) -> Iterator[str]:
        """The distinct first parts of the names below the folder prefix ('' for the top), in order;
        one bisection per child, however many members each holds."""
        folder = prefix.strip("/")
        head = (folder + "/").encode("utf-8", "surrogateescape") if folder else b""
        index, stop = self.span(head.decode("utf-8", "surrogateescape"))
        while index < stop:
            rest = self[index][len(head):]
            child = rest.split(b"/", 1)[0]
            if child:
                yield child.decode("utf-8", "surrogateescape")
                index = bisect.bisect_left(self, head + child + b"0", index + 1, stop)  # '0' follows '/'
            else:  # a name with '//' or ending at the folder itself: no child
                index += 1

    def stored_sizes(self) -> StoredSizes:
        return StoredSizes(self)

    # -- reading ------------------------------------------------------------------------------------
    @classmethod
    def read(cls, file: BinaryIO, size: int) -> ZipDirectory:
        """The central directory of the zip open as file (of size bytes); ZipFormatError when there is none
        or it does not hold together."""
        directory_size, directory_offset, end_at = _end_record(file, size)
        # a zip with something before it (a self-extractor): offsets are counted from its start
        start = end_at - directory_size
        concat = start - directory_offset
        if start < 0 or concat < 0:
            raise ZipFormatError(f"the central directory ({directory_size:,} bytes at {directory_offset:,}) "
                                 f"does not fit in the file")
        parts = _Parts()
        file.seek(start)
        carry = b""
        remaining = directory_size
        while remaining > 0:  # the entries are counted as found: zipfile does not trust the count either
            block = file.read(min(_BLOCK, remaining))
            if not block:
                raise ZipFormatError("the file ends inside its central directory")
            remaining -= len(block)
            data = carry + block
            carry = data[parts.parse(data):]
        if carry:
            raise ZipFormatError(f"{len(carry):,} bytes at the end of the central directory are not an entry")
        directory = parts.finish(concat)
        directory.start_of_directory = start
        return directory


def _after_all_starting_with(prefix: bytes) -> bytes:
    """The least byte string greater than every string that starts with prefix (prefix non-empty)."""
    trimmed = prefix.rstrip(b"\xff")
    return trimmed[:-1] + bytes([trimmed[-1] + 1]) if trimmed else b"\xff" * (len(prefix) + 1)


def _end_record(file: BinaryIO, size: int) -> tuple[int, int, int]:
    """(central directory size, its declared offset, where the end records begin)."""
    if size < _END.size:
        raise NoEndRecord(f"no end-of-archive record (central directory) in its {size:,} bytes; "
                          "it is probably truncated or not a zip")
    tail_start = max(0, size - _END.size - _MAX_COMMENT)
    file.seek(tail_start)
    tail = file.read(size - tail_start)
    at = len(tail) - _END.size
    while True:
        at = tail.rfind(b"PK\x05\x06", 0, at + 4)
        if at < 0:
            raise NoEndRecord(f"no end-of-archive record (central directory) in its {size:,} bytes; "
                              "it is probably truncated or not a zip")
        record = _END.unpack_from(tail, at)
        if at + _END.size + record[7] <= len(tail):  # its comment fits in the file
            break
        at -= 1
    directory_size, directory_offset = record[5], record[6]
    end_at = tail_start + at
    locator_at = end_at - _LOCATOR64.size
    if locator_at >= 0:
        file.seek(locator_at)
        locator = file.read(_LOCATOR64.size)
        if locator[:4] == b"PK\x06\x07":
            _s, _d, end64_offset, _disks = _LOCATOR64.unpack(locator)
            end64_at = locator_at - _END64.size
            file.seek(end64_at)
            end64 = file.read(_END64.size)
            if end64_at < 0 or end64[:4] != b"PK\x06\x06":
                raise ZipFormatError(f"the ZIP64 end record (declared at {end64_offset:,}) is not there")
            fields = _END64.unpack(end64)
            return fields[8], fields[9], end64_at
    return directory_size, directory_offset, end_at


class _Parts:
    """The entries parsed so far, block by block."""

    def __init__(self) -> None:
        self.fixed: list[np.ndarray] = []
        self.name_list: list[bytes] = []
        self.count = 0

    def parse(self, data: bytes) -> int:
        """Parse the whole entries at the start of data; how many bytes they take."""
        positions: list[int] = []
        unpack = struct.Struct("<3H").unpack_from
        at, end = 0, len(data)
        while at + _ENTRY_SIZE <= end:
            name_length, extra_length, comment_length = unpack(data, at + 28)
            following = at + _ENTRY_SIZE + name_length + extra_length + comment_length
            if following > end:
                break
            positions.append(at)
            at = following
        if not positions:
            return 0
        where = np.asarray(positions, dtype=np.int64)
        raw = np.frombuffer(data, dtype=np.uint8)
        gathered = np.empty((len(where), _ENTRY_SIZE), dtype=np.uint8)
        for column in range(_ENTRY_SIZE):  # a column at a time: one index per entry, not 46
            gathered[:, column] = raw[where + column]
        fixed = gathered.view(_ENTRY).reshape(-1)
        bad = np.flatnonzero(fixed["signature"] != _ENTRY_SIGNATURE)
        if len(bad):
            raise ZipFormatError(f"central directory entry {self.count + int(bad[0]) + 1:,} has no entry signature")
        utf8 = (fixed["flags"] & _FLAG_UTF8) != 0
        names = self.name_list
        for index, (position, length) in enumerate(zip(positions, fixed["name_length"].tolist(), strict=True)):
            name = data[position + _ENTRY_SIZE:position + _ENTRY_SIZE + length]
            if not name.isascii() or b"\0" in name:
                name = utf8_name(name, bool(utf8[index]))
            names.append(name)
        wide = np.flatnonzero((fixed["compressed"] == _U32) | (fixed["size"] == _U32) | (fixed["offset"] == _U32))
        self.fixed.append(_with_zip64(fixed, wide, data, positions))
        self.count += len(positions)
        return at

    def finish(self, concat: int) -> ZipDirectory:
        fixed = np.concatenate(self.fixed) if self.fixed else np.zeros(0, _WIDE)
        names = self.name_list
        self.fixed, self.name_list = [], []
        keep = np.fromiter((not name.endswith(b"/") and bool(name) for name in names), dtype=bool, count=len(names))
        order = _sorted_order(names)
        order = order[keep[order]]
        # of names given more than once, the last entry (in directory order) stands, as in zipfile
        ordered = [names[i] for i in order.tolist()]
        last = np.ones(len(ordered), dtype=bool)
        if len(ordered) > 1:
            same = np.fromiter((ordered[i] == ordered[i + 1] for i in range(len(ordered) - 1)), dtype=bool,
                               count=len(ordered) - 1)
            last[:-1] = ~same
        order = order[last]
        ordered = [name for name, kept in zip(ordered, last.tolist(), strict=True) if kept]
        del names
        lengths = np.fromiter((len(name) for name in ordered), dtype=np.int64, count=len(ordered))
        starts = np.zeros(len(ordered) + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        blob = b"".join(ordered)
        del ordered
        chosen = fixed[order]
        fields = {"header_offset": chosen["offset"].astype(np.int64) + concat,
                  "compressed": chosen["compressed"].astype(np.int64), "size": chosen["size"].astype(np.int64),
                  "crc": chosen["crc"].astype(np.uint32), "method": chosen["method"].astype(np.uint16),
                  "flags": chosen["flags"].astype(np.uint16)}
        return ZipDirectory(blob, starts, fields)


_WIDE = np.dtype([("flags", "<u2"), ("method", "<u2"), ("crc", "<u4"), ("compressed", "<u8"), ("size", "<u8"),
                  ("offset", "<u8")])


def _with_zip64(fixed: np.ndarray, wide: np.ndarray, data: bytes, positions: list[int]) -> np.ndarray:
    """The fields kept of each entry, 64-bit, with the ZIP64 extra field's values where an entry has one."""
    kept = np.empty(len(fixed), _WIDE)
    for name in _WIDE.names or ():
        kept[name] = fixed[name]
    for index in wide.tolist():
        entry = fixed[index]
        at = positions[index] + _ENTRY_SIZE + int(entry["name_length"])
        extra = data[at:at + int(entry["extra_length"])]
        values = _zip64_values(extra)
        for field in ("size", "compressed", "offset"):  # the order the extra field gives them in
            if int(entry[field]) == _U32:
                if not values:
                    raise ZipFormatError(f"entry {index + 1:,} declares a ZIP64 {field} but has no ZIP64 field")
                kept[index][field] = values.pop(0)
    return kept


def _zip64_values(extra: bytes) -> list[int]:
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<2H", extra, at)
        if kind == 1:
            body = extra[at + 4:at + 4 + length]
            return list(struct.unpack_from(f"<{len(body) // 8}Q", body))
        at += 4 + length
    return []


def utf8_name(name: bytes, flagged_utf8: bool) -> bytes:
    """A name as UTF-8, cut at a NUL as zipfile does; cp437 unless the entry says UTF-8."""
    name = name.split(b"\0", 1)[0]
    if name.isascii():
        return name
    text = name.decode("utf-8", "surrogateescape") if flagged_utf8 else name.decode("cp437")
    return text.encode("utf-8", "surrogateescape")


def _sorted_order(names: list[bytes]) -> np.ndarray:
    """The stable sorting order of names: vectorised while a fixed-width copy stays small."""
    if not names:
        return np.zeros(0, dtype=np.int64)
    widest = max(map(len, names))
    if widest and len(names) * widest <= (64 << 20):
        return np.argsort(np.array(names, dtype=f"S{widest}"), kind="stable")
    return np.asarray(sorted(range(len(names)), key=names.__getitem__), dtype=np.int64)


class StoredSizes(Mapping[str, int]):
    """Stored (compressed) size of each member by name, read from the directory without a dict."""

    def __init__(self, directory: ZipDirectory) -> None:
        self.directory = directory

    def __getitem__(self, key: str) -> int:
        index = self.directory.find(key)
        if index is None:
            raise KeyError(key)
        return int(self.directory.compressed[index])

    def __iter__(self) -> Iterator[str]:
        return self.directory.names_below("")

    def __len__(self) -> int:
        return len(self.directory)

    def below(self, folder: str) -> dict[str, int]:
        """Size of every member below folder ('' or ending in '/'), keyed by the rest of its name."""
        first, stop = self.directory.span(folder)
        sizes = self.directory.compressed[first:stop].tolist()
        cut = len(folder.encode("utf-8", "surrogateescape"))
        return {self.directory[i][cut:].decode("utf-8", "surrogateescape"): size
                for i, size in zip(range(first, stop), sizes, strict=True)}


def read_directory(path: str | os.PathLike[str]) -> ZipDirectory:
    """The central directory of the zip at path (ZipFormatError when it cannot be read as one)."""
    with open(path, "rb") as file:
        return ZipDirectory.read(file, os.fstat(file.fileno()).st_size)
