"""Sampling stored items in one pass over the leaves' item_ids, in memory that does not grow with the index.

``sample_items`` draws n items by rank among the index's distinct item ids, ascending. Doing that
from the locator's item map holds every id with its leaf and row (hundreds of megabytes at ten
million items). Nearly every index numbers its items 0..N-1, where the item of rank r is r: the
ranks are drawn from the item count the index declares, the wanted ids are looked for in one
pass over every leaf's item_ids, and that pass checks what the draw assumed (exactly N distinct
ids, all in 0..N-1, one bit per id). Nothing declared is trusted: when the check fails the
caller samples from the item map as before, and the same seed gives the same items either way.

The pass also keeps every leaf's ids, leaf after leaf, while they fit in :data:`HELD_IDS_BYTES`,
so the exact search that follows in a recall sweep reads only the leaves' embeddings.
"""

from __future__ import annotations

import bisect
import contextlib
from collections import deque
from collections.abc import Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ecpfs_viewer.model.ecpfs.paths import node_array_path
from ecpfs_viewer.model.search.item_map import _Run
from ecpfs_viewer.model.search.leaf_helper import start_helper
from ecpfs_viewer.model.search.locate import LEAF_BATCH
from ecpfs_viewer.model.search.results import Reporter
from ecpfs_viewer.model.storage.side_by_side import carry_context

if TYPE_CHECKING:
    from ecpfs_viewer.model.search.reader import NodeReader

#: Bytes of item ids a sampling pass keeps for the exact search after it (a bound, not a share of the index).
HELD_IDS_BYTES = 64 << 20
#: Batches of item_ids read ahead of the one being checked: one, in one thread. From a cold disk
#: each batch's own reads go side by side (model/storage/side_by_side.py); more batches at once
#: only made their threads take turns at the interpreter lock from a warm one.
READ_AHEAD = 1


@dataclass(frozen=True)
class DenseSample:
    """The drawn items with their leaf and row, and the leaf order the pass kept (None past the bound)."""

    items: np.ndarray  # int64, ascending
    leaves: np.ndarray  # int64, the leaf of each item
    rows: np.ndarray  # int64, its row there
    leaf_order: tuple[np.ndarray, np.ndarray, np.ndarray] | None  # (ids, leaves, sizes) as the locator gives


class _Held:
    """Each leaf's ids as read, as long as they fit the bound (uint32 where every id does)."""

    def __init__(self) -> None:
        self.ids: list[np.ndarray] | None = []
        self.leaves: list[np.ndarray] = []
        self.sizes: list[np.ndarray] = []
        self.nbytes = 0

    def add(self, run: _Run) -> None:
        if self.ids is None:
            return
        ids = run.ids.astype(np.uint32, copy=False) if not len(run.ids) or int(run.ids.max()) <= 0xFFFFFFFF else run.ids
        self.nbytes += ids.nbytes + run.leaves.nbytes + run.sizes.nbytes
        if self.nbytes > HELD_IDS_BYTES:
            self.ids, self.leaves, self.sizes = None, [], []
            return
        self.ids.append(ids)
        self.leaves.append(run.leaves)
        self.sizes.append(run.sizes)

    def order(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        if self.ids is None:
            return None
        empty = np.zeros(0, np.int64)
        return (np.concatenate(self.ids) if self.ids else empty,  # uint32 where every id fits, as the locator's
                np.concatenate(self.leaves) if self.leaves else empty,
                np.concatenate(self.sizes) if self.sizes else empty)


def _batches(index: NodeReader, leaves: list[int], reporter: Reporter) -> Generator[tuple[int, _Run]]:
    """(leaves done, the run of their ids) for each LEAF_BATCH of leaves' item_ids, in leaf order.
    On two CPUs a helper process reads the far end (model/search/leaf_helper.py) while this one
    reads from the first leaf up, one batch after another; alone, READ_AHEAD batches are read in
    another thread while the last one is checked."""
    helper = start_helper(index.store, index.levels, leaves, 0, LEAF_BATCH)
    if helper is None:
        yield from _read_ahead(index, leaves, reporter)
        return
    at = 0
    try:
        while at < len(leaves):
            if at >= helper.low():
                taken = helper.take(at)
                if taken is not None:
                    for n, (run, _) in enumerate(taken, 1):
                        if n == len(taken):
                            at = len(leaves)
                        elif len(run.leaves):  # its last leaf read
                            at = bisect.bisect_right(leaves, int(run.leaves[-1]), at)
                        yield at, run
                    return
                yield from _read_ahead(index, leaves[at:], reporter, at)  # a gap (it never leaves one)
                return
            end = helper.next_end(at)
            yield end, _run_of(leaves[at:end], _read(index, leaves[at:end], reporter))
            at = end
    finally:
        helper.stop()


def _read(index: NodeReader, part: list[int], reporter: Reporter) -> list[np.ndarray | None]:
    return index.arrays.read([node_array_path(index.levels, leaf, "item_ids") for leaf in part],
                             reporter.check, keep_documents=False)


def _run_of(part: list[int], arrays: list[np.ndarray | None]) -> _Run:
    present = [(leaf, ids.reshape(-1)) for leaf, ids in zip(part, arrays, strict=True) if ids is not None]
    return _Run.of_leaves([leaf for leaf, _ in present], [ids for _, ids in present])


def _read_ahead(index: NodeReader, leaves: list[int], reporter: Reporter, before: int = 0
                ) -> Iterator[tuple[int, _Run]]:
    """The batches of leaves, READ_AHEAD read in another thread while the last one is checked
    (``before``: leaves done before these)."""
    starts = list(range(0, len(leaves), LEAF_BATCH))
    read = carry_context(_read)  # what is read counts for the caller's action
    with ThreadPoolExecutor(READ_AHEAD, thread_name_prefix="sample-items") as pool:
        pending: deque[tuple[int, Future[list[np.ndarray | None]]]] = deque()
        try:
            for n in range(len(starts)):
                while len(pending) < READ_AHEAD and n + len(pending) < len(starts):
                    at = starts[n + len(pending)]
                    pending.append((at, pool.submit(read, index, leaves[at:at + LEAF_BATCH], reporter)))
                at, future = pending.popleft()
                part = leaves[at:at + LEAF_BATCH]
                yield before + at + len(part), _run_of(part, future.result())
        finally:
            for _, future in pending:
                future.cancel()


def dense_sample(index: NodeReader, n: int, seed: int, reporter: Reporter) -> DenseSample | None:
    """n items drawn as ``sample_items`` draws them, found in one pass; None when the index's ids
    are not exactly 0..N-1 for the N it declares (or it declares none): sample from the item map."""
    declared = index.total_items
    if declared is None or declared < 1:
        return None
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(declared, size=min(n, declared), replace=False).astype(np.int64))
    seen = np.zeros((declared + 7) // 8, np.uint8)  # one bit per id 0..N-1
    found: dict[int, tuple[int, int]] = {}
    held = _Held()
    leaves = index.leaf_ids()
    total = 0
    reporter.report("reading item ids", 0, len(leaves))
    batches = contextlib.closing(_batches(index, leaves, reporter))  # a pass left early stops its helper now
    with batches as runs:
        for done, run in runs:
            ids = run.ids
            total += len(ids)
            if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= declared or total > declared):
                return None
            byte, bit = ids >> 3, (np.uint8(1) << (ids & 7).astype(np.uint8))
            if (seen[byte] & bit).any():
                return None  # an id stored twice: ranks are not ids (twice in one batch: counted below)
            np.bitwise_or.at(seen, byte, bit)
            for item, place in run.lookup(chosen).items():
                found.setdefault(item, place)
            held.add(run)
            reporter.report("reading item ids", done, len(leaves))
    if total != declared or int(np.bitwise_count(seen).sum(dtype=np.int64)) != declared or len(found) != len(chosen):
        return None  # as many ids as declared, as many of them distinct: none stored twice
    places = [found[int(i)] for i in chosen]
    return DenseSample(chosen, np.array([p[0] for p in places], np.int64), np.array([p[1] for p in places], np.int64),
                       held.order())
