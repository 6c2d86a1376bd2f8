"""A remote index's documents kept in the cache folder: a second open asks the server far less, a
changed index is never served from the cache, a server without validators is not cached."""

from __future__ import annotations

import os
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


def test_the_second_open_reads_its_documents_from_the_cache_folder(served_index: Path) -> None:
    with remote_fixtures.serve_static(served_index) as (base, tally):
        first = _check(f"{base}/idx.zarr")
        asked_first = tally.total
        second = _check(f"{base}/idx.zarr")
        asked_second = tally.total - asked_first
    assert second == first
    assert cache_usage().stores == 1
    # the second check asks for the fingerprint and the sampled embeddings only
    assert asked_second * 3 < asked_first, (asked_first, asked_second)


def test_a_changed_index_is_never_served_from_the_cache(served_index: Path) -> None:
    index = served_index / "idx.zarr"
    with remote_fixtures.serve_static(served_index) as (base, tally):
        _check(f"{base}/idx.zarr")
        assert summarize(index_hierarchy(open_store(f"{base}/idx.zarr"))).total_items == 2500
        # rewritten as an insert would: total_items grows; the server's Last-Modified has whole
        # seconds, so the new document is dated a minute on
        zarr.open_array(str(index / "info" / "total_items"), mode="r+")[()] = 2501
        value = index / "info" / "total_items" / "c"
        later = os.stat(value).st_mtime + 60
        os.utime(value, (later, later))
        before = tally.total
        changed = index_hierarchy(open_store(f"{base}/idx.zarr"))
        assert summarize(changed).total_items == 2501
        assert changed.store.zarr_store.documents is not None
        assert changed.store.zarr_store.documents.hits == 0  # nothing kept from before the change
        assert tally.total - before > 5


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


def test_an_object_store_index_is_listed_and_read_from_the_cache_the_second_time(cloud) -> None:
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
    assert first_stats.listings > 0 and second_stats.listings == 0
    assert second_stats.requests * 2 < first_stats.requests


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


def test_a_later_process_takes_the_level_statistics_from_the_cache_folder(served_index: Path) -> None:
    """A second check parses no node document: every level's statistics were kept, and read back
    equal (a refresh computes them again, from the server)."""
    from ecpfs_viewer.model.ecpfs import shared_level_stats

    def check(url: str, refresh: bool = False) -> tuple[list[object], list[str], int]:
        h = index_hierarchy(open_store(url))
        if refresh:
            h.refresh("")
        summary = summarize(h)
        report = validate(h, max_node_reads=8)  # the sampled nodes' documents come from the cache folder
        levels = [shared_level_stats(h, level, summary).to_dict() for level in range(1, summary.levels + 1)]
        documents = h.store.zarr_store.documents
        hits = 0 if documents is None else documents.hits
        h.store.close()
        return levels, [f.describe() for f in report.findings] + list(report.checked), hits

    with remote_fixtures.serve_static(served_index) as (base, tally):
        first = check(f"{base}/idx.zarr")
        second = check(f"{base}/idx.zarr")
        before = tally.total
        refreshed = check(f"{base}/idx.zarr", refresh=True)
        asked_refreshed = tally.total - before
    leaves = first[0][-1]["node_count"]
    assert second[:2] == first[:2] and refreshed[:2] == first[:2]
    assert second[2] < leaves / 2, (second[2], leaves)  # the leaves' documents were not read, even from the cache
    assert asked_refreshed > 2 * leaves  # refreshed: asked the server again
