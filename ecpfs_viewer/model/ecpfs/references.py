"""Which children the level above points to, and which of those do not exist.

The one part of the index description that decodes data: the parents' ``node_ids`` arrays (the
root's rows for level 1). Validation decodes a sample of the same arrays and tallies them with the
same :class:`ChildReferences`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.findings import Finding
from ecpfs_viewer.model.ecpfs.levels import MAX_LISTED_IDS, LevelStats, level_stats
from ecpfs_viewer.model.ecpfs.summary import IndexSummary, summarize
from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.tasks import Counted, ProgressCallback
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def spread(items: list[Any], count: int) -> list[Any]:
    """At most count items, evenly spread and always including the first and the last."""
    if len(items) <= count:
        return items
    picks = np.linspace(0, len(items) - 1, count).round().astype(int)
    return [items[i] for i in sorted(set(picks.tolist()))]


class ChildReferences:
    """Child ids referenced by decoded parents' node_ids, and values that name no representative."""

    def __init__(self, representatives: int | None, invalid_per_parent: int, ids: set[int] | None = None) -> None:
        self.representatives = representatives
        self.invalid_per_parent = invalid_per_parent
        self.ids: set[int] = set() if ids is None else ids
        self.first_ids = 0  # ids 0 .. first_ids-1 are referenced too (the root's rows), kept as a count
        self.invalid: list[tuple[str, int]] = []  # (parent path, value) with value >= R

    @classmethod
    def of_root(cls, fan_out: int | None) -> ChildReferences:
        """What the root references: one child per row of index_root/embeddings (node 0 .. ns-1).

        Kept as a count, not a set: a hostile root may declare 10^15 rows.
        """
        refs = cls(None, 0)
        refs.first_ids = max(fan_out or 0, 0)
        return refs

    @property
    def referenced(self) -> int:
        """Distinct child ids referenced."""
        return self.first_ids + sum(1 for i in self.ids if not 0 <= i < self.first_ids)

    def add(self, parent: str, stored: np.ndarray) -> np.ndarray:
        """Tally a parent's node_ids as read; returns them decoded (flat int64) for further checks."""
        values = stored.astype(np.int64).ravel()
        self.ids.update(values.tolist())
        if self.representatives is not None:
            bad = values[values >= self.representatives]
            self.invalid += [(parent, int(v)) for v in bad[: self.invalid_per_parent]]
        return values

    def missing(self, present: np.ndarray, limit: int = MAX_LISTED_IDS) -> list[int]:
        """Referenced ids absent from present (a level's node ids), ascending, the first limit of them."""
        have = set(present.tolist())
        found = sorted(i for i in self.ids - have if not 0 <= i < self.first_ids)
        in_range: list[int] = []
        for i in range(self.first_ids):  # ends within len(present) + limit steps
            if len(in_range) >= limit:
                break
            if i not in have:
                in_range.append(i)
        return sorted(in_range + found)[:limit]

    def missing_count(self, present: np.ndarray) -> int:
        """How many referenced ids are absent from present (exact, without listing them)."""
        have = set(present.tolist())
        below = sum(1 for i in have if 0 <= i < self.first_ids)
        return self.first_ids - below + sum(1 for i in self.ids - have if not 0 <= i < self.first_ids)


@dataclass(frozen=True)
class ReferencedChildren:
    """Which nodes of a level the level above points to, and which of those do not exist.

    Unlike :func:`level_stats` this decodes the ``node_ids`` arrays of the level above.
    """

    level: int
    referenced: int  # distinct child ids referenced
    missing_ids: tuple[int, ...]  # referenced but absent (first MAX_LISTED_IDS)
    missing_count: int
    invalid_refs: tuple[tuple[str, int], ...]  # (parent path, id) with id >= R
    parents_read: int
    parents_total: int
    findings: tuple[Finding, ...] = ()

    @property
    def complete(self) -> bool:
        return self.parents_read == self.parents_total


def referenced_children(
    h: Hierarchy,
    level: int,
    summary: IndexSummary | None = None,
    stats: LevelStats | None = None,
    *,
    max_parents: int | None = None,
    progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
) -> ReferencedChildren:
    """Decode the parents' node_ids (root rows for level 1) and find referenced-but-missing children."""
    summary = summary if summary is not None else summarize(h)
    stats = stats if stats is not None else level_stats(h, level, summary)
    findings: list[Finding] = []
    if level == 1:
        refs = ChildReferences.of_root(summary.fan_out)
        parents_read = parents_total = 1
    else:
        above = level_stats(h, level - 1, summary)
        parents = [above.node_path(int(i)) for i in above.node_ids]
        parents_total = len(parents)
        if max_parents is not None:
            parents = spread(parents, max_parents)
        refs = ChildReferences(summary.representatives, 10)
        parents_read = 0
        for done, parent in enumerate(parents):
            if cancel is not None and cancel.is_set():
                break
            try:
                refs.add(parent, h.read_array(f"{parent}/node_ids"))
            except Exception as exc:
                findings.append(Finding(fc.UNREADABLE_DATA,
                                        f"{parent}/node_ids", f"unreadable: {describe_exception(exc)}"))
                continue
            parents_read += 1
            if progress is not None:
                progress(Counted(done + 1, len(parents), "parents' node_ids decoded"))
    present = stats.present_ids()
    missing = refs.missing(present)
    return ReferencedChildren(
        level,
        refs.referenced,
        tuple(missing),
        refs.missing_count(present),
        tuple(refs.invalid[:MAX_LISTED_IDS]),
        parents_read,
        parents_total,
        tuple(findings),
    )
