"""`search --item` in a later process answers from the cache folder without importing zarr: the
same hits and JSON as the first process, never after a node the search read changed (a changed
index gets the answer an empty cache gives), still when only nodes it did not read changed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from command_runs import run_later_process
from index_factory import build_clustered_index

from ecpfs_viewer.cli.search import FROM_CACHE
from ecpfs_viewer.model.search import IndexReader, SearchParams
from ecpfs_viewer.model.search.saved_search import CHANGE_MARGIN_NS, changed_since
from ecpfs_viewer.model.storage.disk_cache import STORES, cache_root
from ecpfs_viewer.model.storage.stamps import Stamps

ITEM = "7"


@pytest.fixture
def index(tmp_path: Path) -> Path:
    return build_clustered_index(tmp_path, 3000, 8)


def _cli(*argv: str, cache: Path | None = None) -> str:
    done = run_later_process(*argv, cache=cache)
    return done.stdout + done.stderr


def _kept() -> list[Path]:
    return list((cache_root() / STORES).glob("*/*.search_item_*.json"))


def _search_until_kept(index: Path, *extra: str) -> str:
    """A first process's `search --item` (zarr imported); run again while the index's files are
    younger than the margin the saved answer needs (they were written just now by the fixture)."""
    for _ in range(20):
        out = _cli("search", str(index), "--item", ITEM, *extra)
        if _kept():
            assert "zarr=True" in out
            return out
    pytest.fail("no process kept its search in the cache folder")


def _json(out: str) -> dict[str, object]:
    return json.loads(out[:out.rindex("}") + 1])  # type: ignore[no-any-return]


_READ_TALLIES = ("bytes_read", "requests", "total_bytes", "total_requests", "cold_bytes", "cold_requests",
                 "total_cold_bytes", "total_cold_requests")


def _answer(result: dict[str, object]) -> dict[str, object]:
    """A search's JSON without the tallies of what its process read."""
    cost = {k: v for k, v in dict(result["cost"]).items() if k not in _READ_TALLIES}  # type: ignore[call-overload]
    return {**result, "cost": cost}


def test_a_later_search_item_answers_like_the_first_without_importing_zarr(index: Path, tmp_path: Path) -> None:
    first = _search_until_kept(index)
    again = _cli("search", str(index), "--item", ITEM)
    assert "zarr=False" in again
    lines, again_lines = first.splitlines(), again.splitlines()
    assert again_lines[:-1] == [*lines[:-1], FROM_CACHE]  # the hits and cost lines, then where they came from
    fresh_json = _cli("search", str(index), "--item", ITEM, "--json", cache=tmp_path / "empty")
    again_json = _cli("search", str(index), "--item", ITEM, "--json")
    assert "zarr=True" in fresh_json and "zarr=False" in again_json
    # the answer is the same; what was read to reach it (bytes, requests) depends on what the cache
    # folder held when it was made, so those tallies are the first process's, not a fresh one's
    assert _answer(_json(again_json)) == _answer(_json(fresh_json))
    # other parameters are another search: not answered from this one
    assert "zarr=True" in _cli("search", str(index), "--item", ITEM, "--k", "3")
    assert "zarr=True" in _cli("search", str(index), "--item", ITEM, "--trace")


def _visited_leaves(index: Path) -> tuple[list[int], list[int]]:
    """The leaves the search popped, and the index's other leaves."""
    reader = IndexReader(index)
    result = reader.search(reader.vector_for_item(int(ITEM)), SearchParams(10, 4))
    visited = [v.node_id for v in result.trace if v.is_leaf]
    return visited, [leaf for leaf in reader.leaf_ids() if leaf not in visited]


def test_a_changed_node_the_search_read_is_never_answered_from_the_cache(index: Path, tmp_path: Path) -> None:
    first = _search_until_kept(index, "--json")
    visited, others = _visited_leaves(index)
    item_leaf = IndexReader(index).locate(int(ITEM)).leaf
    swapped = next(leaf for leaf in visited if leaf != item_leaf)  # its hits now come from another leaf
    a, b = index / "lvl_2" / f"node_{swapped}", index / "lvl_2" / f"node_{others[-1]}"
    aside = a.with_name("swapping")
    a.rename(aside)
    b.rename(a)
    aside.rename(b)
    fresh = _cli("search", str(index), "--item", ITEM, "--json", cache=tmp_path / "empty")
    assert _json(fresh) != _json(first)  # the change changes the answer
    again = _cli("search", str(index), "--item", ITEM, "--json")
    assert "zarr=True" in again and _json(again) == _json(fresh)


def test_only_a_change_of_a_node_the_search_read_forgets_the_answer(index: Path) -> None:
    first = _search_until_kept(index)
    visited, others = _visited_leaves(index)
    unread = index / "lvl_2" / f"node_{others[0]}" / "embeddings" / "zarr.json"
    unread.write_bytes(unread.read_bytes())  # rewritten in place: new stamps, the level's folder as it was
    again = _cli("search", str(index), "--item", ITEM)
    assert "zarr=False" in again and again.splitlines()[0] == first.splitlines()[0]
    read = index / "lvl_2" / f"node_{visited[-1]}" / "embeddings" / "zarr.json"
    read.write_bytes(read.read_bytes())
    assert "zarr=True" in _cli("search", str(index), "--item", ITEM)


def test_an_answer_whose_files_changed_after_the_search_began_is_not_kept(tmp_path: Path) -> None:
    path = tmp_path / "leaf"
    path.write_bytes(b"x")
    info = os.stat(path)
    stamps = Stamps("local", ("leaf",), np.zeros(1, np.int64),
                    np.asarray([[info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]],
                               np.int64))
    assert changed_since(stamps, info.st_ctime_ns)  # written as the search began
    assert changed_since(stamps, info.st_ctime_ns + CHANGE_MARGIN_NS // 2)  # within the clock's margin
    assert not changed_since(stamps, info.st_ctime_ns + 2 * CHANGE_MARGIN_NS)  # well before it
