"""What a chunk may be stored as, and the refusal of one stored as more, before its body is read.

A chunk of a ``bytes`` + compressor chain cannot legitimately be stored as much more than its
decoded size (``guarded_decode.most_stored`` works the bound out from the chain); one that is (a
file grown or rewritten by another process) is damage, and reading it whole would cost up to the
per-object cap in memory for nothing. The reader that knows the chunks' arrays (the batch reader)
sets the bounds of the keys it reads with :func:`stored_bounds` (``OpenedStore.read_many_or_errors``
takes them); every store, wherever it learns an object's size before reading its body, calls
:func:`check_stored` (or passes :func:`size_check` to ``counted_io.read_file``):

- a local file: its fstat (``counted_io.read_file``, ``GuardedLocalStore``);
- a zip member: the uncompressed size its directory entry declares (``GuardedZipStore``);
- a remote object: the answer's Content-Length (``BoundedStore``); an fsspec store wrapped the same
  way calls :func:`check_stored` where it checks the per-object cap.

Range reads are not bounded here (a shard is read in ranges, its entries checked against it).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from ecpfs_viewer.model.formatting import format_value
from ecpfs_viewer.model.storage.counted_io import UnreadableFile


class StoredTooLarge(UnreadableFile):
    """A chunk stored as more (or, uncompressed, other) bytes than its array's codecs can make of
    its decoded size: refused from its size alone, before its body is read."""


@dataclass(frozen=True)
class StoredBound:
    """What one chunk may be stored as: at most ``most`` bytes, or, stored uncompressed
    (``exact``), exactly ``decoded``, the size it decodes to (named in the refusal)."""

    most: int
    decoded: int
    exact: bool = False

    def check(self, where: str, size: int) -> None:
        """Refuse (StoredTooLarge, naming `where`) a stored size the codecs cannot have made."""
        if size > self.most or (self.exact and size != self.decoded):
            kind = "an uncompressed chunk of" if self.exact else "a chunk that decodes to"
            raise StoredTooLarge(where, f"{format_value(size, grouped=True)} bytes stored for {kind} "
                                        f"{format_value(self.decoded, grouped=True)} bytes; could not be read")


# the bounds of the chunks the code running in this context reads, by store key; copied into the
# model's event-loop tasks by event_loop.run and into worker threads by counted_io.carry_context
_BOUNDS: contextvars.ContextVar[Mapping[str, StoredBound] | None] = contextvars.ContextVar("ecpfs_stored_bounds",
                                                                                           default=None)


@contextmanager
def stored_bounds(bounds: Mapping[str, StoredBound] | None) -> Iterator[None]:
    """Every whole-object read of these keys (store keys) inside the with block, in this thread and
    the tasks and workers it starts with its context, is refused past its bound."""
    if not bounds:
        yield
        return
    token = _BOUNDS.set({**(_BOUNDS.get() or {}), **bounds})
    try:
        yield
    finally:
        _BOUNDS.reset(token)


def stored_bound(key: str) -> StoredBound | None:
    """The bound :func:`stored_bounds` set here for the whole object at key, None when there is none."""
    bounds = _BOUNDS.get()
    return None if bounds is None else bounds.get(key)


def size_check(key: str) -> Callable[[str, int], None] | None:
    """The ``check`` of ``counted_io.read_file`` for key: (path, size) -> refuses past its bound."""
    bound = stored_bound(key)
    return None if bound is None else bound.check


def check_stored(where: str, key: str, size: int) -> None:
    """Refuse (StoredTooLarge, naming `where`) a whole object at key whose size is past its bound."""
    bound = stored_bound(key)
    if bound is not None:
        bound.check(where, size)
