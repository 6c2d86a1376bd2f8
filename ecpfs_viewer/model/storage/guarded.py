"""zarr-python's local store, with every read bounded by the caps in model/limits.py.

Chunk data is read through zarr-python, which would read a FIFO until a writer comes and /dev/zero
until memory runs out. This store reads only regular files and refuses an object past its cap
before reading it, with a message naming it; a chunk with a bound (model/storage/stored_bound.py) is
refused past it the same way. (Zips: model/storage/zip_store.py.)
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable

from zarr.abc.buffer import Buffer, BufferPrototype
from zarr.abc.store import ByteRequest
from zarr.buffer import default_buffer_prototype
from zarr.storage import LocalStore

from ecpfs_viewer.model.storage.local_files import read_file, read_file_range
from ecpfs_viewer.model.storage.stored_bound import size_check


class GuardedLocalStore(LocalStore):
    """A LocalStore that reads regular files only, each within its cap (UnreadableFile otherwise)."""

    def _read(self, key: str, byte_range: ByteRequest | None) -> bytes | None:
        path = os.path.join(self.root, key)
        return read_file(path, size_check(key)) if byte_range is None else read_file_range(path, byte_range)

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
