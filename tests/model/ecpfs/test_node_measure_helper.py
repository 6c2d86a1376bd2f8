"""A leaf level measured with a helper process at its far end (model/ecpfs/node_measure.py): the
same statistics and findings, in the same order, as measured alone; the helper's documents stamped
by its own reads; a helper that cannot start leaves every node to this process."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from index_factory import build_clustered_index, hierarchy

from ecpfs_viewer.model.ecpfs import node_measure
from ecpfs_viewer.model.ecpfs.leaf_stats_cache import read_leaf_stats, saved_leaf_stats
from ecpfs_viewer.model.ecpfs.levels import LevelStats, level_stats
from ecpfs_viewer.model.ecpfs.summary import summarize
from ecpfs_viewer.model.storage import far_end
from ecpfs_viewer.model.storage.far_end import FarEnd

BATCH = 8


@pytest.fixture
def index(tmp_path: Path) -> Path:
    return build_clustered_index(tmp_path, 3000, 8)


@pytest.fixture
def helpers(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[FarEnd]]:
    """Helpers for any level of 16 nodes or more (on any machine), each started one kept."""
    started: list[FarEnd] = []

    class Kept(FarEnd):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            started.append(self)

    monkeypatch.setattr(node_measure, "HELPER_MIN_NODES", 16)
    monkeypatch.setattr(node_measure, "HELPER_BATCH_NODES", BATCH)
    monkeypatch.setattr(node_measure, "FarEnd", Kept)
    monkeypatch.setattr(far_end, "helper_possible", lambda: True)
    yield started


def _measured_here(monkeypatch: pytest.MonkeyPatch, started: list[FarEnd],
                   before: Callable[[], None] = lambda: None) -> list[int]:
    """The nodes this process measures, counted; its first batch waits until the last helper started
    is done (then ``before`` runs), so the helper measures every other node."""
    counted: list[int] = []
    read = node_measure.read_node_arrays

    def counting(h: Any, nodes: list[Any], *args: Any) -> None:
        if not counted and started:
            deadline = time.monotonic() + 60
            while started[-1].running():
                assert time.monotonic() < deadline, "the helper did not finish"
                time.sleep(0.01)
            before()
        counted.append(len(nodes))
        read(h, nodes, *args)

    monkeypatch.setattr(node_measure, "read_node_arrays", counting)
    return counted


def _damage(index: Path, leaves: list[int]) -> None:
    """Defects in the far half of the leaf level: a broken embeddings document, a missing item_ids
    array, an empty node group."""
    lvl = index / "lvl_2"
    (lvl / f"node_{leaves[-1]}" / "embeddings" / "zarr.json").write_text("{not json")
    for name in ("zarr.json", "c/0"):
        (lvl / f"node_{leaves[-5]}" / "item_ids" / name).unlink()
    (lvl / f"node_{leaves[-5]}" / "item_ids" / "c").rmdir()
    (lvl / f"node_{leaves[-5]}" / "item_ids").rmdir()
    empty = lvl / f"node_{leaves[-9]}"
    for document in sorted(empty.rglob("*"), key=lambda p: -len(p.parts)):
        if document.is_file():
            document.unlink()
        elif document != empty:
            document.rmdir()
    (empty / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))


def _same(a: LevelStats, b: LevelStats) -> None:
    assert a.node_ids.tolist() == b.node_ids.tolist() and a.sizes.tolist() == b.sizes.tolist()
    for field in fields(LevelStats):
        if field.name not in ("node_ids", "sizes", "seconds"):
            assert getattr(a, field.name) == getattr(b, field.name), field.name


def test_a_level_measured_with_a_helper_is_the_level_measured_alone(
        index: Path, helpers: list[FarEnd], monkeypatch: pytest.MonkeyPatch) -> None:
    leaves = sorted(int(p.name[5:]) for p in (index / "lvl_2").iterdir() if p.name.startswith("node_"))
    _damage(index, leaves)
    monkeypatch.setattr(node_measure, "HELPER_MIN_NODES", 10**9)
    alone = level_stats(hierarchy(index), 2)
    monkeypatch.setattr(node_measure, "HELPER_MIN_NODES", 16)
    assert len(alone.findings) >= 2 and alone.empty_nodes and alone.broken_ids  # the defects are seen
    counted = _measured_here(monkeypatch, helpers)
    helped = level_stats(hierarchy(index), 2)
    assert len(helpers) == 1 and helpers[0].failure is None
    assert sum(counted) == len(leaves) % BATCH or sum(counted) == BATCH  # the first batch; the helper the rest
    _same(helped, alone)


def test_documents_the_helper_read_are_stamped_before_its_reads(
        index: Path, helpers: list[FarEnd], monkeypatch: pytest.MonkeyPatch) -> None:
    leaves = sorted(int(p.name[5:]) for p in (index / "lvl_2").iterdir() if p.name.startswith("node_"))
    last = index / "lvl_2" / f"node_{leaves[-1]}" / "embeddings" / "zarr.json"

    def rewrite_after_the_helper_read_it() -> None:
        last.write_bytes(last.read_bytes())
        later = os.stat(last).st_mtime_ns + 10**9
        os.utime(last, ns=(later, later))

    counted = _measured_here(monkeypatch, helpers, rewrite_after_the_helper_read_it)
    h = hierarchy(index)
    summary = summarize(h)
    read_leaf_stats(h, summary)
    assert counted and helpers[0].failure is None
    # the helper's stamp of the document is older than the document now: the entry is not answered
    assert saved_leaf_stats(hierarchy(index), summarize(hierarchy(index))) is None
    read_leaf_stats(hierarchy(index), summary)  # read again (this time the helper waits on nothing new)
    assert saved_leaf_stats(hierarchy(index), summarize(hierarchy(index))) is not None


def test_a_helper_that_cannot_start_leaves_every_node_here(
        index: Path, helpers: list[FarEnd], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(node_measure, "HELPER_MIN_NODES", 10**9)
    alone = level_stats(hierarchy(index), 2)
    monkeypatch.setattr(node_measure, "HELPER_MIN_NODES", 16)
    monkeypatch.setattr(far_end.sys, "executable", str(tmp_path / "no-python"))
    helped = level_stats(hierarchy(index), 2)
    assert len(helpers) == 1 and helpers[0].failure is not None and "could not start" in helpers[0].failure
    _same(helped, alone)


def test_a_helper_started_on_the_folder_is_used_only_when_the_level_lists_the_same_nodes(
        index: Path, helpers: list[FarEnd], monkeypatch: pytest.MonkeyPatch) -> None:
    """The helper starts on the level's folder as the file system lists it; a folder named like a
    node that holds an array document is no node of the level: that helper is stopped and another
    measures the level's nodes as they are."""
    stray = index / "lvl_2" / "node_900000"
    stray.mkdir()
    (stray / "zarr.json").write_text(json.dumps({
        "zarr_format": 3, "node_type": "array", "shape": [1], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}))
    monkeypatch.setattr(node_measure, "HELPER_MIN_NODES", 10**9)
    alone = level_stats(hierarchy(index), 2)
    monkeypatch.setattr(node_measure, "HELPER_MIN_NODES", 16)
    assert "node_900000" in alone.other_entries
    counted = _measured_here(monkeypatch, helpers)
    helped = level_stats(hierarchy(index), 2)
    assert counted and sum(counted) < len(alone.node_ids)  # the level's helper measured the rest
    assert len(helpers) == 2 and not helpers[0].running()  # the folder's, stopped; the level's
    _same(helped, alone)
