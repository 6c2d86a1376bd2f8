"""Keeping each C-level step of a long job short, so the window gets the interpreter lock.

A worker running Python gives the lock up every switch interval, between two bytecodes; but one
C call never does: sorting 40,000 tuples or freeing 40,000 parsed node documents at once is one
step that keeps the GUI thread waiting (100-200 ms at 40,000 nodes). Long jobs do such steps in
pieces.
"""

from __future__ import annotations

from typing import Any

#: objects freed per step by :func:`release_gradually`
RELEASE_STEP = 1000


def release_gradually(items: list[Any], step: int = RELEASE_STEP) -> None:
    """Empty a large list a slice at a time, so freeing what it held never is one long step.

    Only what nothing else refers to is freed, as with ``del``; the list is left empty."""
    while items:
        del items[-step:]
