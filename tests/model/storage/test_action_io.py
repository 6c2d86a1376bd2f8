"""Each action's I/O is counted for that action only: reads of overlapping actions are not in it."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ecpfs_viewer.model.storage.opening import open_memory, open_store
from ecpfs_viewer.model.storage.side_by_side import carry_context
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def test_an_action_counts_only_its_own_reads_while_another_overlaps() -> None:
    store = open_memory({"a": b"x" * 10, "b": b"y" * 1000})
    started, other_done = threading.Event(), threading.Event()

    def background() -> None:
        started.wait(5)
        store.read_many(["b", "b", "b"])  # through zarr's event loop, in another thread
        other_done.set()

    thread = threading.Thread(target=background)
    thread.start()
    with store.counter.action() as tally:
        started.set()
        assert other_done.wait(5)  # the other thread's reads happen inside this action's time
        store.read("a")
    thread.join(5)
    assert (tally.stats().requests, tally.stats().bytes_read) == (1, 10)
    assert store.stats().requests == 4 and store.stats().bytes_read == 3010  # the totals see everything


def test_reads_in_worker_threads_count_for_the_action_that_started_them(two_clusters_path: Path) -> None:
    store = open_store(two_clusters_path)
    with store.counter.action() as tally, ThreadPoolExecutor(2) as pool:
        list(pool.map(carry_context(store.read), ["zarr.json", "lvl_1/zarr.json"]))
    assert tally.stats().requests == 2 and tally.stats().bytes_read > 0
    with store.counter.action() as untracked, ThreadPoolExecutor(2) as pool:
        list(pool.map(store.read, ["zarr.json"]))  # no context carried: not this action's read
    assert untracked.stats().requests == 0


def test_nested_actions_and_cached_metadata(two_clusters_path: Path) -> None:
    h = Hierarchy(open_store(two_clusters_path))
    with h.store.counter.action() as outer:
        with h.store.counter.action() as inner:
            h.details("lvl_1/node_0/embeddings")
        first = inner.stats()
        with h.store.counter.action() as again:
            h.details("lvl_1/node_0/embeddings")
    assert first.requests >= 1 and first.bytes_read > 0
    assert again.stats().requests == 0  # metadata read before: cached
    assert outer.stats().requests == first.requests
