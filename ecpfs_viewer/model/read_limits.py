"""Caps on what one array read may cost, checked from the metadata before anything is read.

A hostile or broken ``zarr.json`` can declare any shape: ``[10**15, 64]`` asks numpy for petabytes,
and ``[10**6, 128]`` with chunk ``[1, 1]`` makes zarr visit 128 million chunk keys. Reads through
:meth:`Hierarchy.read_array` are refused up front when the result or the number of chunks touched
exceeds these caps, with a message that says how much was declared and how to raise the cap.
Environment variables ``ECPFS_VIEWER_MAX_READ_MB`` and ``ECPFS_VIEWER_MAX_READ_CHUNKS`` change them.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

from ecpfs_viewer.model.errors import UserError

DEFAULT_MAX_READ_MB = 512
DEFAULT_MAX_READ_CHUNKS = 100_000
#: Bytes assumed per element when the data type has no fixed size (variable-length strings).
VARIABLE_ITEMSIZE = 16


class ReadLimitError(UserError):
    """A read was refused because its declared size is over a cap; the message names the path."""


def _env_int(name: str, default: int) -> int:
    try:
        value = int(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


def max_read_bytes() -> int:
    """The largest decoded result one read may produce (``ECPFS_VIEWER_MAX_READ_MB``, default 512)."""
    return _env_int("ECPFS_VIEWER_MAX_READ_MB", DEFAULT_MAX_READ_MB) * 2**20


def max_read_chunks() -> int:
    """The most chunks one read may touch (``ECPFS_VIEWER_MAX_READ_CHUNKS``, default 100,000)."""
    return _env_int("ECPFS_VIEWER_MAX_READ_CHUNKS", DEFAULT_MAX_READ_CHUNKS)


@dataclass(frozen=True)
class ReadCost:
    """What a selection declares: elements in the result and chunks it touches."""

    elements: int
    chunks: int


def read_cost(shape: tuple[int, ...], chunk_shape: tuple[int, ...], selection: Any) -> ReadCost | None:
    """Elements and chunks a basic selection (ints, slices, Ellipsis) touches; None for others.

    Pure arithmetic on Python integers: nothing is allocated, whatever the shape says.
    """
    parts = _expand(selection, len(shape))
    if parts is None:
        return None
    elements, chunks = 1, 1
    for part, size, chunk in zip(parts, shape, chunk_shape or shape, strict=False):
        chunk = max(int(chunk), 1)
        if isinstance(part, int):
            if not -size <= part < size:
                return None  # zarr reports the out-of-bounds index itself
            elements *= 1
            continue
        start, stop, step = part.indices(size)
        count = len(range(start, stop, step))
        elements *= count
        if count == 0:
            chunks = 0
            continue
        last = start + (count - 1) * step
        low, high = min(start, last), max(start, last)
        span = high // chunk - low // chunk + 1
        chunks *= min(span, count)
    return ReadCost(elements, chunks)


def _expand(selection: Any, ndim: int) -> list[int | slice] | None:
    items = list(selection) if isinstance(selection, tuple) else [selection]
    if sum(1 for i in items if i is Ellipsis) > 1:
        return None
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at: at + 1] = [slice(None)] * max(ndim - (len(items) - 1), 0)
    items += [slice(None)] * (ndim - len(items))
    if len(items) != ndim:
        return None
    parts: list[int | slice] = []
    for item in items:
        if isinstance(item, slice) or (isinstance(item, int) and not isinstance(item, bool)):
            parts.append(item)
        else:
            return None
    return parts


def check_read(path: str, shape: tuple[int, ...], chunk_shape: tuple[int, ...], itemsize: int | None,
               selection: Any) -> None:
    """Raise ReadLimitError when a selection of path declares more than the caps allow."""
    cost = read_cost(shape, chunk_shape, selection)
    if cost is None:
        return
    nbytes = cost.elements * (itemsize or VARIABLE_ITEMSIZE)
    where = path or "/"
    if nbytes > max_read_bytes():
        raise ReadLimitError(
            f"{where}: not read: shape {list(shape)} declares {_bytes(nbytes)}, more than the "
            f"{_bytes(max_read_bytes())} read limit (ECPFS_VIEWER_MAX_READ_MB)"
        )
    if cost.chunks > max_read_chunks():
        raise ReadLimitError(
            f"{where}: not read: shape {list(shape)} with chunks {list(chunk_shape)} declares "
            f"{cost.chunks:,} chunks, more than the {max_read_chunks():,} chunk limit (ECPFS_VIEWER_MAX_READ_CHUNKS)"
        )


def _bytes(count: int) -> str:
    if count < 1024:
        return f"{count} bytes"
    exponent = min(int(math.log(count, 1024)), 6)
    return f"{count / 1024**exponent:.3g} {('KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB')[exponent - 1]}"
