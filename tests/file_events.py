"""The stats and reads of local files a test's code makes, in the order made: whether each stamp
was taken by its read, right before its bytes (model/storage/read_stamps.py), or apart from the reads."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import pytest

from ecpfs_viewer.model.storage import local_files, local_reads, read_stamps, stamps


class _ReadsLogged:
    """``os`` for local_files: the first read of a file's bytes appended as ('read', path)."""

    def __init__(self, events: list[tuple[str, str]], reading: threading.local) -> None:
        self._events = events
        self._reading = reading

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def _note(self) -> None:
        path = getattr(self._reading, "path", None)
        if path is not None:
            self._events.append(("read", path))
            self._reading.path = None

    def read(self, fd: int, size: int) -> bytes:
        self._note()
        return os.read(fd, size)

    def readv(self, fd: int, buffers: Any) -> int:
        self._note()
        return os.readv(fd, buffers)


def stats_and_reads(monkeypatch: pytest.MonkeyPatch, apart: str = "stamped apart") -> list[tuple[str, str]]:
    """('stat', path) of each stamp a read takes, (apart, path) of each stamp taken otherwise and
    ('read', path) when a local file's bytes are first read, appended as they are made."""
    events: list[tuple[str, str]] = []
    reading = threading.local()

    def logged(what: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def run(path: str, *args: Any, **kwargs: Any) -> Any:
            events.append((what, path))
            return call(path, *args, **kwargs)
        return run

    def reads(call: Callable[..., Any]) -> Callable[..., Any]:
        def run(path: str, *args: Any) -> Any:
            if len(args) == 3 and args[2] is not None:  # read_file's stamp: logged when taken
                stamp = args[2]

                def stamped(info: Any) -> None:
                    events.append(("stat", path))
                    stamp(info)
                args = (*args[:2], stamped)
            reading.path = path
            try:
                return call(path, *args)
            finally:
                reading.path = None
        return run

    monkeypatch.setattr(read_stamps, "stat_row", logged("stat", read_stamps.stat_row))
    monkeypatch.setattr(stamps, "stat_row", logged(apart, stamps.stat_row))
    monkeypatch.setattr(local_files, "os", _ReadsLogged(events, reading))
    monkeypatch.setattr(local_reads, "read_file", reads(local_reads.read_file))
    monkeypatch.setattr(local_reads, "read_file_range", reads(local_reads.read_file_range))
    return events
