"""What one user action read from the store: requests, bytes and time, for the status bar.

Workers wrap their model call in :func:`measured`; the counter snapshot before and after gives
the action's cost (approximate when two actions overlap, which the status bar accepts).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ecpfs_viewer.model.formatting import count_noun, format_bytes
from ecpfs_viewer.model.stores import IOStats, OpenedStore


@dataclass(frozen=True)
class Measured:
    """A worker's result with the I/O it caused and how long it took."""

    value: Any
    cost: IOStats
    seconds: float

    def describe(self, action: str) -> str:
        return (f"{action}: {count_noun(self.cost.requests, 'request')}, {format_bytes(self.cost.bytes_read)} read "
                f"in {self.seconds * 1000:.0f} ms")


def measured(store: OpenedStore, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Measured:
    """Call fn(*args, **kwargs) and return its value with the store I/O and time it took."""
    before = store.stats()
    started = time.perf_counter()
    value = fn(*args, **kwargs)
    return Measured(value, store.stats() - before, time.perf_counter() - started)
