"""`info` tells the sum of leaf sizes from the cache folder while no leaf document changed; on an
index of more leaves than it reads itself, it says the sum is not yet known and a background
process reads it for the next `info`; `--leaf-sizes` always reads them."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from command_runs import run  # tests/ is on sys.path (conftest)
from file_events import stats_and_reads
from index_factory import build_clustered_index, hierarchy

from ecpfs_viewer.cli import read as cli_read
from ecpfs_viewer.model.ecpfs.leaf_stats_cache import LEAF_STATS
from ecpfs_viewer.model.storage import stamps
from ecpfs_viewer.model.storage.disk_cache import STORES, cache_root

CACHED = "; from the cache folder: no leaf document changed since)"


@pytest.fixture
def index(tmp_path: Path) -> Path:
    return build_clustered_index(tmp_path, 3000, 8)


def _sum_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("Sum of leaf sizes:"))


def _source(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, _ = run(capsys, "info", "--json", *argv)
    assert code == 0
    return str(json.loads(out)["leaf_sizes"])


def test_a_later_info_takes_the_leaf_sizes_from_the_cache_while_no_leaf_changed(
        capsys: pytest.CaptureFixture[str], index: Path) -> None:
    code, first, _ = run(capsys, "info", str(index))
    assert code == 0 and _sum_line(first) == "Sum of leaf sizes: 3000 (matches Total Items 3000)"
    _, again, _ = run(capsys, "info", str(index))
    assert _sum_line(again) == "Sum of leaf sizes: 3000 (matches Total Items 3000" + CACHED
    assert again.replace(CACHED, ")") == first  # every other line as read
    assert _source(capsys, str(index)) == "cached"
    assert _source(capsys, str(index), "--leaf-sizes") == "read"  # the full read when asked for
    leaf = next(iter(sorted((index / "lvl_2").glob("node_*")))) / "embeddings" / "zarr.json"
    leaf.write_bytes(leaf.read_bytes())  # rewritten in place: its stamp changed
    assert _source(capsys, str(index)) == "read"
    assert _source(capsys, str(index)) == "cached"  # kept afresh by the read before


def _kept() -> list[Path]:
    return list((cache_root() / STORES).glob("*/*." + LEAF_STATS.format(level=2)))


def test_a_large_leaf_level_is_read_in_the_background_and_said_so(
        capsys: pytest.CaptureFixture[str], index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_read, "BACKGROUND_LEAVES", 10)  # this index has more leaves
    code, out, _ = run(capsys, "info", str(index))
    leaves = len(list((index / "lvl_2").glob("node_*")))
    assert code == 0 and _sum_line(out) == (
        f"Sum of leaf sizes: not yet known ({leaves:,} leaves: their documents are being read in the background "
        "for the next `info`; `info --leaf-sizes` reads them now)")
    deadline = time.monotonic() + 120  # a deadline for the wait, not a timing assertion
    while not _kept() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _kept(), "the background reader kept no leaf sizes"
    _, again, _ = run(capsys, "info", str(index))
    assert _sum_line(again) == "Sum of leaf sizes: 3000 (matches Total Items 3000" + CACHED


def test_a_remote_or_switched_off_read_is_not_taken_from_the_cache(capsys: pytest.CaptureFixture[str],
                                                                   index: Path) -> None:
    run(capsys, "info", str(index))
    assert _source(capsys, str(index), "--no-leaf-sizes") == "not read"


@pytest.mark.parametrize("document", ["zarr.json", "embeddings/zarr.json", "item_ids/zarr.json"])
def test_the_cached_sizes_are_not_answered_right_after_any_leaf_document_changes(
        capsys: pytest.CaptureFixture[str], index: Path, monkeypatch: pytest.MonkeyPatch, document: str) -> None:
    monkeypatch.setattr(stamps, "PARALLEL_STATS", 1)  # checked by several threads, as at 10M
    monkeypatch.setattr(stamps, "STAT_COLD_SECONDS", 0.0)  # on a cold disk
    run(capsys, "info", str(index))
    assert _source(capsys, str(index)) == "cached"
    last = max((index / "lvl_2").glob("node_*"), key=lambda p: int(p.name[5:])) / document
    last.write_bytes(last.read_bytes())  # the last leaf's document rewritten in place
    assert _source(capsys, str(index)) == "read"


def test_while_a_background_reader_runs_a_later_info_starts_no_other(
        capsys: pytest.CaptureFixture[str], index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One reader of a level at a time: while one holds the claim (here the test holds it), `info`
    says the sizes are being read and starts none; the claim is handed to the reader it starts, and
    let go when that reader ends."""
    from ecpfs_viewer.model.ecpfs.leaf_stats_cache import claim_leaf_reader
    from ecpfs_viewer.model.ecpfs.summary import summarize

    monkeypatch.setattr(cli_read, "BACKGROUND_LEAVES", 10)  # this index has more leaves
    started: list[str] = []
    start = cli_read._read_in_background
    monkeypatch.setattr(cli_read, "_read_in_background",
                        lambda path, *claim: started.append(path) or start(path, *claim))
    h = hierarchy(index)
    summary = summarize(h)
    held = claim_leaf_reader(h, summary)
    assert not held.elsewhere and held.fd is not None
    try:
        assert claim_leaf_reader(h, summary).elsewhere  # another process's claim (a lock per open file)
        _, out, _ = run(capsys, "info", str(index))
        assert "their documents are being read in the background" in _sum_line(out) and started == []
    finally:
        os.close(held.fd)
    _, out, _ = run(capsys, "info", str(index))
    assert "their documents are being read in the background" in _sum_line(out) and started == [str(index)]
    deadline = time.monotonic() + 120  # a deadline for the wait, not a timing assertion
    while not _kept() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _kept(), "the background reader kept no leaf sizes"
    while (after := claim_leaf_reader(h, summary)).elsewhere and time.monotonic() < deadline:
        time.sleep(0.1)  # the reader still running (after keeping what it read)
    assert not after.elsewhere and after.fd is not None, "the claim outlived the reader"
    os.close(after.fd)


def test_each_leaf_document_is_stamped_right_before_it_is_read(
        capsys: pytest.CaptureFixture[str], index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The 600,000 documents of a 10M index's leaves were stamped in one pass, then read in another
    (each path walked twice, the second time cold): now each is statted by its read."""
    events = stats_and_reads(monkeypatch)
    assert _source(capsys, str(index), "--leaf-sizes") == "read"
    assert len(_kept()) == 1
    documents = {str(node / name) for node in (index / "lvl_2").glob("node_*")
                 for name in ("zarr.json", "embeddings/zarr.json", "item_ids/zarr.json")}
    stats = [at for at, (what, path) in enumerate(events) if path in documents and what != "read"]
    assert {events[at][1] for at in stats} == documents and len(stats) == len(documents)  # each once
    assert all(events[at][0] == "stat" and events[at + 1] == ("read", events[at][1]) for at in stats)
    assert _source(capsys, str(index)) == "cached"
