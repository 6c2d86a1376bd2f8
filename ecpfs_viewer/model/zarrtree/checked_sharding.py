"""zarr-python's ShardingCodec, with each shard's index checked against the shard before any inner
chunk is read (model/zarrtree/shard_index.py says what is checked and why).

Registered in zarr's codec configuration (``codecs.sharding_indexed``) by :func:`use_checked_sharding`,
so every sharded array that zarr reads for the app (the Hierarchy's arrays, ``build``'s Zarr
input) goes through it. Only public API: the codec's public ``decode_partial`` and ``decode`` are
wrapped, and the shard is read through a :class:`StorePath` that checks the index it hands back
(a StorePath, so zarr still coalesces the inner chunks' ranges).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import zarr
from zarr.abc.buffer import Buffer, BufferPrototype, NDBuffer
from zarr.abc.store import ByteGetter, ByteRequest, RangeByteRequest, SuffixByteRequest
from zarr.codecs import ShardingCodec
from zarr.registry import register_codec
from zarr.storage import StorePath

from ecpfs_viewer.model.zarrtree.shard_index import IndexLayout, ShardIndexError, checked_table

#: the index codecs whose stored form the check reads (zarr's default is bytes then crc32c)
_READABLE_INDEX_CODECS = (["bytes"], ["bytes", "crc32c"])


def index_layout(codec: ShardingCodec, shard_shape: tuple[int, ...], where: str) -> IndexLayout:
    """The stored layout of the index of a shard of shard_shape; ShardIndexError when its index
    codecs are not ones whose stored form can be checked."""
    described = [c.to_dict() for c in codec.index_codecs]
    names = [str(d.get("name")) for d in described]
    if names not in _READABLE_INDEX_CODECS:
        raise ShardIndexError(f"{where}: shard index codecs {', '.join(names)} cannot be checked against the shard; "
                              "could not be read")
    configuration = described[0].get("configuration") or {}
    endian = configuration.get("endian", "little") if isinstance(configuration, dict) else "little"
    location = str(getattr(codec.index_location, "value", codec.index_location))
    per_shard = tuple(s // c for s, c in zip(shard_shape, codec.chunk_shape, strict=False))
    return IndexLayout(per_shard, little_endian=endian != "big", crc32c=len(names) == 2, at_end=location != "start")


def _index_request(layout: IndexLayout) -> ByteRequest:
    """The request zarr makes for a shard's index alone."""
    return SuffixByteRequest(layout.nbytes) if layout.at_end else RangeByteRequest(0, layout.nbytes)


def check_whole_shard(shard: Buffer, layout: IndexLayout, where: str) -> None:
    """Check the index of a shard read whole (raises ShardIndexError)."""
    size = len(shard)
    start, stop = layout.span(size)
    checked_table(shard[start:stop].to_bytes() if size >= layout.nbytes else b"", layout, size, where)


class CheckedShard(StorePath):
    """The StorePath of one shard, whose reads check what they hand back: a whole shard's index, the
    index read alone (against the shard's stored size), and an inner chunk's range (all of it)."""

    def __init__(self, shard: StorePath, layout: IndexLayout) -> None:
        super().__init__(shard.store, shard.path)
        self.layout = layout

    async def get(self, prototype: BufferPrototype | None = None,
                  byte_range: ByteRequest | None = None) -> Buffer | None:
        found = await super().get(prototype, byte_range)
        if found is None:
            return None
        if byte_range is None:
            check_whole_shard(found, self.layout, self.path)
        elif byte_range == _index_request(self.layout):
            checked_table(found.to_bytes(), self.layout, await self.store.getsize(self.path), self.path)
        elif isinstance(byte_range, RangeByteRequest) and len(found) != byte_range.end - byte_range.start:
            raise ShardIndexError(f"{self.path}: bytes {byte_range.start:,}–{byte_range.end:,} asked for, "
                                  f"{len(found):,} there (the shard changed while read); could not be read")
        return found


class CheckedShardingCodec(ShardingCodec):
    """A ShardingCodec that refuses a shard whose index points outside it ('could not be read', the
    entry named) instead of slicing past its end; reading and writing are otherwise zarr's."""

    async def decode_partial(self, batch_info: Iterable[tuple[ByteGetter, Any, Any]]) -> Iterable[NDBuffer | None]:
        checked: list[tuple[ByteGetter, Any, Any]] = []
        for byte_getter, selection, shard_spec in batch_info:
            if isinstance(byte_getter, StorePath):
                byte_getter = CheckedShard(byte_getter, index_layout(self, tuple(shard_spec.shape), byte_getter.path))
            checked.append((byte_getter, selection, shard_spec))
        return await super().decode_partial(checked)

    async def decode(self, chunk_bytes_and_specs: Iterable[tuple[Buffer | None, Any]]) -> Iterable[NDBuffer | None]:
        shards = list(chunk_bytes_and_specs)
        for shard, shard_spec in shards:
            if shard is not None:
                check_whole_shard(shard, index_layout(self, tuple(shard_spec.shape), "a shard"), "a shard")
        return await super().decode(shards)


def use_checked_sharding() -> None:
    """Make zarr read every sharded array of this process with CheckedShardingCodec (idempotent)."""
    register_codec("sharding_indexed", CheckedShardingCodec)
    name = f"{CheckedShardingCodec.__module__}.{CheckedShardingCodec.__qualname__}"
    if zarr.config.get("codecs.sharding_indexed", None) != name:
        zarr.config.set({"codecs.sharding_indexed": name})
