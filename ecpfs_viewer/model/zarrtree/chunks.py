"""Chunk statistics of one array, from one listing and the shard indexes; no chunk is decoded.

A user tuning chunk sizes wants to see which chunks exist (a missing chunk reads as the fill
value), what each costs on disk, and, for ecpfs nodes, how much of a padded chunk a small node
really uses. zarr-python's ``nchunks_initialized`` tests every possible key against a list
(quadratic); here the listing is parsed once into the grid, so the cost follows what is stored.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from zarr.abc.store import ByteRequest, RangeByteRequest, SuffixByteRequest

from ecpfs_viewer.model.errors import UserError, describe_exception
from ecpfs_viewer.model.formatting import format_bytes
from ecpfs_viewer.model.limits import current_limits
from ecpfs_viewer.model.storage import event_loop
from ecpfs_viewer.model.storage.counted_io import is_metadata_key
from ecpfs_viewer.model.storage.opening import OpenedStore, listing_unavailable
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import ArrayDetails

#: Grids larger than this are counted from the listing but only partly mapped into ``stored``.
MAX_ENUMERATED_CHUNKS = 1_000_000
#: At most this many shard indexes are read for one array (one ranged request each).
MAX_SHARD_INDEXES = 10_000

_EMPTY = np.uint64(2**64 - 1)


class ChunkStatsError(UserError):
    """Chunk statistics cannot be computed (not an array, unreadable metadata); names the path."""


@dataclass(frozen=True)
class NodeUnderfill:
    """How much of its declared chunk rows an ecpfs node array really uses."""

    rows_used: int
    chunk_rows: int  # rows of one chunk
    fraction_used: float  # rows_used / rows_allocated
    bytes_decoded_to_read_node: int  # whole (padded) chunks decoded to read every row
    bytes_used: int | None  # the bytes those rows hold once decoded (None for strings)
    chunks: int = 1  # chunks along axis 0

    @property
    def rows_allocated(self) -> int:
        """Rows reserved by all the chunks along axis 0 (chunks x chunk rows)."""
        return self.chunks * self.chunk_rows

    def describe(self) -> str:
        spread = f" in {self.chunks:,} chunks of {self.chunk_rows:,}" if self.chunks > 1 else ""
        return (f"{self.rows_used:,} of {self.rows_allocated:,} chunk rows used{spread} ({self.fraction_used:.2%}); "
                f"reading the node decodes {format_bytes(self.bytes_decoded_to_read_node)}")


@dataclass(frozen=True)
class ChunkStats:
    """What is stored for each chunk of one array (inner chunks for a sharded array)."""

    path: str
    grid_shape: tuple[int, ...]  # chunks along each axis (inner chunks when sharded)
    chunk_shape: tuple[int, ...]  # the read chunk (inner chunk when sharded)
    shard_shape: tuple[int, ...] | None
    n_chunks: int
    n_present: int
    n_missing: int
    stored_bytes_total: int  # bytes of the stored chunk (or shard) objects, indexes included
    logical_bytes: int | None  # decoded size of the whole array; None for variable-length types
    compression_ratio: float | None  # decoded bytes of the present chunks / their stored bytes
    stored: np.ndarray  # int64, grid-shaped (see stored_rows); stored bytes per chunk, -1 = missing
    key_encoding: tuple[str, str] = ("default", "/")  # (name, separator)
    shape: tuple[int, ...] = ()
    fill_value: Any = None
    underfill: NodeUnderfill | None = None
    from_shard_index: bool = False
    stored_rows: int = 0  # how many rows of the grid (axis 0) `stored` covers; less than grid_shape[0] for huge grids
    notes: tuple[str, ...] = ()  # what was capped, shards whose index could not be read, ...
    problems: dict[tuple[int, ...], str] = field(default_factory=dict)  # per shard index: why unreadable

    @property
    def complete(self) -> bool:
        """True when `stored` maps every chunk of the grid."""
        return not self.grid_shape or self.stored_rows >= self.grid_shape[0]

    def key_of(self, index: tuple[int, ...]) -> str:
        """The store key (relative to the array) that holds chunk `index`: the shard key when sharded."""
        index = tuple(int(i) for i in index)
        if self.shard_shape is not None:
            per_shard = _per_shard(self.shard_shape, self.chunk_shape)
            index = tuple(i // p for i, p in zip(index, per_shard, strict=False))
        return chunk_key(index, *self.key_encoding)

    def rows_of(self, index: tuple[int, ...]) -> tuple[int, int]:
        """The array rows (axis 0) covered by chunk `index`; (0, 1) for a scalar."""
        if not self.shape:
            return (0, 1)
        start = int(index[0]) * self.chunk_shape[0]
        return (start, min(start + self.chunk_shape[0], self.shape[0]))

    def stored_of(self, index: tuple[int, ...]) -> int | None:
        """Stored bytes of chunk `index`, -1 when missing, None when outside what was mapped."""
        index = tuple(int(i) for i in index)
        if self.grid_shape and index[0] >= self.stored_rows:
            return None
        return int(self.stored[index])

    def describe_cell(self, index: tuple[int, ...]) -> str:
        """A one-line description of a chunk, for a tooltip over a chunk-map cell."""
        index = tuple(int(i) for i in index)
        where = "chunk" if self.shard_shape is None else "inner chunk"
        label = f"{where} ({', '.join(str(i) for i in index)})" if index else f"{where} (scalar)"
        parts = [label]
        if self.shape:
            start, stop = self.rows_of(index)
            parts.append(f"rows {start:,}–{stop - 1:,}" if stop > start else "no rows")
        key = self.key_of(index)
        parts.append(f"key {key}" if self.shard_shape is None else f"in shard {key}")
        size = self.stored_of(index)
        if size is None:
            parts.append("not mapped (grid too large)")
        elif size < 0:
            parts.append(f"missing: reads as fill value {self.fill_value!r}")
        else:
            parts.append(f"{format_bytes(size)} stored")
        return " · ".join(parts)

    def describe(self) -> str:
        """A short summary line for a panel."""
        text = (f"{self.n_chunks:,} chunks ({self.n_present:,} stored, {self.n_missing:,} missing), "
                f"{format_bytes(self.stored_bytes_total)} stored")
        if self.compression_ratio is not None:
            text += f", ratio {self.compression_ratio:.2f}"
        return text


def chunk_key(index: tuple[int, ...], encoding: str, separator: str) -> str:
    """The key of a chunk under a chunk key encoding ('default' → c/0/1, 'v2' → 0.1; rank 0: c / 0).

    Written out from the Zarr v3 spec (§ chunk key encodings): zarr-python's encoding classes
    live in zarr.core (internal), and zarr 3.1.0 has no public lookup of them by name."""
    if separator not in ("/", "."):
        raise ValueError(f"chunk key separator must be '/' or '.', got {separator!r}")
    coords = [str(int(i)) for i in index]
    if encoding == "default":
        return separator.join(["c", *coords])
    if encoding == "v2":
        return separator.join(coords) if coords else "0"
    raise ValueError(f"unknown chunk key encoding {encoding!r} (expected 'default' or 'v2')")


def key_encoding_of(details: ArrayDetails) -> tuple[str, str]:
    """(name, separator) of an array's chunk key encoding, with the defaults of the spec."""
    encoding = details.chunk_key_encoding
    if isinstance(encoding, str):
        name, config = encoding, {}
    else:
        name, config = encoding.get("name", "default"), encoding.get("configuration") or {}
    default_separator = "." if name == "v2" else "/"
    return name, str(config.get("separator", default_separator))


def chunk_stats(h: Hierarchy, path: str, *, node_array: bool = False) -> ChunkStats:
    """Chunk statistics of the array at path, from one listing (plus one ranged read per shard).

    ``node_array``: the caller knows the array's rows fill its first-axis chunks from the top, as
    an ecpfs node's rows do (``ecpfs.paths.is_node_array``); then how much of them is used is told.
    """
    path = path.strip("/")
    details = h.array_details(path, ChunkStatsError)
    encoding = key_encoding_of(details)
    problems: list[str] = []
    try:
        if listing_unavailable(h.store):  # a static web server: ask each key of the grid instead
            outer = details.shard_shape or details.chunk_shape
            sizes = probed_chunk_sizes(h, path, _grid(details.shape, outer), encoding)
        else:
            sizes = h.store.sizes_below(path, problems)
    except OSError as exc:
        raise ChunkStatsError(f"{path}: cannot list chunks ({exc.strerror or exc})") from exc
    notes = [f"not listed: {problem}" for problem in problems[:10]]
    cap = current_limits().max_listed_chunks
    if len(sizes) > cap:  # a listing past the cap: the first objects stand for the array
        notes.append(f"{len(sizes):,} objects stored; statistics computed from the first {cap:,}")
        sizes = dict(itertools.islice(sizes.items(), cap))
    if details.shard_shape is None:
        stats = _plain_stats(path, details, encoding, sizes)
    else:
        stats = _sharded_stats(h.store, path, details, encoding, sizes, h.details(path).document or {})
    if not node_array:
        stats = dataclasses.replace(stats, underfill=None)
    if not stats.complete:
        objects = sum(1 for key in sizes if not is_metadata_key(key))
        notes.insert(0, f"{stats.n_chunks:,} chunks declared; statistics computed from the "
                        f"{objects:,} stored object{'' if objects == 1 else 's'}")
    return dataclasses.replace(stats, notes=(*notes, *stats.notes)) if notes else stats


# -- unsharded --------------------------------------------------------------------------------------
def _plain_stats(path: str, details: ArrayDetails, encoding: tuple[str, str],
                 sizes: dict[str, int]) -> ChunkStats:
    grid = _grid(details.shape, details.chunk_shape)
    mapped_rows, notes = _mapped_rows(grid)
    stored = np.full(_mapped_shape(grid, mapped_rows), -1, dtype=np.int64)
    n_present = 0
    total = 0
    for key, size in sizes.items():
        index = _parse_key(key, encoding, len(grid))
        if index is None or any(i >= g for i, g in zip(index, grid, strict=False)):
            continue
        n_present += 1
        total += size
        if not grid or index[0] < mapped_rows:
            stored[index] = size
    return _finish(path, details, encoding, grid, stored, mapped_rows, n_present, total, notes, {}, False)


def _parse_key(key: str, encoding: tuple[str, str], ndim: int) -> tuple[int, ...] | None:
    """The chunk index a relative key names, or None for metadata and stray files."""
    name, separator = encoding
    if name != "v2":
        if ndim == 0:
            return () if key == "c" else None
        if not key.startswith("c" + separator):
            return None
        key = key[2:]
    elif ndim == 0:
        return () if key == "0" else None
    parts = key.split(separator)
    if len(parts) != ndim or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


# -- sharded ----------------------------------------------------------------------------------------
def _sharded_stats(store: OpenedStore, path: str, details: ArrayDetails, encoding: tuple[str, str],
                   sizes: dict[str, int], document: dict[str, Any]) -> ChunkStats:
    shard_shape = details.shard_shape or ()
    per_shard = _per_shard(shard_shape, details.chunk_shape)
    grid = _grid(details.shape, details.chunk_shape)
    shard_grid = _grid(details.shape, shard_shape)
    config = _sharding_config(document)
    mapped_rows, notes = _mapped_rows(grid)
    stored = np.full(_mapped_shape(grid, mapped_rows), -1, dtype=np.int64)
    present: list[tuple[tuple[int, ...], str, int]] = []
    for key, size in sizes.items():
        index = _parse_key(key, encoding, len(shard_grid))
        if index is not None and all(i < g for i, g in zip(index, shard_grid, strict=False)):
            present.append((index, key, size))
    present.sort()
    total = sum(size for _, _, size in present)
    n_inner = math.prod(per_shard)
    index_bytes = 16 * n_inner + (4 if config["crc32c"] else 0)
    readable = config["supported"]
    if not readable:
        notes.append(f"shard index codecs {config['index_codecs']} are not supported: "
                     "inner chunks of a stored shard are shown as present, sizes estimated")
    budget = current_limits().max_shard_index_bytes
    n_read = min(len(present), MAX_SHARD_INDEXES, budget // index_bytes) if readable else 0
    if readable and n_read < len(present):
        notes.append(f"{len(present):,} shards stored, each index {format_bytes(index_bytes)}; inner chunks read "
                     f"from the first {n_read:,} indexes (cap {MAX_SHARD_INDEXES:,} indexes, "
                     f"{current_limits().describe('max_shard_index_bytes')}), the rest counted as fully present")
    request: ByteRequest = (SuffixByteRequest(index_bytes) if config["location"] == "end"
                            else RangeByteRequest(0, index_bytes))
    raw = store.read_ranges([(store.key(path, key), request) for _, key, _ in present[:n_read]])
    problems: dict[tuple[int, ...], str] = {}
    n_present = 0
    for n, (shard_index, key, size) in enumerate(present):
        table, problem = _decode_index(raw[n], per_shard, config) if n < n_read else (None, None)
        if problem:
            problems[shard_index] = f"shard {key}: {problem}"
        origin = tuple(s * p for s, p in zip(shard_index, per_shard, strict=False))
        extent = tuple(max(0, min(p, g - o)) for p, o, g in zip(per_shard, origin, grid, strict=False))
        rows = min(extent[0], mapped_rows - origin[0]) if grid else 0
        target = (slice(origin[0], origin[0] + max(rows, 0)),
                  *(slice(o, o + e) for o, e in zip(origin[1:], extent[1:], strict=False))) if grid else ()
        if table is None:  # numpy fills the mapped part; nothing the size of the shard is allocated
            n_present += math.prod(extent)
            stored[target] = max(0, (size - index_bytes) // n_inner)
            continue
        inside = table[tuple(slice(0, e) for e in extent)]
        here = ~((inside[..., 0] == _EMPTY) & (inside[..., 1] == _EMPTY))
        n_present += int(here.sum())
        if not grid or rows > 0:
            stored[target] = np.where(here, inside[..., 1].astype(np.int64), -1)[:rows] if grid else (
                int(inside[1]) if here else -1)
    if problems:
        notes.append(f"{len(problems)} shard index(es) unreadable; their inner chunks are estimated")
    return _finish(path, details, encoding, grid, stored, mapped_rows, n_present, total, notes, problems,
                   readable)


def _sharding_config(document: dict[str, Any]) -> dict[str, Any]:
    codec = next((c for c in document.get("codecs", []) if isinstance(c, dict)
                  and c.get("name") == "sharding_indexed"), {})
    config = codec.get("configuration") or {}
    index_codecs = config.get("index_codecs") or [{"name": "bytes", "configuration": {"endian": "little"}},
                                                  {"name": "crc32c"}]
    names = [c.get("name") if isinstance(c, dict) else str(c) for c in index_codecs]
    endian = "little"
    for c in index_codecs:
        if isinstance(c, dict) and c.get("name") == "bytes":
            endian = (c.get("configuration") or {}).get("endian", "little")
    return {
        "location": config.get("index_location", "end"),
        "crc32c": "crc32c" in names,
        "endian": endian,
        "index_codecs": names,
        "supported": names in (["bytes"], ["bytes", "crc32c"]),
    }


def _decode_index(raw: bytes | Exception | None, per_shard: tuple[int, ...], config: dict[str, Any]
                  ) -> tuple[np.ndarray | None, str | None]:
    """The (offset, nbytes) table of one shard, or None and the reason it cannot be used."""
    body_len = 16 * math.prod(per_shard)
    if raw is None:
        return None, "disappeared while reading its index"
    if isinstance(raw, Exception):
        return None, f"cannot read its index ({getattr(raw, 'strerror', None) or describe_exception(raw)})"
    if len(raw) < body_len + (4 if config["crc32c"] else 0):
        return None, f"too short for its index ({len(raw)} bytes)"
    body = raw[:body_len]
    if config["crc32c"]:
        import google_crc32c

        checksum = int.from_bytes(raw[body_len:body_len + 4], "little")
        if google_crc32c.value(body) != checksum:
            return None, "index checksum does not match"
    dtype = "<u8" if config["endian"] == "little" else ">u8"
    table = np.frombuffer(body, dtype=dtype).astype(np.uint64).reshape((*tuple(per_shard), 2))
    return table, None


# -- shared -----------------------------------------------------------------------------------------
def _grid(shape: tuple[int, ...], chunk_shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(math.ceil(s / c) if c else 0 for s, c in zip(shape, chunk_shape, strict=False))


def _per_shard(shard_shape: tuple[int, ...], chunk_shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(max(1, s // c) for s, c in zip(shard_shape, chunk_shape, strict=False))


def _mapped_rows(grid: tuple[int, ...]) -> tuple[int, list[str]]:
    """How many rows of the grid fit under the enumeration cap, and a note when not all do."""
    if not grid:
        return 0, []
    n_chunks = math.prod(grid)
    if n_chunks <= MAX_ENUMERATED_CHUNKS:
        return grid[0], []
    per_row = math.prod(grid[1:]) or 1
    rows = MAX_ENUMERATED_CHUNKS // per_row
    return rows, [f"{n_chunks:,} chunks: the map covers the first {rows:,} of {grid[0]:,} chunk rows; "
                  "counts and totals cover every chunk"]


def _mapped_shape(grid: tuple[int, ...], mapped_rows: int) -> tuple[int, ...]:
    if grid and math.prod(grid[1:]) > MAX_ENUMERATED_CHUNKS:  # not even one row of the grid fits
        return (0,) * len(grid)
    return (mapped_rows, *grid[1:]) if grid else ()


def _finish(path: str, details: ArrayDetails, encoding: tuple[str, str], grid: tuple[int, ...],
            stored: np.ndarray, mapped_rows: int, n_present: int, total: int, notes: list[str],
            problems: dict[tuple[int, ...], str], from_shard_index: bool) -> ChunkStats:
    n_chunks = math.prod(grid) if grid else 1
    ratio = None
    if details.itemsize is not None and total > 0:
        present_logical = _present_logical_elements(details, grid, stored, mapped_rows, n_present)
        if present_logical:
            ratio = present_logical * details.itemsize / total
    return ChunkStats(
        path=path, grid_shape=grid, chunk_shape=details.chunk_shape, shard_shape=details.shard_shape,
        n_chunks=n_chunks, n_present=n_present, n_missing=n_chunks - n_present, stored_bytes_total=total,
        logical_bytes=details.logical_bytes, compression_ratio=ratio, stored=stored, key_encoding=encoding,
        shape=details.shape, fill_value=details.fill_value,
        underfill=_underfill(details, grid, n_present), from_shard_index=from_shard_index,
        stored_rows=mapped_rows, notes=tuple(notes), problems=problems,
    )


def _present_logical_elements(details: ArrayDetails, grid: tuple[int, ...], stored: np.ndarray,
                              mapped_rows: int, n_present: int) -> int:
    """Elements inside the array bounds that the present chunks hold (edge chunks are clipped)."""
    if not grid:
        return 1 if n_present else 0
    huge = any(n >= 2**62 for n in (*details.shape, *details.chunk_shape))  # past int64 arithmetic
    if mapped_rows < grid[0] or not stored.size or huge:  # partial map: scale by the share present
        return details.size * n_present // max(1, math.prod(grid))
    extents = []
    for s, c, g in zip(details.shape, details.chunk_shape, grid, strict=False):
        sizes = np.full(g, c, dtype=np.int64)
        if g:
            sizes[-1] = s - c * (g - 1)
        extents.append(sizes)
    elements = extents[0]
    for sizes in extents[1:]:
        elements = np.multiply.outer(elements, sizes)
    return int(elements[stored >= 0].sum())


def _underfill(details: ArrayDetails, grid: tuple[int, ...], n_present: int) -> NodeUnderfill | None:
    if not details.shape:
        return None
    rows = details.shape[0]
    chunk_rows = details.chunk_shape[0]
    allocated = grid[0] * chunk_rows if grid else 0
    chunk_elements = math.prod(details.chunk_shape)
    itemsize = details.itemsize or 0
    row_elements = math.prod(details.shape[1:])
    return NodeUnderfill(
        rows_used=rows, chunk_rows=chunk_rows, chunks=grid[0] if grid else 0,
        fraction_used=rows / allocated if allocated else 0.0,
        bytes_decoded_to_read_node=n_present * chunk_elements * itemsize,
        bytes_used=rows * row_elements * itemsize if details.itemsize else None,
    )


#: Chunk keys asked one by one at most, for an array on a store that cannot list folders.
MAX_PROBED_CHUNKS = 65_536


def probed_chunk_sizes(h: Hierarchy, path: str, grid_shape: tuple[int, ...], encoding: tuple[str, str]
                       ) -> dict[str, int]:
    """Stored size of every chunk (or shard) key of an array, asked one HEAD request per key.

    For chunk statistics where the server lists no folders: the keys come from the chunk grid,
    the requests run concurrently (bounded by the store), and an absent key is left out.
    """
    total = math.prod(grid_shape)  # exact: numpy's int64 product wraps (2^32 x 2^32 chunks gave 0)
    if total > MAX_PROBED_CHUNKS:
        raise OSError(f"{path}: {total:,} chunks and no folder listing; too many to ask one by one")
    keys = [chunk_key(tuple(index), *encoding) for index in itertools.product(*(range(n) for n in grid_shape))]
    store = h.store.zarr_store

    async def size(key: str) -> tuple[str, int | None]:
        try:
            return key, await store.getsize(h.store.key(path, key))
        except FileNotFoundError:
            return key, None
        except Exception as exc:
            if type(exc).__name__ == "NotFoundError":
                return key, None
            raise

    async def all_sizes() -> list[tuple[str, int | None]]:
        return list(await asyncio.gather(*(size(k) for k in keys)))

    return {key: found for key, found in event_loop.run(all_sizes()) if found is not None}
