"""Many stamps of a warm disk checked half here, half by a helper process meanwhile: the same rows as
this process's own stats, a change in either half found, and the answer unchanged (statted here)
when the helper fails, writes nonsense or misses its deadline."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from ecpfs_viewer.model.storage import helper_stats, stamps
from ecpfs_viewer.model.storage.helper_stats import HelperStats
from ecpfs_viewer.model.storage.stamps import rows_unchanged, stamp_local

FILES = 2_000


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], np.ndarray]:
    """FILES small files (one named by bytes that are not UTF-8, one not ASCII), their paths and
    stamp rows as they are now."""
    root = tmp_path_factory.mktemp("helper_stamped")
    paths = [f"node_{n}/zarr.json" for n in range(FILES - 2)] + [os.fsdecode(b"odd_\xff"), "n\u00e9e"]
    for path in paths:
        (root / path).parent.mkdir(exist_ok=True)
        (root / path).write_bytes(b"{}")
    values = np.array([stamps.stat_row(os.path.join(root, p)) for p in paths], dtype=np.int64)
    return root, paths, values


@pytest.fixture
def split(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A warm disk whose stamps past the probe go half to the helper; the paths statted here."""
    monkeypatch.setattr(stamps, "STAT_COLD_SECONDS", 1.0)
    monkeypatch.setattr(stamps, "HELPER_STATS", 100)
    monkeypatch.setattr(stamps, "helper_possible", lambda: True)
    here: list[str] = []
    row = stamps.stat_row

    def stat_row(path: str) -> tuple[int, ...]:
        here.append(path)
        return row(path)

    monkeypatch.setattr(stamps, "stat_row", stat_row)
    return here


def test_the_helper_gives_the_rows_this_process_would(folder) -> None:
    root, paths, values = folder
    asked = [*paths, "missing/zarr.json"]
    with HelperStats(str(root) + os.sep, asked) as helper:
        rows = helper.rows()
    assert rows is not None
    assert np.array_equal(rows[:-1], values)
    assert rows[-1].tolist() == [-1] * 5  # what stamps.stat_row says of a path that is not there


def test_half_of_many_stamps_is_checked_by_the_helper(folder, split: list[str]) -> None:
    root, paths, values = folder
    assert rows_unchanged(str(root), paths, values)
    # the probe and the first half of the rest here, the second half in the helper
    middle = stamps.PROBE_STATS + (FILES - stamps.PROBE_STATS) // 2
    assert len(split) == middle


@pytest.mark.parametrize("changed", [0, stamps.PROBE_STATS + 10, FILES - 2, FILES - 1])
def test_one_changed_file_in_either_half_is_found(folder, split: list[str], changed: int) -> None:
    root, paths, values = folder
    other = values.copy()
    other[changed, 3] += 1  # the mtime it was stamped with differs from the file's
    assert not rows_unchanged(str(root), paths, other)
    assert rows_unchanged(str(root), paths, values)


@pytest.mark.parametrize("helper", [
    "import sys; sys.exit(3)",  # fails
    "import sys; sys.stdin.buffer.read(); sys.stdout.buffer.write(b'1234567')",  # nonsense
    "import sys; sys.stdin.buffer.read(); sys.stdout.buffer.write(bytes(40 * 5000))",  # too many rows
])
def test_a_failed_helper_leaves_its_half_to_this_process(folder, split: list[str], monkeypatch: pytest.MonkeyPatch,
                                                         helper: str) -> None:
    root, paths, values = folder
    monkeypatch.setattr(helper_stats, "_HELPER", helper)
    other = values.copy()
    other[FILES - 1, 2] += 1
    assert not rows_unchanged(str(root), paths, other)
    split.clear()
    assert rows_unchanged(str(root), paths, values)
    assert len(split) == FILES  # every path statted here after all


def test_a_helper_past_its_deadline_is_stopped(folder, monkeypatch: pytest.MonkeyPatch) -> None:
    root, paths, _ = folder
    monkeypatch.setattr(helper_stats, "_HELPER", "import time; time.sleep(600)")
    monkeypatch.setattr(helper_stats, "DEADLINE", 0.2)
    with HelperStats(str(root) + os.sep, paths) as helper:
        assert helper.rows() is None
    assert helper._proc is not None and helper._proc.returncode is not None  # ended, not left behind


def test_a_check_that_fails_early_stops_the_helper(folder, split: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A change in this process's half answers at once: the helper is stopped, not waited for."""
    root, paths, values = folder
    monkeypatch.setattr(helper_stats, "_HELPER", "import time; time.sleep(600)")
    started: list[HelperStats] = []
    original = helper_stats.HelperStats.__init__

    def init(self: HelperStats, prefix: str, asked: list[str]) -> None:
        original(self, prefix, asked)
        started.append(self)

    monkeypatch.setattr(helper_stats.HelperStats, "__init__", init)
    other = values.copy()
    other[stamps.PROBE_STATS + 1, 2] += 1
    assert not rows_unchanged(str(root), paths, other)
    assert len(started) == 1 and started[0]._proc is not None and started[0]._proc.returncode is not None


def test_no_helper_for_a_frozen_application(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert not helper_stats.helper_possible()


def test_many_stamps_of_a_warm_disk_are_taken_half_by_the_helper(folder, split: list[str]) -> None:
    """Stamping (what `info` and a check do before reading the leaves' documents) shares the work
    as checking does: the second half of the rest statted by the helper, the same stamps."""
    root, paths, values = folder
    asked = [(path, n) for n, path in enumerate([*paths, "missing/zarr.json"])]
    stamped = stamp_local(str(root), asked, walk=False)
    assert np.array_equal(stamped.values[:-1], values) and stamped.values[-1].tolist() == [-1] * 5
    assert list(stamped.paths) == [path for path, _ in asked] and stamped.owners.tolist() == list(range(len(asked)))
    assert len(split) == stamps.PROBE_STATS + (len(asked) - stamps.PROBE_STATS) // 2  # the rest in the helper


@pytest.mark.parametrize("helper", ["import sys; sys.exit(3)",
                                    "import sys; sys.stdin.buffer.read(); sys.stdout.buffer.write(b'1234567')"])
def test_stamps_a_failed_helper_could_not_take_are_taken_here(folder, split: list[str],
                                                              monkeypatch: pytest.MonkeyPatch, helper: str) -> None:
    root, paths, values = folder
    monkeypatch.setattr(helper_stats, "_HELPER", helper)
    stamped = stamp_local(str(root), [(path, 0) for path in paths], walk=False)
    assert np.array_equal(stamped.values, values) and len(split) == FILES
