"""A zstd chunk is whole frames and nothing else, on every python-zstandard version: bytes after the
last frame (junk, a frame cut short) are refused by the guarded decode before it decodes, while the
frames zstd writes (with or without a checksum or declared size, several, skippable) are read."""

from __future__ import annotations

import struct

import pytest
import zstandard

from ecpfs_viewer.model.zarrtree.guarded_decode import DecodeRefused, decode_bounded
from ecpfs_viewer.model.zarrtree.zstd_frames import check_whole_frames

RAW = bytes(range(256)) * 40 + b"\x00" * 50_000  # raw, compressed and RLE blocks


def _frame(**options: bool) -> bytes:
    return zstandard.ZstdCompressor(**options).compress(RAW)


@pytest.mark.parametrize("options", [{}, {"write_checksum": True}, {"write_content_size": False}])
def test_the_frames_zstd_writes_are_whole(options: dict[str, bool]) -> None:
    frame = _frame(**options)
    skippable = struct.pack("<II", 0x184D2A53, 3) + b"abc"
    for chunk in (frame, frame + frame, skippable + frame, frame + skippable):
        check_whole_frames(chunk)
    assert decode_bounded("zstd", frame + frame, 2 * len(RAW)) == RAW + RAW


@pytest.mark.parametrize("tail", ["magic only", "a frame cut short", "junk", "a skippable frame cut short"])
def test_bytes_after_the_last_frame_are_refused(tail: str) -> None:
    frame = _frame(write_content_size=False)
    extra = {"magic only": frame[:4], "a frame cut short": frame[:-1], "junk": b"junk" * 3,
             "a skippable frame cut short": struct.pack("<II", 0x184D2A50, 100) + b"x"}[tail]
    with pytest.raises(ValueError):
        check_whole_frames(frame + extra)
    with pytest.raises(DecodeRefused, match="the zstd chunk cannot be decoded"):
        decode_bounded("zstd", frame + extra, 10 * len(RAW))
