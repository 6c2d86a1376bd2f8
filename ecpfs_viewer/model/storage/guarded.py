"""zarr-python's local and zip stores, with every read bounded by the caps in model/limits.py.

Chunk data is read through zarr-python, which would read a FIFO until a writer comes, /dev/zero
until memory runs out, and a zip member whatever size it decompresses to. These stores read only
regular files and refuse an object past its cap before reading it, with a message naming it.
"""

from __future__ import annotations

import asyncio
import os
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from zarr.abc.buffer import Buffer, BufferPrototype
from zarr.abc.store import ByteRequest
from zarr.buffer import default_buffer_prototype
from zarr.storage import LocalStore, ZipStore

from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.storage.counted_io import (
    ReadingWrapper,
    UnreadableFile,
    check_answer,
    check_size,
    range_within,
    read_file,
    read_file_range,
)

# what a damaged, encrypted or oddly compressed member raises while it is decompressed
_MEMBER_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, RuntimeError, NotImplementedError, ValueError)


class GuardedLocalStore(LocalStore):
    """A LocalStore that reads regular files only, each within its cap (UnreadableFile otherwise)."""

    def _read(self, key: str, byte_range: ByteRequest | None) -> bytes | None:
        path = os.path.join(self.root, key)
        return read_file(path) if byte_range is None else read_file_range(path, byte_range)

    def get_sync(self, key: str, *, prototype: BufferPrototype | None = None,
                 byte_range: ByteRequest | None = None) -> Buffer | None:
        data = self._read(key, byte_range)
        return None if data is None else (prototype or default_buffer_prototype()).buffer.from_bytes(data)

    async def get(self, key: str, prototype: BufferPrototype | None = None,
                  byte_range: ByteRequest | None = None) -> Buffer | None:
        data = await asyncio.to_thread(self._read, key, byte_range)
        return None if data is None else (prototype or default_buffer_prototype()).buffer.from_bytes(data)

    async def get_partial_values(self, prototype: BufferPrototype,
                                 key_ranges: Iterable[tuple[str, ByteRequest | None]]) -> list[Buffer | None]:
        return list(await asyncio.gather(*(self.get(key, prototype, byte_range) for key, byte_range in key_ranges)))


class GuardedZipStore(ReadingWrapper[ZipStore]):
    """A read-only zarr ZipStore that checks a member's declared size before decompressing it and
    names the member when it is damaged.

    A wrapper, not a subclass: the sizes come from the archive's central directory, read once when
    the zip is opened (the ZipStore's own zipfile handle is private to zarr)."""

    def __init__(self, store: ZipStore, members: dict[str, zipfile.ZipInfo]) -> None:
        super().__init__(store)
        self.members = members
        self.path = store.path

    @classmethod
    async def open(cls, store_cls: type[ZipStore], *args: Any, **kwargs: Any) -> GuardedZipStore:
        """The ZipStore store_cls.open(*args, **kwargs) gives, its central directory read now."""
        store = await store_cls.open(*args, **kwargs)
        return cls(store, await asyncio.to_thread(_central_directory, store.path))

    def _with_store(self, store: ZipStore) -> GuardedZipStore:
        return GuardedZipStore(store, self.members)

    def with_read_only(self, read_only: bool = False) -> GuardedZipStore:
        """Not implemented, as for the ZipStore, in zarr's words naming this type (its contract asks)."""
        raise NotImplementedError(f"with_read_only is not implemented for the {type(self)} store type.")

    async def get(self, key: str, prototype: BufferPrototype,
                  byte_range: ByteRequest | None = None) -> Buffer | None:
        info = self.members.get(key)
        if info is None or info.is_dir():
            return None
        where = f"{self.path}#{key}"
        start, stop = (0, info.file_size) if byte_range is None else range_within(where, byte_range, info.file_size)
        # seeking inside a compressed member decompresses everything before the range
        needed = stop - start if info.compress_type == zipfile.ZIP_STORED else info.file_size
        check_size(where, key, needed, "the member, uncompressed as the zip declares,")
        try:
            found = await self._store.get(key, prototype, byte_range)
        except _MEMBER_ERRORS as exc:
            raise UnreadableFile(where, f"damaged zip member ({describe_exception(exc)})") from exc
        if found is not None:
            check_answer(where, byte_range, len(found))  # a member shorter than the archive declares
        return found

    async def get_partial_values(self, prototype: BufferPrototype,
                                 key_ranges: Iterable[tuple[str, ByteRequest | None]]) -> list[Buffer | None]:
        # one member after another, as ZipStore does (it reads under one lock), each one guarded
        return [await self.get(key, prototype, byte_range) for key, byte_range in key_ranges]


async def open_guarded_zip(path: Path) -> GuardedZipStore:
    """The zip at path opened read-only (its central directory read now), with guarded reads."""
    return await GuardedZipStore.open(ZipStore, path, mode="r")


def _central_directory(path: Path | None) -> dict[str, zipfile.ZipInfo]:
    """The members a zip declares; none for an archive not written yet (a store opened to write)."""
    if path is None:
        raise TypeError("a GuardedZipStore reads the central directory of a zip named by a path")
    if not path.exists() or path.stat().st_size == 0:
        return {}
    with zipfile.ZipFile(path) as archive:
        return {info.filename: info for info in archive.infolist()}
