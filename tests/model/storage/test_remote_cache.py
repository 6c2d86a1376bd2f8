"""An index on a plain web server keeps nothing in the cache folder (it proves a document
unchanged only when asked for it): a later process asks again and answers for the index as it
is now; consolidated metadata still answers the documents it holds within one process. An
object store keeps its documents, each checked against a listing made in the later process
(tests/model/storage/test_remote_stamps.py holds the rest of that)."""

from __future__ import annotations

from pathlib import Path

import pytest
import remote_fixtures
import zarr
from index_factory import build_clustered_index

from ecpfs_viewer.model.ecpfs import level_stats, summarize
from ecpfs_viewer.model.ecpfs.derived_listing import index_hierarchy
from ecpfs_viewer.model.storage.disk_cache import cache_usage
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.validation import validate

pytest.importorskip("obstore", reason="obstore is part of the remote extra")


def _check(url: str) -> tuple[list[str], list[int]]:
    """A whole check and the leaf level's statistics, as the CLI's `check` and `info` run them."""
    h = index_hierarchy(open_store(url))
    summary = summarize(h)
    report = validate(h, max_node_reads=64)
    leaves = level_stats(h, summary.levels, summary)
    h.store.close()
    return [f.describe() for f in report.findings], [leaves.node_count, leaves.total_rows]


@pytest.fixture
def served_index(tmp_path: Path) -> Path:
    """A folder served over loopback HTTP holding idx.zarr (about 100 leaves)."""
    folder = tmp_path / "site"
    folder.mkdir()
    build_clustered_index(folder, 2500, 8)
    return folder


def test_a_remote_index_keeps_nothing_in_the_cache_folder_for_a_later_process(served_index: Path) -> None:
    """A plain HTTP server proves a document unchanged only when asked for it: a later process
    asks again (the same answers), and nothing of the index is written to the cache folder."""
    with remote_fixtures.serve_static(served_index) as (base, tally):
        first = _check(f"{base}/idx.zarr")
        asked_first = tally.total
        second = _check(f"{base}/idx.zarr")
        asked_second = tally.total - asked_first
    assert second == first
    assert cache_usage().files == 0
    assert asked_second >= asked_first - 20, (asked_first, asked_second)


def test_swapped_leaves_of_a_remote_index_are_read_afresh(served_index: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The documents read by an earlier process (leaves' item_ids, metadata) never answer for a
    later one: two leaf folders swapped under unchanged root documents give the fresh answer."""
    from ecpfs_viewer.model.search import IndexReader

    index = served_index / "idx.zarr"
    item = int(IndexReader(index).node(2, 0).ids[0])  # type: ignore[union-attr]
    with remote_fixtures.serve_static(served_index) as (base, _):
        assert IndexReader(open_store(f"{base}/idx.zarr")).locate(item).leaf == 0
        _check(f"{base}/idx.zarr")
        first, second = index / "lvl_2" / "node_0", index / "lvl_2" / "node_15"
        aside = first.with_name("swapping")
        first.rename(aside)
        second.rename(first)
        aside.rename(second)
        assert IndexReader(open_store(f"{base}/idx.zarr")).locate(item).leaf == 15
        monkeypatch.setenv("ECPFS_VIEWER_CACHE", str(tmp_path / "empty"))
        assert IndexReader(open_store(f"{base}/idx.zarr")).locate(item).leaf == 15


def test_a_server_that_sends_no_validators_is_not_cached(served_index: Path) -> None:
    with remote_fixtures.serve_without_validators(served_index) as (base, tally):
        first = _check(f"{base}/idx.zarr")
        asked_first = tally.total
        assert _check(f"{base}/idx.zarr") == first
        asked_second = tally.total - asked_first
    assert cache_usage().files == 0
    assert asked_second >= asked_first - 20  # every document asked for again (no HEADs this time)


@pytest.mark.filterwarnings("ignore:Consolidated metadata is currently not part")
def test_consolidated_metadata_answers_the_documents_it_holds_within_the_cap(served_index: Path) -> None:
    from ecpfs_viewer.model.ecpfs.index_cache import seed_consolidated
    from ecpfs_viewer.model.limits import Limits, set_limits

    with remote_fixtures.serve_without_validators(served_index) as (base, tally):
        plain = _check(f"{base}/idx.zarr")
        asked_plain = tally.total
        zarr.consolidate_metadata(str(served_index / "idx.zarr"))
        consolidated = _check(f"{base}/idx.zarr")
        asked_consolidated = tally.total - asked_plain
        set_limits(Limits(max_listed_chunks=5))
        try:  # a consolidated document is believed no further than a listing
            capped = index_hierarchy(open_store(f"{base}/idx.zarr"))
            assert seed_consolidated(capped) == 5
        finally:
            set_limits(None)
    assert consolidated == plain
    assert asked_consolidated * 2 < asked_plain, (asked_plain, asked_consolidated)


def test_an_object_store_index_keeps_its_documents_checked_by_listing(cloud) -> None:
    """An object store lists each object's ETag: a second browse answers the documents the first
    kept (checked against a listing of their level made now), with fewer reads and the same tree."""
    from ecpfs_viewer.model.storage.options import RemoteOptions

    def browse() -> tuple[object, object]:
        h = index_hierarchy(open_store(cloud.url("ecpfs", "two_clusters.zarr"),
                                       remote=RemoteOptions(endpoint=cloud.endpoint)))
        kinds = remote_fixtures.tree_kinds(h)
        stats = h.store.stats()
        h.store.close()
        return kinds, stats

    first, first_stats = browse()
    second, second_stats = browse()
    assert second == first
    assert first_stats.listings > 0 and second_stats.listings == first_stats.listings
    reads = [s.requests - s.listings for s in (first_stats, second_stats)]
    assert reads[1] < reads[0], reads
    assert cache_usage().files >= 1


def test_a_refresh_asks_the_server_again(served_index: Path) -> None:
    with remote_fixtures.serve_static(served_index) as (base, tally):
        _check(f"{base}/idx.zarr")
        h = index_hierarchy(open_store(f"{base}/idx.zarr"))
        summary = summarize(h)
        leaves = level_stats(h, summary.levels, summary)
        before = tally.total
        h.refresh("")  # F5
        assert h.store.zarr_store.documents is None
        again = level_stats(h, summary.levels, summary)
        assert again.node_count == leaves.node_count
        assert tally.total - before >= leaves.node_count  # every leaf document asked for again


def test_a_later_process_computes_the_level_statistics_from_the_server_again(served_index: Path) -> None:
    """Level statistics of a remote index are not kept across processes (its documents could have
    changed unseen): a second check reads the leaves' documents again and says the same."""
    from ecpfs_viewer.model.ecpfs import shared_level_stats

    def check(url: str) -> tuple[list[object], list[str]]:
        h = index_hierarchy(open_store(url))
        summary = summarize(h)
        report = validate(h, max_node_reads=8)
        levels = [shared_level_stats(h, level, summary).to_dict() for level in range(1, summary.levels + 1)]
        h.store.close()
        return levels, [f.describe() for f in report.findings] + list(report.checked)

    with remote_fixtures.serve_static(served_index) as (base, tally):
        first = check(f"{base}/idx.zarr")
        before = tally.total
        second = check(f"{base}/idx.zarr")
        asked_second = tally.total - before
    leaves = first[0][-1]["node_count"]
    assert second == first
    assert asked_second > leaves  # the leaves' documents asked for again
    assert cache_usage().files == 0
