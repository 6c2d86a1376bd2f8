"""The interpreter's own costs in a long job: C-level steps kept short, and the collector's passes.

A worker running Python gives the lock up every switch interval, between two bytecodes; but one
C call never does: sorting 40,000 tuples or freeing 40,000 parsed node documents at once is one
step that keeps the GUI thread waiting (100-200 ms at 40,000 nodes). Long jobs do such steps in
pieces.

A command builds and keeps hundreds of thousands of objects (a 200,000-node level's listing, the
node entries measured from it); with the default threshold a young pass runs every 2,000 new
objects (700 before Python 3.13) and the middle generation's every ten of them, and they walked
what the command kept again and again (benchmarks/README.md: a third of ``info --leaf-sizes`` at
10M items). A command runs with :func:`fewer_collections`. The window collects on its own timer
with automatic collection off (gui/runtime/collector.py); there this does nothing.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Any

#: objects freed per step by :func:`release_gradually`
RELEASE_STEP = 1000


def release_gradually(items: list[Any], step: int = RELEASE_STEP) -> None:
    """Empty a large list a slice at a time, so freeing what it held never is one long step.

    Only what nothing else refers to is freed, as with ``del``; the list is left empty."""
    while items:
        del items[-step:]


#: new objects between two young passes while :func:`fewer_collections` holds (Python's default: 2,000)
YOUNG_PASS_AFTER = 50_000


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Young passes after YOUNG_PASS_AFTER new objects rather than 700 while this holds, where
    collection is automatic; the thresholds before are put back after. Cycles are still collected,
    later: what they hold stays that much longer."""
    if not gc.isenabled():
        yield
        return
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], YOUNG_PASS_AFTER), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
