"""Zstandard chunks decoded with a decompression context each thread keeps.

numcodecs' Zstd (what zarr-python decodes zstd chunks with) makes and frees a context for every
chunk, which costs several times the decompression of a small chunk: a 2,000,000-item index has
40,000 leaf item_ids chunks of a few hundred bytes (benchmarks/bench_scale.py, locate). zstandard
keeps one context per decompressor; each thread keeps its own (a decompressor is not thread-safe).
Only a chunk that is one whole frame declaring its size is decoded here: anything else (no size
in the frame header, several frames one after another, a damaged frame) goes to numcodecs, so
the result, or the error said, is numcodecs' own. A frame declaring more than the chunk it must be
is refused before either decodes it.
"""

from __future__ import annotations

import threading
from typing import Any

import numcodecs
import zstandard

_local = threading.local()


def _decompressor() -> zstandard.ZstdDecompressor:
    found: zstandard.ZstdDecompressor | None = getattr(_local, "decompressor", None)
    if found is None:
        found = _local.decompressor = zstandard.ZstdDecompressor()
    return found


class ZstdChunks:
    """numcodecs' ``Zstd`` codec for decoding, with a kept context for chunks decoded to a new object.

    A chunk decoded into ``out`` (the batch reader's scratch buffer for large chunks) still goes
    through numcodecs: zstandard only returns new objects, and at that size the context costs little.

    ``decoded_bytes`` is what every chunk must decode to, when the caller knows it (the codec next to
    ``bytes`` gives the chunk itself): a frame whose header declares more is refused before any of it
    is decoded, so a few KiB of stored chunk cannot make the reader allocate the gigabytes it declares.
    """

    def __init__(self, level: int = 0, decoded_bytes: int | None = None) -> None:
        self._numcodecs = numcodecs.Zstd(level=level)
        self._decoded_bytes = decoded_bytes

    def decode(self, buf: Any, out: Any = None) -> Any:
        if out is not None:
            return self._numcodecs.decode(buf, out=out)
        data = _one_declared_frame(buf, self._decoded_bytes)
        return data if data is not None else self._numcodecs.decode(buf)


def _one_declared_frame(buf: Any, most: int | None = None) -> bytes | None:
    """The decoded chunk when it is exactly one frame that decodes to the size its header declares;
    None otherwise (``ZstdDecompressor.decompress`` would decode only the first of several frames).
    ValueError, before decoding, when the header declares more than `most` bytes."""
    try:
        declared = zstandard.frame_content_size(buf)
    except zstandard.ZstdError:
        return None
    if declared < 0:  # not declared
        return None
    if most is not None and declared > most:
        raise ValueError(f"the chunk's zstd frame declares {declared:,} decoded bytes, expected {most:,}; not decoded")
    try:
        stream = _decompressor().decompressobj()
        data = stream.decompress(buf)
    except zstandard.ZstdError:
        return None
    return data if stream.eof and not stream.unused_data and len(data) == declared else None
