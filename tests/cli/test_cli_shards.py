"""A sharded leaf whose shard index points outside its file, from the command line (issue 34,
"Sharding checked against the file"): `check` does not say OK (exit 1, the entry named), `search
--item` gives no fake distance-0 neighbours from a leaf read as zeros (exit 1, "could not be
read": the other leaves answered, the damaged one named), and no numpy warning reaches stderr.
Each command runs in a limited subprocess."""

from __future__ import annotations

from pathlib import Path

import pytest
from command_runs import run_cli
from hostile_builders import SHARD_DAMAGE, set_shard_entry, sharded_leaf

DAMAGES = ["past-the-end", "wraps-2-64", "overlaps-the-index"]


@pytest.mark.parametrize("damage", DAMAGES)
def test_check_reports_the_damaged_entry_and_exits_1(two_clusters_copy: Path, damage: str) -> None:
    shard = sharded_leaf(two_clusters_copy, compressed=True)
    set_shard_entry(shard, 2, 1, *SHARD_DAMAGE[damage](shard.stat().st_size))
    done = run_cli("check", str(two_clusters_copy), env={"PYTHONWARNINGS": "error"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "OK" not in done.stdout.splitlines()[0], done.stdout
    assert ("ERROR: lvl_2/node_2/embeddings: cannot read data:" in done.stdout
            and "c/0/0: shard index entry for inner chunk (1, 0) points at" in done.stdout
            and "could not be read" in done.stdout), done.stdout
    assert done.stderr == "", done.stderr  # no RuntimeWarning, no traceback


@pytest.mark.parametrize("damage", DAMAGES)
def test_search_gives_no_neighbour_read_from_a_damaged_shard(two_clusters_copy: Path, damage: str) -> None:
    """Item 5 is in the damaged leaf: its vector cannot be read, so there is no query (exit 1, one line)."""
    shard = sharded_leaf(two_clusters_copy)
    set_shard_entry(shard, 2, 1, *SHARD_DAMAGE[damage](shard.stat().st_size))
    done = run_cli("search", str(two_clusters_copy), "--item", "5", "--search-exp", "4")
    assert done.returncode == 1, done.stdout + done.stderr
    results = [line for line in done.stdout.splitlines() if line and not line.startswith("#")]
    assert results == [], done.stdout  # no item at a distance computed from zeros
    assert done.stderr.startswith("ecpfs-viewer: error: lvl_2/node_2/embeddings"), done.stderr
    assert "inner chunk (1, 0)" in done.stderr and "could not be read" in done.stderr, done.stderr
    assert "Warning" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.mark.parametrize("damage", DAMAGES)
def test_search_answers_from_every_other_leaf_and_names_the_damaged_one(two_clusters_copy: Path, damage: str) -> None:
    """Item 0 is in another leaf: one bad node spoils only itself. The search answers from the
    leaves it could read (none of node_2's items 4 and 5), names node_2 with the entry, exits 1."""
    shard = sharded_leaf(two_clusters_copy)
    set_shard_entry(shard, 2, 1, *SHARD_DAMAGE[damage](shard.stat().st_size))
    done = run_cli("search", str(two_clusters_copy), "--item", "0", "--search-exp", "4")
    assert done.returncode == 1, done.stdout + done.stderr
    results = [line.split("\t")[0] for line in done.stdout.splitlines() if line and not line.startswith("#")]
    assert results == ["0", "1", "2", "3", "6", "7"], done.stdout
    (named,) = [line for line in done.stdout.splitlines() if "could not be read" in line]
    assert named.startswith("# lvl_2/node_2 could not be read: lvl_2/node_2/embeddings"), named
    assert "inner chunk (1, 0)" in named, named
    assert done.stderr.splitlines() == ["ecpfs-viewer: error: lvl_2/node_2 could not be read; the answer is for "
                                        "every other node (see the lines starting '# lvl_' or the unreadable key of "
                                        "--json)"], done.stderr


def test_a_genuinely_empty_entry_is_checked_as_the_fill_value(two_clusters_copy: Path) -> None:
    """The one entry that stands for a chunk not stored: read as the fill value (zeros), so `check`
    finds the index sound and `search` answers."""
    shard = sharded_leaf(two_clusters_copy)
    set_shard_entry(shard, 2, 1, 2**64 - 1, 2**64 - 1)
    done = run_cli("search", str(two_clusters_copy), "--item", "4", env={"PYTHONWARNINGS": "error"})
    assert done.returncode == 0 and done.stdout.startswith("4\t0"), done.stdout + done.stderr
