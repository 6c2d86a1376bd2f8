"""How the hostile-store tests break a copy of an index: metadata edits, zip bombs, chunk grids
declared far larger than what is stored. Shared by tests/model, tests/cli and tests/gui."""

from __future__ import annotations

import json
import os
import shutil
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import zarr


# -- metadata edits ----------------------------------------------------------------------------
def edit(store: Path, path: str, change: Callable[[dict[str, Any]], None]) -> None:
    document_path = store / path / "zarr.json"
    document = json.loads(document_path.read_text())
    change(document)
    document_path.write_text(json.dumps(document))


def set_shape(store: Path, path: str, shape: list[Any], chunks: list[int] | None = None) -> None:
    def change(document: dict[str, Any]) -> None:
        document["shape"] = shape
        if chunks is not None:
            document["chunk_grid"]["configuration"]["chunk_shape"] = chunks

    edit(store, path, change)


def set_scalar(store: Path, path: str, value: int) -> None:
    zarr.open_array(str(store / path), mode="r+")[...] = value


# -- zip bombs ---------------------------------------------------------------------------------
def _deflated(prefix: bytes, fill: bytes, total: int) -> tuple[bytes, int]:
    """Raw deflate data of prefix + fill repeated up to `total` bytes, and its CRC-32, made without
    compressing `total` bytes: a fully flushed block of 1 MiB is repeated."""
    block = fill * (1 << 20)
    head = zlib.compressobj(9, zlib.DEFLATED, -15)
    first = head.compress(prefix) + head.flush(zlib.Z_FULL_FLUSH)
    body = zlib.compressobj(9, zlib.DEFLATED, -15)
    repeated = body.compress(block) + body.flush(zlib.Z_FULL_FLUSH)
    blocks = (total - len(prefix)) // len(block)
    crc = zlib.crc32(prefix)
    for _ in range(blocks):
        crc = zlib.crc32(block, crc)
    return first + repeated * blocks + zlib.compressobj(9, zlib.DEFLATED, -15).flush(), crc


def write_zip_with_bomb(target: Path, source: Path, bomb_key: str, prefix: bytes, fill: bytes, total: int) -> None:
    """A zip of every file of `source`, with bomb_key replaced by a deflated member of `total` bytes."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(source.rglob("*")):
            key = path.relative_to(source).as_posix()
            if path.is_file() and key != bomb_key:
                archive.write(path, key)
    data, crc = _deflated(prefix, fill, total)
    size = len(prefix) + (total - len(prefix)) // (1 << 20) * (1 << 20)
    with open(target, "r+b") as file:  # append the member by hand, then rewrite the central directory
        with zipfile.ZipFile(file) as archive:
            infos = archive.infolist()
            offset = archive.start_dir
        file.seek(offset)
        name = bomb_key.encode()
        file.write(struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 8, 0, 0, crc, len(data), size, len(name), 0)
                   + name + data)
        central = file.tell()
        entries = [(i.filename.encode(), i.CRC, i.compress_size, i.file_size, i.header_offset) for i in infos]
        entries.append((name, crc, len(data), size, offset))
        for entry_name, entry_crc, stored, plain, header in entries:
            file.write(struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, entry_crc, stored, plain,
                                   len(entry_name), 0, 0, 0, 0, 0, header) + entry_name)
        end = file.tell()
        file.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(entries), len(entries), end - central,
                               central, 0))
        file.truncate()


# -- chunk grids (issue 19) --------------------------------------------------------------------
def tiny_chunk_grid(store: Path, rows: int, *, fifo_first_chunk: bool = True) -> None:
    """rep_embeddings of store declared as rows x 2 in 1 x 1 chunks; its stored chunk (one object,
    for a far larger chunk) is replaced by a FIFO, which the store refuses at once."""
    document_path = store / "rep_embeddings" / "zarr.json"
    document = json.loads(document_path.read_text())
    document["shape"] = [rows, 2]
    document["chunk_grid"]["configuration"]["chunk_shape"] = [1, 1]
    document_path.write_text(json.dumps(document))
    if fifo_first_chunk:
        first = store / "rep_embeddings" / "c" / "0" / "0"
        first.unlink()
        os.mkfifo(first)


GIANT_SHARD = [65_536, 4_096]  # inner chunks of 1 x 1: 268 M index entries, 4 GiB of index per shard


def giant_shard_index(store: Path, path: str = "rep_embeddings") -> None:
    """The array at path rewritten as one real shard of 1 x 1 inner chunks, then its metadata edited
    to declare shards of GIANT_SHARD (the shard stored keeps its small index)."""
    values = zarr.open_array(store / path, mode="r")[...]
    shutil.rmtree(store / path)
    array = zarr.create_array(store / path, shape=values.shape, dtype=values.dtype, chunks=(1, 1), shards=values.shape)
    array[...] = values
    document_path = store / path / "zarr.json"
    document = json.loads(document_path.read_text())
    document["chunk_grid"]["configuration"]["chunk_shape"] = GIANT_SHARD
    document_path.write_text(json.dumps(document))
