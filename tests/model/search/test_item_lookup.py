"""A later `locate` reads the memory-mapped item map of the cache folder: a present item is
checked against its own leaf's documents only, an absent one against every leaf's, and nothing
is answered from it once a document it depends on changed (a leaf's item_ids rewritten in place,
two leaves swapped, a leaf added): the reader then answers as it finds the index."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import zarr
from index_factory import build_clustered_index

from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.search.item_lookup import MappedLookup, lookup_parts
from ecpfs_viewer.model.search.item_map import ItemMap
from ecpfs_viewer.model.search.results import UnknownItemError
from ecpfs_viewer.model.search.saved_locate import ITEM_MAP, saved_location
from ecpfs_viewer.model.storage import stamps
from ecpfs_viewer.model.storage.disk_cache import STORES, cache_root
from ecpfs_viewer.model.storage.stamps import ALWAYS, Stamps

ABSENT = 10**6


@pytest.fixture
def index(tmp_path: Path) -> Path:
    found = build_clustered_index(tmp_path, 3000, 8)
    reader = IndexReader(found)
    with pytest.raises(UnknownItemError):
        reader.locate(ABSENT)  # every leaf read: the map saved
    reader.locate(7)  # the parent links saved
    return found


def _leaf_folder(index: Path, leaf: int) -> Path:
    levels = IndexReader(index).levels
    return index / f"lvl_{levels}" / f"node_{leaf}"


def test_present_and_absent_are_answered_from_the_map(index: Path) -> None:
    found = saved_location(str(index), 7)
    assert found is not None and found == IndexReader(index).locate(7)
    with pytest.raises(UnknownItemError):
        saved_location(str(index), ABSENT)


def test_a_present_item_depends_on_its_own_leaf_only(index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reader = IndexReader(index)
    seven = reader.locate(7)
    first = reader.leaf_ids()[0]  # whose item_ids type the saved id range came from
    other = next(i for i in range(3000) if reader.locate(i).leaf not in (seven.leaf, first))
    chunk = next(p for p in (_leaf_folder(index, reader.locate(other).leaf) / "item_ids").rglob("*")
                 if p.is_file() and p.name != "zarr.json")
    with open(chunk, "r+b") as handle:  # rewritten in place, the same bytes: its stamp changed
        data = handle.read()
        handle.seek(0)
        handle.write(data)
    assert saved_location(str(index), 7) == seven  # another leaf changed: 7's answer stands
    assert saved_location(str(index), other) is None  # its own leaf changed
    monkeypatch.setattr(stamps, "PARALLEL_STATS", 1)  # every leaf statted by several threads,
    monkeypatch.setattr(stamps, "STAT_COLD_SECONDS", 0.0)  # as on a cold disk
    assert saved_location(str(index), ABSENT) is None  # any leaf may hold it now


def test_an_id_written_into_a_leaf_in_place_is_found(index: Path) -> None:
    seven = IndexReader(index).locate(7)
    ids = zarr.open_array(str(_leaf_folder(index, seven.leaf) / "item_ids"), mode="r+")
    ids[seven.row] = ABSENT - 1  # the leaf's item_ids rewritten in place: 7 gone, ABSENT - 1 there
    assert saved_location(str(index), ABSENT - 1) is None
    assert saved_location(str(index), 7) is None
    assert IndexReader(index).locate(ABSENT - 1).leaf == seven.leaf
    with pytest.raises(UnknownItemError):
        IndexReader(index).locate(7)


def test_two_leaves_swapped_are_not_answered_for(index: Path) -> None:
    seven = IndexReader(index).locate(7)
    a = _leaf_folder(index, seven.leaf)
    b = next(p for p in sorted(a.parent.glob("node_*")) if p != a)
    held = int(np.asarray(zarr.open_array(str(b / "item_ids"), mode="r")[0]))
    spare = a.parent / "swapping"
    os.rename(a, spare)
    os.rename(b, a)
    os.rename(spare, b)
    assert saved_location(str(index), 7) is None
    assert IndexReader(index).locate(7).leaf == int(b.name[5:])
    assert IndexReader(index).locate(held).leaf == seven.leaf


def test_a_leaf_added_is_not_answered_for(index: Path) -> None:
    seven = IndexReader(index).locate(7)
    leaf = _leaf_folder(index, seven.leaf)
    last = max(int(p.name[5:]) for p in leaf.parent.glob("node_*"))
    shutil.copytree(leaf, leaf.parent / f"node_{last + 1}")
    assert saved_location(str(index), 7) is None
    assert saved_location(str(index), ABSENT) is None


def test_a_file_that_is_not_a_lookup_is_not_opened(tmp_path: Path) -> None:
    item_map = ItemMap(np.arange(5, dtype=np.int64), np.zeros(5, np.int64), np.arange(5, dtype=np.int64))
    stamped = Stamps("local", ("b", "a"), np.asarray([3, ALWAYS], np.int64), np.ones((2, 5), np.int64))
    path = tmp_path / "lookup"
    path.write_bytes(b"".join(lookup_parts(item_map, stamped)))
    lookup = MappedLookup.open(path)
    assert lookup is not None and lookup.place(3) == (0, 3) and lookup.place(9) is None
    assert lookup.stamps().paths == ("a", "b")  # sorted by owner: a leaf's stamps are one run
    path.write_bytes(path.read_bytes()[:-1])  # cut short
    assert MappedLookup.open(path) is None
    path.write_bytes(b"ECPFSENT" + bytes(40))
    assert MappedLookup.open(path) is None


def test_an_earlier_versions_map_is_deleted_when_the_new_one_is_saved(index: Path) -> None:
    (saved,) = (cache_root() / STORES).glob(f"*/*.{ITEM_MAP}")
    earlier = saved.with_name(saved.name.replace(ITEM_MAP, "item_map.npz"))
    earlier.write_bytes(b"a map an earlier version kept")
    saved.unlink()
    with pytest.raises(UnknownItemError):
        IndexReader(index).locate(ABSENT)  # every leaf read again: the new map saved
    assert saved.exists() and not earlier.exists()


def test_the_map_is_written_from_its_own_memory(tmp_path: Path) -> None:
    """The file's parts are the map's arrays themselves, not copies joined in memory (at 10M items
    two transient copies of 300 MB each)."""
    ids = np.arange(10, 1010, dtype=np.int64)
    item_map = ItemMap(ids, np.repeat(np.arange(10, dtype=np.int64), 100), np.tile(np.arange(100, dtype=np.int64), 10))
    stamped = Stamps("local", ("lvl_1",), np.array([ALWAYS], np.int64), np.zeros((1, 5), np.int64))
    parts = lookup_parts(item_map, stamped)
    assert any(np.shares_memory(np.asarray(part), ids) for part in parts if isinstance(part, memoryview))
    path = tmp_path / "lookup"
    path.write_bytes(b"".join(parts))
    lookup = MappedLookup.open(path)
    assert lookup is not None and lookup.place(500) == (4, 90)


def test_a_first_locate_keeps_no_leaf_document(tmp_path: Path) -> None:
    """Reading every leaf's item_ids for the map leaves none of their documents in the hierarchy:
    memory that grew with the index for as long as it was open."""
    reader = IndexReader(build_clustered_index(tmp_path, 3000, 8))
    with pytest.raises(UnknownItemError):
        reader.locate(ABSENT)
    leaves = reader.leaf_ids()
    assert len(leaves) > 10
    held = [n for n in leaves if reader.hierarchy.held(f"lvl_{reader.levels}/node_{n}/item_ids") is not None]
    assert len(held) <= 1  # the first leaf's, read for the ids' type (uint32 or int64) before the pass
    assert reader.locate(7).leaf in leaves  # and a location still reads what it needs


@pytest.mark.parametrize("learn", [True, False])
def test_an_exact_search_keeps_no_leaf_document(tmp_path: Path, learn: bool) -> None:
    """An exact search reads every leaf: it keeps their item ids for the locator when it learns
    from scans, never their documents (an explain at 10M items held 200,000 of them)."""
    reader = IndexReader(build_clustered_index(tmp_path, 3000, 8))
    reader.learn_from_scans = learn
    query = np.zeros(reader.dim, np.float32)
    truth = reader.exact(query, 5)
    leaves = reader.leaf_ids()
    held = [n for n in leaves for name in ("embeddings", "item_ids")
            if reader.hierarchy.held(f"lvl_{reader.levels}/node_{n}/{name}") is not None]
    assert len(held) <= 2  # what opening the index read of the first leaf (its dim and type)
    assert reader.locator.complete is learn  # the item ids kept or not, as asked
    assert [h.item_id for h in truth.hits(0)] == [h.item_id for h in reader.exact(query, 5).hits(0)]


def _write(path: Path, parts: list) -> None:
    with open(path, "wb") as handle:  # as the cache folder writes an entry's parts
        for part in parts:
            part(handle) if callable(part) else handle.write(part)


@pytest.mark.parametrize("first_id", [0, 1 << 40])
def test_a_map_held_narrow_is_saved_and_loaded_narrow(tmp_path: Path, first_id: int) -> None:
    """In memory the map holds uint32 ids and int32 leaves and rows where they fit (12 bytes an
    item, not 24); the file keeps them so (at 10M items 275 MB as int64, 155 MB so), written from
    the map's own memory, and a copy is loaded."""
    ids = np.arange(first_id, first_id + 3000, dtype=np.uint32 if first_id == 0 else np.int64)
    held = ItemMap(ids, np.repeat(np.arange(30, dtype=np.int32), 100), np.tile(np.arange(100, dtype=np.int32), 30))
    stamped = Stamps("local", ("lvl_1",), np.array([ALWAYS], np.int64), np.zeros((1, 5), np.int64))
    path = tmp_path / "lookup"
    parts = lookup_parts(held, stamped)
    assert any(np.shares_memory(np.asarray(part), held.leaves) for part in parts if isinstance(part, memoryview))
    _write(path, parts)
    lookup = MappedLookup.open(path)
    assert lookup is not None and lookup.place(first_id + 2050) == (20, 50)
    assert (lookup.ids.dtype, lookup.leaves.dtype, lookup.rows.dtype) == (ids.dtype, np.int32, np.int32)
    assert lookup.place(-1) is None and lookup.place(1 << 63) is None  # no such id in either type
    loaded = lookup.item_map()
    assert loaded is not None and (loaded.leaves.dtype, loaded.rows.dtype) == (np.int32, np.int32)
    assert loaded.item_ids.dtype == (np.uint32 if first_id == 0 else np.int64)
    assert all(np.array_equal(getattr(loaded, f), getattr(held, f)) for f in ("item_ids", "leaves", "rows"))
    assert not any(np.shares_memory(a, lookup.ids) or np.shares_memory(a, lookup.leaves)
                   for a in (loaded.item_ids, loaded.leaves, loaded.rows))  # copies, not the file's pages


def test_a_map_in_another_type_is_kept_as_int64(tmp_path: Path) -> None:
    """Item ids of a type the file does not keep (uint64 here) are written as int64, a step at a time."""
    held = ItemMap(np.arange(5, 3005, dtype=np.uint64), np.repeat(np.arange(30, dtype=np.int32), 100),
                   np.tile(np.arange(100, dtype=np.int32), 30))
    stamped = Stamps("local", ("lvl_1",), np.array([ALWAYS], np.int64), np.zeros((1, 5), np.int64))
    path = tmp_path / "lookup"
    _write(path, lookup_parts(held, stamped))
    lookup = MappedLookup.open(path)
    assert lookup is not None and lookup.ids.dtype == np.int64 and lookup.place(2055) == (20, 50)


def test_a_file_of_the_first_layout_is_not_opened(tmp_path: Path) -> None:
    """Version 1 kept every array as int64 and named no types: such a file is made again, never
    read with this layout."""
    item_map = ItemMap(np.arange(5, dtype=np.int64), np.zeros(5, np.int64), np.arange(5, dtype=np.int64))
    stamped = Stamps("local", ("a",), np.asarray([ALWAYS], np.int64), np.ones((1, 5), np.int64))
    path = tmp_path / "lookup"
    _write(path, lookup_parts(item_map, stamped))
    assert MappedLookup.open(path) is not None
    data = bytearray(path.read_bytes())
    data[8:12] = (1).to_bytes(4, "little")  # the version field
    path.write_bytes(bytes(data))
    assert MappedLookup.open(path) is None
