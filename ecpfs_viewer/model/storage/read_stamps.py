"""Stamps taken by the reads themselves: each file of a local folder statted right before it is opened.

A pass over every leaf stamps the files it reads (model/ecpfs/index_cache.py). Stamping a batch of
paths and reading them afterwards walks each path twice, the second time after its entries went
cold; a stat right before the open finds them hot (benchmarks/README.md: about half the cost a
leaf). The stamp is still taken before its file is read, so a change while reading leaves it older
than what was read (model/storage/stamps.py). Zarr-free, like the stamps.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from ecpfs_viewer.model.storage.stamps import STAMP_FIELDS, Stamps, stamp_local, stat_row

_RECORDING: contextvars.ContextVar[ReadStamps | None] = contextvars.ContextVar("read_stamps", default=None)


class ReadStamps:
    """The stamps of the expected files (keys below a local folder, each with its owner), taken by
    the reads of them made while it records (:meth:`recording`)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self._owners: dict[str, int] = {}  # in the order expected
        self._rows: dict[str, tuple[int, ...]] = {}

    def expect(self, keys: Iterable[tuple[str, int]]) -> None:
        """Stamp these (key, owner) files when they are read (a key expected twice keeps its first owner)."""
        for key, owner in keys:
            self._owners.setdefault(key, owner)

    def before_read(self, key: str) -> Callable[[str], None] | None:
        """What a read of key calls with its path just before opening it; None for a key not expected."""
        if key not in self._owners:
            return None
        rows = self._rows

        def stamp(path: str) -> None:
            if key not in rows:  # a file read twice keeps the stamp of its first read
                rows[key] = stat_row(path)
        return stamp

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
        keys = list(self._owners)
        owners = np.fromiter(self._owners.values(), np.int64, len(keys))
        values = np.empty((len(keys), STAMP_FIELDS), np.int64)
        unread: list[int] = []
        for at, key in enumerate(keys):
            row = self._rows.get(key)
            if row is None:
                unread.append(at)
            else:
                values[at] = row
        if unread:  # as many as a leaf level's documents when its listing was held (stamps.py's batches)
            values[unread] = stamp_local(self.folder, [(keys[at], 0) for at in unread], walk=False).values
        return Stamps("local", tuple(keys), owners, values)


def recording_now() -> ReadStamps | None:
    """The stamps the local reads of this context record into, if any."""
    return _RECORDING.get()
