"""What an index says about its own build: how many items it was built with, and its leaf target.

An index does not record its build's size (``info/total_items`` grows with every insert) nor its
``target_cluster_items``. Its representatives tell them, when they were chosen by ``offset``
(spec §3.3): ``rep_item_ids`` is then ``0, t, 2t, …, (R−1)t`` for a build of ``N`` rows with
``R = ceil(N / t)``, so ``t`` is their step and ``N`` lies in ``((R−1)t, Rt]`` (and below the next
item id). Items with ids under the low end were built, at or over the high end inserted; the at
most ``t − 1`` ids between are counted in neither. Random representatives say only that ``N`` is
more than the largest of them; then the user gives the size (``--built-items``) or it is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ecpfs_viewer.model.search.index import IndexReader


@dataclass(frozen=True)
class BuildOrigin:
    """The build's size as far as it can be told: ids below ``built_below`` were built, ids at or
    above ``inserted_from`` were inserted (None: unknown); ``target`` the leaf size it aimed for."""

    built_below: int | None
    inserted_from: int | None
    target: int
    rep_selection: str  # "offset" or "random" (for the rebuild command)
    how: str  # one sentence: where these figures come from

    @property
    def known(self) -> bool:
        return self.built_below is not None and self.inserted_from is not None

    def to_dict(self) -> dict[str, Any]:
        return {"built_below": self.built_below, "inserted_from": self.inserted_from, "target": self.target,
                "rep_selection": self.rep_selection, "how": self.how}


def build_origin(reader: IndexReader, *, built_items: int | None = None, target: int | None = None) -> BuildOrigin:
    """The build's size and leaf target from ``rep_item_ids`` (or as the user gives them)."""
    reps = np.asarray(reader.hierarchy.read_array("rep_item_ids"), np.int64).ravel()
    next_id = _next_item_id(reader)
    r = len(reps)
    step = int(reps[1] - reps[0]) if r > 1 else 0
    offset = r > 1 and reps[0] == 0 and step > 0 and bool(np.array_equal(reps, np.arange(r, dtype=np.int64) * step))
    selection = "offset" if offset or r <= 1 else "random"
    if target is None:
        if offset:
            target = step
        elif built_items is not None and r:
            target = max(1, -(-built_items // r))
        else:  # what a build of the items now held would need to keep this many representatives
            target = max(1, round((reader.total_items or 0) / max(1, r)))
    if built_items is not None:
        return BuildOrigin(built_items, built_items, target, selection, f"{built_items:,} built items, as given")
    if offset:
        low = max((r - 1) * step + 1, int(reps[-1]) + 1)
        high = min(r * step, next_id) if next_id is not None else r * step
        if high <= low:
            how = f"{low:,} built items (offset representatives every {step:,} ids)"
            return BuildOrigin(low, low, target, selection, how)
        how = (f"between {low:,} and {high:,} built items ({r:,} offset representatives every {step:,} ids); "
               f"ids {low:,}..{high - 1:,} are counted neither as built nor as inserted")
        return BuildOrigin(low, high, target, selection, how)
    how = ("the build's size is unknown: the index does not record it and its representatives were not chosen "
           f"by offset (more than {int(reps.max()) + 1 if r else 0:,} items); give it with --built-items")
    return BuildOrigin(None, None, target, selection, how)


def _next_item_id(reader: IndexReader) -> int | None:
    try:
        return int(np.asarray(reader.hierarchy.read_array("info/next_item_id")).reshape(()))
    except Exception:  # a gap we cannot read is reported by the summary; the bound just stays open
        return None
