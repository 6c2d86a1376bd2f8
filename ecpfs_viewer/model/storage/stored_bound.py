"""What a chunk may be stored as, and the refusal of one stored as more, before its body is read.

A chunk of a ``bytes`` + compressor chain cannot legitimately be stored as much more than its
decoded size (``guarded_decode.most_stored`` works the bound out from the chain); one that is (a
file grown or rewritten by another process) is damage, and reading it whole would cost up to the
per-object cap in memory for nothing. The reader that knows the chunks' arrays (the batch reader)
sets the bounds of the keys it reads with :func:`stored_bounds` (``OpenedStore.read_many_or_errors``
takes them); every store, wherever it learns an object's size before reading its body, calls
:func:`check_stored` (or passes :func:`size_check` to ``local_files.read_file``):

- a local file: its fstat (``local_files.read_file``, ``GuardedLocalStore``);
- a zip member: the uncompressed size its directory entry declares (``GuardedZipStore``);
- a remote object: the answer's Content-Length (``BoundedStore``); an fsspec store wrapped the same
  way calls :func:`check_stored` where it checks the per-object cap.

zarr-python reads the chunks of the arrays it opens itself (a codec sees a chunk only once read):
the Hierarchy gives each array's bound to the store's :class:`ChunkBoundedStore` (``bound_chunks``),
which sets it around every whole read of a key below that array.

Range reads are not bounded here (a shard is read in ranges, its entries checked against it).
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from zarr.abc.buffer import Buffer, BufferPrototype
from zarr.abc.store import ByteRequest, Store

from ecpfs_viewer.model.formatting import format_value
from ecpfs_viewer.model.storage.counted_io import CountingStore, IOCounter, UnreadableFile, is_metadata_key


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


# the bounds in force for the code running in this context, innermost first, by store key; copied
# into the model's event-loop tasks by event_loop.run and into worker threads by carry_context
_BOUNDS: contextvars.ContextVar[tuple[Mapping[str, StoredBound], ...]] = contextvars.ContextVar(
    "ecpfs_stored_bounds", default=())


@contextmanager
def stored_bounds(bounds: Mapping[str, StoredBound] | None) -> Iterator[None]:
    """Every whole-object read of these keys (store keys) inside the with block, in this thread and
    the tasks and workers it starts with its context, is refused past its bound. A key ending in
    '/' is an array's: it bounds every chunk below it (zarr-python's reads, whose keys the caller
    does not list). The mapping is used as it is, not copied."""
    if not bounds:
        yield
        return
    token = _BOUNDS.set((bounds, *_BOUNDS.get()))
    try:
        yield
    finally:
        _BOUNDS.reset(token)


def stored_bound(key: str) -> StoredBound | None:
    """The bound :func:`stored_bounds` set here for the whole object at key (its own, else that of
    the array it is a chunk of), None when there is none."""
    chain = _BOUNDS.get()
    if not chain:
        return None
    found = next((bounds[key] for bounds in chain if key in bounds), None)
    if found is not None or is_metadata_key(key):
        return found
    parent = key
    while parent:  # the arrays it may be a chunk of, innermost first; '/' is an array at the root
        parent = parent.rsplit("/", 1)[0] if "/" in parent else ""
        found = next((bounds[parent + "/"] for bounds in chain if parent + "/" in bounds), None)
        if found is not None:
            return found
    return None


def size_check(key: str) -> Callable[[str, int], None] | None:
    """The ``check`` of ``local_files.read_file`` for key: (path, size) -> refuses past its bound."""
    bound = stored_bound(key)
    return None if bound is None else bound.check


def check_stored(where: str, key: str, size: int) -> None:
    """Refuse (StoredTooLarge, naming `where`) a whole object at key whose size is past its bound."""
    bound = stored_bound(key)
    if bound is not None:
        bound.check(where, size)


class ChunkBoundedStore(CountingStore):
    """The counting wrapper of an opened store (what zarr-python reads through), which also bounds
    every whole read of a chunk of an array whose bound it was given (:meth:`bound_chunks`)."""

    def __init__(self, store: Store, counter: IOCounter | None = None) -> None:
        super().__init__(store, counter)
        self.array_bounds: dict[str, StoredBound] = {}  # by the array's key + '/' ('/' at the root)

    def bound_chunks(self, array_key: str, bound: StoredBound | None) -> None:
        """Bound every chunk below array_key by `bound` from now on (None: by the per-object cap only)."""
        prefix = array_key.strip("/") + "/"
        if bound is None:
            self.array_bounds.pop(prefix, None)
        else:
            self.array_bounds[prefix] = bound

    async def get(self, key: str, prototype: BufferPrototype, byte_range: ByteRequest | None = None
                  ) -> Buffer | None:
        with stored_bounds(self.array_bounds if byte_range is None else None):
            return await super().get(key, prototype, byte_range)

    def get_sync(self, key: str, *, prototype: BufferPrototype | None = None, byte_range: Any = None
                 ) -> Buffer | None:
        with stored_bounds(self.array_bounds if byte_range is None else None):
            return super().get_sync(key, prototype=prototype, byte_range=byte_range)
