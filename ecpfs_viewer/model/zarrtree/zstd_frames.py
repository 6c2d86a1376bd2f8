"""Where a zstd chunk's frames end, read from their headers without decoding.

A chunk must be whole frames and nothing else: libzstd (numcodecs) refuses bytes after the last
frame, but how python-zstandard's stream reader treats them depends on its version (0.19 stops
there silently, newer ones raise unless the bytes begin a frame, which they may leave unfinished).
Walking the frame and block headers gives the same answer on every version, before any decoding.
"""

from __future__ import annotations

from typing import Any

import zstandard

_FRAME_MAGIC = 0xFD2FB528
_SKIPPABLE_MAGIC = 0x184D2A50  # ...0x184D2A5F: the low 4 bits are free


def _u32(view: memoryview, at: int) -> int:
    return int.from_bytes(view[at:at + 4], "little")


def check_whole_frames(data: Any) -> None:
    """Raise ValueError unless `data` is one or more complete zstd (or skippable) frames, ending
    exactly at its end. Costs one step per block, never a copy of the data."""
    view = memoryview(data).cast("B")
    end, at = len(view), 0
    while at < end:
        if end - at < 8:
            raise ValueError(f"{end - at} byte(s) after the last frame, too few for another")
        magic = _u32(view, at)
        if magic & 0xFFFFFFF0 == _SKIPPABLE_MAGIC:
            at += 8 + _u32(view, at + 4)
            if at > end:
                raise ValueError("a skippable frame runs past the end of the chunk")
            continue
        if magic != _FRAME_MAGIC:
            raise ValueError(f"bytes at offset {at} are not a zstd frame")
        checksum = 4 if view[at + 4] & 0x04 else 0  # the frame header descriptor's checksum flag
        try:
            at += zstandard.frame_header_size(view[at:])
        except zstandard.ZstdError as exc:
            raise ValueError(f"the frame at offset {at} has a broken header ({exc})") from None
        at = _blocks_end(view, at, end) + checksum
        if at > end:
            raise ValueError("the last frame is cut short")


def _blocks_end(view: memoryview, at: int, end: int) -> int:
    """Where the blocks starting at `at` end: after the block marked last."""
    while True:
        if at + 3 > end:
            raise ValueError("the last frame is cut short")
        header = int.from_bytes(view[at:at + 3], "little")
        kind, size = (header >> 1) & 3, header >> 3
        if kind == 3:
            raise ValueError(f"the block at offset {at} has the reserved type")
        at += 3 + (1 if kind == 1 else size)  # an RLE block stores one byte
        if header & 1:
            return at
