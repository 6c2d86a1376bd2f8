"""Local stamps checked one thread a block at a time while the disk answers from its cache, by
several threads once it is seen to be cold; a change anywhere is found either way."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from ecpfs_viewer.model.storage import stamps
from ecpfs_viewer.model.storage.stamps import rows_unchanged

FILES = 3 * stamps.STAT_BLOCK


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], np.ndarray]:
    """FILES small files, their paths and stamp rows as they are now."""
    root = tmp_path_factory.mktemp("stamped")
    paths = [f"node_{n}/zarr.json" for n in range(FILES)]
    for path in paths:
        (root / path).parent.mkdir()
        (root / path).write_bytes(b"{}")
    values = np.array([stamps.stat_row(os.path.join(root, p)) for p in paths], dtype=np.int64)
    return root, paths, values


def _threads_seen(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    row = stamps.stat_row

    def stat_row(path: str) -> tuple[int, ...]:
        seen.append(threading.current_thread().name)
        return row(path)

    monkeypatch.setattr(stamps, "stat_row", stat_row)
    return seen


def test_a_warm_disk_is_checked_in_this_thread(folder, monkeypatch: pytest.MonkeyPatch) -> None:
    root, paths, values = folder
    monkeypatch.setattr(stamps, "STAT_COLD_SECONDS", 1.0)  # every disk answers within it: warm
    seen = _threads_seen(monkeypatch)
    assert rows_unchanged(str(root), paths, values)
    assert len(seen) == FILES and set(seen) == {threading.current_thread().name}


def test_a_cold_disk_is_checked_by_several_threads(folder, monkeypatch: pytest.MonkeyPatch) -> None:
    root, paths, values = folder
    monkeypatch.setattr(stamps, "STAT_COLD_SECONDS", 0.0)  # every disk slower than that: cold
    seen = _threads_seen(monkeypatch)
    assert rows_unchanged(str(root), paths, values)
    assert len(seen) == FILES and len({name for name in seen if name.startswith("stamps")}) > 1


@pytest.mark.parametrize("cold", [False, True])
@pytest.mark.parametrize("changed", [0, stamps.PROBE_STATS, FILES - 1])
def test_one_changed_file_anywhere_is_found(folder, monkeypatch: pytest.MonkeyPatch, cold: bool,
                                            changed: int) -> None:
    root, paths, values = folder
    monkeypatch.setattr(stamps, "STAT_COLD_SECONDS", 0.0 if cold else 1.0)
    other = values.copy()
    other[changed, 2] += 1  # the size it was stamped with differs from the file's
    assert not rows_unchanged(str(root), paths, other)
    assert rows_unchanged(str(root), paths, values)


def test_a_pause_of_the_process_does_not_make_a_warm_disk_look_cold(folder, monkeypatch: pytest.MonkeyPatch) -> None:
    """A garbage collection of 10-15 ms during the first stats (here a sleep in one of them) made
    their sum look like a cold disk, and eight threads then checked the rest, slower: the median
    of the single stats decides."""
    root, paths, values = folder
    monkeypatch.setattr(stamps, "STAT_COLD_SECONDS", 1e-3)  # a stat of a warm file takes far less
    seen = _threads_seen(monkeypatch)
    row = stamps.stat_row
    paused = iter([True])

    def stat_row(path: str) -> tuple[int, ...]:
        if len(seen) == 10 and next(paused, False):
            time.sleep(stamps.PROBE_STATS * 1e-3)  # longer than every probe's stats may take together
        return row(path)

    monkeypatch.setattr(stamps, "stat_row", stat_row)  # inside the recording one
    assert rows_unchanged(str(root), paths, values)
    assert len(seen) == FILES and set(seen) == {threading.current_thread().name}
