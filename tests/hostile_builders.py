"""How the hostile-store tests break a copy of an index: metadata edits, zip bombs, chunk grids
declared far larger than what is stored, and the catalogue of every broken copy and hostile file
that the CLI tests run each command on and the GUI monkey opens. Shared by tests/model, tests/cli
and tests/gui."""

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

NODE = "lvl_2/node_2/embeddings"  # an ecpfs leaf array of two_clusters, one chunk c/0/0


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


def bulky_attribute(store: Path, path: str, value_json: bytes) -> int:
    """Give the document at path one attribute, "bulk", whose stored JSON is value_json; returns the
    document's size. Written without building the value in Python (tens of MB of it)."""
    document_path = store / path / "zarr.json"
    document = json.loads(document_path.read_text())
    document["attributes"] = {"bulk": None}
    head, tail = json.dumps(document).encode().split(b"null", 1)
    document_path.write_bytes(head + value_json + tail)
    return len(head) + len(value_json) + len(tail)


def empty_lists(count: int) -> bytes:
    """A JSON list of `count` empty lists: 3 bytes of JSON, one Python list object each."""
    return b"[" + b"[]," * (count - 1) + b"[]]"


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


def sharded_leaf(store: Path, path: str = NODE, *, shards: tuple[int, ...] | None = None,
                 compressed: bool = False) -> Path:
    """The array at path rewritten as one shard of inner chunks of one row (the whole array, or
    `shards` rows x columns when given: a larger shard is read in part); the shard file's path."""
    values = zarr.open_array(store / path, mode="r")[...]
    shutil.rmtree(store / path)
    array = zarr.create_array(store / path, shape=values.shape, dtype=values.dtype, chunks=(1, values.shape[1]),
                              shards=shards or values.shape, **({} if compressed else {"compressors": None}))
    array[...] = values
    return store / path / "c" / "0" / "0"


def set_shard_entry(shard: Path, entries: int, entry: int, offset: int, length: int) -> None:
    """Overwrite entry `entry` of the index of `entries` at the end of a shard (bytes then crc32c,
    zarr's default) with (offset, length), and its checksum to match: only the entry is wrong."""
    import google_crc32c

    data = bytearray(shard.read_bytes())
    start = len(data) - 16 * entries - 4
    struct.pack_into("<QQ", data, start + 16 * entry, offset, length)
    struct.pack_into("<I", data, len(data) - 4, google_crc32c.value(bytes(data[start:len(data) - 4])))
    shard.write_bytes(bytes(data))


#: Damaged shard index entries: (offset, length) given the shard's size
SHARD_DAMAGE: dict[str, Callable[[int], tuple[int, int]]] = {
    "past-the-end": lambda size: (9_000, 1_024),
    "wraps-2-64": lambda size: (2**64 - 8, 16),
    "overlaps-the-index": lambda size: (size - 20, 8),
    "zero-length": lambda size: (0, 0),
    "half-empty": lambda size: (2**64 - 1, 8),
}


# -- the catalogue: every broken copy of two_clusters, every hostile file -------------------------
def _shape(path: str, shape: list[Any], chunks: list[int] | None = None) -> Callable[[Path], None]:
    return lambda store: set_shape(store, path, shape, chunks)


def _replace(path: str, old: str, new: str) -> Callable[[Path], None]:
    def change(store: Path) -> None:
        document = store / path / "zarr.json"
        document.write_text(json.dumps(json.loads(document.read_text())).replace(old, new, 1))

    return change


def _scalar(path: str, value: int) -> Callable[[Path], None]:
    return lambda store: set_scalar(store, path, value)


def _fifos(store: Path) -> None:
    for key in ("lvl_2/node_1/zarr.json", f"{NODE}/c/0/0"):
        (store / key).unlink()
        os.mkfifo(store / key)


def _dev_zero(store: Path) -> None:
    for key in ("zarr.json", "lvl_2/node_1/zarr.json", f"{NODE}/c/0/0"):
        (store / key).unlink()
        (store / key).symlink_to("/dev/zero")


def _padded(path: str) -> Callable[[Path], None]:
    def change(store: Path) -> None:
        document = store / path / "zarr.json"
        document.write_text(document.read_text() + " " * (3 << 20))  # 3 MB: over the 2 MB cap set for "over-cap"

    return change


def _scalar_chunk_folder(store: Path) -> None:
    (store / "info/levels/c").unlink()
    (store / "info/levels/c").mkdir()


def _link_loops(store: Path) -> None:
    (store / "lvl_2/node_1/zarr.json").unlink()
    (store / "lvl_2/node_1/zarr.json").symlink_to("zarr.json")
    (store / NODE / "c/loop").symlink_to("..")
    (store / "lvl_2/node_9").symlink_to("node_9")


def _levels_loop(store: Path) -> None:
    shutil.rmtree(store / "info/levels")
    os.symlink(store / "info/levels", store / "info/levels")


#: name -> how a copy of two_clusters is broken
BROKEN_COPIES: dict[str, Callable[[Path], None]] = {
    "fifo": _fifos,
    "dev-zero": _dev_zero,
    "node-metadata-over-cap": _padded(NODE),
    "root-metadata-over-cap": _padded(""),
    "million-row-leaf": lambda s: (_shape(f"{NODE}", [10**6, 2], [1, 1])(s),
                                   _shape("lvl_2/node_2/item_ids", [10**6], [1])(s)),
    "petabyte-root": _shape("index_root/embeddings", [10**15, 2]),
    "ten-billion-representatives": lambda s: (_shape("rep_item_ids", [10**10])(s),
                                              _shape("index_root/embeddings", [10**5, 2])(s)),
    "four-billion-levels": _scalar("info/levels", 2**32 - 1),
    "zero-levels": _scalar("info/levels", 0),
    "scalar-chunk-folder": _scalar_chunk_folder,
    "negative-dimension": _shape("rep_embeddings", [4, -2]),
    "negative-rows": _shape("rep_item_ids", [-4]),
    "shape-1e400": _replace("rep_item_ids", '"shape": [', '"shape": [1e400, '),
    "shape-2.5": _replace("rep_item_ids", '"shape": [', '"shape": [2.5, '),
    "chunk-shape-0": _replace("rep_item_ids", '"chunk_shape": [', '"chunk_shape": [0, '),
    "deep-nesting": _replace("rep_item_ids", '"attributes": {',
                             '"attributes": {"deep": ' + "[" * 100_000 + "]" * 100_000 + ", "),
    "symlink-loops": _link_loops,
    "levels-symlink-loop": _levels_loop,
}


def _zip_bomb(source: Path, tmp_path: Path, key: str, prefix: bytes, fill: bytes, total: int) -> Path:
    bomb = tmp_path / "bomb.zip"
    write_zip_with_bomb(bomb, source, key, prefix, fill, total)
    return bomb


def _damaged_zips(source: Path, tmp_path: Path) -> list[Path]:
    whole = tmp_path / "whole.zip"
    shutil.make_archive(str(whole.with_suffix("")), "zip", source)
    data = whole.read_bytes()
    (tmp_path / "truncated.zip").write_bytes(data[: len(data) // 2])
    return [tmp_path / "truncated.zip"]


def _huge_grid(tmp_path: Path) -> Path:
    store = tmp_path / "grid.zarr"
    leaf = zarr.create_array(store, name="leaf", shape=(10**6, 128), chunks=(1, 1), dtype="float32")
    leaf[0, 0:3] = 1
    return store


def _grid_store(source: Path, tmp_path: Path, change: str) -> Path:
    """A copy of two_clusters broken by one of the chunk-grid builders above."""
    store = tmp_path / "two_clusters.zarr"
    shutil.copytree(source, store)
    if change == "tiny":
        tiny_chunk_grid(store, 50_000)
    else:
        giant_shard_index(store, change)
    return store


def _self_loop(tmp_path: Path) -> Path:
    loop = tmp_path / "self.zarr"
    loop.symlink_to(loop)
    return loop


def _fifo_store(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "fifo.zarr")
    return tmp_path / "fifo.zarr"


OTHER_STORES: dict[str, Callable[[Path, Path], Path]] = {
    "zip-bomb-chunk": lambda src, tmp: _zip_bomb(src, tmp, f"{NODE}/c/0/0", b"", b"\0", 2 << 30),
    "zip-bomb-zarr-json": lambda src, tmp: _zip_bomb(src, tmp, "lvl_2/node_1/zarr.json",
                                                     b'{"zarr_format": 3, "node_type": "group"}', b" ", 1 << 30),
    "truncated-zip": lambda src, tmp: _damaged_zips(src, tmp)[0],
    "plain-zarr-128-million-chunks": lambda src, tmp: _huge_grid(tmp),
    "store-linked-to-itself": lambda src, tmp: _self_loop(tmp),
    "store-is-a-fifo": lambda src, tmp: _fifo_store(tmp),
    "store-is-dev-zero": lambda src, tmp: Path("/dev/zero"),
    "rep-embeddings-of-100-thousand-chunks-one-failing": lambda src, tmp: _grid_store(src, tmp, "tiny"),
    "rep-embeddings-shard-index-of-4-gib": lambda src, tmp: _grid_store(src, tmp, "rep_embeddings"),
    "leaf-shard-index-of-4-gib": lambda src, tmp: _grid_store(src, tmp, NODE),
}
