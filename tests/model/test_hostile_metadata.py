"""Hostile stores: metadata that claims huge sizes, unreadable pieces, bad numbers.

Each store is a copy of two_clusters that the test breaks. Whatever the metadata claims, `info`
and `check` finish within 30 s, under a 1 GiB address-space limit (RLIMIT_AS in a subprocess, so
a regression fails here instead of taking the machine down), without a traceback, and one bad
piece spoils only itself. See docs/reliability.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from command_runs import SECONDS, run_cli_cleanly, run_cli_measured  # tests/ is on sys.path (conftest)
from hostile_builders import bulky_attribute, empty_lists, set_scalar, set_shape
from locations import REPO

from ecpfs_viewer.model.ecpfs import Generation, level_plan, level_stats, summarize
from ecpfs_viewer.model.ecpfs.sizing import capped_power, fan_out
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.validation import validate
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.read_guard import DeclaredArray, ReadTooLarge, check_read


def summary_of(store: Path) -> Any:
    return summarize(Hierarchy(open_store(store)))


# -- 1. metadata claiming huge sizes ----------------------------------------------------------

def test_root_declaring_a_petabyte_is_not_read_whole(two_clusters_copy: Path) -> None:
    set_shape(two_clusters_copy, "index_root/embeddings", [10**15, 2])
    result = run_cli_cleanly("check", str(two_clusters_copy))
    assert result.returncode == 1
    assert "index_root/embeddings: the read touches 15,258,789,063 chunks" in result.stdout
    assert "(ECPFS_VIEWER_MAX_CHUNKS_PER_READ) on chunks per read; not read" in result.stdout
    assert "999999999999998 root entries lead to no node" in result.stdout


def test_ten_billion_representatives_do_not_allocate_the_gap_map(two_clusters_copy: Path) -> None:
    set_shape(two_clusters_copy, "rep_item_ids", [10**10])
    set_shape(two_clusters_copy, "index_root/embeddings", [10**5, 2])  # min(ns^2, R) = 10^10
    result = run_cli_cleanly("info", "--json", str(two_clusters_copy))
    levels = json.loads(result.stdout)["level_stats"]
    assert levels[1]["max_nodes"] == 10**10
    assert levels[1]["gap_count"] == 10**10 - 4
    assert levels[1]["gap_ids"][:3] == [4, 5, 6]  # two_clusters' leaves are node_0 .. node_3
    run_cli_cleanly("check", str(two_clusters_copy))


def test_four_billion_declared_levels_examine_the_stored_ones(two_clusters_copy: Path) -> None:
    set_scalar(two_clusters_copy, "info/levels", 2**32 - 1)
    info = run_cli_cleanly("info", str(two_clusters_copy))
    assert "lvl_2" in info.stdout and "lvl_12: level does not exist" in info.stdout
    assert "lvl_13" not in info.stdout
    check = run_cli_cleanly("check", str(two_clusters_copy))
    assert check.returncode == 1
    assert "info/levels: declares 4,294,967,295 levels but 2 levels are stored; 4,294,967,293 are missing" \
        in check.stdout
    plan = level_plan(summary_of(two_clusters_copy))
    assert plan.stored == (1, 2) and plan.missing == tuple(range(3, 13))


def test_a_leaf_of_128_million_chunks_is_not_walked(two_clusters_copy: Path) -> None:
    set_shape(two_clusters_copy, "lvl_2/node_2/embeddings", [10**6, 128], [1, 1])
    set_shape(two_clusters_copy, "lvl_2/node_2/item_ids", [10**6])
    result = run_cli_cleanly("check", "--max-node-reads", "1000", str(two_clusters_copy))
    assert result.returncode == 1
    assert "touches 128,000,000 chunks, over the 100,000 cap" in result.stdout


@pytest.mark.parametrize("command", ["info", "check"])
def test_a_document_of_twenty_million_empty_lists_is_refused_before_parsing(two_clusters_copy: Path,
                                                                            command: str) -> None:
    """Under the 64 MB cap on its bytes, parsing it would build 20 million lists (1.5-3 GB)."""
    size = bulky_attribute(two_clusters_copy, "lvl_2/node_0/embeddings", empty_lists(20_000_000))
    assert 50 << 20 < size < 64 << 20
    result, peak_mb = run_cli_measured(command, str(two_clusters_copy))
    assert "Traceback" not in result.stderr and "Warning" not in result.stderr, result.stderr
    assert result.returncode == 1 if command == "check" else result.returncode == 0
    assert ("lvl_2/node_0/embeddings/zarr.json: 20,000,030 JSON values, more than the 1,000,000 cap "
            "(ECPFS_VIEWER_MAX_JSON_VALUES) on values in one document; could not be read") in result.stdout
    assert "OK" not in result.stdout and "missing" not in result.stdout and "DIFFERS" not in result.stdout
    if command == "info":
        assert ("Sum of leaf sizes: 6 over the leaves read (1 leaf could not be read, so it is not compared "
                "with Total Items 8)") in result.stdout
    assert peak_mb < 300


def test_read_guard_is_arithmetic_on_any_shape() -> None:
    with pytest.raises(ReadTooLarge, match="huge: the read touches 1,000,000,000,000,000,000,000,000,000,000,000,000"):
        check_read("huge", DeclaredArray((10**18, 10**18), (1, 1), 4))
    check_read("small", DeclaredArray((100, 8), (10, 8), 4), (slice(5, 25), 3))  # 3 chunks: fine
    check_read("fancy", DeclaredArray((10**18,), (1,), 4), [1, 2])  # fancy selections are not estimated


def test_sizing_refuses_instead_of_going_complex_or_looping() -> None:
    with pytest.raises(ValueError, match="R = -4"):
        fan_out(-4, 2)
    assert capped_power(2, 2**32 - 1, 10**10) == 10**10
    assert capped_power(3, 2, 100) == 9 and capped_power(0, 0, 5) == 1


# -- 5. what used to raise a traceback --------------------------------------------------------

@pytest.mark.parametrize("value", [0, 2**32 - 1])
def test_odd_level_counts_give_messages(two_clusters_copy: Path, value: int) -> None:
    set_scalar(two_clusters_copy, "info/levels", value)
    for command in ("info", "check"):
        assert run_cli_cleanly(command, str(two_clusters_copy)).returncode in (0, 1)


def test_a_scalar_whose_chunk_is_a_folder(two_clusters_copy: Path) -> None:
    chunk = two_clusters_copy / "info" / "levels" / "c"
    chunk.unlink()
    chunk.mkdir()
    summary = summary_of(two_clusters_copy)
    assert any(f.path == "info/levels" and "info/levels/c is a folder, not a stored value" in f.message
               for f in summary.findings)
    assert run_cli_cleanly("check", str(two_clusters_copy)).returncode == 1


def test_negative_dimension_is_an_error_node_not_a_complex_fan_out(two_clusters_copy: Path) -> None:
    set_shape(two_clusters_copy, "rep_item_ids", [-4])
    summary = summary_of(two_clusters_copy)
    assert summary.layout.is_index and summary.representatives is None and summary.expected_fan_out is None
    assert any("shape value -4 is out of range" in f.message for f in summary.findings)
    assert run_cli_cleanly("info", str(two_clusters_copy)).returncode == 0


@pytest.mark.parametrize("locked", ["lvl_2", "lvl_2/node_3", "info"])
def test_permission_denied_is_reported_as_such(world_readable_copy: Path, locked: str,
                                              request: pytest.FixtureRequest) -> None:
    (world_readable_copy / locked).chmod(0)
    nobody = request.getfixturevalue("nobody_python") if os.geteuid() == 0 else None
    result = run_cli_cleanly("check", str(world_readable_copy), nobody=nobody)
    assert result.returncode == 1
    assert "Permission denied" in result.stdout
    assert f"{locked}: missing" not in result.stdout and ": missing (required" not in result.stdout
    if locked != "info":
        assert "metadata of all" in result.stdout  # the other levels were still examined


def test_check_into_a_closed_pipe_exits_quietly(two_clusters_path: Path) -> None:
    command = f"{sys.executable} -m ecpfs_viewer check {two_clusters_path} --max-node-reads 4 | head -c 1"
    for _ in range(3):  # the race between writer and reader: try a few times
        result = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True,
                                timeout=SECONDS, cwd=REPO)
        assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr


# -- 6. one bad value spoils only itself ------------------------------------------------------

def _replace_in(store: Path, path: str, old: str, new: str) -> None:
    document = store / path / "zarr.json"
    text = json.dumps(json.loads(document.read_text()))
    assert old in text
    document.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('"shape": [', '"shape": [1e400, ', "shape must hold whole numbers, found inf"),
        ('"attributes": {', '"attributes": {"deep": ' + "[" * 100_000 + "]" * 100_000 + ", ",
         "nested 100,002 levels deep, more than the 128 cap (ECPFS_VIEWER_MAX_JSON_DEPTH)"),
        ('"shape": [', '"shape": [2.5, ', "shape must hold whole numbers, found 2.5"),
        ('"chunk_shape": [', '"chunk_shape": [0, ', "chunk_shape value 0 is out of range"),
    ],
)
def test_a_bad_number_spoils_only_its_array(two_clusters_copy: Path, old: str, new: str, message: str) -> None:
    _replace_in(two_clusters_copy, "rep_item_ids", old, new)
    summary = summary_of(two_clusters_copy)
    assert summary.layout.generation is Generation.V1
    assert (summary.levels, summary.metric, summary.total_items, summary.fan_out) == (2, "L2", 8, 2)
    bad = [f for f in summary.findings if f.path == "rep_item_ids"]
    assert len(bad) == 1 and message in bad[0].message and "cannot summarise" not in bad[0].message
    report = validate(Hierarchy(open_store(two_clusters_copy)))
    assert {f.path for f in report.errors} == {"rep_item_ids"}
    assert [s.node_count for s in report.levels] == [2, 4]


def test_unreadable_level_count_still_summarises_the_stored_levels(two_clusters_copy: Path) -> None:
    shutil.rmtree(two_clusters_copy / "info" / "levels")
    os.symlink(two_clusters_copy / "info" / "levels", two_clusters_copy / "info" / "levels")  # a loop
    h = Hierarchy(open_store(two_clusters_copy))
    summary = summarize(h)
    assert summary.layout.generation is Generation.V1 and summary.levels is None
    assert [f.path for f in summary.findings] == ["info/levels"]
    assert "Too many levels of symbolic links" in summary.findings[0].message
    assert [level_stats(h, n, summary).node_count for n in level_plan(summary).stored] == [2, 4]
    report = validate(h)
    assert not any("not part of an index" in f.message for f in report.findings)
    assert [s.node_count for s in report.levels] == [2, 4]
