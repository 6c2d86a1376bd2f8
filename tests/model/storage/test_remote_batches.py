"""Batched remote reads: state owned by the Hierarchy / OpenedStore, documents read once, arrays
read as one batch with failures in place, and check decoding nodes in batches like one by one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import remote_fixtures
from locations import DATA  # tests/ is on sys.path (conftest)

from ecpfs_viewer.model.ecpfs import level_stats, summarize
from ecpfs_viewer.model.ecpfs.derived_listing import DerivedState, derived_state, index_hierarchy, is_derived
from ecpfs_viewer.model.storage.opening import listing_unavailable, open_store
from ecpfs_viewer.model.validation import data_checks, validate
from ecpfs_viewer.model.zarrtree.array_batch import read_whole_arrays
from ecpfs_viewer.model.zarrtree.hierarchy import ArrayReadError, Hierarchy

pytest.importorskip("obstore", reason="obstore is part of the remote extra")


def test_listing_state_lives_on_the_store_and_the_hierarchy(static_http_url: str, two_clusters_path: Path) -> None:
    remote = index_hierarchy(open_store(f"{static_http_url}/two_clusters.zarr"))
    local = Hierarchy(open_store(two_clusters_path))
    assert remote.store.unlisted is not None and listing_unavailable(remote.store)
    assert local.store.unlisted is None and not listing_unavailable(local.store)
    assert isinstance(derived_state(remote), DerivedState)
    remote.children("lvl_2")
    assert is_derived(remote, "lvl_2") and "lvl_2" in derived_state(remote)
    remote.refresh("lvl_2")
    assert not is_derived(remote, "lvl_2") and derived_state(remote).index  # the index flag outlives a level refresh
    remote.refresh("")
    assert derived_state(remote).index is None
    remote.children("lvl_2")
    assert is_derived(remote, "lvl_2") and derived_state(remote).index


def test_level_statistics_ask_no_document_twice() -> None:
    with remote_fixtures.serve_static(DATA) as (url, tally):
        h = index_hierarchy(open_store(f"{url}/two_clusters.zarr"))
        summary = summarize(h)
        first = level_stats(h, 1, summary)
        before = tally.total
        h.children("lvl_2")  # derived from lvl_1's node_ids: their documents are held, only chunks are read
        assert tally.total - before == first.node_count
        before = tally.total
        again = level_stats(h, 1, summary)
        assert tally.total == before  # every document of the level is held now
        assert again.to_dict() == first.to_dict()


def test_read_whole_arrays_gives_failures_in_place(static_http_url: str) -> None:
    h = index_hierarchy(open_store(f"{static_http_url}/two_clusters.zarr"))
    found = read_whole_arrays(h, ["lvl_1/node_0/node_ids", "lvl_9/node_0/embeddings", "lvl_2/node_1/item_ids"])
    assert isinstance(found[0], np.ndarray) and isinstance(found[2], np.ndarray)
    assert isinstance(found[1], ArrayReadError) and "lvl_9/node_0/embeddings" in str(found[1])
    local = Hierarchy(open_store(DATA / "two_clusters.zarr"))
    np.testing.assert_array_equal(found[2], local.read_array("lvl_2/node_1/item_ids"))


def test_check_in_batches_reports_like_one_node_at_a_time(two_clusters_copy: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    chunk = two_clusters_copy / "lvl_2" / "node_1" / "item_ids" / "c" / "0"
    chunk.write_bytes(b"not a chunk")
    batched = validate(Hierarchy(open_store(two_clusters_copy)))
    monkeypatch.setattr(data_checks, "BATCH_NODES", 1)
    monkeypatch.setenv("ECPFS_VIEWER_CACHE", str(two_clusters_copy.parent / "another cache"))  # reads it all again
    one_by_one = validate(Hierarchy(open_store(two_clusters_copy)))
    assert [f.describe() for f in batched.findings] == [f.describe() for f in one_by_one.findings]
    assert any("lvl_2/node_1/item_ids" in f.path and "cannot read data" in f.message for f in batched.errors)
    assert batched.checked == one_by_one.checked


def test_the_request_floor_takes_the_servers_quickest_answer() -> None:
    """Each answer waits 50 ms at the server: the floor's answer time is at least that, and no more
    than the running mean of the answers as this process took them."""
    delay = 0.05
    with remote_fixtures.serve_static(DATA, delay=delay) as (url, tally):
        store = open_store(f"{url}/two_clusters.zarr")
        store.read_many_or_errors([f"lvl_2/node_{i}/zarr.json" for i in range(4)] + ["info/zarr.json"])
        floor = store.request_floor()
        bounded = store.zarr_store.wrapped
    assert floor is not None and floor.requests == tally.total
    assert delay <= floor.answer_s <= bounded.typical_answer_s()
    assert floor.seconds == -(-floor.requests // floor.in_flight) * floor.answer_s
