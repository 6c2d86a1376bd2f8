"""What one array read would cost, from its metadata alone, refused before zarr-python starts it.

Metadata may declare 10^15 rows or 128 M one-element chunks; zarr-python allocates the whole
output and walks every touched chunk (present or not), so a whole-array read of such an array takes
gigabytes and minutes while almost nothing is stored. The caps are in model/limits.py.
"""

from __future__ import annotations

import math
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


def check_read(where: str, array: ArrayShape, selection: Any = ..., limits: Limits | None = None) -> None:
    """Raise ReadTooLarge when reading `selection` of `array` would pass a cap of Limits (the message
    starts with `where` when given):
    one decoded chunk, the chunks touched, or the memory the read needs (output plus the chunks
    zarr-python decodes at once)."""
    if not array.shape:
        return
    normal = normalise(selection, array.shape)
    if normal is None:
        return
    limits = limits or current_limits()
    where = f"{where}: " if where else ""
    itemsize = array.itemsize or VARIABLE_ITEM_BYTES
    chunk_shape = tuple(max(1, c) for c in array.chunk_shape)
    chunk_bytes = math.prod(chunk_shape) * itemsize
    touched = math.prod(_spanned(i, c) for i, c in zip(normal, chunk_shape, strict=False))
    if touched == 0:
        return
    if chunk_bytes > limits.max_decoded_chunk_bytes:
        raise ReadTooLarge(f"{where}one chunk {list(array.chunk_shape)} decodes to {format_bytes(chunk_bytes)}, "
                           f"over {limits.describe('max_decoded_chunk_bytes')}; not read")
    if touched > limits.max_chunks_per_read:
        raise ReadTooLarge(f"{where}the read touches {touched:,} chunks, over "
                           f"{limits.describe('max_chunks_per_read')} on chunks per read; not read")
    output = math.prod(len(range(i.start, i.stop, i.step)) if isinstance(i, slice) else 1 for i in normal)
    need = output * itemsize + min(touched, _concurrency()) * chunk_bytes
    if need > limits.max_decoded_read_bytes:
        raise ReadTooLarge(f"{where}the read needs about {format_bytes(need)} of memory "
                           f"({output:,} elements, chunks of {format_bytes(chunk_bytes)} decoded), over "
                           f"{limits.describe('max_decoded_read_bytes')}; not read")
