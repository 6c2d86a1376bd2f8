"""The stats and reads of local files a test's code makes, in the order made: whether each stamp
was taken by its read, right before it (model/storage/read_stamps.py), or apart from the reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ecpfs_viewer.model.storage import local_reads, read_stamps, stamps


def stats_and_reads(monkeypatch: pytest.MonkeyPatch, apart: str = "stamped apart") -> list[tuple[str, str]]:
    """('stat', path) of each stamp a read takes, (apart, path) of each stamp taken otherwise and
    ('read', path) of each local file read, appended as they are made."""
    events: list[tuple[str, str]] = []

    def logged(what: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def run(path: str, *args: Any, **kwargs: Any) -> Any:
            events.append((what, path))
            return call(path, *args, **kwargs)
        return run

    monkeypatch.setattr(read_stamps, "stat_row", logged("stat", read_stamps.stat_row))
    monkeypatch.setattr(stamps, "stat_row", logged(apart, stamps.stat_row))
    monkeypatch.setattr(local_reads, "read_file", logged("read", local_reads.read_file))
    return events
