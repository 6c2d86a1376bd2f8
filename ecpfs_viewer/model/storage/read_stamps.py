"""Stamps taken by the reads themselves: each file of a local folder statted right before it is opened.

A pass over every leaf stamps the files it reads (model/ecpfs/index_cache.py). Stamping a batch of
paths and reading them afterwards walks each path twice, the second time after its entries went
cold (benchmarks/README.md: about half the cost a leaf); a read stamps the file it has just opened
(its fstat: the path walked once). The stamp is still taken before its file is read, so a change
while reading leaves it older than what was read (model/storage/stamps.py). Zarr-free, like the
stamps.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterable, Iterator

import numpy as np

from ecpfs_viewer.model.storage.stamps import STAMP_FIELDS, Stamps, row_of, stamp_local, stat_row

_RECORDING: contextvars.ContextVar[ReadStamps | None] = contextvars.ContextVar("read_stamps", default=None)


class ReadStamps:
    """The stamps of the expected files (keys below a local folder, each with its owner), taken by
    the reads of them made while it records (:meth:`recording`). The rows go straight into an array:
    600,000 leaf documents held as Python tuples took about 200 MB more, and the collector's passes
    over them seconds."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self._slots: dict[str, int] = {}  # key -> its row, in the order expected
        self._owners = np.empty(0, np.int64)
        self._values = np.empty((0, STAMP_FIELDS), np.int64)
        self._taken = np.empty(0, np.bool_)

    def expect(self, keys: Iterable[tuple[str, int]]) -> None:
        """Stamp these (key, owner) files when they are read (a key expected twice keeps its first owner)."""
        slots = self._slots
        owners: list[int] = []
        for key, owner in keys:
            if key not in slots:
                slots[key] = len(slots)
                owners.append(owner)
        count, start = len(slots), len(slots) - len(owners)
        if count > len(self._owners):  # grown by half again at least: chunks are expected a batch at a time
            size = max(count, len(self._owners) * 3 // 2)
            self._owners = np.resize(self._owners, size)
            self._values = np.resize(self._values, (size, STAMP_FIELDS))
            self._taken = np.resize(self._taken, size)
        self._owners[start:count] = owners
        self._taken[start:count] = False

    def slot(self, key: str) -> int | None:
        """The row of an expected key (what its read hands to :meth:`take`); None for a key not expected."""
        return self._slots.get(key)

    def take(self, slot: int, path: str) -> None:
        """Stamp the file at path, about to be read, unless an earlier read of it did."""
        if not self._taken[slot]:
            self._values[slot] = stat_row(path)
            self._taken[slot] = True

    def wants(self, slot: int) -> bool:
        """Whether no read has stamped this expected file yet."""
        return not bool(self._taken[slot])

    def take_opened(self, slot: int, info: os.stat_result | None) -> None:
        """Stamp an expected file from its stat as its read opened it (None: there was no such file)."""
        if not self._taken[slot]:
            self._values[slot] = row_of(info)
            self._taken[slot] = True

    def put(self, taken: Stamps) -> None:
        """Rows another process took by its reads of expected files, each right before its read
        (model/storage/far_end.py's helper); a file stamped here already keeps its own row."""
        slots = np.fromiter((self._slots.get(key, -1) for key in taken.paths), np.int64, len(taken.paths))
        mine = slots >= 0
        slots, rows = slots[mine], taken.values[mine]
        fresh = ~self._taken[slots]
        self._values[slots[fresh]] = rows[fresh]
        self._taken[slots[fresh]] = True

    @contextlib.contextmanager
    def recording(self) -> Iterator[ReadStamps]:
        """Local reads of this context (and of the threads it carries into) stamp the expected files."""
        token = _RECORDING.set(self)
        try:
            yield self
        finally:
            _RECORDING.reset(token)

    def stamps(self) -> Stamps:
        """Every expected file's stamp: as its read took it, else (not read: a document held from an
        earlier read) taken now."""
        count = len(self._slots)
        keys = list(self._slots)
        values = self._values[:count].copy()
        unread = np.flatnonzero(~self._taken[:count])
        if unread.size:  # as many as a leaf level's documents when its listing was held (stamps.py's batches)
            values[unread] = stamp_local(self.folder, [(keys[at], 0) for at in unread.tolist()], walk=False).values
        return Stamps("local", keys, self._owners[:count].copy(), values)


def recording_now() -> ReadStamps | None:
    """The stamps the local reads of this context record into, if any."""
    return _RECORDING.get()
