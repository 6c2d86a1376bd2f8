"""A read-only zarr store over a zip, reading members itself from its own central directory.

zarr's ZipStore opens a zipfile.ZipFile (a ZipInfo per member) and decompresses a member whatever
size it turns out to be. This store keeps the compact listing of model/storage/zip_directory.py,
reads each member with os.pread on one descriptor (threads read at once, the file is never
written), and refuses before decompressing: a member past its cap as declared, an encrypted one,
a compression method other than stored, deflate, bzip2 or lzma, and a member whose bytes do not match what the
directory declares (stopped at the declared size plus one byte). Each refusal names the member.
"""

from __future__ import annotations

import asyncio
import bz2
import contextlib
import lzma
import os
import threading
import zlib
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

from zarr.abc.buffer import Buffer, BufferPrototype
from zarr.abc.store import ByteRequest, Store

from ecpfs_viewer.model.storage.counted_io import UnreadableFile, check_size, range_within
from ecpfs_viewer.model.storage.stored_bound import check_stored
from ecpfs_viewer.model.storage.zip_directory import Member, ZipDirectory, ZipFormatError, utf8_name

_LOCAL_HEADER = 30
_STORED, _DEFLATED, _BZIP2, _LZMA = 0, 8, 12, 14
#: the zip methods read here besides stored, each by a decompressor that stops at a length
_COMPRESSED = {_DEFLATED: "deflate", _BZIP2: "bzip2", _LZMA: "lzma"}
#: an LZMA member's dictionary is allocated as declared before anything is decoded
LZMA_DICTIONARY_BYTES = 64 << 20
_METHODS = {1: "shrink", 6: "implode", 9: "deflate64", 12: "bzip2", 14: "lzma", 93: "zstandard", 95: "xz",
            98: "PPMd", 99: "AES encryption"}
_ENCRYPTED = 0x1
_FLAG_UTF8 = 0x800
#: a member stored in fewer bytes than this is read on the event loop's thread (a thread costs more)
_INLINE_BYTES = 1 << 20
_O_READ = os.O_RDONLY | getattr(os, "O_BINARY", 0)
_READ_ONLY = "store was opened in read-only mode and does not support writing"


class GuardedZipStore(Store):
    """A zip opened read-only; its central directory is read when the store is made."""

    supports_writes = False
    supports_deletes = False
    supports_listing = True

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = True) -> None:
        super().__init__(read_only=True)
        self.path = Path(path)
        self.lock = threading.Lock()  # reopening after close(); seeking where os.pread is missing (Windows)
        self.fd = -1
        fd = os.open(self.path, _O_READ)
        try:
            self.identity = _identity(fd)
            self.file_size = self.identity[2]
            with os.fdopen(os.dup(fd), "rb") as file:
                self.directory = ZipDirectory.read(file, self.file_size)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "identity": self.identity}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """The zip opened again (a dask worker's copy); if another file now stands at its path, every
        read says so, as a closed store opened again would."""
        self.__init__(state["path"])  # type: ignore[misc]
        if self.identity != tuple(state["identity"]):
            self.close_file()
            self.identity = tuple(state["identity"])

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at exit too, when the descriptor may be gone already
            self.close_file()

    def close_file(self) -> None:
        fd, self.fd = getattr(self, "fd", -1), -1
        if fd >= 0:
            os.close(fd)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GuardedZipStore) and self.path == other.path

    def __hash__(self) -> int:
        return hash(self.path)

    def __repr__(self) -> str:
        return f"GuardedZipStore('zip://{self.path}')"

    def with_read_only(self, read_only: bool = False) -> GuardedZipStore:
        if not read_only:
            raise ValueError(f"{self.path}: a zip is only ever opened read-only")
        return GuardedZipStore(self.path)

    # -- reads ----------------------------------------------------------------------------------
    def _descriptor(self) -> int:
        """The open descriptor; after close(), the zip opened again if it is still the file the
        directory was read from (else UnreadableFile: its listing would not describe it)."""
        fd = self.fd
        if fd >= 0:
            return fd
        with self.lock:
            if self.fd < 0:
                fd = os.open(self.path, _O_READ)
                if _identity(fd) != self.identity:
                    os.close(fd)
                    raise UnreadableFile(str(self.path), "the zip changed on disk since it was opened; open it again")
                self.fd = fd
            return self.fd

    def _pread(self, size: int, offset: int) -> bytes:
        fd = self._descriptor()
        if hasattr(os, "pread"):
            return os.pread(fd, size, offset)
        with self.lock:
            os.lseek(fd, offset, os.SEEK_SET)
            return os.read(fd, size)

    def read_member(self, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
        """The bytes of the member named key (of its byte range), None when there is none."""
        index = self.directory.find(key)
        if index is None:
            return None
        member = self.directory.member(index)
        where = f"{self.path}#{key}"
        start, stop = (0, member.size) if byte_range is None else range_within(where, byte_range, member.size)
        if member.flags & _ENCRYPTED:
            raise UnreadableFile(where, "an encrypted zip member (it needs a password); not read")
        if member.method != _STORED and member.method not in _COMPRESSED:
            method = _METHODS.get(member.method, f"method {member.method}")
            raise UnreadableFile(where, f"a zip member compressed with {method}, which this viewer does not "
                                        "read (only stored, deflate, bzip2 and lzma); not read")
        # seeking inside a compressed member decompresses everything before the range
        needed = stop - start if member.method == _STORED else member.size
        check_size(where, key, needed, "the member, uncompressed as the zip declares,")
        if member.method in _COMPRESSED:
            check_size(where, key, member.compressed, "the member, compressed as the zip declares,")
        if byte_range is None:
            check_stored(where, key, member.size)  # a chunk's bound: its declared size (decompressed to no more)
        data_at = self._data_offset(where, member)
        if member.method == _STORED:
            if member.compressed != member.size:
                raise UnreadableFile(where, f"damaged zip member (stored, but declared as {member.compressed:,} "
                                            f"bytes stored and {member.size:,} uncompressed)")
            data = self._exactly(where, stop - start, data_at + start)
            if byte_range is None:
                self._check_crc(where, member, data)
            return data
        return self._decompress(where, member, self._exactly(where, member.compressed, data_at))[start:stop]

    def _data_offset(self, where: str, member: Member) -> int:
        """Where the member's data begins: past its local header (whose name and extra lengths are its
        own). The header must name the member: entries that share a header or overlap (a zip bomb's
        way to repeat one compressed body) are refused, as zipfile refuses them."""
        expected = member.name.encode("utf-8", "surrogateescape")
        header = self._pread(_LOCAL_HEADER + len(expected), member.header_offset)
        if len(header) < _LOCAL_HEADER or header[:4] != b"PK\x03\x04":
            raise UnreadableFile(where, f"damaged zip member (no local header at offset {member.header_offset:,})")
        flags = int.from_bytes(header[6:8], "little")
        name_length = int.from_bytes(header[26:28], "little")
        extra_length = int.from_bytes(header[28:30], "little")
        raw = header[_LOCAL_HEADER:_LOCAL_HEADER + name_length]
        if name_length > len(raw):
            raw = self._pread(name_length, member.header_offset + _LOCAL_HEADER)
        if utf8_name(raw, bool(flags & _FLAG_UTF8)) != expected:
            shown = raw[:200].decode("utf-8", "replace")
            raise UnreadableFile(where, f"damaged zip member (its local header names {shown!r})")
        return member.header_offset + _LOCAL_HEADER + name_length + extra_length

    def _exactly(self, where: str, size: int, offset: int) -> bytes:
        if offset + size > self.file_size:
            raise UnreadableFile(where, f"damaged zip member ({size:,} bytes at offset {offset:,} run past the "
                                        f"end of the {self.file_size:,}-byte file)")
        parts, total = [], 0
        while total < size:
            block = self._pread(size - total, offset + total)
            if not block:
                raise UnreadableFile(where, "damaged zip member (the file ended while it was read)")
            parts.append(block)
            total += len(block)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    @staticmethod
    def _decompress(where: str, member: Member, stored: bytes) -> bytes:
        """The compressed member, decompressed to no more than its declared size plus one byte."""
        method = _COMPRESSED[member.method]
        try:
            decompressor, body = _decompressor(member.method, stored)
            data: bytes = decompressor.decompress(body, member.size + 1)
        except (zlib.error, OSError, EOFError, lzma.LZMAError, ValueError) as exc:
            raise UnreadableFile(where, f"damaged zip member (its {method} data is invalid: {exc})") from exc
        if len(data) > member.size:
            raise UnreadableFile(where, f"damaged zip member (it decompresses to more than the {member.size:,} "
                                        "bytes its entry declares); not read further")
        # an lzma stream may end without its end marker (the entry's flag 0x2 says whether it has one)
        ended = decompressor.eof or (member.method == _LZMA and not member.flags & 0x2)
        if len(data) < member.size or not ended:
            raise UnreadableFile(where, f"damaged zip member (its {method} data ends after {len(data):,} of the "
                                        f"{member.size:,} bytes its entry declares)")
        GuardedZipStore._check_crc(where, member, data)
        return data

    @staticmethod
    def _check_crc(where: str, member: Member, data: bytes) -> None:
        if zlib.crc32(data) != member.crc:
            raise UnreadableFile(where, "damaged zip member (its CRC-32 does not match its entry)")

    async def get(self, key: str, prototype: BufferPrototype,
                  byte_range: ByteRequest | None = None) -> Buffer | None:
        index = self.directory.find(key)
        if index is not None and int(self.directory.compressed[index]) >= _INLINE_BYTES:
            data = await asyncio.to_thread(self.read_member, key, byte_range)
        else:
            data = self.read_member(key, byte_range)
        return None if data is None else prototype.buffer.from_bytes(data)

    async def get_partial_values(self, prototype: BufferPrototype,
                                 key_ranges: Iterable[tuple[str, ByteRequest | None]]) -> list[Buffer | None]:
        return [await self.get(key, prototype, byte_range) for key, byte_range in key_ranges]

    async def exists(self, key: str) -> bool:
        return self.directory.find(key) is not None

    async def getsize(self, key: str) -> int:
        index = self.directory.find(key)
        if index is None:
            raise FileNotFoundError(key)
        return int(self.directory.size[index])

    async def getsize_prefix(self, prefix: str) -> int:
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        first, stop = self.directory.span(prefix)
        return int(self.directory.size[first:stop].sum())

    # -- listings -------------------------------------------------------------------------------
    async def list(self) -> AsyncIterator[str]:
        for key in self.directory.names_below(""):
            yield key

    async def list_prefix(self, prefix: str) -> AsyncIterator[str]:
        for key in self.directory.names_below(prefix):
            yield key

    async def list_dir(self, prefix: str) -> AsyncIterator[str]:
        for child in self.directory.children(prefix):
            yield child

    # -- never written --------------------------------------------------------------------------
    async def set(self, key: str, value: Buffer) -> None:
        raise ValueError(_READ_ONLY)

    async def set_if_not_exists(self, key: str, value: Buffer) -> None:
        raise ValueError(_READ_ONLY)

    async def delete(self, key: str) -> None:
        raise ValueError(_READ_ONLY)

    async def delete_dir(self, prefix: str) -> None:
        raise ValueError(_READ_ONLY)

    async def clear(self) -> None:
        raise ValueError(_READ_ONLY)

    def close(self) -> None:
        """Close the descriptor; a later read opens the zip again (when it is unchanged)."""
        with self.lock:
            self.close_file()
        super().close()


def _decompressor(method: int, stored: bytes) -> tuple[Any, bytes]:
    """A decompressor for a member's method and the bytes to give it (an lzma member starts with
    the version and properties of its raw stream, APPNOTE 5.8.8; its dictionary size is checked
    before liblzma allocates it)."""
    if method == _DEFLATED:
        return zlib.decompressobj(-15), stored
    if method == _BZIP2:
        return bz2.BZ2Decompressor(), stored
    if len(stored) < 4:
        raise ValueError("shorter than its header")
    size = int.from_bytes(stored[2:4], "little")
    properties = stored[4:4 + size]
    if size != 5 or len(properties) != 5 or properties[0] >= 9 * 5 * 5:
        raise ValueError("its properties are not those of an LZMA1 stream")
    dictionary = int.from_bytes(properties[1:5], "little")
    if dictionary > LZMA_DICTIONARY_BYTES:
        raise ValueError(f"it declares a dictionary of {dictionary:,} bytes, over {LZMA_DICTIONARY_BYTES:,}")
    first = properties[0]
    lzma1 = {"id": lzma.FILTER_LZMA1, "lc": first % 9, "lp": first // 9 % 5, "pb": first // 45,
             "dict_size": max(dictionary, 4096)}
    return lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[lzma1]), stored[4 + size:]


def _identity(fd: int) -> tuple[int, int, int, int]:
    """What tells the file open at fd from another put in its place: device, inode, size, mtime."""
    info = os.fstat(fd)
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns


__all__ = ["GuardedZipStore", "ZipFormatError"]
