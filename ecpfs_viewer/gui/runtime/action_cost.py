"""What one user action read from the store: requests, bytes and time, for the status bar.

Workers wrap their model call in :func:`measured`. The store's counter tallies that call's reads
by context (its thread, the event-loop tasks and worker threads it starts), not as a difference
of store-wide totals, so reads of other actions running at the same time are not charged to it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ecpfs_viewer.model.formatting import count_noun, format_bytes
from ecpfs_viewer.model.storage.opening import IOStats, OpenedStore


@dataclass(frozen=True)
class Measured:
    """A worker's result with the I/O it caused and how long it took."""

    value: Any
    cost: IOStats
    seconds: float
    started: float = 0.0  # time.perf_counter() when the action began (0: unknown)

    @property
    def cached(self) -> bool:
        """Nothing was requested: everything came from what was read before."""
        return self.cost.requests == 0 and self.cost.bytes_read == 0

    def describe(self, action: str) -> str:
        took = f"{self.seconds * 1000:.0f} ms"
        cost = self.cost
        if self.cached:
            return f"{action}: from cache (no request) in {took}"
        if cost.requests == cost.listings:  # a listing reads no object: "0 B read" would puzzle
            return f"{action}: {count_noun(cost.listings, 'directory listing')} in {took}"
        text = f"{action}: {count_noun(cost.requests, 'request')}, {format_bytes(cost.bytes_read)} read in {took}"
        if cost.listings:
            text += f" ({count_noun(cost.listings, 'directory listing')} among them)"
        return text


def measured(store: OpenedStore, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Measured:
    """Call fn(*args, **kwargs) and return its value with the store I/O it made and the time it took."""
    started = time.perf_counter()
    with store.counter.action() as tally:
        value = fn(*args, **kwargs)
    return Measured(value, tally.stats(), time.perf_counter() - started, started)
