"""`locate` in a later process answers from the cache folder without importing zarr: the same
words and JSON as the first process, never after the index changed, never from a damaged entry,
and only for a local folder (anything else opens the index as before)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from command_runs import run, run_later_process
from index_factory import build_clustered_index

from ecpfs_viewer.model.ecpfs.parent_links import PARENT_LINKS
from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.search.results import ItemIdRangeError, UnknownItemError
from ecpfs_viewer.model.search.saved_locate import ITEM_MAP, LOCATE_FACTS, saved_location
from ecpfs_viewer.model.storage.disk_cache import STORES, cache_root


@pytest.fixture
def index(tmp_path: Path) -> Path:
    return build_clustered_index(tmp_path, 3000, 8)


def _cli(*argv: str, cache: Path | None = None) -> tuple[str, str]:
    """stdout and stderr of `ecpfs-viewer ARGV` in a new process (the test's cache folder, unless
    another is given)."""
    done = run_later_process(*argv, cache=cache)
    return done.stdout, done.stderr


def _locate_everywhere(index: Path) -> None:
    """A first process's lookups: an absent id (every leaf read, the map saved), then a present one
    (the parent links saved)."""
    reader = IndexReader(index)
    with pytest.raises(UnknownItemError):
        reader.locate(10**6)
    reader.locate(7)


def test_a_later_process_answers_like_the_first_without_importing_zarr(index: Path, tmp_path: Path) -> None:
    asked = [("7",), ("2999", "--json"), ("999999",), ("-1",)]
    # each in a first process: a cache folder of its own, empty
    first = {args: _cli("locate", str(index), *args, cache=tmp_path / f"empty-{n}") for n, args in enumerate(asked)}
    # each opened the index, but for a negative id: a usage error while parsing, before anything opens
    assert all("zarr=True" in out for args, (out, _) in first.items() if args != ("-1",))
    _locate_everywhere(index)
    for args, (out, err) in first.items():
        again, again_err = _cli("locate", str(index), *args)
        assert "zarr=False" in again, args
        assert again.replace("zarr=False", "zarr=True") == out.replace("zarr=False", "zarr=True"), args
        assert again_err == err, args
    out, _ = first[("2999", "--json")]
    assert json.loads(out[:out.rindex("}") + 1])["item_id"] == 2999
    assert "exit=1" in first[("999999",)][0] and "is not in this index" in first[("999999",)][1]
    assert "exit=2" in first[("-1",)][0] and "must be at least 0" in first[("-1",)][1]
    assert "stored as uint32" in _cli("locate", str(index), str(2**32))[1]


def test_the_saved_answer_is_the_readers(index: Path) -> None:
    _locate_everywhere(index)
    reader = IndexReader(index)
    for item in (0, 7, 1234, 2999):
        assert saved_location(str(index), item) == reader.locate(item)
    with pytest.raises(UnknownItemError, match="item 1000000 is not in this index"):
        saved_location(str(index), 10**6)
    with pytest.raises(ItemIdRangeError, match="cannot be in this index"):
        saved_location(str(index), 2**32)


def test_an_absent_item_is_answered_before_any_parent_link_is_saved(index: Path) -> None:
    reader = IndexReader(index)
    with pytest.raises(UnknownItemError):
        reader.locate(10**6)
    with pytest.raises(UnknownItemError):
        saved_location(str(index), 10**6)
    assert saved_location(str(index), 7) is None  # its path needs the links: the reader finds them


def test_nothing_is_answered_after_the_index_changed(index: Path) -> None:
    _locate_everywhere(index)
    assert saved_location(str(index), 7) is not None
    levels = index / "lvl_2" / "zarr.json"  # one of the documents that stand for the index
    later = os.stat(levels).st_mtime_ns + 10**9
    os.utime(levels, ns=(later, later))
    assert saved_location(str(index), 7) is None
    assert saved_location(str(index), 10**6) is None


def _entry(name: str) -> Path:
    found = list((cache_root() / STORES).glob(f"*/*.{name}"))
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("name", [LOCATE_FACTS, ITEM_MAP, PARENT_LINKS.format(level=2)])
def test_a_damaged_entry_is_not_an_answer(index: Path, name: str) -> None:
    _locate_everywhere(index)
    _entry(name).write_bytes(b'{"levels": "many"}' if name == LOCATE_FACTS else b"PK\x03\x04 not a map")
    assert saved_location(str(index), 7) is None
    assert IndexReader(index).locate(7).item_id == 7  # the reader still answers


def test_only_a_local_folder_is_answered(index: Path, tmp_path: Path) -> None:
    _locate_everywhere(index)
    assert saved_location(f"file://{index}", 7) is None
    assert saved_location("http://127.0.0.1:9/idx.zarr", 7) is None
    assert saved_location(str(tmp_path / "absent.zarr"), 7) is None
    assert saved_location(str(index / "zarr.json"), 7) is None
    assert saved_location(str(index) + "/", 7) is not None  # the same folder, however it is spelt


def test_a_lookup_that_stopped_early_still_leaves_the_whole_map_for_the_next_process(index: Path, capsys) -> None:
    assert run(capsys, "locate", str(index), "0")[0] == 0  # found in the first leaves read
    assert saved_location(str(index), 2999) is not None  # the rest was read after the answer
    shutil.rmtree(cache_root())
    code, out, _ = run(capsys, "search", str(index), "--item", "5", "--json")
    assert code == 0 and json.loads(out)["items"][0]["item_id"] == 5  # the answer first
    assert IndexReader(index).locator.complete  # a new reader starts from the whole saved map
