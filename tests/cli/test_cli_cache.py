"""`ecpfs-viewer cache` lists and clears the cache folder; `check` of a URL prints its request floor
and runs far lighter the second time; `locate` answers the next time from the saved item map."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import remote_fixtures
from command_runs import run

from ecpfs_viewer.model.storage.disk_cache import cache_root, cache_usage


def test_cache_lists_then_clears_what_locate_saved(capsys, two_clusters_path: Path, tmp_path: Path) -> None:
    index = tmp_path / "idx.zarr"
    shutil.copytree(two_clusters_path, index)
    code, out, _ = run(capsys, "cache")
    assert code == 0 and f"Cache folder: {cache_root()}" in out and "0 store(s), 0 file(s)" in out
    assert "s3/gs/az object stores" in out and "plain http(s) servers (the item map and parent links" in out
    assert "Nothing is kept of fsspec stores, nor of a server or objects with neither an ETag" in out
    assert run(capsys, "locate", str(index), "999999")[0] == 1  # absent: every leaf read, the map saved
    code, out, _ = run(capsys, "cache", "list")
    assert code == 0 and "1 store(s), 2 file(s)" in out  # the item map and what a location needs besides
    code, out, _ = run(capsys, "cache", "clear")
    assert code == 0 and re.search(r"freed 1 store\(s\), 2 file\(s\), [\d.]+ (B|KiB)", out)
    assert cache_usage().files == 0


def test_cache_appears_in_help_and_in_the_completion_script(capsys) -> None:
    code, script, _ = run(capsys, "completion", "bash")
    assert code == 0 and "cache" in script and "clear" in script


def test_check_of_a_url_prints_its_request_floor_and_keeps_nothing_for_the_next_process(capsys, tmp_path: Path) -> None:
    pytest.importorskip("obstore", reason="obstore is part of the remote extra")
    from index_factory import build_clustered_index

    build_clustered_index(tmp_path, 2500, 8)
    with remote_fixtures.serve_static(tmp_path) as (base, tally):
        code, first, said = run(capsys, "check", f"{base}/idx.zarr", "--quiet")
        asked = tally.total
        code_again, second, _ = run(capsys, "check", f"{base}/idx.zarr", "--quiet")
        asked_again = tally.total - asked
    assert code == code_again == 0
    floor = re.search(r"Remote: [\d.]+ s for ([\d,]+) requests \(floor: [\d,]+ round trip\(s\) of 128 in flight x "
                      r"\d+ ms = [\d.]+ s\), ([\d,]+) document\(s\) from the cache folder", said)
    assert floor is not None, said
    assert int(floor.group(1).replace(",", "")) == asked  # the floor counts what the server answered
    assert asked_again >= asked - 20  # a later process asks the server again: nothing kept of a remote index
    assert cache_usage().files == 0
    assert first == second  # the same report


def test_a_lookup_over_http_keeps_the_whole_map_and_a_later_one_asks_for_its_leaf(capsys, tmp_path: Path) -> None:
    """After the answer, `locate` of a URL reads the rest of the item map (as locally) and keeps it:
    a later process asks the server for the internal levels' node_ids and the item's leaf only."""
    pytest.importorskip("obstore", reason="obstore is part of the remote extra")
    from index_factory import build_clustered_index

    from ecpfs_viewer.model.search import IndexReader
    from ecpfs_viewer.model.search.locate import LEAF_BATCH

    index = build_clustered_index(tmp_path, 12_000, 4, target_cluster_items=8)
    leaves = len(IndexReader(index).leaf_ids())
    assert leaves > 2 * LEAF_BATCH  # item 0 is found in the first batch

    def saved_maps() -> list[Path]:
        return [p for p in cache_root().rglob("*.item_lookup.bin")]

    with remote_fixtures.serve_static(tmp_path) as (base, tally):
        code, first, said = run(capsys, "locate", f"{base}/idx.zarr", "0")
        asked = tally.total
        assert code == 0 and "Note:" not in said
        assert len(saved_maps()) == 1
        code, later, _ = run(capsys, "locate", f"{base}/idx.zarr", "0")
        asked_later = tally.paths[asked:]
    assert code == 0 and later == first
    assert len({p.split("/")[3] for p in asked_later if "/lvl_2/node_" in p}) <= 2  # its leaf (and the first)
    assert IndexReader(index).levels == 2
    assert len(asked_later) * 10 < asked, (asked, len(asked_later))


def test_a_server_without_validators_is_said_to_keep_nothing(capsys, tmp_path: Path) -> None:
    pytest.importorskip("obstore", reason="obstore is part of the remote extra")
    from index_factory import build_clustered_index

    build_clustered_index(tmp_path, 2500, 8)
    with remote_fixtures.serve_without_validators(tmp_path) as (base, _):
        code, _, said = run(capsys, "locate", f"{base}/idx.zarr", "0")
        assert code == 0 and "Note: nothing of this index is kept for a later run: the server sends neither" in said
        code, _, said = run(capsys, "check", f"{base}/idx.zarr", "--quiet")
        assert "Note: nothing of this index is kept for a later run" in said
    assert cache_usage().files == 0
