"""A zip's cached facts are stamped member by member from its central directory (CRC-32, sizes,
local header offset), not by the archive's size and mtime: a zip re-saved with the same members
keeps its cache (counted in requests), one member changed makes stale only the facts derived from
it, and a zip rewritten with two leaf folders swapped is answered afresh by locate and search."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from command_runs import run  # tests/ is on sys.path (conftest)
from index_factory import build_clustered_index

from ecpfs_viewer.model.ecpfs.opened_index import open_index
from ecpfs_viewer.model.search import IndexReader, SearchParams, index_reader
from ecpfs_viewer.model.storage.stamps import ALWAYS, Stamps
from ecpfs_viewer.model.storage.zip_directory import read_directory
from ecpfs_viewer.model.storage.zip_stamps import members_unchanged, stamp_members


@pytest.fixture
def index(tmp_path: Path) -> Path:
    (tmp_path / "folder").mkdir()
    return build_clustered_index(tmp_path / "folder", 3000, 8)


def _zip(index: Path, tmp_path: Path) -> Path:
    """The index as a zip (made again from the folder as it is now, at the same path)."""
    target = tmp_path / "idx.zip"
    target.unlink(missing_ok=True)
    return Path(shutil.make_archive(str(tmp_path / "idx"), "zip", root_dir=index))


def _first_item(index: Path, leaf: int) -> int:
    return int(IndexReader(index).node(2, leaf).ids[0])  # type: ignore[union-attr]


def _locate(archive: Path, item: int) -> tuple[int, int]:
    """(leaf, requests) of locating item in a fresh opening of the zip (the cache folder kept)."""
    reader = index_reader(open_index(archive))
    leaf = reader.locate(item).leaf
    reader.finish_item_map()
    requests = reader.store.counter.snapshot().requests
    reader.close()
    return leaf, requests


def _leaf_sizes(capsys: pytest.CaptureFixture[str], archive: Path) -> str:
    code, out, _ = run(capsys, "info", str(archive), "--json")
    assert code == 0
    return str(json.loads(out)["leaf_sizes"])


def test_a_zip_re_saved_with_the_same_members_keeps_its_cache(index: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    archive = _zip(index, tmp_path)
    item = _first_item(index, 3)
    cold = _locate(archive, item)
    warm = _locate(archive, item)
    assert cold[0] == warm[0] == 3 and warm[1] < cold[1] // 4  # the item map from the cache folder
    assert _leaf_sizes(capsys, archive) == "read" and _leaf_sizes(capsys, archive) == "cached"
    before = os.stat(archive)
    _zip(index, tmp_path)  # re-saved: a new file (another inode and mtime), the same members
    assert os.stat(archive).st_ino != before.st_ino or os.stat(archive).st_mtime_ns != before.st_mtime_ns
    assert _locate(archive, item) == warm  # as few requests as before: nothing was discarded
    assert _leaf_sizes(capsys, archive) == "cached"


def test_one_member_changed_makes_stale_only_the_facts_derived_from_it(index: Path, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    archive = _zip(index, tmp_path)
    changed, kept = _first_item(index, 3), _first_item(index, 5)
    cold = _locate(archive, changed)
    warm_kept = _locate(archive, kept)
    warm_changed = _locate(archive, changed)
    assert _leaf_sizes(capsys, archive) == "read"
    document = index / "lvl_2" / "node_3" / "item_ids" / "zarr.json"
    edited = json.loads(document.read_text())
    edited.setdefault("attributes", {})["note"] = "rewritten"
    document.write_text(json.dumps(edited))  # leaf 3's item_ids document: another CRC and size
    (document.parent / "notes.txt").write_text("kept by hand")  # one member more: every later one moves down
    _zip(index, tmp_path)
    assert _locate(archive, kept) == warm_kept  # leaf 5's facts stand: answered from the cache as before
    leaf, requests = _locate(archive, changed)
    assert leaf == 3 and requests > warm_changed[1]  # leaf 3's are read again
    assert requests < cold[1]  # but not every other leaf's
    assert _leaf_sizes(capsys, archive) == "read"  # derived from every leaf's documents, leaf 3's item_ids' too


def test_a_zip_rewritten_with_two_leaves_swapped_answers_locate_and_search_afresh(index: Path, tmp_path: Path) -> None:
    archive = _zip(index, tmp_path)
    item = _first_item(index, 0)
    assert _locate(archive, item)[0] == 0
    reader = IndexReader(archive)
    query = reader.vector_for_item(item)
    assert reader.search(query, SearchParams(k=5)).hits[0].leaf == 0
    before = os.stat(archive)
    first, second = index / "lvl_2" / "node_0", index / "lvl_2" / "node_15"
    first.rename(index / "lvl_2" / "swapping")
    second.rename(first)
    (index / "lvl_2" / "swapping").rename(second)
    _zip(index, tmp_path)
    os.utime(archive, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert _locate(archive, item)[0] == 15
    reader = IndexReader(archive)  # search --item: the item's vector found through the item map
    assert (reader.vector_for_item(item) == query).all()
    expected = IndexReader(index).search(query, SearchParams(k=5))  # the folder, with its own cache entries
    assert reader.search(reader.vector_for_item(item), SearchParams(k=5)).hits == expected.hits


def test_member_stamps_see_each_kind_of_change_from_the_central_directory(index: Path, tmp_path: Path) -> None:
    archive = _zip(index, tmp_path)
    directory = read_directory(archive)
    stamps = stamp_members(directory, [("lvl_2/node_3/item_ids", 3), ("lvl_2/node_5/item_ids", 5)], walk=True)
    assert {"lvl_2/node_3/item_ids/zarr.json", "lvl_2/node_3/item_ids/c/0"} <= set(stamps.paths)
    level = stamp_members(directory, [("lvl_2", ALWAYS)], walk=False)  # its entries, not its members
    absent = stamp_members(directory, [("lvl_2/node_9999/item_ids", 9999)])  # nothing there yet
    assert level.paths == ("lvl_2",) and absent.paths == ("lvl_2/node_9999/item_ids",)
    assert all(members_unchanged(directory, s) for s in (stamps, level, absent))
    moved = Stamps("zip", stamps.paths, stamps.owners, stamps.values.copy())
    moved.values[:, 3] += 7  # each member's place in the directory is a hint only: found by name elsewhere
    assert members_unchanged(directory, moved)
    shutil.rmtree(index / "lvl_2" / "node_5")  # a leaf removed (its members gone, every offset after it moved)
    shutil.copytree(index / "lvl_2" / "node_3", index / "lvl_2" / "node_9999")  # and one added
    again = read_directory(_zip(index, tmp_path))
    assert members_unchanged(again, stamps, [3])  # leaf 3's members hold the same bytes
    assert not members_unchanged(again, stamps, [5])
    assert not members_unchanged(again, level)  # the level's entries changed
    assert not members_unchanged(again, absent)  # members where there were none
