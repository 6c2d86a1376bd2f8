"""Read many whole arrays at once: metadata and chunks in two batched store reads, one decode call.

Search, locate and exact search read thousands of small node arrays. One zarr ``getitem`` per
array costs about half a millisecond of event-loop bookkeeping, so 4,000 leaves took seconds.
Here the ``zarr.json`` documents and then every chunk of every array are fetched with
:meth:`OpenedStore.read_many_or_errors` (concurrent on remote stores, counted by its I/O counter)
and decoded without zarr's per-chunk bookkeeping. zarr's public API decodes a chunk only through an
array (its codec pipeline wants an ``ArraySpec`` from zarr.core, which is internal, and 3.4 removed
the ``get_chunk_spec`` that made one), so: the common chains (``bytes`` then zstd, gzip or blosc, what
ecpfs indexes use) are decoded with the numcodecs codecs zarr itself uses for them, built from the
metadata; any other chain by putting the chunks side by side, along the first axis, in an in-memory
array of that layout, read back with one ``getitem``. Arrays the batch path does not cover
(sharding, irregular grids) are read one by one through :class:`Hierarchy`; ecpfs arrays are
always Zarr v3, so a path without ``zarr.json`` holds no array.
"""

from __future__ import annotations

import itertools
import json
import math
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numcodecs
import numpy as np
import zarr
from zarr.buffer.cpu import Buffer as CpuBuffer
from zarr.storage import MemoryStore, StorePath

from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.storage import event_loop
from ecpfs_viewer.model.storage.opening import OpenedStore
from ecpfs_viewer.model.zarrtree.documents import load_json_object
from ecpfs_viewer.model.zarrtree.hierarchy import ArrayReadError, Hierarchy
from ecpfs_viewer.model.zarrtree.read_guard import DeclaredArray, check_read

#: Decoded bytes per decode call: bounds the memory a batch of padded leaf chunks takes.
DECODE_BATCH_BYTES = 64 << 20


@dataclass(frozen=True)
class _Template:
    """A parsed array document shared by every array stored with the same bytes."""

    array: Any  # zarr AsyncArray (v3) of the document: its metadata (chunk keys)
    layout: dict[str, Any]  # the document without its shape (and attributes): what decoding depends on
    chunk_shape: tuple[int, ...]
    fill_value: Any  # what a chunk that is not stored reads as
    dtype: np.dtype[Any]
    decode_key: str  # arrays with equal codecs, data type and chunk shape decode in one call
    chunk_nbytes: int
    decode_one: Callable[[bytes], np.ndarray] | None  # numcodecs decoding of one chunk, when the chain allows


class ArrayBatchReader:
    """Decodes whole arrays in batches through one opened store; parsed documents are cached."""

    def __init__(self, hierarchy: Hierarchy) -> None:
        self.hierarchy = hierarchy
        self.store: OpenedStore = hierarchy.store
        self._lock = threading.Lock()
        self._by_raw: dict[bytes, tuple[_Template | None, tuple[int, ...]]] = {}
        self._by_layout: dict[str, _Template | None] = {}  # documents that differ only in shape

    def read(self, paths: list[str], check: Callable[[], None] | None = None) -> list[np.ndarray | None]:
        """Every array at paths as numpy, or None where no array is stored; raises ArrayReadError."""
        if not paths:
            return []
        docs = self.store.read_many_or_errors([self.store.key(p, "zarr.json") for p in paths])
        results: list[np.ndarray | None] = [None] * len(paths)
        batch: list[tuple[int, _Template, tuple[int, ...]]] = []
        for i, (path, raw) in enumerate(zip(paths, docs, strict=True)):
            if isinstance(raw, Exception):
                raise ArrayReadError(f"{path}/zarr.json: cannot read ({describe_exception(raw)})")
            if raw is None:  # ecpfs arrays are Zarr v3: no zarr.json means no array
                continue
            template, shape = self._template(path, raw)
            if template is None:
                results[i] = self.hierarchy.read_array(path)
            else:
                batch.append((i, template, shape))
        if batch:
            for i, value in zip([b[0] for b in batch], self._read_chunks(paths, batch, check), strict=True):
                results[i] = value
        return results

    def _template(self, path: str, raw: bytes) -> tuple[_Template | None, tuple[int, ...]]:
        """The parsed template of a document and the array's shape; parsing is shared by every
        document that differs only in shape (4,000 leaves have a few hundred distinct sizes)."""
        with self._lock:
            known = self._by_raw.get(raw)
        if known is not None:
            return known
        document = _load(path, raw)
        shape = document.get("shape")
        if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
            raise ArrayReadError(f"{path}/zarr.json: shape must be a list of non-negative integers, got {shape!r}")
        layout = json.dumps({k: v for k, v in document.items() if k != "shape"}, sort_keys=True)
        with self._lock:
            seen = layout in self._by_layout
            template = self._by_layout.get(layout)
        if not seen:
            template = _parse(path, document)
        if template is not None and len(template.chunk_shape) != len(shape):
            raise ArrayReadError(f"{path}/zarr.json: shape {shape} does not match chunk shape {template.chunk_shape}")
        found = (template, tuple(shape))
        with self._lock:
            self._by_layout[layout] = template
            self._by_raw[raw] = found
        return found

    def _read_chunks(self, paths: list[str], batch: list[tuple[int, _Template, tuple[int, ...]]],
                     check: Callable[[], None] | None) -> list[np.ndarray]:
        outputs: list[np.ndarray] = []
        jobs: list[tuple[int, tuple[int, ...], str]] = []  # (output index, chunk coords, key)
        for n, (i, t, shape) in enumerate(batch):
            # a shape is what metadata claims: refuse before allocating for it
            check_read(paths[i], DeclaredArray(shape, t.chunk_shape, int(t.dtype.itemsize)))
            outputs.append(np.empty(shape, dtype=t.dtype))
            grid = [range(-(-s // c)) if c else range(0) for s, c in zip(shape, t.chunk_shape, strict=True)]
            for coords in itertools.product(*grid):
                jobs.append((n, coords, self.store.key(paths[i], t.array.metadata.encode_chunk_key(coords))))
        per_call = max(1, DECODE_BATCH_BYTES // max(1, max(b[1].chunk_nbytes for b in batch)))
        for start in range(0, len(jobs), per_call):
            if check is not None:
                check()
            part = jobs[start:start + per_call]
            raws = self.store.read_many_or_errors([key for _, _, key in part])
            decoded = self._decode(batch, part, raws)
            for (n, coords, _key), chunk in zip(part, decoded, strict=True):
                t, shape = batch[n][1], batch[n][2]
                region = tuple(slice(c * size, min((c + 1) * size, extent))
                               for c, size, extent in zip(coords, t.chunk_shape, shape, strict=True))
                if chunk is None:  # no chunk stored: all fill value (§1.1)
                    outputs[n][region] = t.fill_value
                else:
                    outputs[n][region] = chunk[tuple(slice(0, r.stop - r.start) for r in region)]
        return outputs

    def _decode(self, batch: list[tuple[int, _Template, tuple[int, ...]]], part: list[tuple[int, tuple[int, ...], str]],
                raws: list[bytes | Exception | None]) -> list[np.ndarray | None]:
        """Decode one batch of chunks, grouped by codec pipeline, in as few decode calls as possible."""
        groups: dict[str, list[int]] = {}
        for j, (n, _coords, key) in enumerate(part):
            raw = raws[j]
            if isinstance(raw, Exception):
                raise ArrayReadError(f"{key}: cannot read ({describe_exception(raw)})")
            if raw is not None:
                groups.setdefault(batch[n][1].decode_key, []).append(j)
        decoded: list[np.ndarray | None] = [None] * len(part)
        for members in groups.values():
            template = batch[part[members[0]][0]][1]
            chunks: list[bytes] = [raws[j] for j in members]  # type: ignore[misc]  # no None or error left
            try:
                if template.decode_one is not None:
                    out = [template.decode_one(raw) for raw in chunks]
                else:
                    out = _decode_side_by_side(template, chunks)
            except Exception as exc:  # a corrupt chunk: the codec raises its own type
                raise ArrayReadError(f"{part[members[0]][2]} (or a chunk read with it): "
                                     f"cannot decode ({describe_exception(exc)})") from exc
            for j, chunk in zip(members, out, strict=True):
                decoded[j] = chunk
        return decoded


def _decode_side_by_side(template: _Template, chunks: list[bytes]) -> list[np.ndarray]:
    """The stored chunks of one layout, decoded: stored as chunks 0..n-1 along the first axis of an
    in-memory array of that layout and read back whole, with one getitem (one codec-pipeline call)."""
    first = template.chunk_shape[0]
    document = dict(template.layout, shape=[first * len(chunks), *template.chunk_shape[1:]])
    tail = (0,) * (len(template.chunk_shape) - 1)
    encode = template.array.metadata.encode_chunk_key
    store = MemoryStore({encode((i, *tail)): CpuBuffer.from_bytes(raw) for i, raw in enumerate(chunks)})
    with warnings.catch_warnings(), zarr.config.set({"codec_pipeline.batch_size": 1 << 16}):
        warnings.simplefilter("ignore")
        array = zarr.AsyncArray.from_dict(StorePath(store, ""), document)
    whole = np.asarray(event_loop.run(array.getitem(...)))
    return [whole[i * first:(i + 1) * first] for i in range(len(chunks))]


def _load(path: str, raw: bytes) -> dict[str, Any]:
    document = load_json_object(raw, f"{path}/zarr.json")  # bad JSON or deep nesting: a message
    if isinstance(document, str):
        raise ArrayReadError(document)
    if document.get("node_type") != "array":
        raise ArrayReadError(f"{path}: expected an array, found {document.get('node_type')}")
    return document


def _parse(path: str, document: dict[str, Any]) -> _Template | None:
    """The template of a plain Zarr v3 array document, None when the batch path cannot read it."""
    codecs = document.get("codecs") or []
    if document.get("zarr_format") != 3 or any(isinstance(c, dict) and c.get("name") == "sharding_indexed"
                                               for c in codecs):
        return None
    grid = document.get("chunk_grid")
    if not isinstance(grid, dict) or grid.get("name") != "regular":
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            array = zarr.AsyncArray.from_dict(StorePath(MemoryStore(), path), dict(document))
    except Exception as exc:  # zarr raises many types for metadata it refuses
        raise ArrayReadError(f"{path}/zarr.json: {describe_exception(exc)}") from exc
    chunk_shape = tuple(int(c) for c in array.metadata.chunk_grid.chunk_shape)
    if not chunk_shape:  # a scalar: nothing to put side by side
        return None
    dtype = array.metadata.dtype.to_native_dtype()
    layout = {k: v for k, v in document.items() if k not in ("shape", "attributes")}
    decode_key = json.dumps([codecs, str(dtype), chunk_shape], sort_keys=True, default=str)
    chunk_nbytes = math.prod(chunk_shape) * int(dtype.itemsize)  # Python ints: a hostile chunk shape cannot overflow
    return _Template(array, layout, chunk_shape, array.metadata.fill_value, dtype, decode_key, chunk_nbytes,
                     _numcodecs_decoder(codecs, dtype, chunk_shape))


# the bytes-to-bytes codecs zarr-python runs through numcodecs (zarr.codecs.ZstdCodec, GzipCodec,
# BloscCodec wrap these very classes); decoding needs no parameter the stream does not carry
_NUMCODECS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "zstd": lambda config: numcodecs.Zstd(level=int(config.get("level", 0))),
    "gzip": lambda config: numcodecs.GZip(level=int(config.get("level", 5))),
    "blosc": lambda config: numcodecs.Blosc(),
}


def _numcodecs_decoder(codecs: list[Any], dtype: np.dtype[Any], chunk_shape: tuple[int, ...]
                       ) -> Callable[[bytes], np.ndarray] | None:
    """A decoder of one stored chunk for a chain of `bytes` then known bytes codecs; None otherwise."""
    first = codecs[0] if codecs else None
    if dtype.kind not in "biufc" or not isinstance(first, dict) or first.get("name") != "bytes":
        return None
    endian = (first.get("configuration") or {}).get("endian", "little")
    if endian not in ("little", "big"):
        return None
    stored = dtype.newbyteorder("<" if endian == "little" else ">") if dtype.itemsize > 1 else dtype
    steps = []
    for codec in codecs[1:]:
        make = _NUMCODECS.get(str(codec.get("name"))) if isinstance(codec, dict) else None
        if make is None:
            return None
        try:
            steps.append(make(codec.get("configuration") or {}))
        except (TypeError, ValueError):  # an odd configuration: zarr's own path says what is wrong
            return None
    expected = math.prod(chunk_shape) * dtype.itemsize

    def decode(raw: bytes) -> np.ndarray:
        data: Any = raw
        for step in reversed(steps):
            data = step.decode(data)
        flat = np.frombuffer(data, dtype=stored)
        if flat.nbytes != expected:
            raise ValueError(f"the chunk decodes to {flat.nbytes:,} bytes, expected {expected:,}")
        return flat.reshape(chunk_shape).astype(dtype, copy=False)

    return decode
