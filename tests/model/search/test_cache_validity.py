"""A cache never answers for an index that changed, even when its root documents did not: two
leaf folders swapped (what an rsync of a rebuilt index does) or one leaf rewritten in place with
its size and mtime put back. Every kind of fact the cache keeps is asked again after each change
and must give the answer an empty cache gives: the item map (``locate`` in a later process,
with and without zarr; ``search --item``), the parent links, and the facts a location needs."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numcodecs
import numpy as np
import pytest
from command_runs import run_later_process
from index_factory import build_clustered_index

from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.search.results import UnknownItemError
from ecpfs_viewer.model.search.saved_locate import saved_location


@pytest.fixture
def index(tmp_path: Path) -> Path:
    return build_clustered_index(tmp_path, 3000, 8)


def _cli(*argv: str, cache: Path | None = None) -> str:
    """stdout (and the exit line) and stderr of `ecpfs-viewer ARGV` in a fresh process."""
    done = run_later_process(*argv, cache=cache)
    return done.stdout + done.stderr


def _leaf_dir(index: Path, leaf: int) -> Path:
    return index / "lvl_2" / f"node_{leaf}"


def _first_item(index: Path, leaf: int) -> int:
    return int(IndexReader(index).node(2, leaf).ids[0])  # type: ignore[union-attr]


def _swap_leaves(index: Path, a: int, b: int) -> None:
    """Exchange two leaf folders by renames (their files keep their own stamps)."""
    first, second = _leaf_dir(index, a), _leaf_dir(index, b)
    aside = first.with_name("swapping")
    first.rename(aside)
    second.rename(first)
    aside.rename(second)


def _rewrite_leaf_in_place(index: Path, leaf: int) -> None:
    """Rewrite a leaf's item_ids chunk in place with its rows in another order, the file's size
    and mtime as before (a rotation whose compressed size is the same)."""
    chunk = _leaf_dir(index, leaf) / "item_ids" / "c" / "0"
    before = os.stat(chunk)
    codec = numcodecs.Zstd(level=3)
    stored = np.frombuffer(codec.decode(chunk.read_bytes()), np.uint32).copy()  # the whole chunk, padded
    rows = len(IndexReader(index).node(2, leaf).ids)  # type: ignore[union-attr]
    for _ in range(1, rows):
        stored[:rows] = np.roll(stored[:rows], 1)
        data = codec.encode(stored.tobytes())
        if len(data) == before.st_size:
            break
    else:
        pytest.fail("no rotation of the leaf compresses to its size")
    with open(chunk, "r+b") as handle:
        handle.write(data)
    os.utime(chunk, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(chunk)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def _fill_cache(index: Path) -> None:
    """What a first process leaves in the cache folder: the whole map, the links, the facts."""
    reader = IndexReader(index)
    with pytest.raises(UnknownItemError):
        reader.locate(10**6)
    reader.locate(0)


def _swapped(index: Path) -> int:
    """Swap leaves 0 and 15; the item asked for is one leaf 0 held."""
    item = _first_item(index, 0)
    _swap_leaves(index, 0, 15)
    return item


def _rewritten(index: Path) -> int:
    """Rewrite leaf 3 in place; the item asked for is its first row (now elsewhere in the leaf)."""
    item = _first_item(index, 3)
    _rewrite_leaf_in_place(index, 3)
    return item


_CHANGES: dict[str, Callable[[Path], int]] = {"swapped leaves": _swapped, "leaf rewritten in place": _rewritten}


@pytest.fixture(params=sorted(_CHANGES))
def changed(request: pytest.FixtureRequest, index: Path, tmp_path: Path) -> tuple[Path, int]:
    """An index whose cache was filled, then changed under unchanged root documents; the item asked."""
    _fill_cache(index)
    item = _CHANGES[request.param](index)
    return index, item


def test_locate_in_a_later_process_answers_for_the_index_as_it_is_now(changed: tuple[Path, int],
                                                                       tmp_path: Path) -> None:
    index, item = changed
    fresh = _cli("locate", str(index), str(item), "--json", cache=tmp_path / "empty")
    again = _cli("locate", str(index), str(item), "--json")
    assert again.replace("zarr=False", "zarr=True") == fresh
    # and a third process, from what the second saved, answers alike (without zarr again)
    third = _cli("locate", str(index), str(item), "--json")
    assert "zarr=False" in third and third.replace("zarr=False", "zarr=True") == fresh


def test_the_saved_location_is_never_the_stale_one(changed: tuple[Path, int], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    index, item = changed
    assert saved_location(str(index), item) is None  # not answered from what changed
    kept = IndexReader(index).locate(item)  # the reader reads afresh (and saves fresh entries)
    monkeypatch.setenv("ECPFS_VIEWER_CACHE", str(tmp_path / "empty"))
    assert IndexReader(index).locate(item) == kept  # what an empty cache answers


def test_an_absent_item_is_not_answered_from_a_map_of_the_index_before(index: Path, tmp_path: Path) -> None:
    _fill_cache(index)
    (tmp_path / "donor").mkdir()
    donor = build_clustered_index(tmp_path / "donor", 3100, 8, seed=9)
    new_item = 3050  # a later build holds it (its leaf copied in); the cached map says no leaf does
    leaf = IndexReader(donor).locate(new_item).leaf
    if _leaf_dir(index, leaf).exists():
        shutil.rmtree(_leaf_dir(index, leaf))
    shutil.copytree(_leaf_dir(donor, leaf), _leaf_dir(index, leaf))
    assert saved_location(str(index), new_item) is None
    assert IndexReader(index).locate(new_item).leaf == leaf


def test_search_item_answers_for_the_index_as_it_is_now(changed: tuple[Path, int], tmp_path: Path) -> None:
    index, item = changed
    fresh = _cli("search", str(index), "--item", str(item), "--json", cache=tmp_path / "empty")
    again = _cli("search", str(index), "--item", str(item), "--json")
    assert again == fresh
    assert json.loads(fresh[:fresh.rindex("}") + 1])["items"]


def test_parent_links_answer_for_the_index_as_it_is_now(tmp_path: Path) -> None:
    """Two internal nodes swapped, the leaves untouched: the saved links (each leaf's parent) must
    not name the old parent, with or without zarr."""
    (tmp_path / "three").mkdir()
    index = build_clustered_index(tmp_path / "three", 4000, 8, levels=3, target_cluster_items=12)
    reader = IndexReader(index)
    item = int(reader.node(3, reader.leaf_ids()[0]).ids[0])  # type: ignore[union-attr]
    with pytest.raises(UnknownItemError):
        reader.locate(10**6)
    before = reader.locate(item)
    parent = before.path[1].node_id  # the lvl_2 node on its way
    other = next(n for n in reader.level_node_ids(2) if n != parent)
    first, second = index / "lvl_2" / f"node_{parent}", index / "lvl_2" / f"node_{other}"
    aside = first.with_name("swapping")
    first.rename(aside)
    second.rename(first)
    aside.rename(second)
    fresh = _cli("locate", str(index), str(item), "--json", cache=tmp_path / "empty-links")
    assert f'"node_id": {other}' in fresh
    again = _cli("locate", str(index), str(item), "--json")
    assert again.replace("zarr=False", "zarr=True") == fresh
    third = _cli("locate", str(index), str(item), "--json")
    assert "zarr=False" in third and third.replace("zarr=False", "zarr=True") == fresh


def test_a_zip_rewritten_with_swapped_leaves_is_answered_afresh(index: Path, tmp_path: Path) -> None:
    """A zip's entries stand or fall with the archive: rebuilt with two leaves swapped, the same
    size and mtime put back, its cached map is not used."""
    archive = Path(shutil.make_archive(str(tmp_path / "idx"), "zip", root_dir=index))
    item = _first_item(index, 0)
    first = _cli("locate", str(archive), str(item), "--json")
    assert '"leaf": 0' in first
    before = os.stat(archive)
    _swap_leaves(index, 0, 15)
    archive.unlink()
    shutil.make_archive(str(tmp_path / "idx"), "zip", root_dir=index)
    os.utime(archive, ns=(before.st_atime_ns, before.st_mtime_ns))
    fresh = _cli("locate", str(archive), str(item), "--json", cache=tmp_path / "empty")
    assert '"leaf": 15' in fresh
    assert _cli("locate", str(archive), str(item), "--json") == fresh


def test_an_item_ids_chunk_stored_after_the_map_was_kept_is_read_afresh(index: Path) -> None:
    """The item map stamps the files it reads: a leaf's item_ids chunk not stored when the map was made
    (the leaf read as the fill value) and stored later is a change, though the leaf's folder then
    listed no such file to stamp; the map kept before does not answer for the index now."""
    chunk = _leaf_dir(index, 3) / "item_ids" / "c" / "0"
    item, stored = _first_item(index, 3), chunk.read_bytes()
    chunk.unlink()
    with pytest.raises(UnknownItemError):
        IndexReader(index).locate(10**6)  # the whole map made and kept, leaf 3 all fill value
    chunk.write_bytes(stored)
    assert saved_location(str(index), item) is None
    assert IndexReader(index).locate(item).leaf == 3
