"""The item map: one pass over the leaves' item_ids, answers as batches arrive, saved and loaded as bytes."""

from __future__ import annotations

import shutil
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import zarr

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.search import IndexReader, UnknownItemError
from ecpfs_viewer.model.search import item_map as item_map_module
from ecpfs_viewer.model.search import locate as locate_module
from ecpfs_viewer.model.search.item_map import ItemMap, _placed_by_value, _Run, stable_order
from ecpfs_viewer.model.search.locate import ItemLocator


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("locate")
    rng = np.random.default_rng(2)
    np.save(tmp / "d.npy", rng.standard_normal((900, 4)).astype(np.float32))
    build_index(tmp / "d.npy", tmp / "i.zarr", BuildParams(levels=2, target_cluster_items=10))
    return tmp / "i.zarr"


def _truth(reader: IndexReader) -> dict[int, tuple[int, int]]:
    where: dict[int, tuple[int, int]] = {}
    for leaf in reader.leaf_ids():
        for row, item in enumerate(reader.node(reader.levels, leaf).ids.tolist()):
            where.setdefault(item, (leaf, row))
    return where


def test_batches_answer_like_the_leaves_and_merge_into_one_map(index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locate_module, "LEAF_BATCH", 7)  # many batches
    reader = IndexReader(index)
    truth = _truth(reader)
    locator = ItemLocator(reader)
    first = next(iter(truth))
    assert locator.find([first]) == {first: truth[first]}
    assert not locator.complete and locator.complete_map() is None
    with pytest.raises(UnknownItemError):
        locator.find_one(10_000)  # absent: reads every leaf
    whole = locator.complete_map()
    assert locator.complete and whole is not None and len(whole) == 900
    assert locator.find(range(900)) == truth
    assert (np.diff(whole.item_ids) >= 0).all()
    assert locator.all_item_ids().tolist() == list(range(900))


def test_a_given_map_answers_without_reading_a_leaf(index: Path) -> None:
    reader = IndexReader(index)
    first = ItemLocator(reader, provenance=reader.cache)
    saved, stamps = first.read_everything(), first.stamps()
    assert saved is not None and stamps is not None
    fresh = IndexReader(index)
    locator = ItemLocator(fresh, ItemMap.from_bytes(saved.to_bytes()), None, stamps, fresh.cache)
    assert locator.complete
    reads = fresh.store.stats().requests
    assert locator.find([5, 6, 10_000]) == {5: _truth(reader)[5], 6: _truth(reader)[6]}
    assert fresh.store.stats().requests - reads <= 2  # the id range: one listing, one document; no item_ids


def test_duplicated_ids_answer_with_the_first_leaf() -> None:
    leaves = [4, 9, 12]
    ids = [np.array([7, 3]), np.array([3, 8]), np.array([7])]
    merged = ItemMap.merged([ItemMap.of_leaves(leaves[:1], ids[:1]), ItemMap.of_leaves(leaves[1:], ids[1:])])
    assert merged.item_ids.tolist() == [3, 3, 7, 7, 8]
    assert merged.leaves.tolist() == [4, 9, 4, 12, 9]
    assert merged.lookup(np.array([3, 7, 8, 5])) == {3: (4, 1), 7: (4, 0), 8: (9, 1)}
    assert merged.unique_ids().tolist() == [3, 7, 8]


def test_a_duplicated_id_in_one_batch_answers_with_its_first_leaf(index: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    copy = Path(shutil.copytree(index, tmp_path / "dup.zarr"))
    reader = IndexReader(copy)
    leaves = reader.leaf_ids()
    twice = int(reader.node(reader.levels, leaves[0]).ids[1])
    zarr.open_array(copy / f"lvl_{reader.levels}/node_{leaves[-1]}/item_ids", mode="r+")[0] = twice
    monkeypatch.setattr(locate_module, "LEAF_BATCH", 10_000)  # every leaf in one batch
    locator = ItemLocator(IndexReader(copy))
    assert locator.find([twice, 10_000]) == {twice: (leaves[0], 1)}
    whole = locator.complete_map()
    assert whole is not None and whole.lookup(np.array([twice])) == {twice: (leaves[0], 1)}


@pytest.mark.parametrize("step", [1 << 18, 777])  # the placing by value a step at a time
def test_stable_order_sorts_like_the_stable_sort(step: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(item_map_module, "_STEP", step)
    rng = np.random.default_rng(5)
    dense = rng.permutation(5000).astype(np.int64)  # placed by value, no sort
    gaps = rng.choice(9000, 5000, replace=False).astype(np.int64) - 4500  # negative ids, some gaps
    repeated = dense.copy()
    repeated[4000] = repeated[17]
    wide = rng.choice(1 << 40, 5000, replace=False).astype(np.int64)
    extremes = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, *range(2000)], np.int64)
    for keys in (rng.permutation(1000), rng.integers(0, 50, 1000), np.array([], np.int64), np.array([3]),
                 dense, gaps, repeated, wide, extremes, dense.astype(np.uint32), (gaps + 4500).astype(np.uint32),
                 repeated.astype(np.uint32), np.array([0xFFFFFFFF, *range(2000)], np.uint32)):
        order, ranked = stable_order(keys)
        assert order.tolist() == np.argsort(keys, kind="stable").tolist()
        assert ranked.tolist() == np.sort(keys).tolist()
        assert ranked.dtype == keys.dtype
    assert _placed_by_value(dense) is not None and _placed_by_value(gaps) is not None  # no sort
    assert _placed_by_value(repeated) is None and _placed_by_value(wide) is None  # sorted


def test_the_batches_read_are_let_go_and_their_pages_returned_before_the_map_is_sorted(
        index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The batches as read are small arrays in the allocator's heap: let go, their pages stay the
    process's until returned (a first locate at 10M: 426 MB at the peak before, 386 MB after;
    an explain 512 MB before, 409 MB after)."""
    from ecpfs_viewer import process_memory

    events: list[object] = []
    returned, sort = process_memory.return_freed_memory, _Run.sorted
    monkeypatch.setattr(process_memory, "return_freed_memory", lambda: events.append("returned") or returned())
    monkeypatch.setattr(_Run, "sorted", lambda run: events.append(("sorted", len(locator._batches))) or sort(run))
    monkeypatch.setattr(locate_module, "LEAF_BATCH", 3)  # several batches
    locator = ItemLocator(IndexReader(index))
    whole = locator.read_everything()
    assert events == ["returned", ("sorted", 0)] and whole is not None and len(whole) == len(_truth(IndexReader(index)))


def test_a_map_holds_the_leaves_types_and_answers_any_wanted_id() -> None:
    leaves = [3, (1 << 31) + 5]  # a leaf number past int32: that map's leaves stay int64
    ids = [np.array([9, 0xFFFFFFFF], np.uint32), np.array([4], np.uint32)]
    narrow = ItemMap.of_leaves(leaves[:1], ids[:1])
    assert (narrow.item_ids.dtype, narrow.leaves.dtype, narrow.rows.dtype) == (np.uint32, np.int32, np.int32)
    wide = ItemMap.of_leaves(leaves, ids)
    assert wide.leaves.dtype == np.int64 and wide.leaves.tolist() == [leaves[1], 3, 3]
    wanted = np.array([-1, 4, 9, 0xFFFFFFFF, 1 << 32], np.int64)  # two no uint32 can be: not held, no error
    assert wide.lookup(wanted) == {4: (leaves[1], 0), 9: (3, 0), 0xFFFFFFFF: (3, 1)}
    mixed = ItemMap.of_leaves(leaves, [ids[0], np.array([-4], np.int64)])  # a leaf of signed ids: all int64
    assert mixed.item_ids.dtype == np.int64 and mixed.lookup(np.array([-4, 9])) == {-4: (leaves[1], 0), 9: (3, 0)}
    assert wide.unique_ids().dtype == np.int64


def test_a_map_of_the_spec_types_is_held_in_12_bytes_an_item_and_sorted_in_under_20() -> None:
    """The map is most of a first locate's memory at 10,000,000 items (it held 24 bytes an item
    and sorting it took 40)."""
    count, size = 40_000, 50
    ids = np.random.default_rng(2).permutation(count * size).astype(np.uint32)
    run = _Run.of_leaves(list(range(count)), [ids[i * size:(i + 1) * size] for i in range(count)])
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        whole = run.sorted()
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (held - base) / len(ids) <= 12.1 and (peak - base) / len(ids) <= 20
    assert whole.lookup(np.array([int(ids[777])])) == {int(ids[777]): (777 // size, 777 % size)}


@pytest.mark.parametrize("bad", [
    b"", b"not a zip", np.array([1, 2]).tobytes(),
])
def test_from_bytes_refuses_what_is_not_a_map(bad: bytes) -> None:
    with pytest.raises(ValueError, match="not an item map"):
        ItemMap.from_bytes(bad)


def test_from_bytes_checks_types_lengths_and_order() -> None:
    good = ItemMap(np.array([1, 2], np.int64), np.array([0, 0], np.int64), np.array([0, 1], np.int64))
    back = ItemMap.from_bytes(good.to_bytes())
    assert [a.tolist() for a in (back.item_ids, back.leaves, back.rows)] == [[1, 2], [0, 0], [0, 1]]
    narrow = ItemMap(np.array([1, 2], np.uint32), np.array([0, 0], np.int32), np.array([0, 1], np.int32))
    assert [a.tolist() for a in vars(ItemMap.from_bytes(narrow.to_bytes())).values()] == [[1, 2], [0, 0], [0, 1]]
    for broken in (ItemMap(np.array([2, 1], np.int64), good.leaves, good.rows),
                   ItemMap(good.item_ids, np.array([0], np.int64), good.rows),
                   ItemMap(good.item_ids, good.leaves, np.array([0, -1], np.int64))):
        with pytest.raises(ValueError, match="not an item map"):
            ItemMap.from_bytes(broken.to_bytes())


def test_exact_search_completes_a_half_read_map(index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ecpfs_viewer.model.search import exact as exact_module

    monkeypatch.setattr(locate_module, "LEAF_BATCH", 7)
    monkeypatch.setattr(exact_module, "MAX_BLOCK_LEAVES", 5)  # blocks that straddle the batches read
    reader = IndexReader(index)
    truth = _truth(IndexReader(index))
    reader.locator.find([next(iter(truth))])  # one batch read
    assert not reader.locator.complete
    reader.exact(np.zeros((1, 4)), 3)
    whole = reader.locator.complete_map()
    assert whole is not None and len(whole) == 900
    reads = reader.store.stats().requests
    assert reader.locator.find(range(900)) == truth and reader.store.stats().requests == reads
