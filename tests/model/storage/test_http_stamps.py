"""An index on a plain web server (loopback ``http.server``, no folder listings) keeps its
per-index cache across processes, each entry stamped with the objects it was derived from as the
server answers them (validators and a hash of their bytes: model/ecpfs/http_stamps.py): a later
``locate`` asks for the internal levels' node_ids and the answering leaf instead of reading the
leaves, and two node folders swapped on the server (their files keeping their times and sizes)
are never answered from the cache. A server that sends no validators keeps nothing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import remote_fixtures
import zarr
from index_factory import build_clustered_index

from ecpfs_viewer.model.ecpfs.http_stamps import chunk_keys, object_row
from ecpfs_viewer.model.search import IndexReader, SearchParams
from ecpfs_viewer.model.search.locate import ItemLocation
from ecpfs_viewer.model.storage.disk_cache import cache_usage
from ecpfs_viewer.model.storage.opening import open_store

pytest.importorskip("obstore", reason="obstore is part of the remote extra")

#: One modification time for every file: Last-Modified then tells no file from another.
_SAME_TIME_NS = 1_700_000_000_000_000_000


@pytest.fixture(scope="module")
def clustered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of about 100 leaves in three levels (built once; each test serves its own copy)."""
    folder = tmp_path_factory.mktemp("clustered")
    build_clustered_index(folder, 2500, 8, levels=3)
    return folder / "idx.zarr"


@pytest.fixture
def site(clustered: Path, tmp_path: Path) -> Path:
    """A folder to serve holding a copy of the index, every file with the same modification time."""
    folder = tmp_path / "site"
    shutil.copytree(clustered, folder / "idx.zarr")
    for parent, _, files in os.walk(folder):
        for name in files:
            os.utime(os.path.join(parent, name), ns=(_SAME_TIME_NS, _SAME_TIME_NS))
    return folder


def _locate(url: str, item: int) -> ItemLocation:
    """locate as the CLI runs it in a fresh process: the answer, then the rest of the item map kept."""
    reader = IndexReader(open_store(url))
    try:
        return reader.locate(item)
    finally:
        reader.finish_item_map()
        reader.store.close()


def _search(url: str, item: int) -> list[tuple[int, float]]:
    """search --item as the CLI runs it in a fresh process."""
    reader = IndexReader(open_store(url))
    try:
        found = reader.search(reader.vector_for_item(item), SearchParams(k=10, search_exp=4))
        reader.finish_item_map()
        return [(int(i), round(float(d), 4)) for i, d in found.items]
    finally:
        reader.store.close()


def _item_below(index: Path, level: int, node: int) -> int:
    """The first item of the first leaf below a node (read from the local copy)."""
    reader = IndexReader(index)
    while level < reader.levels:
        node, level = int(reader.node(level, node).ids[0]), level + 1  # type: ignore[union-attr]
    return int(reader.node(level, node).ids[0])  # type: ignore[union-attr]


def _swap(index: Path, first: str, second: str) -> None:
    """Rename two node folders each to the other's name (their files keep their times and sizes)."""
    a, b = index / first, index / second
    aside = a.with_name("swapping")
    a.rename(aside)
    b.rename(a)
    aside.rename(b)


def test_a_later_locate_answers_from_the_cache_with_far_fewer_requests(site: Path) -> None:
    """The first locate reads the leaves' item_ids (and keeps the map); a later one asks for the
    internal levels' node_ids and the item_ids of the answering leaf (and of the first leaf, whose
    data type bounds the ids): the same answer, with a fraction of the requests."""
    index = site / "idx.zarr"
    item = int(IndexReader(index).node(3, 7).ids[0])  # type: ignore[union-attr]
    with remote_fixtures.serve_static(site) as (base, tally):
        first = _locate(f"{base}/idx.zarr", item)
        asked_first = tally.total
        assert cache_usage().files >= 3  # the item map, the facts and the parent links
        later = _locate(f"{base}/idx.zarr", item)
        asked_later = tally.paths[asked_first:]
    assert later == first and later.leaf == 7
    assert len(asked_later) * 3 < asked_first, (asked_first, len(asked_later))
    leaves_asked = {p.split("/")[3] for p in asked_later if "/lvl_3/node_" in p}
    assert leaves_asked == {"node_7", "node_0"}  # the answer's, and the one the id range is read from


@pytest.mark.parametrize("swapped", ["lvl_3/node_7|lvl_3/node_40", "lvl_2/node_0|lvl_2/node_1",
                                     "lvl_1/node_0|lvl_1/node_1"])
def test_swapped_node_folders_are_never_answered_from_the_cache(site: Path, tmp_path: Path, swapped: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Two node folders swapped after locate and search (leaves: the item map; internal nodes:
    the parent links), every file with the same Last-Modified: the later answers are the index's
    as it is now, those an empty cache gives."""
    index = site / "idx.zarr"
    first, second = swapped.split("|")
    level, node = (int(part.split("_")[1]) for part in first.split("/"))
    item = _item_below(index, level, node)
    with remote_fixtures.serve_static(site) as (base, _):
        url = f"{base}/idx.zarr"
        before = _locate(url, item)
        assert _locate(url, item) == before  # answered from the cache
        searched = _search(url, item)
        _swap(index, first, second)
        after, after_search = _locate(url, item), _search(url, item)
        monkeypatch.setenv("ECPFS_VIEWER_CACHE", str(tmp_path / "empty"))
        fresh, fresh_search = _locate(url, item), _search(url, item)
    assert after == fresh and after_search == fresh_search
    assert fresh != before  # the item's path goes through the swapped node
    if level == 3:
        assert fresh.leaf == 40 and before.leaf == 7
    assert searched  # a search answered before the swap too


def test_a_rewritten_leaf_is_read_afresh(site: Path, tmp_path: Path) -> None:
    """A leaf's item_ids written again with its ids in another order, its file given back its
    size and modification time: the later answer names the row the item is in now."""
    index = site / "idx.zarr"
    ids = np.asarray(IndexReader(index).node(3, 7).ids)  # type: ignore[union-attr]
    with remote_fixtures.serve_static(site) as (base, _):
        url = f"{base}/idx.zarr"
        assert _locate(url, int(ids[0])).row == 0
        assert _locate(url, int(ids[0])).row == 0  # answered from the cache
        array = zarr.open_array(str(index / "lvl_3" / "node_7" / "item_ids"), mode="r+")
        array[:] = np.roll(ids, 1)
        for parent, _, files in os.walk(index / "lvl_3" / "node_7"):
            for name in files:
                os.utime(os.path.join(parent, name), ns=(_SAME_TIME_NS, _SAME_TIME_NS))
        assert _locate(url, int(ids[0])).row == 1


def test_a_server_that_sends_no_validators_keeps_nothing(site: Path) -> None:
    """No ETag, no Last-Modified: nothing is kept, and a later locate asks for what the first did."""
    index = site / "idx.zarr"
    item = int(IndexReader(index).node(3, 7).ids[0])  # type: ignore[union-attr]
    with remote_fixtures.serve_without_validators(site) as (base, tally):
        first = _locate(f"{base}/idx.zarr", item)
        asked_first = tally.total
        assert _locate(f"{base}/idx.zarr", item) == first
        asked_later = tally.total - asked_first
    assert cache_usage().files == 0
    assert asked_later >= asked_first - 5, (asked_first, asked_later)


def test_an_object_row_needs_validators_and_changes_with_the_bytes() -> None:
    assert object_row(b"abc", None) is None
    assert object_row(None, "absent") == (-1,) * 5
    assert object_row(b"abc", '"e"||3') != object_row(b"abd", '"e"||3')
    assert object_row(b"abc", '"e"||3') == object_row(b"abc", '"e"||3')


def test_chunk_keys_follow_the_grid_and_key_encoding() -> None:
    def array(shape: list[int], chunks: list[int], encoding: dict[str, object] | None = None) -> dict[str, object]:
        found: dict[str, object] = {"zarr_format": 3, "node_type": "array", "shape": shape,
                                    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}}}
        if encoding is not None:
            found["chunk_key_encoding"] = encoding
        return found

    assert chunk_keys(array([246], [2048])) == ["c/0"]
    assert chunk_keys(array([5, 3], [2, 3])) == ["c/0/0", "c/1/0", "c/2/0"]
    assert chunk_keys(array([4], [2], {"name": "default", "configuration": {"separator": "."}})) == ["c.0", "c.1"]
    assert chunk_keys(array([4, 2], [2, 2], {"name": "v2"})) == ["0.0", "1.0"]
    assert chunk_keys(array([], [])) == ["c"]
    assert chunk_keys(array([10_000], [1])) is None  # more chunks than are stamped
    assert chunk_keys({"zarr_format": 3, "node_type": "group"}) is None


def test_a_refresh_asks_the_server_again(site: Path) -> None:
    """One process answers for the index as it first asked for its objects (as its tree does);
    a refresh (F5) asks again, so leaves swapped meanwhile make the kept map stale."""
    from ecpfs_viewer.model.search.item_cache import saved_item_map

    index = site / "idx.zarr"
    item = int(IndexReader(index).node(3, 7).ids[0])  # type: ignore[union-attr]
    with remote_fixtures.serve_static(site) as (base, tally):
        _locate(f"{base}/idx.zarr", item)
        reader = IndexReader(open_store(f"{base}/idx.zarr"))
        saved = saved_item_map(reader.cache)
        assert saved is not None
        assert reader.cache.unchanged(saved[1], [7])
        _swap(index, "lvl_3/node_7", "lvl_3/node_40")
        asked = tally.total
        assert reader.cache.unchanged(saved[1], [7])  # each object asked for once per process
        assert tally.total == asked
        reader.hierarchy.refresh("")
        assert not reader.cache.unchanged(saved[1], [7])
        reader.store.close()
