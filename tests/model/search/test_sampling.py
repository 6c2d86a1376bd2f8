"""Sampling items and the exact search of a recall run hold nothing per item or per leaf: the same
draw as from the item map, and memory that does not grow with the index."""

from __future__ import annotations

import gc
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.ecpfs import metadata as metadata_module
from ecpfs_viewer.model.search import IndexReader, leaf_helper, sample_items
from ecpfs_viewer.model.search import exact as exact_module
from ecpfs_viewer.model.search import sampling as sampling_module
from ecpfs_viewer.model.storage import far_end
from ecpfs_viewer.model.zarrtree import documents as documents_module

DIM = 8


def _index(tmp: Path, items: int) -> Path:
    data = np.random.default_rng(items).normal(size=(items, DIM)).astype(np.float32)
    np.save(tmp / f"d{items}.npy", data)
    out = tmp / f"i{items}.zarr"
    build_index(tmp / f"d{items}.npy", out, BuildParams(levels=2, target_cluster_items=40))
    return out


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same kind of index at N and 4N items."""
    tmp = tmp_path_factory.mktemp("sampling")
    return _index(tmp, 2000), _index(tmp, 8000)


def _from_item_map(index: Path, n: int, seed: int) -> tuple[list[int], np.ndarray]:
    """The draw as sample_items made it before: ranks among every distinct id of the item map."""
    reader = IndexReader(index)
    ids = reader.locator.all_item_ids()
    chosen = np.sort(ids[np.random.default_rng(seed).choice(len(ids), size=n, replace=False)])
    return chosen.tolist(), reader.vectors_for_items(chosen.tolist())


def test_the_one_pass_draws_the_items_the_item_map_draws(indexes: tuple[Path, Path]) -> None:
    small, _ = indexes
    reader = IndexReader(small)
    drawn = sample_items(reader, 40, seed=3)
    ids, vectors = _from_item_map(small, 40, 3)
    assert list(drawn.self_ids) == ids
    np.testing.assert_array_equal(drawn.vectors, vectors)
    assert not reader.locator.complete  # no item map was made


def test_a_declared_count_that_is_wrong_falls_back_to_the_item_map(indexes: tuple[Path, Path],
                                                                   tmp_path: Path) -> None:
    """info/total_items is only a guess: ids that are not 0..N-1 for it give the item map's draw."""
    import shutil

    copy = tmp_path / "copy.zarr"
    shutil.copytree(indexes[0], copy)
    zarr.open_array(str(copy / "info" / "total_items"), mode="r+")[...] = 2100  # 100 more than stored
    reader = IndexReader(copy)
    assert sampling_module.dense_sample(reader, 40, 3, _reporter()) is None
    drawn = sample_items(reader, 40, seed=3)
    ids, vectors = _from_item_map(copy, 40, 3)
    assert list(drawn.self_ids) == ids
    np.testing.assert_array_equal(drawn.vectors, vectors)


def _reporter():  # type: ignore[no-untyped-def]
    from ecpfs_viewer.model.search.results import Reporter

    return Reporter(None, None)


def test_exact_search_of_a_recall_run_keeps_no_leaf_documents(indexes: tuple[Path, Path]) -> None:
    small, _ = indexes
    reader = IndexReader(small)
    reader.learn_from_scans = False
    queries = sample_items(reader, 10, seed=1)
    truth = reader.exact(queries.vectors, 5, self_ids=list(queries.self_ids))
    held = [p for p in reader.hierarchy.loaded_paths() if p.startswith(f"lvl_{reader.levels}/")]
    sampled_leaves = {f"lvl_{reader.levels}/node_{leaf}" for leaf in truth.leaves.reshape(-1).tolist()}
    assert len(held) <= 3 * 10  # the sampled items' leaves (node, embeddings, item_ids), not every leaf
    assert len(reader.level_node_ids(reader.levels)) * 2 > len(held)
    assert not reader.locator.complete and sampled_leaves


def _peak_bytes(index: Path) -> tuple[int, int]:
    """Traced memory held after, and at the peak of, sampling 20 items and their exact neighbours,
    beyond the opened reader."""
    reader = IndexReader(index)
    reader.learn_from_scans = False
    reader.preload_internal()
    # the process-wide memos of parsed documents are bounded and shared by every index a process
    # reads: emptied, so what the tests before this one left there does not count for either size
    metadata_module._parsed.clear()
    documents_module._KIND_OF_DOCUMENT.clear()
    gc.collect()
    tracemalloc.start()
    try:
        queries = sample_items(reader, 20, seed=0)
        reader.exact(queries.vectors, 10, self_ids=list(queries.self_ids))
        return tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()


def test_recall_memory_does_not_grow_with_the_items(indexes: tuple[Path, Path],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """At N and 4N items a recall run's sample and exact search take about the same memory (the
    ids a sampling pass may keep for the exact search are bounded; here they are not kept)."""
    monkeypatch.setattr(sampling_module, "HELD_IDS_BYTES", 0)
    monkeypatch.setattr(sampling_module, "LEAF_BATCH", 8)  # many batches and blocks at both sizes:
    monkeypatch.setattr(exact_module, "MAX_BLOCK_LEAVES", 4)  # what is in flight is then the same
    # and one block at a time: a large chunk decodes to a new object of its size (512 KiB here, the
    # one-shot zstd path), and how many threads hold one at the peak's moment was timing
    monkeypatch.setattr(exact_module.os, "cpu_count", lambda: 1)
    small, large = indexes
    _peak_bytes(small)  # first use: imports and one-time tables
    (held_n, peak_n), (held_4n, peak_4n) = _peak_bytes(small), _peak_bytes(large)
    # 6,000 more items (150 more leaves): an item map holds 24 bytes an item and more, a document
    # kept per leaf some 800 bytes; one parsed plan per distinct leaf shape is kept (about 148 KB
    # here, and a little more in a pytest-xdist worker: the bound is 200 KB; an item map adds 312 KB)
    assert held_4n - held_n < 200_000, (held_n, held_4n)
    assert peak_4n - peak_n < 300_000, (peak_n, peak_4n)


def test_sampling_keeps_the_leaf_ids_for_the_exact_search(indexes: tuple[Path, Path]) -> None:
    small, _ = indexes
    reader = IndexReader(small)
    reader.learn_from_scans = False
    queries = sample_items(reader, 10, seed=2)
    before = reader.store.stats().requests
    reader.exact(queries.vectors, 5, self_ids=list(queries.self_ids))
    leaves = len(reader.leaf_ids())
    # embeddings only: a document and a chunk per leaf, not the item_ids' two as well
    assert reader.store.stats().requests - before <= 2 * leaves


@pytest.fixture
def helped(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Batches of 4 leaves and a helper for any pass of 8 leaves or more (on any machine); the
    helpers the sampling pass started, and the leaves each read here took (this process waits,
    before its first read, until the helper has sent three batches or stopped)."""
    monkeypatch.setattr(sampling_module, "LEAF_BATCH", 4)
    monkeypatch.setattr(leaf_helper, "HELPER_MIN_LEAVES", 8)
    monkeypatch.setattr(far_end, "helper_possible", lambda: True)
    started: list[Any] = []
    read_here: list[int] = []
    real_read = sampling_module._read

    def start(store: Any, levels: int, leaves: list[int], first: int, step: int) -> Any:
        helper = leaf_helper.start_helper(store, levels, leaves, first, step)
        started.append((helper, len(leaves)))
        return helper

    def read(index: Any, part: list[int], reporter: Any) -> Any:
        helper, count = started[-1]
        deadline = time.monotonic() + 60
        while helper is not None and helper.running() and helper.low() > count - 3 * 4:
            assert time.monotonic() < deadline, "still waiting for the helper's batches"
            time.sleep(0.01)
        read_here.extend(part)
        return real_read(index, part, reporter)

    monkeypatch.setattr(sampling_module, "start_helper", start)
    monkeypatch.setattr(sampling_module, "_read", read)
    return [started, read_here]


def test_a_helper_reads_the_far_end_of_the_sampling_pass(indexes: tuple[Path, Path], helped: list[Any]) -> None:
    small, _ = indexes
    started, read_here = helped
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(leaf_helper, "HELPER_MIN_LEAVES", 10**9)
        alone = sampling_module.dense_sample(IndexReader(small), 40, 3, _reporter())
    assert started == [(None, 50)]
    started.clear()
    read_here.clear()
    reader = IndexReader(small)
    shared = sampling_module.dense_sample(reader, 40, 3, _reporter())
    assert alone is not None and shared is not None and alone.leaf_order is not None
    for field in ("items", "leaves", "rows"):
        np.testing.assert_array_equal(getattr(shared, field), getattr(alone, field))
    assert shared.leaf_order is not None
    for mine, theirs in zip(shared.leaf_order, alone.leaf_order, strict=True):
        np.testing.assert_array_equal(mine, theirs)
    helper, count = started[0]
    assert len(read_here) <= count - 3 * 4  # fails when the helper's batches are not taken
    assert not helper.running()


def test_a_sampling_pass_left_early_stops_its_helper(indexes: tuple[Path, Path], helped: list[Any],
                                                     tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "copy.zarr"
    shutil.copytree(indexes[0], copy)
    zarr.open_array(str(copy / "info" / "total_items"), mode="r+")[...] = 100  # ids past it in the first batch
    assert sampling_module.dense_sample(IndexReader(copy), 40, 3, _reporter()) is None
    started, read_here = helped
    helper, _ = started[0]
    assert read_here and not helper.running()  # fails when the helper runs on after the pass


def test_an_id_stored_twice_in_one_batch_falls_back_to_the_item_map(indexes: tuple[Path, Path],
                                                                     tmp_path: Path) -> None:
    """As many ids as declared, all in 0..N-1, but one twice (and so one missing) in the same
    batch: ranks are not ids, and the draw is the item map's."""
    import shutil

    copy = tmp_path / "copy.zarr"
    shutil.copytree(indexes[0], copy)
    reader = IndexReader(copy)
    first = reader.leaf_ids()[0]
    ids = zarr.open_array(str(copy / f"lvl_{reader.levels}" / f"node_{first}" / "item_ids"), mode="r+")
    stored = ids[...]
    stored[1] = stored[0]
    ids[...] = stored
    assert sampling_module.dense_sample(IndexReader(copy), 40, 3, _reporter()) is None  # fails without the count
    drawn = sample_items(IndexReader(copy), 40, seed=3)
    chosen, vectors = _from_item_map(copy, 40, 3)
    assert list(drawn.self_ids) == chosen
    np.testing.assert_array_equal(drawn.vectors, vectors)
