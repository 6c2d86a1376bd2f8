"""The guarded decode in zarr-python's and numcodecs' codec registries (what :func:`install` puts there).

zarr-python decodes what the batch reader does not (sharding, Zarr v2, other chains, subsets)
with the classes its registry names: these are its own codecs with the decode of
:mod:`ecpfs_viewer.model.zarrtree.guarded_decode`, bounded by the chunk's size.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Mapping
from typing import Any, TypeVar

import numcodecs
import numcodecs.blosc
import numcodecs.compat
import numcodecs.lz4
import numpy as np
import zarr
import zarr.codecs
import zarr.codecs.numcodecs
import zarr.registry

from ecpfs_viewer.model.storage.stored_bound import StoredBound
from ecpfs_viewer.model.zarrtree.checked_sharding import use_checked_sharding
from ecpfs_viewer.model.zarrtree.guarded_decode import (
    between_allowance,
    decode_bounded,
    default_limit,
    most_stored,
    spec_size,
)

# zarr-python's codecs, guarded: the same names and configuration, the decode bounded by the chunk spec


def _decode_buffer(codec: str, config: Mapping[str, Any], chunk_bytes: Any, chunk_spec: Any) -> Any:
    size = spec_size(chunk_spec)
    limit = default_limit() if size is None else size + between_allowance(size)
    data = decode_bounded(codec, chunk_bytes.as_numpy_array(), limit, config, size)
    return chunk_spec.prototype.buffer.from_bytes(numcodecs.compat.ensure_bytes(data))


class GuardedZstdCodec(zarr.codecs.ZstdCodec):
    """zarr's ``zstd`` codec with the guarded decode."""

    def _decode_sync(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        return _decode_buffer("zstd", {}, chunk_bytes, chunk_spec)

    async def _decode_single(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        return await asyncio.to_thread(_decode_buffer, "zstd", {}, chunk_bytes, chunk_spec)


class GuardedGzipCodec(zarr.codecs.GzipCodec):
    """zarr's ``gzip`` codec with the guarded decode."""

    def _decode_sync(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        return _decode_buffer("gzip", {}, chunk_bytes, chunk_spec)

    async def _decode_single(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        return await asyncio.to_thread(_decode_buffer, "gzip", {}, chunk_bytes, chunk_spec)


class GuardedBloscCodec(zarr.codecs.BloscCodec):
    """zarr's ``blosc`` codec with the guarded decode."""

    def _decode_sync(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        return _decode_buffer("blosc", {}, chunk_bytes, chunk_spec)

    async def _decode_single(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        return await asyncio.to_thread(_decode_buffer, "blosc", {}, chunk_bytes, chunk_spec)


class _GuardedNumcodecsBytes:
    """zarr's ``numcodecs.<id>`` bytes-to-bytes codecs with the guarded decode (mixed in first)."""

    codec_config: dict[str, Any]

    def _numcodec_id(self) -> str:
        return str(self.codec_config.get("id"))

    def _decode_sync(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        return _decode_buffer(self._numcodec_id(), self.codec_config, chunk_bytes, chunk_spec)

    async def _decode_single(self, chunk_bytes: Any, chunk_spec: Any) -> Any:
        return await asyncio.to_thread(_decode_buffer, self._numcodec_id(), self.codec_config, chunk_bytes,
                                       chunk_spec)


class GuardedNumcodecsZstd(_GuardedNumcodecsBytes, zarr.codecs.numcodecs.Zstd):
    """``numcodecs.zstd``, guarded."""


class GuardedNumcodecsGZip(_GuardedNumcodecsBytes, zarr.codecs.numcodecs.GZip):
    """``numcodecs.gzip``, guarded."""


class GuardedNumcodecsZlib(_GuardedNumcodecsBytes, zarr.codecs.numcodecs.Zlib):
    """``numcodecs.zlib``, guarded."""


class GuardedNumcodecsBlosc(_GuardedNumcodecsBytes, zarr.codecs.numcodecs.Blosc):
    """``numcodecs.blosc``, guarded."""


class GuardedNumcodecsLZ4(_GuardedNumcodecsBytes, zarr.codecs.numcodecs.LZ4):
    """``numcodecs.lz4``, guarded."""


class GuardedNumcodecsBZ2(_GuardedNumcodecsBytes, zarr.codecs.numcodecs.BZ2):
    """``numcodecs.bz2``, guarded."""


class GuardedNumcodecsLZMA(_GuardedNumcodecsBytes, zarr.codecs.numcodecs.LZMA):
    """``numcodecs.lzma``, guarded."""


_ZARR_CODECS: dict[str, type] = {
    "zstd": GuardedZstdCodec,
    "gzip": GuardedGzipCodec,
    "blosc": GuardedBloscCodec,
    "numcodecs.zstd": GuardedNumcodecsZstd,
    "numcodecs.gzip": GuardedNumcodecsGZip,
    "numcodecs.zlib": GuardedNumcodecsZlib,
    "numcodecs.blosc": GuardedNumcodecsBlosc,
    "numcodecs.lz4": GuardedNumcodecsLZ4,
    "numcodecs.bz2": GuardedNumcodecsBZ2,
    "numcodecs.lzma": GuardedNumcodecsLZMA,
}


# numcodecs' codecs, guarded: what zarr-python builds a Zarr v2 array's compressor (and filters) from


class _GuardedNumcodec:
    """A numcodecs codec whose decode is bounded: by the limit when the array it serves
    set it (:func:`bound_array`), else by the decoded-chunk cap."""

    codec_id: str
    _decoded_limit: int | None = None  # underscored: numcodecs' get_config leaves it out

    def set_decoded_limit(self, limit: int) -> None:
        """What a chunk may decode to (the array's chunk size)."""
        self._decoded_limit = limit

    def decode(self, buf: Any, out: Any = None) -> Any:
        limit = self._decoded_limit if self._decoded_limit is not None else default_limit()
        data = decode_bounded(self.codec_id, buf, limit, self.get_config())  # type: ignore[attr-defined]
        return numcodecs.compat.ndarray_copy(data, out) if out is not None else data


class GuardedZstd(_GuardedNumcodec, numcodecs.Zstd):  # type: ignore[misc]
    """numcodecs' Zstd, guarded."""


class GuardedGZip(_GuardedNumcodec, numcodecs.GZip):  # type: ignore[misc]
    """numcodecs' GZip, guarded."""


class GuardedZlib(_GuardedNumcodec, numcodecs.Zlib):  # type: ignore[misc]
    """numcodecs' Zlib, guarded."""


class GuardedBlosc(_GuardedNumcodec, numcodecs.Blosc):  # type: ignore[misc]
    """numcodecs' Blosc, guarded."""


class GuardedLZ4(_GuardedNumcodec, numcodecs.LZ4):  # type: ignore[misc]
    """numcodecs' LZ4, guarded."""


class GuardedBZ2(_GuardedNumcodec, numcodecs.BZ2):  # type: ignore[misc]
    """numcodecs' BZ2, guarded."""


class GuardedLZMA(_GuardedNumcodec, numcodecs.LZMA):  # type: ignore[misc]
    """numcodecs' LZMA, guarded."""


_NUMCODECS: tuple[type[_GuardedNumcodec], ...] = (GuardedZstd, GuardedGZip, GuardedZlib, GuardedBlosc,
                                                  GuardedLZ4, GuardedBZ2, GuardedLZMA)


_A = TypeVar("_A")


def bound_array(array: _A) -> _A:
    """Give a Zarr v2 array's guarded compressor the size of its chunk (no filters between: with
    filters the compressor's output size is theirs, and the decoded-chunk cap stays). Returns array."""
    metadata = getattr(array, "metadata", None)
    compressor = getattr(metadata, "compressor", None)
    if not isinstance(compressor, _GuardedNumcodec) or getattr(metadata, "filters", None):
        return array
    try:
        itemsize = np.dtype(metadata.dtype.to_native_dtype()).itemsize  # type: ignore[union-attr]
        chunks = tuple(int(n) for n in metadata.chunks)  # type: ignore[union-attr]
    except (AttributeError, TypeError, ValueError):
        return array
    if itemsize and np.dtype(metadata.dtype.to_native_dtype()).kind not in "OT":  # type: ignore[union-attr]
        compressor.set_decoded_limit(math.prod(chunks) * itemsize)
    return array


def array_stored_bound(array: Any) -> StoredBound | None:
    """What each chunk of a zarr array may be stored as (model/storage/stored_bound.py), for the
    chains :func:`guarded_decode.most_stored` knows: a Zarr v3 ``bytes`` + compressors chain on a
    regular grid, a Zarr v2 array with one compressor (or none) and no filters; else None (sharded
    arrays are read in ranges, each entry checked against its shard)."""
    metadata = getattr(array, "metadata", None)
    try:
        dtype = np.dtype(metadata.dtype.to_native_dtype())  # type: ignore[union-attr]
        if getattr(metadata, "zarr_format", None) == 2:
            if metadata.filters:  # type: ignore[union-attr]
                return None
            chunks = tuple(int(n) for n in metadata.chunks)  # type: ignore[union-attr]
            compressor = metadata.compressor  # type: ignore[union-attr]
            codecs: list[Any] = ["bytes"] + ([] if compressor is None else [str(compressor.codec_id)])
        else:
            chunks = tuple(int(n) for n in metadata.chunk_grid.chunk_shape)  # type: ignore[union-attr]
            codecs = [codec.to_dict() for codec in metadata.codecs]  # type: ignore[union-attr]
    except (AttributeError, TypeError, ValueError):  # irregular grids, codecs without a document
        return None
    if dtype.kind not in "biufc" or not chunks:
        return None
    decoded = math.prod(chunks) * dtype.itemsize
    most = most_stored(codecs, decoded)
    return None if most is None else StoredBound(most[0], decoded, exact=most[1])


_installed = False
_install_lock = threading.Lock()


def install() -> None:
    """Put the guarded codecs in zarr's and numcodecs' registries (once per process): every array
    zarr-python opens from then on decodes through them."""
    global _installed
    with _install_lock:
        if _installed:
            return
        for name, cls in _ZARR_CODECS.items():
            zarr.registry.register_codec(name, cls)
        codecs = dict(zarr.config.get("codecs", {}))  # one value: the keys "numcodecs.<id>" hold dots
        codecs.update({name: f"{cls.__module__}.{cls.__qualname__}" for name, cls in _ZARR_CODECS.items()})
        zarr.config.set({"codecs": codecs})
        for cls in _NUMCODECS:
            numcodecs.register_codec(cls, cls.codec_id)
        use_checked_sharding()  # and every shard index is checked against its shard before it is used
        _installed = True
