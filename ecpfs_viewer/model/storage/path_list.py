"""Many paths held as one UTF-8 blob and where each ends, read back as strings one at a time.

A cache entry of a 10M-item index is stamped from 1.2 million files (model/storage/stamps.py): as a
tuple of Python strings their names took about 110 MB, and the allocator kept much of that after
they were freed (small objects live in arenas that are returned only when wholly empty). Here they
take the bytes of their names and eight bytes each.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import overload

import numpy as np

_CODEC = ("utf-8", "surrogatepass")  # a name that is not UTF-8 keeps its escaped bytes, both ways
#: paths an iteration decodes at once (a list of every one would be what this class saves)
_ITER_BLOCK = 4096


class PathList(Sequence[str]):
    """An immutable sequence of paths: ``blob`` holds their UTF-8 bytes one after another, path i
    is ``blob[offsets[i]:offsets[i + 1]]``."""

    __slots__ = ("blob", "offsets")

    def __init__(self, blob: bytes, offsets: np.ndarray) -> None:
        offsets = np.asarray(offsets, np.int64)
        if (offsets.ndim != 1 or not offsets.size or offsets[0] != 0 or offsets[-1] != len(blob)
                or bool((np.diff(offsets) < 0).any())):
            raise ValueError("the offsets do not divide the blob")
        self.blob = blob
        self.offsets = offsets

    @classmethod
    def read_back(cls, blob: bytes, offsets: np.ndarray) -> PathList:
        """A list from bytes read back (a file's): ValueError unless each path is UTF-8 on its own
        (each is decoded only when asked for, so a bad one is refused here, not then) and the
        offsets int64 as written (others would be cast, fractions dropped, without a word)."""
        if np.asarray(offsets).dtype != np.int64:
            raise ValueError(f"the offsets are {np.asarray(offsets).dtype}, not int64")
        found = cls(blob, offsets)
        blob.decode(*_CODEC)
        inner = found.offsets[1:-1]
        inner = inner[inner < len(blob)]
        if inner.size and bool(((np.frombuffer(blob, np.uint8)[inner] & 0xC0) == 0x80).any()):
            raise ValueError("a path starts inside a character")
        return found

    @classmethod
    def of(cls, paths: Iterable[str]) -> PathList:
        """The given paths as one list (a PathList is returned as it is)."""
        if isinstance(paths, PathList):
            return paths
        encoded = [path.encode(*_CODEC) for path in paths]
        offsets = np.zeros(len(encoded) + 1, np.int64)
        if encoded:
            np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
        return cls(b"".join(encoded), offsets)

    @classmethod
    def joined(cls, parts: Sequence[PathList]) -> PathList:
        """The paths of each part, in order, as one list."""
        if len(parts) == 1:
            return parts[0]
        sizes = np.fromiter((len(p.blob) for p in parts), np.int64, len(parts))
        shift = np.concatenate([[0], np.cumsum(sizes)])
        offsets = np.concatenate([*(p.offsets[:-1] + s for p, s in zip(parts, shift[:-1].tolist(), strict=True)),
                                  shift[-1:]])
        return cls(b"".join(p.blob for p in parts), offsets)

    def taken(self, positions: Sequence[int] | np.ndarray) -> PathList:
        """The paths at the given positions, in that order."""
        at = np.asarray(positions, np.int64)
        if at.size == len(self) and np.array_equal(at, np.arange(len(self))):
            return self
        blob = self.blob
        pieces = [blob[a:b] for a, b in self._bounds(at)]
        offsets = np.zeros(at.size + 1, np.int64)
        np.cumsum(self.offsets[at + 1] - self.offsets[at], out=offsets[1:])
        return PathList(b"".join(pieces), offsets)

    def __len__(self) -> int:
        return self.offsets.size - 1

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> PathList: ...

    def __getitem__(self, index: int | slice) -> str | PathList:
        if isinstance(index, slice):
            return self.taken(range(len(self))[index])
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("path index out of range")
        return self.blob[int(self.offsets[index]):int(self.offsets[index + 1])].decode(*_CODEC)

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self), _ITER_BLOCK):
            yield from self.strings(range(start, min(start + _ITER_BLOCK, len(self))))

    def strings(self, positions: Sequence[int] | np.ndarray | None = None) -> list[str]:
        """The paths at ``positions`` (all by default) as strings, at once: a million of them read
        one by one through ``[]`` took 2 s of a kept 10M-item map's check."""
        at = np.arange(len(self)) if positions is None else np.asarray(positions, np.int64)
        bounds = self._bounds(at)
        # many of an ASCII blob: byte offsets are character offsets, slice one decoded text (a few
        # of a large blob are decoded each alone, not the whole blob for them)
        if 8 * at.size >= len(self) and self.blob.isascii():
            text = self.blob.decode("ascii")
            return [text[a:b] for a, b in bounds]
        blob = self.blob
        return [blob[a:b].decode(*_CODEC) for a, b in bounds]

    def _bounds(self, at: np.ndarray) -> zip[tuple[int, int]]:
        """(start, end) in the blob of each path at positions ``at``."""
        return zip(self.offsets[at].tolist(), self.offsets[at + 1].tolist(), strict=True)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PathList):
            return self.blob == other.blob and np.array_equal(self.offsets, other.offsets)
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(repr(p) for p in self[:3])
        return f"PathList([{shown}{', ...' if len(self) > 3 else ''}], {len(self):,} paths)"
