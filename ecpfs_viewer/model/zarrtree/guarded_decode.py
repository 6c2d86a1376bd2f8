"""The one guarded decode of the app: every compressed chunk, whoever reads it, is decoded with a bound.

A few KB of stored chunk can decode to gigabytes (a zstd frame without a declared size, several
frames, gzip, a blosc header that lies). Every bytes-to-bytes codec that can grow its input is
decoded here with a limit worked out before decoding (the chunk's own size, plus what the codecs
between it and ``bytes`` may add): the streaming decoders (zstd, gzip/zlib, bz2, lzma) stop one
byte past the limit; blosc and LZ4, which carry the decoded size in a header, have that header
checked first. A chunk past its limit is refused (:class:`DecodeRefused`, naming the codec and the
size) and never decoded again without the limit.

Three readers decode chunks, and all come here:
- the batch reader (array_batch) decodes ``bytes`` + compressor chains with :func:`decode_bounded`;
- zarr-python decodes everything else (sharding, Zarr v2, other chains, subsets):
  ``guarded_codecs.install`` puts guarded subclasses of zarr's codecs in zarr's codec registry
  (the public ``codecs.<name>`` configuration) and guarded numcodecs classes in numcodecs'
  registry (what zarr builds a Zarr v2 array's compressor from); a v3 codec gets the chunk's size
  from its chunk spec, a v2 compressor from ``guarded_codecs.bound_array`` (else the decoded-chunk
  cap of model/limits.py).

The stored chunk is bounded too, before it is read: :func:`most_stored` says what a ``bytes`` +
compressor chain can make of a chunk's decoded size, and the batch reader hands that bound to the
store (model/storage/stored_bound.py), which refuses a larger chunk from its size alone. zarr-python
reads its chunks itself (a codec sees them only once read): there a chunk is bounded by the
per-object cap (Limits.max_chunk_bytes), and the decode keeps no copy of it.

Zstandard chunks are decoded with a context each thread keeps: numcodecs makes and frees one per
chunk, which costs several times the decompression of a small chunk (a 2,000,000-item index has
40,000 leaf item_ids chunks of a few hundred bytes: benchmarks/bench_scale.py, locate).
"""

from __future__ import annotations

import bz2
import functools
import lzma
import math
import struct
import threading
import zlib
from collections.abc import Callable, Mapping
from typing import Any

import numcodecs
import numcodecs.blosc
import numcodecs.compat
import numcodecs.lz4
import numpy as np
import zstandard

from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.formatting import format_value
from ecpfs_viewer.model.limits import current_limits
from ecpfs_viewer.model.zarrtree.zstd_frames import check_whole_frames


def between_allowance(expected: int) -> int:
    """What the bytes-to-bytes codecs between a compressor and ``bytes`` may add to a chunk of
    `expected` bytes, where the decoder cannot see the chain (zarr hands a codec only the chunk's
    spec): a checksum (crc32c: 4 bytes), a shard's index, another compressor's framing."""
    return expected // 8 + 4096


def _count(n: int) -> str:
    return format_value(int(n), grouped=True)


class DecodeRefused(UserError, ValueError):
    """A chunk refused by the guarded decode: it decodes past its limit, or its header lies."""


_local = threading.local()


def _decompressor() -> zstandard.ZstdDecompressor:
    """This thread's zstd decompressor (a decompressor is not thread-safe)."""
    found: zstandard.ZstdDecompressor | None = getattr(_local, "decompressor", None)
    if found is None:
        found = _local.decompressor = zstandard.ZstdDecompressor()
    return found


class _PastLimit(Exception):
    """Raised inside a decoder: the chunk decodes (or its header says it decodes) past the limit."""

    def __init__(self, codec: str, declared: int | None = None, where: str = "frame") -> None:
        super().__init__(codec)
        self.codec, self.declared, self.where = codec, declared, where

    def refusal(self, size: int) -> DecodeRefused:
        """The message, with `size` the chunk's own size (the limit less what codecs between add)."""
        if self.declared is None:
            return DecodeRefused(f"the {self.codec} chunk decodes to more than its {_count(size)} bytes; "
                                 "not decoded")
        return DecodeRefused(f"the {self.codec} chunk's {self.where} declares {_count(self.declared)} decoded "
                             f"bytes, more than its {_count(size)}; not decoded")




def _broken(codec: str, exc: BaseException) -> DecodeRefused:
    text = str(exc).strip() or type(exc).__name__
    return DecodeRefused(f"the {codec} chunk cannot be decoded ({text})")


def _zstd(data: Any, limit: int) -> bytes:
    """One frame declaring its size goes through the kept context's one-shot path (:func:`_zstd_whole`;
    a bounded stream where zstandard cannot refuse what follows the frame); anything else (no
    declared size, several frames) is read through a stream reader, one byte past the limit."""
    try:
        declared = zstandard.frame_content_size(data)
    except zstandard.ZstdError as exc:
        raise _broken("zstd", exc) from None
    if declared > limit:
        raise _PastLimit("zstd", declared)
    framed = memoryview(data if type(data) is bytes else numcodecs.compat.ensure_contiguous_ndarray(data)).cast("B")
    if declared >= 0 and _strict_one_shot():
        whole = _zstd_whole(framed, declared)
        if whole is not None:
            return whole
    try:
        if declared >= 0:
            # libzstd stops a frame at its declared size; given no more than such a frame can be
            # stored as, so that what follows it (unused_data) is never a copy of a huge chunk's rest
            stream = _decompressor().decompressobj()
            out = stream.decompress(framed[:_zstd_most(declared)])
            if stream.eof and not stream.unused_data and len(out) == declared and len(framed) <= _zstd_most(declared):
                return out
            del stream, out
        try:
            check_whole_frames(framed)  # bytes after the last frame: refused on every zstandard version
        except ValueError as exc:
            raise _broken("zstd", exc) from None
        reader = _decompressor().stream_reader(data, read_across_frames=True)
        pieces: list[bytes] = []
        total = 0
        while total <= limit:
            piece = reader.read(limit + 1 - total)
            if not piece:
                break
            pieces.append(piece)
            total += len(piece)
    except zstandard.ZstdError as exc:
        raise _broken("zstd", exc) from None
    if total > limit:
        raise _PastLimit("zstd")
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _zstd_most(decoded: int) -> int:
    """The most bytes one zstd frame of `decoded` bytes is stored as (ZSTD_compressBound's n/256
    and its small-input term, the frame header and checksum, with room to spare)."""
    return decoded + (decoded >> 7) + 1024


def _streams(codec: str, make: Callable[[], Any], data: Any, limit: int, *, padding_ends: bool = False) -> bytes:
    """Decode one or more concatenated streams (zlib, gzip members, bz2, xz), each decompressor
    asked for at most what is left of the limit plus one byte. Data after the first stream that is
    not a stream is ignored, as the standard library's one-shot functions do."""
    out = bytearray()
    rest = memoryview(numcodecs.compat.ensure_contiguous_ndarray(data)).cast("B")
    first = True
    while first or rest:
        if padding_ends and not first and not any(rest):
            break  # gzip: zero padding after the last member
        decoder = make()
        try:
            piece = decoder.decompress(rest, limit + 1 - len(out))
        except (zlib.error, OSError, lzma.LZMAError, EOFError, ValueError) as exc:
            if first:
                raise _broken(codec, exc) from None
            break
        out += piece
        if len(out) > limit:
            raise _PastLimit(codec)
        if not decoder.eof:
            if first:
                raise DecodeRefused(f"the {codec} chunk ends before its stream does; not decoded")
            break
        first = False
        rest = memoryview(decoder.unused_data)
    return bytes(out)


def _gzip(data: Any, limit: int) -> bytes:
    return _streams("gzip", lambda: zlib.decompressobj(16 + zlib.MAX_WBITS), data, limit, padding_ends=True)


def _zlib(data: Any, limit: int) -> bytes:
    out = bytearray()
    decoder = zlib.decompressobj()
    try:
        out += decoder.decompress(numcodecs.compat.ensure_contiguous_ndarray(data), limit + 1)
    except zlib.error as exc:
        raise _broken("zlib", exc) from None
    if len(out) > limit:
        raise _PastLimit("zlib")
    if not decoder.eof:
        raise DecodeRefused("the zlib chunk ends before its stream does; not decoded")
    return bytes(out)


def _bz2(data: Any, limit: int) -> bytes:
    return _streams("bz2", bz2.BZ2Decompressor, data, limit)


#: What an lzma decoder may take besides its output (its dictionary: 8 MiB at the default preset)
LZMA_MEMORY_BYTES = 64 << 20


def _lzma(config: Mapping[str, Any]) -> Callable[[Any, int], bytes]:
    fmt = int(config.get("format", lzma.FORMAT_XZ) or lzma.FORMAT_AUTO)
    filters = config.get("filters") if fmt == lzma.FORMAT_RAW else None

    def decode(data: Any, limit: int) -> bytes:
        # a stream's header declares its dictionary (up to 1.5 GiB), which the decoder allocates:
        # bounded too, except in raw streams whose filters the metadata names
        memlimit = None if fmt == lzma.FORMAT_RAW else LZMA_MEMORY_BYTES + limit
        return _streams("lzma", lambda: lzma.LZMADecompressor(format=fmt, memlimit=memlimit, filters=filters),
                        data, limit)

    return decode


def _blosc(data: Any, limit: int) -> Any:
    """blosc's header carries the decoded and the stored size: both are checked before decoding."""
    raw = numcodecs.compat.ensure_contiguous_ndarray(data).view(np.uint8)
    if raw.nbytes < 16:
        raise DecodeRefused(f"the blosc chunk holds {raw.nbytes} bytes, shorter than a blosc header; not decoded")
    nbytes, _blocksize, cbytes = struct.unpack_from("<III", raw, 4)
    if cbytes != raw.nbytes:
        raise DecodeRefused(f"the blosc chunk's header says {_count(cbytes)} stored bytes, "
                            f"{_count(raw.nbytes)} are stored; not decoded")
    if nbytes > limit:
        raise _PastLimit("blosc", nbytes, "header")
    try:
        return numcodecs.blosc.decompress(raw)
    except (RuntimeError, ValueError) as exc:
        raise _broken("blosc", exc) from None


def _lz4(data: Any, limit: int) -> Any:
    """numcodecs' LZ4 writes the decoded size in front of the block: checked before decoding."""
    raw = numcodecs.compat.ensure_contiguous_ndarray(data).view(np.uint8)
    if raw.nbytes < 4:
        raise DecodeRefused(f"the lz4 chunk holds {raw.nbytes} bytes, shorter than its size header; not decoded")
    (declared,) = struct.unpack_from("<i", raw, 0)
    if declared > limit:
        raise _PastLimit("lz4", declared, "header")
    try:
        return numcodecs.lz4.decompress(raw)
    except (RuntimeError, ValueError) as exc:
        raise _broken("lz4", exc) from None


#: Codecs that can grow their input, by numcodecs id (zarr's v3 names are the same): each decoder
#: is made from the codec's configuration and takes (stored bytes, most decoded bytes).
_DECODERS: dict[str, Callable[[Mapping[str, Any]], Callable[[Any, int], Any]]] = {
    "zstd": lambda _config: _zstd,
    "gzip": lambda _config: _gzip,
    "zlib": lambda _config: _zlib,
    "bz2": lambda _config: _bz2,
    "lzma": _lzma,
    "blosc": lambda _config: _blosc,
    "lz4": lambda _config: _lz4,
}
GUARDED = frozenset(_DECODERS)


#: The most each codec may add to what it compresses (n bytes): (n >> shift) + fixed bytes. A
#: compressor's worst case on incompressible data is small (zstd n/256, deflate 5 bytes a block,
#: bz2 1% + 600, LZ4 n/255 + 16, blosc a 16- or 32-byte header); these leave room to spare.
_EXPANSION: dict[str, tuple[int | None, int]] = {
    "zstd": (7, 4096), "gzip": (10, 4096), "zlib": (10, 4096), "bz2": (6, 4096), "lzma": (5, 4096),
    "lz4": (7, 4096), "blosc": (None, 4096), "crc32c": (None, 4),
}


def most_stored(codecs: Any, decoded: int) -> tuple[int, bool] | None:
    """The most bytes a chunk of a ``bytes`` + compressor chain (zarr v3 codec documents) that
    decodes to `decoded` bytes can be stored as, and whether it is stored as exactly that (``bytes``
    alone); None for a chain whose stored size this does not know (it is then bounded only by the
    per-object cap). A larger stored chunk is damage, refused before it is read."""
    names = [c if isinstance(c, str) else c.get("name") if isinstance(c, dict) else None
             for c in (codecs if isinstance(codecs, list) else [None])]
    if not names or names[0] != "bytes":
        return None
    most = decoded
    for name in names[1:]:
        found = _EXPANSION.get(str(name).removeprefix("numcodecs."))
        if found is None:
            return None
        shift, fixed = found
        most += (most >> shift if shift is not None else 0) + fixed
    return most, len(names) == 1


def bounded_decoder(codec: str, config: Mapping[str, Any] | None = None) -> Callable[[Any, int], Any]:
    """The bounded decoder of a codec id (:data:`GUARDED`): (stored chunk, most decoded bytes) ->
    the decoded bytes; DecodeRefused when it is broken, _PastLimit past the limit (decode_bounded
    says which)."""
    return _DECODERS[codec](config or {})


def decode_bounded(codec: str, data: Any, limit: int, config: Mapping[str, Any] | None = None,
                   size: int | None = None) -> Any:
    """``data`` decoded by `codec`, refused (DecodeRefused) past `limit` bytes before producing more;
    `size` is the chunk's own size the message names (default: the limit)."""
    try:
        return bounded_decoder(codec, config)(data, limit)
    except _PastLimit as exc:
        raise exc.refusal(limit if size is None else size) from None


def _zstd_whole(buf: Any, size: int) -> bytes | None:
    """One zstd frame declaring exactly `size` bytes with nothing after it, decoded by this thread's
    kept context in one call (numcodecs' decode into a buffer makes a context per chunk: 40 against
    29 us for a 10M index's 512 KiB leaf chunks); None for anything else, which the decoders below
    take as before."""
    try:
        if zstandard.frame_content_size(buf) != size:
            return None
        data: bytes = _decompressor().decompress(buf, allow_extra_data=False)
    except zstandard.ZstdError:
        return None
    return data if len(data) == size else None


@functools.cache
def _strict_one_shot() -> bool:
    """Whether this zstandard refuses bytes after a frame in its one-shot decompress (0.20 and later)."""
    try:  # a frame of b"x" and one byte after it (no compressor made: its context is a megabyte)
        _decompressor().decompress(b"(\xb5/\xfd \x01\t\x00\x00x\x00", allow_extra_data=False)
    except zstandard.ZstdError:
        return True
    except TypeError:  # no such argument
        return False
    return False


#: numcodecs' decoders that write into a given buffer and never past its end (the buffer is the limit)
_INTO: dict[str, Callable[[], Any]] = {"zstd": numcodecs.Zstd, "gzip": numcodecs.GZip, "blosc": numcodecs.Blosc}


class ChunkDecoder:
    """The bounded decode of one codec of a known chain (the batch reader's): a chunk may decode to
    `limit` bytes, the chunk's own `size` when the codec is next to ``bytes``.

    A chunk given ``out`` (the batch reader's scratch buffer for large chunks) is decoded by
    numcodecs into that buffer, which bounds it, or, a zstd frame declaring exactly that size, by
    the kept context in one call; a chunk that does not fit is decoded again by the bounded
    decoder, which says what is wrong with it.
    """

    def __init__(self, codec: str, config: Mapping[str, Any], limit: int, size: int | None = None) -> None:
        self.codec = codec
        self._decode = bounded_decoder(codec, config)
        self._into = _INTO[codec]() if codec in _INTO else None
        self.limit = limit
        self.size = limit if size is None else size

    def decode(self, buf: Any, out: Any = None) -> Any:
        if out is not None and self.codec == "zstd" and _strict_one_shot():
            whole = _zstd_whole(buf, len(out))
            if whole is not None:
                return whole
        if out is not None and self._into is not None and len(out) == self.limit:
            try:
                return self._into.decode(buf, out=out)
            except Exception:  # does not fit, or corrupt: the bounded decoder says which, below
                pass
        try:
            return self._decode(buf, self.limit)
        except _PastLimit as exc:
            raise exc.refusal(self.size) from None


def default_limit() -> int:
    """The limit of a chunk whose size the decoder cannot know: the decoded-chunk cap."""
    return current_limits().max_decoded_chunk_bytes


def spec_size(chunk_spec: Any) -> int | None:
    """The decoded size of one chunk of this zarr chunk spec; None for variable-length data types."""
    try:
        dtype = np.dtype(chunk_spec.dtype.to_native_dtype())
    except (AttributeError, TypeError):
        return None
    if dtype.kind in "OT" or dtype.itemsize == 0:
        return None
    return int(math.prod(int(n) for n in chunk_spec.shape)) * int(dtype.itemsize)
