"""One bad node spoils only itself: a leaf that cannot be read (a damaged chunk, a shard index
pointing past its file) is named with why, and search, its exact comparison (`search --explain`,
the window's Compare with exact search) and the misses answer for every other leaf.

two_clusters holds items 0-1 in lvl_2/node_0, 2-3 in node_1, 4-5 in node_2, 6-7 in node_3; item
0's exact top 3 are 0, 1, 2, and without node_1 they are 0, 1, 4.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile_builders import SHARD_DAMAGE, set_shard_entry, sharded_leaf  # tests/ is on sys.path (conftest)
from jsonschema import Draft202012Validator

from ecpfs_viewer.cli import main
from ecpfs_viewer.cli.schema import load_schema
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.search import IndexReader, SearchParams
from ecpfs_viewer.model.search.explore import QuerySpec, compare_exact, explore
from ecpfs_viewer.model.search.results import UnknownItemError

LEAF = "lvl_2/node_1/embeddings"


def _garbage_chunk(store: Path) -> str:
    (store / LEAF / "c" / "0" / "0").write_bytes(b"not zstd at all")
    return "cannot be decoded"


def _shard_past_the_end(store: Path) -> str:
    shard = sharded_leaf(store, LEAF)
    set_shard_entry(shard, 2, 1, *SHARD_DAMAGE["past-the-end"](shard.stat().st_size))
    return "of a 52-byte shard"


DAMAGE: dict[str, Callable[[Path], str]] = {"garbage-chunk": _garbage_chunk, "shard-past-the-end": _shard_past_the_end}


@pytest.fixture(params=sorted(DAMAGE))
def damaged(request: pytest.FixtureRequest, two_clusters_copy: Path) -> tuple[Path, str]:
    """A copy of two_clusters whose lvl_2/node_1 cannot be read, and a word of the reason."""
    return two_clusters_copy, DAMAGE[request.param](two_clusters_copy)


def test_search_names_a_popped_leaf_it_cannot_read_and_answers_from_the_rest(damaged: tuple[Path, str]) -> None:
    store, why = damaged
    reader = IndexReader(store)
    with pytest.raises(UserError, match="lvl_2/node_1"):  # recall, workload: a lost leaf would skew their figures
        reader.search(reader.vector_for_item(0), SearchParams(k=5, search_exp=4))
    result = reader.search(reader.vector_for_item(0), SearchParams(k=5, search_exp=4), skip_unreadable=True)
    (bad,) = result.unreadable
    assert (bad.level, bad.node_id, bad.path) == (2, 1, "lvl_2/node_1")
    assert "lvl_2/node_1/embeddings" in bad.reason and why in bad.reason
    assert [h.item_id for h in result.hits] == [0, 1, 4, 5, 6]  # every other leaf's items, none of node_1's
    assert 1 not in {v.node_id for v in result.trace if v.is_leaf}
    assert result.leaves_visited == 3


def test_exact_comparison_skips_the_unreadable_leaf_only_when_asked(damaged: tuple[Path, str]) -> None:
    store, why = damaged
    reader = IndexReader(store)
    query = reader.vector_for_item(0)
    with pytest.raises(UserError, match="lvl_2/node_"):  # recall's truth: a leaf missing misjudges every query
        reader.exact(query, 3)
    truth = IndexReader(store).exact(query, 3, skip_unreadable=True)
    assert [h.item_id for h in truth.hits(0)] == [0, 1, 4]
    (bad,) = truth.unreadable  # the block of four leaves was read again leaf by leaf: only node_1 named
    assert bad.path == "lvl_2/node_1" and why in bad.reason


def test_the_scan_does_not_teach_the_locator_that_an_unreadable_leaf_is_empty(damaged: tuple[Path, str]) -> None:
    store, _why = damaged
    reader = IndexReader(store)
    reader.exact(reader.vector_for_item(0), 3, skip_unreadable=True)
    assert reader.locate(5).leaf == 2
    try:
        found = reader.locate(2)  # its item_ids are intact: found; never "not in this index"
    except UnknownItemError:  # pragma: no cover - the failure this test exists for
        pytest.fail("item 2 said to be absent after a scan that could not read its leaf's embeddings")
    assert found.leaf == 1


def test_the_windows_search_and_comparison_name_the_leaf(damaged: tuple[Path, str]) -> None:
    store, why = damaged
    reader = IndexReader(store)
    params = SearchParams(k=3, search_exp=1, max_increments=0)
    found = explore(reader, QuerySpec("item", 0), params)
    assert found.unreadable == ()  # the search itself read node_0 only
    compared = compare_exact(reader, found)
    assert [h.item_id for h in compared.exact or ()] == [0, 1, 4]
    (bad,) = compared.unreadable
    assert bad.path == "lvl_2/node_1" and why in bad.reason
    (missed,) = compared.misses
    assert missed.item_id == 4 and missed.reason == "not reached"


def test_search_explain_on_the_command_line(damaged: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    store, why = damaged
    argv = ["search", str(store), "--item", "0", "--k", "3", "--search-exp", "1", "--max-increments", "0", "--explain"]
    assert main(argv) == 1
    text = capsys.readouterr()
    assert [line.split("\t")[0] for line in text.out.splitlines() if not line.startswith("#")] == ["0", "1"]
    assert "# exact top-3: 2 of 3 found by eCP search" in text.out
    assert "# item 4 is in lvl_2/node_2 under lvl_1/node_1" in text.out
    (line,) = [line for line in text.out.splitlines() if "could not be read" in line]
    assert line.startswith("# lvl_2/node_1 could not be read: lvl_2/node_1/embeddings") and why in line
    assert text.err.splitlines() == ["ecpfs-viewer: error: lvl_2/node_1 could not be read; the answer is for every "
                                     "other node (see the lines starting '# lvl_' or the unreadable key of --json)"]
    assert main([*argv, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    errors = list(Draft202012Validator(load_schema("search")).iter_errors(report))
    assert not errors, [e.message for e in errors]
    assert [h["item_id"] for h in report["exact"]] == [0, 1, 4]
    assert [m["item_id"] for m in report["missed"]] == [4]
    (bad,) = report["unreadable"]
    assert (bad["level"], bad["node_id"], bad["path"]) == (2, 1, "lvl_2/node_1") and why in bad["reason"]


def test_a_search_that_reads_every_leaf_names_the_bad_one_once(two_clusters_copy: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    _garbage_chunk(two_clusters_copy)
    assert main(["search", str(two_clusters_copy), "--item", "0", "--k", "5", "--explain", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [u["path"] for u in report["unreadable"]] == ["lvl_2/node_1"]  # popped by the search and the scan
    assert [h["item_id"] for h in report["items"]] == [h["item_id"] for h in report["exact"]] == [0, 1, 4, 5, 6]
    assert report["missed"] == []


def test_an_intact_index_says_nothing_could_not_be_read(two_clusters_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", str(two_clusters_path), "--item", "0", "--k", "3", "--explain", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unreadable"] == []
