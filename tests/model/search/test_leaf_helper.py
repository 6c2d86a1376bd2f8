"""A pass over every leaf's item_ids with a helper process reading the far end
(model/search/leaf_helper.py): the same map and stamps as a pass alone, the helper's batches used
instead of reading those leaves here, its failures met again here, and no helper left running."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from file_events import stats_and_reads
from index_factory import build_clustered_index

from ecpfs_viewer.model.search import IndexReader, leaf_helper, locate
from ecpfs_viewer.model.search.results import Reporter, SearchCancelled
from ecpfs_viewer.model.storage import far_end
from ecpfs_viewer.model.storage.far_end import FarEnd
from ecpfs_viewer.model.storage.stamps import Stamps
from ecpfs_viewer.model.zarrtree.hierarchy import ArrayReadError

BATCH = 4


@pytest.fixture
def index(tmp_path: Path) -> Path:
    return build_clustered_index(tmp_path, 3000, 8)


@pytest.fixture
def small_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 4 leaves, and a helper for any pass of 8 leaves or more (on any machine)."""
    monkeypatch.setattr(locate, "LEAF_BATCH", BATCH)
    monkeypatch.setattr(leaf_helper, "HELPER_MIN_LEAVES", 8)
    monkeypatch.setattr(far_end, "helper_possible", lambda: True)


def _wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.01)


def _started(reader: IndexReader) -> FarEnd:
    """A pass begun with the item of the first leaf (one batch read here); its helper."""
    first = int(reader.node(reader.levels, reader.leaf_ids()[0]).ids[0])  # type: ignore[union-attr]
    reader.locator.find([first])
    helper = reader.locator._helper
    assert helper is not None
    return helper


def _rows(stamps: Stamps | None) -> set[tuple[str, int, tuple[int, ...]]]:
    assert stamps is not None
    return {(path, int(owner), tuple(int(v) for v in values))
            for path, owner, values in zip(stamps.paths, stamps.owners, stamps.values, strict=True)}


def test_a_pass_with_a_helper_makes_the_map_and_stamps_of_a_pass_alone_reading_fewer_leaves_here(
        index: Path, small_passes: None, monkeypatch: pytest.MonkeyPatch) -> None:
    alone = IndexReader(index)
    monkeypatch.setattr(leaf_helper, "HELPER_MIN_LEAVES", 10**9)
    expected = alone.locator.read_everything()
    monkeypatch.setattr(leaf_helper, "HELPER_MIN_LEAVES", 8)
    reader = IndexReader(index)
    leaves = len(reader.leaf_ids())
    helper = _started(reader)
    _wait(lambda: helper.low() <= leaves - 3 * BATCH, "three of the helper's batches")
    events = stats_and_reads(monkeypatch)
    found = reader.locator.read_everything()
    assert expected is not None and found is not None
    for field in ("item_ids", "leaves", "rows"):
        assert np.array_equal(getattr(found, field), getattr(expected, field)), field
    assert _rows(reader.locator.stamps()) == _rows(alone.locator.stamps())
    read_here = {path for what, path in events if what == "read" and "/item_ids/zarr.json" in path}
    assert len(read_here) <= leaves - 1 - 3 * BATCH  # the first batch before, the helper's three never
    assert reader.locator._helper is None and not helper.running()


def test_the_helper_stamps_its_leaves_so_a_change_of_one_is_seen(index: Path, small_passes: None) -> None:
    reader = IndexReader(index)
    helper = _started(reader)
    _wait(lambda: not helper.running(), "the helper to finish")
    reader.locator.read_everything()
    stamps = reader.locator.stamps()
    assert stamps is not None and helper.low() < len(reader.leaf_ids()) - BATCH
    last = reader.leaf_ids()[-1]
    assert reader.cache.unchanged(stamps, [last])
    chunk = index / f"lvl_{reader.levels}" / f"node_{last}" / "item_ids" / "c" / "0"
    data = chunk.read_bytes()
    chunk.write_bytes(data)  # rewritten as it was: a new change time
    later = os.stat(chunk).st_mtime_ns + 10**9
    os.utime(chunk, ns=(later, later))
    assert not reader.cache.unchanged(stamps, [last])


def test_a_leaf_the_helper_cannot_read_fails_here_as_it_fails_without_a_helper(
        index: Path, small_passes: None, monkeypatch: pytest.MonkeyPatch) -> None:
    reader = IndexReader(index)
    last = reader.leaf_ids()[-1]
    (index / f"lvl_{reader.levels}" / f"node_{last}" / "item_ids" / "c" / "0").write_bytes(b"not zstd")
    monkeypatch.setattr(leaf_helper, "HELPER_MIN_LEAVES", 10**9)
    with pytest.raises(ArrayReadError) as alone:
        IndexReader(index).locator.read_everything()
    monkeypatch.setattr(leaf_helper, "HELPER_MIN_LEAVES", 8)
    helper = _started(reader)
    _wait(lambda: not helper.running(), "the helper to stop")
    assert helper.failure is not None and "cannot be decoded" in helper.failure
    assert helper.low() == len(reader.leaf_ids())  # nothing it read is taken
    with pytest.raises(ArrayReadError) as with_helper:
        reader.locator.read_everything()
    assert str(with_helper.value) == str(alone.value)


def test_a_helper_that_cannot_start_leaves_every_leaf_to_this_process(
        index: Path, small_passes: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    expected = IndexReader(index).locator.read_everything()
    monkeypatch.setattr(far_end.sys, "executable", str(tmp_path / "no-python"))
    reader = IndexReader(index)
    helper = _started(reader)
    assert helper.failure is not None and "could not start" in helper.failure
    found = reader.locator.read_everything()
    assert found is not None and expected is not None
    assert np.array_equal(found.item_ids, expected.item_ids) and np.array_equal(found.rows, expected.rows)


def test_a_cancelled_pass_stops_its_helper_and_a_later_pass_uses_what_it_read(
        index: Path, small_passes: None) -> None:
    reader = IndexReader(index)
    leaves = len(reader.leaf_ids())
    helper = _started(reader)
    _wait(lambda: helper.low() <= leaves - 2 * BATCH, "two of the helper's batches")
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(SearchCancelled):
        reader.locator.read_everything(Reporter(cancel=cancel))
    assert not helper.running()
    kept = helper.low()
    assert kept <= leaves - 2 * BATCH
    found = reader.locator.read_everything()
    assert found is not None and len(found.item_ids) == 3000
    assert reader.locator.stamps() is not None


def test_a_batch_the_helper_was_not_asked_for_is_refused_and_read_here(
        index: Path, small_passes: None, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = IndexReader(index).locator.read_everything()
    # a helper that answers with the first leaf of the index as the far end's batch
    monkeypatch.setattr(far_end, "_COMMAND", (
        "import sys, numpy as np\n"
        "from ecpfs_viewer.model.search.item_map import _Run\n"
        "from ecpfs_viewer.model.storage.remote_helper_child import read_frame, write_frame\n"
        "job, (folder, key, levels, leaves), start, end, step, limits = read_frame(sys.stdin.buffer)\n"
        "run = _Run(np.arange(3, dtype=np.uint32), np.array([leaves[0]]), np.array([3]))\n"
        "write_frame(sys.stdout.buffer, ('batch', end - step, (run, [])))\n"
        "write_frame(sys.stdout.buffer, ('done',))\n"))
    reader = IndexReader(index)
    helper = _started(reader)
    _wait(lambda: helper.failure is not None, "the helper's batch to be refused")
    assert "not the batch asked for" in helper.failure  # type: ignore[operator]
    assert helper.low() == len(reader.leaf_ids())
    found = reader.locator.read_everything()
    assert found is not None and expected is not None
    assert np.array_equal(found.item_ids, expected.item_ids) and np.array_equal(found.leaves, expected.leaves)
