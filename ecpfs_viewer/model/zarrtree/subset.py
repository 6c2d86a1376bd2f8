"""Read a user-typed part of an array ("0:100, :", "5", "::10, 0:8", "-20:") within an element cap.

The text follows numpy basic indexing (integers, slices with a positive step, one ``...``).
Selections are normalised to explicit bounds before reading, so the caller knows how large a
read is before it starts and where the kept axes begin (for plot axes).
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

import numpy as np

from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.storage import event_loop
from ecpfs_viewer.model.zarrtree.hierarchy import ArrayReadError, Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import ArrayDetails
from ecpfs_viewer.model.zarrtree.read_guard import ReadTooLarge, check_read

DEFAULT_MAX_ELEMENTS = 4_000_000
#: The default selection of an array shows at most this many elements (inside its first chunk).
DEFAULT_VIEW_ELEMENTS = 1_000_000
_INT_RE = re.compile(r"^[+-]?\d+$")

Index = int | slice


class SelectionError(UserError, ValueError):
    """A selection cannot be parsed or read; the message is meant for the user."""


class SelectionTooLarge(SelectionError):
    """A selection of more elements than the caller allows (a table can still page through it)."""

    def __init__(self, elements: int, limit: int) -> None:
        super().__init__(f"selection has {elements:,} elements; the limit is {limit:,}")
        self.elements, self.limit = elements, limit


@dataclass(frozen=True)
class Subset:
    """Data read for a selection, with where each kept axis starts in the array."""

    path: str
    text: str
    data: np.ndarray
    offsets: tuple[int, ...]  # start index in the array of each axis kept in data
    elements: int
    steps: tuple[int, ...] = ()  # step of each kept axis
    stored_dtype: str = ""  # the array's data type as its metadata names it (data keeps it: never widened)


def parse_selection(text: str, shape: tuple[int, ...]) -> tuple[Index, ...]:
    """Parse numpy-style selection text into one normalised int or slice per axis.

    Slices get explicit, clipped, non-negative start/stop and a positive step; negative integers
    count from the end. An empty text (or "...") selects everything.
    """
    body = text.strip()
    if len(body) >= 2 and (body[0], body[-1]) in (("[", "]"), ("(", ")")):
        body = body[1:-1].strip()
    parts = [p.strip() for p in body.split(",")] if body else []
    if parts and parts[-1] == "" and len(parts) > 1:  # a trailing comma, as in "5,"
        parts.pop()
    if any(p == "" for p in parts):
        raise SelectionError(f"cannot parse {text!r}: empty index between commas")
    ellipses = [i for i, p in enumerate(parts) if p == "..."]
    if len(ellipses) > 1:
        raise SelectionError(f"cannot parse {text!r}: '...' may appear only once")
    explicit = len(parts) - len(ellipses)
    if explicit > len(shape):
        raise SelectionError(f"too many indices: the array has {len(shape)} dimension"
                             f"{'' if len(shape) == 1 else 's'}, {explicit} given")
    if ellipses:
        at = ellipses[0]
        parts = parts[:at] + [":"] * (len(shape) - explicit) + parts[at + 1:]
    else:
        parts += [":"] * (len(shape) - len(parts))
    return tuple(_parse_one(p, axis, size, text) for axis, (p, size) in enumerate(zip(parts, shape, strict=False)))


def _parse_one(part: str, axis: int, size: int, text: str) -> Index:
    if ":" not in part:
        if not _INT_RE.match(part):
            raise SelectionError(f"cannot parse {part!r} (axis {axis}) in {text!r}: "
                                 "expected an integer or start:stop:step")
        value = int(part)
        if not -size <= value < size:
            raise SelectionError(f"index {value} is out of range for axis {axis} with size {size}")
        return value + size if value < 0 else value
    pieces = part.split(":")
    if len(pieces) > 3:
        raise SelectionError(f"cannot parse {part!r} (axis {axis}): a slice is start:stop:step")
    numbers: list[int | None] = []
    for piece in pieces:
        piece = piece.strip()
        if piece == "":
            numbers.append(None)
        elif _INT_RE.match(piece):
            numbers.append(int(piece))
        else:
            raise SelectionError(f"cannot parse {part!r} (axis {axis}): {piece!r} is not an integer")
    numbers += [None] * (3 - len(numbers))
    start, stop, step = numbers
    if step == 0:
        raise SelectionError(f"slice step cannot be zero (axis {axis})")
    if step is not None and step < 0:
        raise SelectionError(f"negative steps are not supported (axis {axis}); use a positive step")
    start, stop, step = slice(start, stop, step).indices(size)
    return slice(start, max(start, stop), step)


def selection_elements(selection: tuple[Index, ...]) -> int:
    """How many elements a normalised selection reads."""
    return math.prod(_length(s) for s in selection)


def _length(index: Index) -> int:
    if isinstance(index, slice):
        return len(range(index.start, index.stop, index.step))
    return 1


def format_selection(selection: tuple[Index, ...], shape: tuple[int, ...]) -> str:
    """The text for a normalised selection (':' for a whole axis), e.g. '0:100, :'."""
    parts = []
    for index, size in zip(selection, shape, strict=False):
        if not isinstance(index, slice):
            parts.append(str(index))
        elif index.start == 0 and index.stop >= size and index.step == 1:
            parts.append(":")
        else:
            text = f"{index.start}:{index.stop}"
            parts.append(text if index.step == 1 else f"{text}:{index.step}")
    return ", ".join(parts)


def default_selection(details: ArrayDetails) -> str:
    """A selection inside the first chunk, small enough to view: reads at most one chunk."""
    if not details.shape:
        return ""
    extent = [min(s, c) if c else s for s, c in zip(details.shape, details.chunk_shape, strict=False)]
    axis = 0
    while math.prod(extent) > DEFAULT_VIEW_ELEMENTS and axis < len(extent):
        others = math.prod(extent[:axis] + extent[axis + 1:]) or 1
        extent[axis] = max(1, min(extent[axis], DEFAULT_VIEW_ELEMENTS // others))
        axis += 1
    selection = tuple(slice(0, e, 1) for e in extent)
    return format_selection(selection, details.shape)


def chunk_selection_text(details: ArrayDetails, chunk_index: tuple[int, ...]) -> str:
    """The selection text covering exactly one (inner) chunk, clipped to the array."""
    if not details.shape:
        return ""
    if len(chunk_index) != len(details.shape):
        raise SelectionError(f"chunk index {tuple(chunk_index)} does not match {len(details.shape)} dimensions")
    selection = []
    for i, size, chunk in zip(chunk_index, details.shape, details.chunk_shape, strict=False):
        start = int(i) * chunk
        if not 0 <= start < max(size, 1):
            raise SelectionError(f"chunk index {tuple(chunk_index)} is outside the chunk grid")
        selection.append(slice(start, min(start + chunk, size), 1))
    return format_selection(tuple(selection), details.shape)


def read_subset(h: Hierarchy, path: str, text: str, max_elements: int = DEFAULT_MAX_ELEMENTS) -> Subset:
    """Read the selection `text` of the array at path, refusing more than max_elements."""
    path = path.strip("/")
    details = h.array_details(path, SelectionError)
    selection = parse_selection(text, details.shape)
    elements = selection_elements(selection)
    if elements > max_elements:
        raise SelectionTooLarge(elements, max_elements)
    try:  # before zarr-python: a chunk the metadata declares huge is refused, not decoded
        check_read(path, details, selection)
    except ReadTooLarge as exc:
        raise SelectionError(str(exc)) from exc
    try:
        data = h.read_array(path, selection)
    except ArrayReadError as exc:
        bad = failing_chunks(h, path, details, selection)
        where = f" (unreadable: {', '.join(bad)})" if bad else ""
        raise SelectionError(f"{exc}{where}") from exc
    data = np.asarray(data)  # the stored type, exported as it is (plot_data converts only what it draws)
    kept = [s for s in selection if isinstance(s, slice)]
    return Subset(path=path, text=text, data=data, offsets=tuple(s.start for s in kept), elements=elements,
                  steps=tuple(s.step for s in kept), stored_dtype=details.dtype)


def failing_chunks(h: Hierarchy, path: str, details: ArrayDetails, selection: tuple[Index, ...],
                   limit: int = 256) -> list[str]:
    """The chunks of a failed read that cannot be decoded, by key, so a user knows which file is
    damaged; reads the chunks the selection touches one by one (at most `limit` of them)."""
    ranges = []
    for index, chunk in zip(selection, details.chunk_shape, strict=False):
        first, last = (index, index) if isinstance(index, int) else (index.start, max(index.start, index.stop - 1))
        ranges.append(range(first // max(chunk, 1), last // max(chunk, 1) + 1))
    if math.prod(len(r) for r in ranges) > limit:
        return []
    array = h.open_async_array(path)
    bad = []
    for chunk_index in itertools.product(*ranges):
        block = tuple(slice(i * c, min((i + 1) * c, n)) for i, c, n in
                      zip(chunk_index, details.chunk_shape, details.shape, strict=False))
        try:
            event_loop.run(array.getitem(block))
        except Exception:  # any decoding failure marks the chunk; the caller reports the first error
            name = array.metadata.encode_chunk_key(chunk_index)
            bad.append(f"chunk {name}" if details.shard_shape is None else f"inner chunk {chunk_index}")
    return bad
