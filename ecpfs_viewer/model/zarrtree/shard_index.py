"""A shard's index read and checked against the shard it indexes, before any inner chunk is read.

A shard index is a table of (offset, length) pairs, one per inner chunk, that nothing ties to the
file: an entry may point past the end of the shard, into the index itself, or hold an offset and
a length whose sum passes 2^64. zarr-python slices whatever an entry says (numpy wraps the sum
with a RuntimeWarning) and a slice past the end is short or empty, which a reader may take for a
chunk that is not stored (the fill value). Only an entry whose offset and length are both
2^64 - 1 is a chunk that is not stored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.formatting import format_value

#: offset and length of an inner chunk that is not stored (both this value)
EMPTY = 2**64 - 1
ENTRY_BYTES = 16  # offset and length, two uint64
CHECKSUM_BYTES = 4  # the crc32c of the table, when the index codecs end with one


class ShardIndexError(UserError, ValueError):
    """A shard whose index cannot be used: its message names the shard (and the entry) and ends in
    'could not be read'. A fact about what is stored, not a failure on the way."""


@dataclass(frozen=True)
class IndexLayout:
    """How one shard's index is stored: the inner chunks per shard, the byte order of its table,
    whether a crc32c follows the table, and whether the index is at the start or the end."""

    per_shard: tuple[int, ...]
    little_endian: bool = True
    crc32c: bool = True
    at_end: bool = True

    @property
    def nbytes(self) -> int:
        """The stored size of the index."""
        return ENTRY_BYTES * math.prod(self.per_shard) + (CHECKSUM_BYTES if self.crc32c else 0)

    def span(self, shard_size: int) -> tuple[int, int]:
        """[start, stop) of the index within a shard of shard_size bytes."""
        return (max(0, shard_size - self.nbytes), shard_size) if self.at_end else (0, self.nbytes)


def _n(value: int) -> str:
    return format_value(value, grouped=True)


def parse_table(raw: bytes, layout: IndexLayout, where: str) -> np.ndarray:
    """The (offset, length) table of an index read as raw (uint64, shape per_shard + (2,)); raises
    ShardIndexError when it is too short or its checksum does not match."""
    body_len = layout.nbytes - (CHECKSUM_BYTES if layout.crc32c else 0)
    if len(raw) < layout.nbytes:
        raise ShardIndexError(f"{where}: {_n(len(raw))} bytes, too short for its index of {_n(layout.nbytes)} "
                              "bytes; could not be read")
    body = bytes(raw[:body_len])
    if layout.crc32c:
        import google_crc32c

        stored = int.from_bytes(raw[body_len:body_len + CHECKSUM_BYTES], "little")
        if google_crc32c.value(body) != stored:
            raise ShardIndexError(f"{where}: the checksum of its index does not match; could not be read")
    dtype = "<u8" if layout.little_endian else ">u8"
    return np.frombuffer(body, dtype=dtype).astype(np.uint64).reshape((*layout.per_shard, 2))


def check_table(table: np.ndarray, layout: IndexLayout, shard_size: int, where: str) -> None:
    """Raise ShardIndexError for the first entry of table that is not a stored chunk within the
    shard (outside the index, no wrap past 2^64, not empty) nor a chunk that is not stored."""
    offsets = table[..., 0]
    lengths = table[..., 1]
    missing = (offsets == np.uint64(EMPTY)) & (lengths == np.uint64(EMPTY))
    wraps = offsets > np.uint64(EMPTY) - lengths  # offset + length > 2^64 - 1, without computing it
    ends = np.where(wraps, np.uint64(0), offsets) + np.where(wraps, np.uint64(0), lengths)
    index_start, index_stop = layout.span(shard_size)
    bad = ~missing & (wraps | (lengths == 0) | (ends > np.uint64(shard_size))
                      | ((offsets < np.uint64(index_stop)) & (ends > np.uint64(index_start))))
    if not bad.any():
        return
    coords = tuple(int(i) for i in np.argwhere(bad)[0])
    offset, length = int(offsets[coords]), int(lengths[coords])
    entry = f"{where}: shard index entry for inner chunk {coords}"
    if offset + length > EMPTY:
        problem = f"points at {_n(length)} bytes from byte {_n(offset)}, past 2^64"
    elif length == 0:
        problem = f"points at 0 bytes (at byte {_n(offset)})"
    elif offset + length > shard_size:
        problem = f"points at bytes {_n(offset)}–{_n(offset + length)} of a {_n(shard_size)}-byte shard"
    else:
        problem = (f"points at bytes {_n(offset)}–{_n(offset + length)}, inside the shard's own index "
                   f"(bytes {_n(index_start)}–{_n(index_stop)})")
    raise ShardIndexError(f"{entry} {problem}; could not be read")


def checked_table(raw: bytes, layout: IndexLayout, shard_size: int, where: str) -> np.ndarray:
    """parse_table then check_table: the table of a shard of shard_size bytes, every entry checked."""
    if shard_size < layout.nbytes:
        raise ShardIndexError(f"{where}: {_n(shard_size)} bytes, too short for its index of "
                              f"{_n(layout.nbytes)} bytes; could not be read")
    table = parse_table(raw, layout, where)
    check_table(table, layout, shard_size, where)
    return table
