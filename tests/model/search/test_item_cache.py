"""The item map kept in the cache folder: the next reader locates without reading a leaf, never
after the index changed, and a damaged entry is ignored."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pytest
import zarr
from file_events import stats_and_reads
from index_factory import build_clustered_index

from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.search.item_cache import ITEM_MAP
from ecpfs_viewer.model.search.item_lookup import MappedLookup
from ecpfs_viewer.model.search.item_map import ItemMap
from ecpfs_viewer.model.search.results import ItemIdRangeError, UnknownItemError
from ecpfs_viewer.model.storage.disk_cache import STORES, cache_root, cache_usage


@pytest.fixture
def index(tmp_path: Path) -> Path:
    return build_clustered_index(tmp_path, 3000, 8)


def _absent_then_present(path: Path) -> tuple[IndexReader, int]:
    """A fresh reader that looked for an absent item, then item 7; the requests that took."""
    reader = IndexReader(path)
    before = reader.store.stats().requests
    with pytest.raises(UnknownItemError):
        reader.locate(10**6)
    location = reader.locate(7)
    assert location.item_id == 7 and location.complete
    return reader, reader.store.stats().requests - before


def _saved_entries(reader: IndexReader) -> int:
    """The item map, the facts a location needs and the child -> parent links of every level below lvl_1."""
    return 2 + reader.levels - 1


def test_the_next_reader_locates_from_the_saved_map_without_reading_a_leaf(index: Path) -> None:
    first, read_first = _absent_then_present(index)
    leaves = len(first.leaf_ids())
    internal = sum(len(first.level_node_ids(level)) for level in range(1, first.levels))
    assert first.levels >= 2 and read_first >= leaves + internal  # every item_ids and node_ids read once
    assert cache_usage().files == _saved_entries(first)
    second, read_second = _absent_then_present(index)
    # one leaf's item_ids metadata (its id range) and the index's own: fewer requests than the
    # node_ids arrays alone would take, and no leaf's item_ids
    assert read_second < internal, (read_first, read_second, leaves, internal)
    assert second.locate(7) == first.locate(7)
    for item in (0, 1234, 2999):
        assert second.locate(item) == first.locate(item)


def test_the_next_reader_misses_an_absent_item_without_listing_the_leaves(index: Path) -> None:
    _absent_then_present(index)
    reader = IndexReader(index)
    before = reader.store.stats().requests
    with pytest.raises(UnknownItemError):
        reader.locate(10**6)  # its item_ids type says it could be there, the saved map that it is not
    # info/levels read again to fingerprint the index and one leaf's item_ids metadata (the id range):
    # no listing of the leaf level
    assert reader.store.stats().requests - before <= 2
    assert reader.store.stats().listings == 0
    with pytest.raises(ItemIdRangeError, match="stored as uint32"):
        reader.locate(-1)


def test_a_changed_index_does_not_use_the_map_saved_before(index: Path) -> None:
    _absent_then_present(index)
    zarr.open_array(str(index / "info" / "total_items"), mode="r+")[()] = 3001
    value = index / "info" / "total_items" / "c"
    later = os.stat(value).st_mtime_ns + 10**9
    os.utime(value, ns=(later, later))
    reader, read = _absent_then_present(index)
    assert read >= len(reader.leaf_ids())  # read again from the leaves
    assert cache_usage().files == _saved_entries(reader)  # the old entries deleted, the new ones saved


def test_a_damaged_saved_map_is_ignored(index: Path) -> None:
    _absent_then_present(index)
    (saved,) = (cache_root() / STORES).glob(f"*/*.{ITEM_MAP}")
    saved.write_bytes(b"not an npz")
    reader, read = _absent_then_present(index)
    assert read >= len(reader.leaf_ids())
    lookup = MappedLookup.open(saved)
    kept = None if lookup is None else lookup.item_map()
    assert kept is not None and kept.item_ids.size == 3000  # saved again, whole


def test_a_saved_map_must_be_sorted_int64_vectors_of_one_length() -> None:
    ok = ItemMap(np.arange(3, dtype=np.int64), np.zeros(3, np.int64), np.arange(3, dtype=np.int64))
    back = ItemMap.from_bytes(ok.to_bytes())
    assert all(np.array_equal(getattr(back, f), getattr(ok, f)) for f in ("item_ids", "leaves", "rows"))
    for bad in (ItemMap(np.array([2, 1]), np.zeros(2, np.int64), np.zeros(2, np.int64)),
                ItemMap(np.arange(3), np.zeros(2, np.int64), np.zeros(3, np.int64))):
        with pytest.raises(ValueError):
            ItemMap.from_bytes(bad.to_bytes())
    narrow = io.BytesIO()  # a file of narrower types than the format's int64 (held narrow, saved int64)
    np.savez(narrow, item_ids=np.arange(2, dtype=np.int32), leaves=np.zeros(2, np.int64), rows=np.zeros(2, np.int64))
    with pytest.raises(ValueError):
        ItemMap.from_bytes(narrow.getvalue())


def test_a_first_locate_stamps_each_leaf_file_once_right_before_reading_it(index: Path, monkeypatch) -> None:
    """Stamping a batch of 500 leaves' files and reading them afterwards walked each path twice,
    the second time cold (model/storage/read_stamps.py): each is statted right before its read."""
    events = stats_and_reads(monkeypatch)
    reader = IndexReader(index)
    leaves = reader.leaf_ids()
    with pytest.raises(UnknownItemError):
        reader.locate(10**6)
    assert len(list((cache_root() / STORES).glob(f"*/*.{ITEM_MAP}"))) == 1  # the map kept with its stamps
    leaf_files = {os.path.join(str(index), "lvl_2", f"node_{leaf}", "item_ids", name)
                  for leaf in leaves for name in ("zarr.json", os.path.join("c", "0"))}
    stats = [at for at, (what, path) in enumerate(events) if path in leaf_files and what != "read"]
    assert len(stats) == len(leaf_files) and {events[at][1] for at in stats} == leaf_files  # each once
    followed = [at for at in stats if at + 1 < len(events) and events[at + 1] == ("read", events[at][1])]
    assert all(events[at][0] == "stat" for at in followed)  # statted by the read itself
    unread = [events[at][1] for at in stats if at not in followed]
    # the one document not read again: the first leaf's item_ids metadata, held since it gave the id range
    assert unread == [os.path.join(str(index), "lvl_2", f"node_{leaves[0]}", "item_ids", "zarr.json")]
