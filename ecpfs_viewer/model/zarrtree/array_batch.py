"""Read many whole arrays at once: documents in one batch, chunks in batched store reads, few decode calls.

The one batch reader of the app: search, locate and exact search read thousands of small node
arrays. One zarr ``getitem`` per array costs about half a millisecond of event-loop bookkeeping, and
two round trips on a remote store. Here the documents come from the :class:`Hierarchy` (one batch,
held there), then every chunk is fetched with :meth:`OpenedStore.read_many_or_errors` (concurrent on
remote stores, counted) and decoded without zarr's per-chunk bookkeeping. zarr's public API decodes
a chunk only through an array (3.4 removed ``get_chunk_spec``), so the common chains (``bytes`` then
zstd, gzip, blosc, lz4, bz2, lzma or zlib) are decoded here with the guarded decode (each chunk
bounded by its size before it is produced); any other chain by putting the chunks side by side in an
in-memory array of that layout, read back with one ``getitem``. Arrays the batch path does not cover
(Zarr v2, sharding, irregular grids, scalars, documents zarr refuses) are read through the
Hierarchy at once on the model's event loop. ``read_guard``'s caps apply before any allocation.
"""


from __future__ import annotations

import asyncio
import itertools
import json
import math
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import zarr
from zarr.buffer.cpu import Buffer as CpuBuffer
from zarr.storage import MemoryStore, StorePath

from ecpfs_viewer.model.errors import describe_exception, transport_failure
from ecpfs_viewer.model.guarded_json import parse_json
from ecpfs_viewer.model.storage import event_loop
from ecpfs_viewer.model.storage.opening import OpenedStore, join_key
from ecpfs_viewer.model.storage.read_scope import drained_reads
from ecpfs_viewer.model.storage.stored_bound import StoredBound, StoredTooLarge
from ecpfs_viewer.model.zarrtree.guarded_decode import (
    GUARDED,
    ChunkDecoder,
    DecodeRefused,
    between_allowance,
    most_stored,
)
from ecpfs_viewer.model.zarrtree.hierarchy import ArrayReadError, Hierarchy, Unanswered, array_read_error
from ecpfs_viewer.model.zarrtree.nodes import NodeKind
from ecpfs_viewer.model.zarrtree.read_guard import DeclaredArray, ReadTooLarge, check_read, verdict_stamp

#: Decoded bytes per decode call: bounds the memory a batch of padded leaf chunks takes.
DECODE_BATCH_BYTES = 64 << 20
#: Arrays of up to this many chunks keep their chunks' keys and regions in their document's plan.
PLANNED_CHUNKS = 16
#: Plans kept by document: an index's leaves share a few hundred documents, but nothing says they must.
PLANS_KEPT = 4096


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
    #: numcodecs decoding of one chunk, when the chain allows: the stored chunk and the extent the
    #: array uses of it (its last chunks are cut by the shape) -> a new array of that extent
    decode_one: Callable[[bytes, tuple[int, ...]], np.ndarray] | None
    stored: StoredBound | None  # what a chunk may be stored as (its codecs' bound), refused past it unread


#: One chunk of an array: its key below the array, the extent of it the array uses, the region
#: of the array it fills, and the part of the decoded chunk that goes there.
_Chunk = tuple[str, tuple[int, ...], tuple[slice, ...], tuple[slice, ...]]


@dataclass(frozen=True, eq=False)
class _Plan:
    """How every array stored with one document reads, worked out once per document (a 2,000,000-item
    index has 80,000 leaf arrays and a few hundred distinct documents): its template and shape, and
    for an array of few chunks, each chunk's key and regions."""

    template: _Template
    shape: tuple[int, ...]
    planned: tuple[_Chunk, ...] | None  # None: many chunks, listed when read
    whole: bool  # one chunk holds the whole array: the decoded chunk is the array

    @staticmethod
    def of(template: _Template, shape: tuple[int, ...]) -> _Plan:
        count = math.prod(-(-s // c) if c else 0 for s, c in zip(shape, template.chunk_shape, strict=True))
        planned = tuple(_chunks_of(template, shape)) if count <= PLANNED_CHUNKS else None
        return _Plan(template, shape, planned, count == 1)

    def chunks(self) -> list[_Chunk] | tuple[_Chunk, ...]:
        return self.planned if self.planned is not None else _chunks_of(self.template, self.shape)


def _chunks_of(t: _Template, shape: tuple[int, ...]) -> list[_Chunk]:
    grid = [range(-(-s // c)) if c else range(0) for s, c in zip(shape, t.chunk_shape, strict=True)]
    out: list[_Chunk] = []
    for coords in itertools.product(*grid):
        extent = _extent(coords, t.chunk_shape, shape)
        region = tuple(slice(c * size, c * size + e) for c, size, e in zip(coords, t.chunk_shape, extent, strict=True))
        out.append((t.array.metadata.encode_chunk_key(coords), extent, region, tuple(slice(0, e) for e in extent)))
    return out


#: What the batch reader holds per path: the array, why it could not be read, or None (nothing stored).
Found = np.ndarray | ArrayReadError | None
BeforeChunks = Callable[[list[tuple[str, str]], list[str]], None]  # see ArrayBatchReader.read_each
_UNSEEN = object()


class ArrayBatchReader:
    """Decodes whole arrays in batches through one Hierarchy; parsed documents are cached."""

    def __init__(self, hierarchy: Hierarchy) -> None:
        self.hierarchy = hierarchy
        self.store: OpenedStore = hierarchy.store
        self._lock = threading.Lock()
        self._by_raw: dict[bytes, _Plan | None] = {}
        self._by_layout: dict[str, _Template | None] = {}  # documents that differ only in shape
        self._passed: dict[_Plan, tuple[Any, ...]] = {}  # plans within the read caps, by verdict stamp

    def read(self, paths: list[str], check: Callable[[], None] | None = None, *,
             keep_documents: bool = True, before_chunks: BeforeChunks | None = None) -> list[np.ndarray | None]:
        """Every array at paths as numpy, or None where no array is stored; raises ArrayReadError.
        Without ``keep_documents`` the Hierarchy keeps none of their documents (a pass over every leaf)."""
        found = self.read_each(paths, check, isolate=False, keep_documents=keep_documents, before_chunks=before_chunks)
        failed = next((value for value in found if isinstance(value, ArrayReadError)), None)
        if failed is not None:
            raise failed
        return found  # type: ignore[return-value]  # no ArrayReadError left

    def read_each(self, paths: Sequence[str], check: Callable[[], None] | None = None, *, isolate: bool = True,
                  keep_documents: bool = True, before_chunks: BeforeChunks | None = None) -> list[Found]:
        """Every array at paths, its failure in place (naming the path) or None where nothing is stored.

        A failure that happened on the way (no answer) is an :class:`ArrayUnanswered`, not a fact
        about the array. With ``isolate`` a chunk that breaks a shared decode call is found by
        decoding that call's chunks one by one, so it fails only its own array; without, reading
        stops at the first failure (what :meth:`read` raises) and the other values are not to be
        used. ``check`` runs before every chunk batch: it stops the read by raising (cancellation).
        ``before_chunks`` is told, before any chunk is read, the chunks to be read (array path, chunk
        path) and the paths of the arrays read through the Hierarchy: what to stamp first."""
        if not paths:
            return []
        unread = self.hierarchy.prefetch(paths, keep=keep_documents)
        results: list[Found] = [None] * len(paths)
        batch: list[tuple[int, _Plan]] = []
        fallback: list[int] = []
        for i, path in enumerate(paths):
            node = self.hierarchy.held(path) or unread.get(path.strip("/"))
            if node is None or node.kind is NodeKind.IMPLICIT_GROUP:
                continue  # nothing stored there
            if node.unread:
                results[i] = array_read_error(path, Unanswered(node.error or f"{path}: could not be read"))
            elif node.kind is NodeKind.ARRAY and node.zarr_format == 3 and node.raw is not None:
                plan = self._plan(path, node.raw)
                if plan is None:
                    fallback.append(i)
                else:
                    batch.append((i, plan))
            else:
                fallback.append(i)  # v2 arrays, groups and broken documents: the Hierarchy says why
        if before_chunks is not None:  # the chunks of arrays the caps refuse are never read
            before_chunks([(paths[i], join_key(paths[i], chunk[0])) for i, plan in batch if self._refusal(
                paths[i], plan, verdict_stamp()) is None for chunk in plan.chunks()], [paths[i] for i in fallback])
        if batch:
            for i, value in zip([b[0] for b in batch], self._read_chunks(paths, batch, check, isolate), strict=True):
                results[i] = value
        if fallback:
            if check is not None:
                check()
            for i, value in zip(fallback, _read_through_hierarchy(self.hierarchy, [paths[i] for i in fallback]),
                                strict=True):
                results[i] = value
        return results

    def _plan(self, path: str, raw: bytes) -> _Plan | None:
        """The plan of a document; parsing is shared by every document that differs only in shape
        (4,000 leaves have a few hundred distinct sizes). None for a document the batch path leaves
        to the Hierarchy (which says what is wrong)."""
        with self._lock:
            known = self._by_raw.get(raw, _UNSEEN)
        if known is not _UNSEEN:
            return known  # type: ignore[return-value]  # a plan or None
        try:
            document = parse_json(raw, join_key(path, "zarr.json"))
        except ValueError:  # not JSON, or past the caps: the Hierarchy says which
            return None
        shape = document.get("shape") if isinstance(document, dict) else None
        if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
            return None
        # attributes do not change how an array is read (and may be megabytes): not part of the key
        layout = json.dumps({k: v for k, v in document.items() if k not in ("shape", "attributes")}, sort_keys=True)
        with self._lock:
            seen = layout in self._by_layout
            template = self._by_layout.get(layout)
        if not seen:
            template = _parse(path, document)
        if template is not None and len(template.chunk_shape) != len(shape):
            template = None
        found = None if template is None else _Plan.of(template, tuple(shape))
        with self._lock:
            if len(self._by_raw) >= PLANS_KEPT:  # documents that all differ (one per leaf): start over
                self._by_raw.clear()
                self._passed.clear()
            self._by_layout[layout] = template
            self._by_raw[raw] = found
        return found

    def _refusal(self, path: str, plan: _Plan, stamp: tuple[Any, ...]) -> ArrayReadError | None:
        """Why the read caps refuse an array (before anything is allocated or fetched for what its
        metadata claims), or None; a plan that passed is not checked again under the same caps."""
        if self._passed.get(plan) == stamp:
            return None
        t = plan.template
        try:
            check_read(path or "/", DeclaredArray(plan.shape, t.chunk_shape, int(t.dtype.itemsize)))
        except ReadTooLarge as exc:
            return ArrayReadError(str(exc))
        with self._lock:
            self._passed[plan] = stamp
        return None

    def _read_chunks(self, paths: Sequence[str], batch: list[tuple[int, _Plan]],
                     check: Callable[[], None] | None, isolate: bool) -> list[np.ndarray | ArrayReadError]:
        # an array of several chunks is allocated first and filled; a whole-chunk one is its chunk
        outputs: list[np.ndarray | ArrayReadError | None] = []
        jobs: list[tuple[int, str, _Chunk]] = []  # (output index, chunk key, chunk)
        stamp = verdict_stamp()
        key = self.store.key
        for n, (i, plan) in enumerate(batch):
            refusal = self._refusal(paths[i], plan, stamp)  # a shape is what metadata claims
            if refusal is not None:
                outputs.append(refusal)
                continue
            outputs.append(None if plan.whole else np.empty(plan.shape, dtype=plan.template.dtype))
            jobs.extend((n, key(paths[i], chunk[0]), chunk) for chunk in plan.chunks())
        per_call = max(1, DECODE_BATCH_BYTES // max(1, max(b[1].template.chunk_nbytes for b in batch)))
        for start in range(0, len(jobs), per_call):
            if check is not None:
                check()
            part = [job for job in jobs[start:start + per_call] if not isinstance(outputs[job[0]], ArrayReadError)]
            bounds = {chunk_key: bound for n, chunk_key, _ in part if (bound := batch[n][1].template.stored)}
            raws = self.store.read_many_or_errors([chunk_key for _, chunk_key, _ in part], bounds)
            decoded = self._decode(batch, part, raws, isolate)
            for (n, _key, (_, _extent, region, cut)), chunk in zip(part, decoded, strict=True):
                output = outputs[n]
                if isinstance(output, ArrayReadError):
                    continue  # failed in this call
                if isinstance(chunk, ArrayReadError):
                    outputs[n] = chunk
                    if not isolate:
                        return outputs  # type: ignore[return-value]  # the caller stops at the failure
                    continue
                plan = batch[n][1]
                if output is None:
                    outputs[n] = _whole(plan, chunk, cut)
                elif chunk is None:  # no chunk stored: all fill value (§1.1)
                    output[region] = plan.template.fill_value
                else:
                    output[region] = chunk[cut]
        return outputs  # type: ignore[return-value]  # every array was decoded or failed

    def _decode(self, batch: list[tuple[int, _Plan]], part: list[tuple[int, str, _Chunk]],
                raws: list[bytes | Exception | None], isolate: bool) -> list[np.ndarray | ArrayReadError | None]:
        """Decode one batch of chunks, grouped by codec pipeline, in as few decode calls as possible."""
        decoded: list[np.ndarray | ArrayReadError | None] = [None] * len(part)
        groups: dict[str, list[int]] = {}
        for j, (n, key, _chunk) in enumerate(part):
            raw = raws[j]
            if isinstance(raw, StoredTooLarge):
                decoded[j] = ArrayReadError(f"{key}: {raw.strerror}")
            elif isinstance(raw, Exception):
                decoded[j] = (array_read_error(key, raw) if transport_failure(raw) is not None
                              else ArrayReadError(f"{key}: cannot read ({describe_exception(raw)})"))
            elif raw is not None:
                groups.setdefault(batch[n][1].template.decode_key, []).append(j)
        for members in groups.values():
            template = batch[part[members[0]][0]][1].template
            chunks: list[bytes] = [raws[j] for j in members]  # type: ignore[misc]  # no None or error left
            extents = [part[j][2][1] for j in members]
            try:
                out: list[np.ndarray | ArrayReadError] = list(_decode_all(template, chunks, extents))
            except Exception as exc:  # a corrupt chunk: the codec raises its own type
                if not isolate:
                    out = [ArrayReadError(_undecodable(f"{part[members[0]][1]} (or a chunk read with it)", exc))
                           ] * len(members)
                else:
                    out = [_decode_alone(template, raw, part[j][1], extent)
                           for j, raw, extent in zip(members, chunks, extents, strict=True)]
            for j, chunk in zip(members, out, strict=True):
                decoded[j] = chunk
        return decoded


def _whole(plan: _Plan, chunk: np.ndarray | None, cut: tuple[slice, ...]) -> np.ndarray:
    """The array of a plan whose one chunk covers it: the decoded chunk itself when it is a fresh
    array of the right type and shape (the numcodecs path), else a copy (fill for a missing chunk)."""
    t = plan.template
    if (chunk is not None and chunk.shape == plan.shape and chunk.dtype == t.dtype and chunk.flags.owndata
            and chunk.flags.writeable and chunk.flags.c_contiguous):
        return chunk
    output = np.empty(plan.shape, dtype=t.dtype)
    output[...] = t.fill_value if chunk is None else chunk[cut]
    return output


def _extent(coords: tuple[int, ...], chunk_shape: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """How much of the chunk at coords the array uses: all of it but where the shape cuts it."""
    return tuple(min(size, extent - c * size) for c, size, extent in zip(coords, chunk_shape, shape, strict=True))


def _decode_all(template: _Template, chunks: list[bytes], extents: list[tuple[int, ...]]) -> list[np.ndarray]:
    """Each chunk decoded, at least its extent (the numcodecs path keeps only that much)."""
    if template.decode_one is not None:
        return [template.decode_one(raw, extent) for raw, extent in zip(chunks, extents, strict=True)]
    return _decode_side_by_side(template, chunks)


def _decode_alone(template: _Template, raw: bytes, key: str, extent: tuple[int, ...]) -> np.ndarray | ArrayReadError:
    """One chunk of a decode call that failed, decoded by itself: the chunk, or why it is broken."""
    try:
        return _decode_all(template, [raw], [extent])[0]
    except Exception as exc:  # the codec raises its own type
        return ArrayReadError(_undecodable(key, exc))


def _undecodable(key: str, exc: BaseException) -> str:
    """Why a chunk could not be decoded: the guarded decode's refusal as it is, else what the codec said."""
    if isinstance(exc, DecodeRefused):
        return f"{key}: {exc}"
    return f"{key}: cannot decode ({describe_exception(exc)})"


def _read_through_hierarchy(h: Hierarchy, paths: Sequence[str]) -> list[np.ndarray | ArrayReadError]:
    """Arrays the batch path does not decode, read as the Hierarchy's zarr arrays, all at once on
    the model's event loop; a failure is given in place, naming the path."""
    results: list[np.ndarray | ArrayReadError] = [ArrayReadError("not read")] * len(paths)
    pending: list[tuple[int, Any]] = []
    for i, path in enumerate(paths):
        try:
            check_read(path or "/", h.array_details(path), ...)
            pending.append((i, h.open_async_array(path)))
        except ReadTooLarge as exc:
            results[i] = ArrayReadError(str(exc))
        except Exception as exc:
            results[i] = array_read_error(path, exc)

    async def all_of() -> list[Any]:
        return list(await asyncio.gather(*(array.getitem(...) for _, array in pending), return_exceptions=True))

    with drained_reads():  # the chunk reads a failed array left running end with the batch
        values = event_loop.run(all_of()) if pending else []
    for (i, _), value in zip(pending, values, strict=True):
        if isinstance(value, BaseException) and not isinstance(value, Exception):
            raise value  # cancellation, interrupts
        if isinstance(value, Exception):
            results[i] = array_read_error(paths[i], value)
        else:
            results[i] = np.asarray(value)
    return results


def read_whole_arrays(h: Hierarchy, paths: Sequence[str],
                      check: Callable[[], None] | None = None) -> list[np.ndarray | ArrayReadError]:
    """Each whole array at paths, or the ArrayReadError (naming the path) that reading it raised;
    a path where nothing is stored gives the Hierarchy's reason."""
    found = ArrayBatchReader(h).read_each(paths, check)
    missing = [i for i, value in enumerate(found) if value is None]
    for i, value in zip(missing, _read_through_hierarchy(h, [paths[i] for i in missing]), strict=True):
        found[i] = value
    return found  # type: ignore[return-value]  # no None left


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


def _parse(path: str, document: dict[str, Any]) -> _Template | None:
    """The template of a plain Zarr v3 array document, None when the batch path cannot read it
    (or zarr refuses the document)."""
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
    except Exception:  # zarr raises many types for metadata it refuses: the Hierarchy says why
        return None
    chunk_shape = tuple(int(c) for c in array.metadata.chunk_grid.chunk_shape)
    if not chunk_shape:  # a scalar: nothing to put side by side
        return None
    dtype = array.metadata.dtype.to_native_dtype()
    layout = {k: v for k, v in document.items() if k not in ("shape", "attributes")}
    decode_key = json.dumps([codecs, str(dtype), chunk_shape], sort_keys=True, default=str)
    chunk_nbytes = math.prod(chunk_shape) * int(dtype.itemsize)  # Python ints: a hostile chunk shape cannot overflow
    most = most_stored(codecs, chunk_nbytes) if dtype.kind in "biufc" else None
    stored = None if most is None else StoredBound(most[0], chunk_nbytes, exact=most[1])
    return _Template(array, layout, chunk_shape, array.metadata.fill_value, dtype, decode_key, chunk_nbytes,
                     _numcodecs_decoder(codecs, dtype, chunk_shape), stored)


# the bytes-to-bytes codecs the batch path decodes itself: zarr's own names and its ``numcodecs.<id>``
# ones, all through the guarded decode. The codec next to ``bytes`` may decode to the chunk's size
# exactly; one further out to what the codec inside it may have made of that.


def _guarded_step(codec: Any, expected: int, position: int) -> ChunkDecoder | None:
    """The bounded decoder of one codec of a ``bytes`` chain; None for a codec the batch path leaves
    to zarr (whose registry holds the same guarded decode)."""
    if not isinstance(codec, dict):
        return None
    name = str(codec.get("name"))
    name = name.removeprefix("numcodecs.")
    config = codec.get("configuration") or {}
    if name not in GUARDED or not isinstance(config, dict):
        return None
    limit = expected
    for _ in range(position):
        limit += between_allowance(limit)
    return ChunkDecoder(name, config, limit, expected)


#: Chunks up to this many decoded bytes are decoded into a buffer each thread keeps (then only the
#: extent the array uses is copied out): an index's leaf chunk is often padded far past the leaf's
#: rows (2,048 x 64 float32, 512 KiB, for 50 rows), and a fresh buffer that size per leaf costs
#: more in page faults than the decompression itself. Chunks under SCRATCH_MIN_BYTES decode into a
#: fresh object: numcodecs checks an ``out`` buffer in Python, which costs more than a small
#: allocation (a leaf's 8 KiB item_ids: about 25 us against 50 us, 40,000 of them at 2,000,000 items).
SCRATCH_CHUNK_BYTES = 4 << 20
SCRATCH_MIN_BYTES = 64 << 10
_scratch = threading.local()


def _scratch_buffer(nbytes: int) -> np.ndarray:
    """This thread's decode buffer, at least nbytes long (uint8)."""
    buffer: np.ndarray | None = getattr(_scratch, "buffer", None)
    if buffer is None or len(buffer) < nbytes:
        buffer = _scratch.buffer = np.empty(nbytes, np.uint8)
    return buffer[:nbytes]


def _numcodecs_decoder(codecs: list[Any], dtype: np.dtype[Any], chunk_shape: tuple[int, ...]
                       ) -> Callable[[bytes, tuple[int, ...]], np.ndarray] | None:
    """A decoder of one stored chunk for a chain of `bytes` then known bytes codecs; None otherwise."""
    first = codecs[0] if codecs else None
    if dtype.kind not in "biufc" or not isinstance(first, dict) or first.get("name") != "bytes":
        return None
    endian = (first.get("configuration") or {}).get("endian", "little")
    if endian not in ("little", "big"):
        return None
    stored = dtype.newbyteorder("<" if endian == "little" else ">") if dtype.itemsize > 1 else dtype
    expected = math.prod(chunk_shape) * dtype.itemsize
    steps = []
    for position, codec in enumerate(codecs[1:]):
        try:
            step = _guarded_step(codec, expected, position)
        except (TypeError, ValueError):  # an odd configuration: zarr's own path says what is wrong
            return None
        if step is None:
            return None
        steps.append(step)
    last = steps[0] if steps and SCRATCH_MIN_BYTES <= expected <= SCRATCH_CHUNK_BYTES else None  # gives the bytes

    def decode(raw: bytes, extent: tuple[int, ...]) -> np.ndarray:
        data: Any = raw
        for step in reversed(steps[1:] if last is not None else steps):
            data = step.decode(data)
        if last is not None:
            data = last.decode(data, out=_scratch_buffer(expected))  # bounded by the buffer, else says why
        flat = np.frombuffer(data, dtype=stored)
        if flat.nbytes != expected:
            raise ValueError(f"the chunk decodes to {flat.nbytes:,} bytes, expected {expected:,}")
        chunk = flat.reshape(chunk_shape)[tuple(slice(0, n) for n in extent)]
        return chunk.astype(dtype, copy=True) if last is not None else chunk.astype(dtype, copy=False)

    return decode
