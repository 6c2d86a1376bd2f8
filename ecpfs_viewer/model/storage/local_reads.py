"""Many files of a local folder read in order, side by side once the disk answers slowly
(:func:`~ecpfs_viewer.model.storage.side_by_side.in_order`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from zarr.abc.store import ByteRequest

from ecpfs_viewer.model.storage.local_files import read_file, read_file_range
from ecpfs_viewer.model.storage.read_stamps import ReadStamps, recording_now
from ecpfs_viewer.model.storage.side_by_side import PROBE_FILES, cache_says_cold, in_order
from ecpfs_viewer.model.storage.stored_bound import size_check

Value = bytes | None | OSError

#: files whose readers are made at once: a level's listing reads 200,000 documents in one call
#: (at 10M), whose readers held 120 MB until the last was read
READ_SLICE = 8192


def read_local(base: str, requests: Sequence[tuple[str, ByteRequest | None]]) -> list[Value]:
    """The bytes of each (key, byte range) below ``base`` (a folder path ending in its separator), in
    order: None for an absent file, the OSError of a failed one in its place. The first files say
    whether they were in the page cache, which decides whether the rest are read side by side.
    A file the context's read stamps expect is stamped as it is opened, before it is read (read_stamps.py)."""
    cached: list[bool | None] = []
    recorder = recording_now()
    found: list[Value] = []
    for low in range(0, len(requests), READ_SLICE):  # the readers of a slice at a time (7 objects a file)
        readers = [_reader(base + key, size_check(key) if byte_range is None else None,  # this thread's bound
                           byte_range, cached if at < PROBE_FILES else None, recorder,
                           None if recorder is None else recorder.slot(key))
                   for at, (key, byte_range) in enumerate(requests[low:low + READ_SLICE], low)]
        found.extend(in_order(readers, lambda: cache_says_cold(cached)))
    return found


def _reader(path: str, check: Callable[[str, int], None] | None, byte_range: ByteRequest | None,
            cached: list[bool | None] | None, recorder: ReadStamps | None, slot: int | None) -> Callable[[], Value]:
    def read() -> Value:
        stamp = None
        if slot is not None and recorder.wants(slot):  # type: ignore[union-attr]  # a slot is the recorder's
            if byte_range is None:
                stamp = functools.partial(recorder.take_opened, slot)  # type: ignore[union-attr]
            else:
                recorder.take(slot, path)  # type: ignore[union-attr]
        try:
            return read_file(path, check, cached, stamp) if byte_range is None else read_file_range(path, byte_range)
        except OSError as exc:
            return exc
    return read
