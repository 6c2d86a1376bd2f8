"""What one array read would cost, from its metadata alone, refused before zarr-python starts it.

Metadata may declare 10^15 rows or 128 M one-element chunks; zarr-python allocates the whole
output and walks every touched chunk (present or not), so a whole-array read of such an array takes
gigabytes and minutes while almost nothing is stored. The caps are in model/limits.py.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import zarr

from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.formatting import format_bytes
from ecpfs_viewer.model.limits import Limits, current_limits

#: Bytes assumed per element of a variable-length type (strings): a pointer plus a short value.
VARIABLE_ITEM_BYTES = 64


class ReadTooLarge(UserError):
    """A read refused because of what it would cost; names the array and the cap."""


class ArrayShape(Protocol):
    """What the guard needs of an array (hierarchy.ArrayDetails has it)."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def chunk_shape(self) -> tuple[int, ...]: ...
    @property
    def itemsize(self) -> int | None: ...


@dataclass(frozen=True)
class DeclaredArray:
    """Shape, chunk shape and item size as a document declares them, for code that parsed it itself."""

    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    itemsize: int | None
    shard_shape: tuple[int, ...] | None = None


#: Bytes per inner chunk in a shard index (offset and length, two uint64), and its checksum.
SHARD_INDEX_ENTRY_BYTES = 16
SHARD_INDEX_CHECKSUM_BYTES = 4


def shard_index_bytes(array: ArrayShape) -> int:
    """The size of one shard's index as declared (inner chunks per shard x 16 bytes, plus a
    checksum); 0 for an array that is not sharded. zarr-python allocates and reads the whole index
    of every shard a read touches, whatever is stored."""
    shard_shape = getattr(array, "shard_shape", None)
    if not shard_shape:
        return 0
    per_shard = math.prod(max(1, -(-s // max(1, c))) for s, c in zip(shard_shape, array.chunk_shape, strict=False))
    return int(per_shard) * SHARD_INDEX_ENTRY_BYTES + SHARD_INDEX_CHECKSUM_BYTES


def normalise(selection: Any, shape: tuple[int, ...]) -> tuple[int | slice, ...] | None:
    """One int or positive-step slice per axis for a basic selection (ints, slices, one ...); None
    for anything else (lists, arrays: not estimated)."""
    parts = selection if isinstance(selection, tuple) else (selection,)
    if sum(p is Ellipsis for p in parts) > 1:
        return None
    if Ellipsis in parts:
        at = parts.index(Ellipsis)
        parts = parts[:at] + (slice(None),) * (len(shape) - len(parts) + 1) + parts[at + 1:]
    if len(parts) > len(shape):
        return None
    parts = parts + (slice(None),) * (len(shape) - len(parts))
    found: list[int | slice] = []
    for part, size in zip(parts, shape, strict=True):
        if isinstance(part, slice):
            start, stop, step = part.indices(size)
            if step < 0:
                return None
            found.append(slice(start, max(start, stop), step))
        elif isinstance(part, int) or hasattr(part, "__index__"):
            value = int(part)
            found.append(value + size if value < 0 else value)
        else:
            return None
    return tuple(found)


def _spanned(index: int | slice, chunk: int) -> int:
    """How many chunks along one axis zarr-python visits for an index: every chunk from the first
    to the last element, even those a large step skips."""
    if isinstance(index, int):
        return 1
    start: int = index.start
    count = len(range(start, index.stop, index.step))
    if count == 0:
        return 0
    last: int = start + (count - 1) * index.step
    return last // chunk - start // chunk + 1


def _concurrency() -> int:
    """How many chunks zarr-python decodes at once."""
    try:
        return max(1, int(zarr.config.get("async.concurrency")))
    except (TypeError, ValueError, KeyError):
        return 10


def verdict_stamp() -> tuple[Limits, int]:
    """What :func:`check_read` decides from besides the array and selection: the caps in force and
    how many chunks zarr-python decodes at once. A verdict kept beside its stamp holds while the
    stamp is the same (a batch reader checks each distinct document once, not each of 40,000 leaves)."""
    return current_limits(), _concurrency()


def chunks_touched(array: ArrayShape, selection: Any = ...) -> int | None:
    """How many chunks (present or not) zarr-python visits to read `selection` of `array`, from the
    metadata alone; None for a selection that is not basic (lists, arrays)."""
    if not array.shape:
        return 1
    normal = normalise(selection, array.shape)
    if normal is None:
        return None
    return math.prod(_spanned(i, max(1, c)) for i, c in zip(normal, array.chunk_shape, strict=False))


def check_read(where: str, array: ArrayShape, selection: Any = ..., limits: Limits | None = None) -> None:
    """Raise ReadTooLarge when reading `selection` of `array` would pass a cap of Limits (the message
    starts with `where` when given):
    one decoded chunk, one shard index, the chunks touched, or the memory the read needs (output plus
    the chunks and shard indexes zarr-python decodes at once)."""
    if not array.shape:
        return
    chunk_shape = tuple(max(1, c) for c in array.chunk_shape)
    if selection is Ellipsis:  # the whole array (batch reads of thousands): what normalise would find
        touched = math.prod(-(-s // c) for s, c in zip(array.shape, chunk_shape, strict=False))
        output = math.prod(array.shape)
    else:
        normal = normalise(selection, array.shape)
        if normal is None:
            return
        touched = math.prod(_spanned(i, c) for i, c in zip(normal, chunk_shape, strict=False))
        output = math.prod(len(range(i.start, i.stop, i.step)) if isinstance(i, slice) else 1 for i in normal)
    _check_cost(where, array, touched, output, limits or current_limits())


def check_rows(where: str, array: ArrayShape, rows: Sequence[int], limits: Limits | None = None) -> None:
    """check_read for the rows `rows` (all columns) of a 2-D array read as an orthogonal selection:
    zarr-python visits the chunks of each distinct row chunk only."""
    if len(array.shape) != 2 or not len(rows):
        return
    chunk_rows, chunk_cols = (max(1, c) for c in array.chunk_shape[:2])
    row_chunks = len({int(r) // chunk_rows for r in rows})
    touched = row_chunks * _spanned(slice(0, array.shape[1], 1), chunk_cols)
    _check_cost(where, array, touched, len(rows) * array.shape[1], limits or current_limits())


def check_allocation(where: str, count: int, what: str, itemsize: int, limits: Limits | None = None) -> None:
    """Raise ReadTooLarge when `count` values of `itemsize` bytes, a number the metadata declares
    (rows of index_root, node ids), would pass the memory one read may take."""
    limits = limits or current_limits()
    need = max(0, count) * itemsize
    if need > limits.max_decoded_read_bytes:
        raise ReadTooLarge(f"{where}: {count:,} {what} declared would take {format_bytes(need)}, over "
                           f"{limits.describe('max_decoded_read_bytes')}; not listed")


def _check_cost(where: str, array: ArrayShape, touched: int, output: int, limits: Limits) -> None:
    if touched == 0:
        return
    where = f"{where}: " if where else ""
    itemsize = array.itemsize or VARIABLE_ITEM_BYTES
    chunk_bytes = math.prod(max(1, c) for c in array.chunk_shape) * itemsize
    if chunk_bytes > limits.max_decoded_chunk_bytes:
        raise ReadTooLarge(f"{where}one chunk {list(array.chunk_shape)} decodes to {format_bytes(chunk_bytes)}, "
                           f"over {limits.describe('max_decoded_chunk_bytes')}; not read")
    index_bytes = shard_index_bytes(array)
    if index_bytes > limits.max_shard_index_bytes:
        shard_shape = list(getattr(array, "shard_shape", None) or ())
        raise ReadTooLarge(f"{where}each shard {shard_shape} declares {format_bytes(index_bytes)} of index for "
                           f"{(index_bytes - SHARD_INDEX_CHECKSUM_BYTES) // SHARD_INDEX_ENTRY_BYTES:,} inner "
                           f"chunks of {list(array.chunk_shape)}, over {limits.describe('max_shard_index_bytes')}; "
                           "not read")
    if touched > limits.max_chunks_per_read:
        raise ReadTooLarge(f"{where}the read touches {touched:,} chunks, over "
                           f"{limits.describe('max_chunks_per_read')} on chunks per read; not read")
    at_once = min(touched, _concurrency())
    need = output * itemsize + at_once * (chunk_bytes + index_bytes)
    if need > limits.max_decoded_read_bytes:
        raise ReadTooLarge(f"{where}the read needs about {format_bytes(need)} of memory "
                           f"({output:,} elements, chunks of {format_bytes(chunk_bytes)} decoded), over "
                           f"{limits.describe('max_decoded_read_bytes')}; not read")


#: The most chunks one zarr-python read is handed at once: it starts a task per chunk, and when one
#: fails the others are cancelled together, which asyncio's Semaphore makes quadratic in their
#: number (40,000 queued chunk reads took 17 s of CPU to cancel; 2,048 take milliseconds).
CHUNKS_PER_READ = 2048


def row_blocks(array: ArrayShape, selection: Any = ...,
               most: int | None = None) -> list[tuple[int | slice, ...]]:
    """`selection` of `array` cut along the first axis into consecutive selections that each touch at
    most `most` chunks (CHUNKS_PER_READ by default; whole chunks of rows, at least one); [] when it
    needs no cutting or cannot be cut (a first axis indexed by an int or a step, not basic)."""
    most = CHUNKS_PER_READ if most is None else most
    if not array.shape:
        return []
    normal = normalise(selection, array.shape)
    if normal is None or not isinstance(normal[0], slice) or normal[0].step != 1:
        return []
    chunk_shape = tuple(max(1, c) for c in array.chunk_shape)
    per_row_chunk = math.prod(_spanned(i, c) for i, c in zip(normal[1:], chunk_shape[1:], strict=False))
    rows, rest = normal[0], normal[1:]
    if per_row_chunk == 0 or _spanned(rows, chunk_shape[0]) * per_row_chunk <= most:
        return []
    step = max(1, most // per_row_chunk) * chunk_shape[0]
    first_end = min(rows.stop, (rows.start // step + 1) * step)  # the first block ends on a block boundary
    bounds = [rows.start, *range(first_end, rows.stop, step), rows.stop]
    return [(slice(a, b, 1), *rest) for a, b in itertools.pairwise(bounds) if b > a]
