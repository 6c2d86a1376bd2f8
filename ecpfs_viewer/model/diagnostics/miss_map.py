"""The miss map: where along the tree a recall sweep lost its true neighbours.

For every true neighbour a search missed, its path (item -> leaf -> ancestors up to level 1) is
checked against the nodes that search opened (its trace): the miss is counted at the first node
on the path the search never opened, i.e. where the query turned away from it. A neighbour whose
whole path was opened (its leaf was scanned, yet it was not kept: a tie at the k-th score) is
counted at its leaf and said so. Counts are kept per node, per ``search_exp``.

Use :class:`MissMapCollector` as ``recall_sweep(observe=collector.observe)``: each search costs a
few array appends; :meth:`MissMapCollector.result` then places every miss at once (numpy: one
binary search for the leaves, the map's parent arrays for the ancestors).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ecpfs_viewer.model.diagnostics.index_map import IndexMap, MapOverlay
from ecpfs_viewer.model.ecpfs.paths import node_path
from ecpfs_viewer.model.search.item_map import ItemMap
from ecpfs_viewer.model.search.recall import SweepSearch

_LEVEL_SHIFT = 32  # node key = level << 32 | node_id (node ids are uint32)


@dataclass(frozen=True)
class LostAt:
    """One row of "where recall is lost": a node, the misses counted there and their share of all."""

    level: int
    node_id: int
    misses: int
    share: float

    @property
    def path(self) -> str:
        return node_path(self.level, self.node_id)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "level": self.level, "node_id": self.node_id, "misses": self.misses,
                "share": round(self.share, 4)}


@dataclass(frozen=True, eq=False)
class MissMap:
    """Misses per node of an :class:`IndexMap`, per search_exp (arrays aligned with the map's bands)."""

    index_map: IndexMap
    search_exps: tuple[int, ...]
    counts: dict[int, dict[int, np.ndarray]]  # search_exp -> level -> int64 misses per node
    misses: dict[int, int]  # search_exp -> true neighbours missed
    scanned: dict[int, int] = field(default_factory=dict)  # ... of them in a leaf the search scanned
    unlocated: dict[int, int] = field(default_factory=dict)  # ... of them in no leaf of the map

    def per_node(self, search_exp: int | None = None) -> dict[int, np.ndarray]:
        """Misses per node, level -> array; summed over every search_exp when None."""
        exps = self.search_exps if search_exp is None else (search_exp,)
        out = {band.level: np.zeros(len(band), np.int64) for band in self.index_map.levels}
        for exp in exps:
            for level, arr in self.counts.get(exp, {}).items():
                out[level] += arr
        return out

    def total(self, search_exp: int | None = None) -> int:
        exps = self.search_exps if search_exp is None else (search_exp,)
        return sum(self.misses.get(exp, 0) for exp in exps)

    def node_misses(self, level: int, node_id: int, search_exp: int | None = None) -> int:
        i = self.index_map.band(level).index_of(node_id)
        return 0 if i is None else int(self.per_node(search_exp)[level][i])

    def lost(self, top: int = 20, search_exp: int | None = None) -> list[LostAt]:
        """The nodes where most neighbours were lost, most first, with their share of all misses."""
        total = self.total(search_exp)
        if not total:
            return []
        rows: list[tuple[int, int, int]] = []
        for level, arr in self.per_node(search_exp).items():
            ids = self.index_map.band(level).node_ids
            best = np.flatnonzero(arr)[np.argsort(-arr[arr > 0], kind="stable")][:top]
            rows.extend((int(arr[i]), level, int(ids[i])) for i in best)
        rows.sort(key=lambda r: (-r[0], r[1], r[2]))
        return [LostAt(level, node, n, n / total) for n, level, node in rows[:top]]

    def overlay(self, search_exp: int | None = None) -> MapOverlay:
        label = "all search_exp" if search_exp is None else f"search_exp {search_exp}"
        values = {level: arr.astype(np.float64) for level, arr in self.per_node(search_exp).items()}
        return MapOverlay("misses", f"misses ({label})", values,
                          f"true neighbours lost at the node (its first node the search never opened), {label}",
                          variant="" if search_exp is None else str(search_exp))

    def to_dict(self, top: int = 20) -> dict[str, Any]:
        return {"rule": "each missed true neighbour counts at the first node on its path the search never opened",
                "per_search_exp": [{"search_exp": exp, "misses": self.misses.get(exp, 0),
                                    "in_scanned_leaf": self.scanned.get(exp, 0),
                                    "unlocated": self.unlocated.get(exp, 0),
                                    "lost_at": [row.to_dict() for row in self.lost(top, exp)]}
                                   for exp in self.search_exps],
                "lost_at": [row.to_dict() for row in self.lost(top)]}


class MissMapCollector:
    """Gathers the misses of a recall sweep (``observe``) and places them on the map (``result``)."""

    def __init__(self, index_map: IndexMap, item_map: ItemMap | None = None) -> None:
        self.index_map = index_map
        self.item_map = item_map
        self._missed: list[np.ndarray] = []
        self._search: list[int] = []  # per missed item: the search it belongs to
        self._exps: list[int] = []  # per search
        self._opened: list[np.ndarray] = []  # per search: sorted node keys it opened

    def observe(self, search: SweepSearch) -> None:
        missed = search.missed
        no = len(self._exps)
        self._exps.append(search.search_exp)
        if not missed:
            self._opened.append(np.zeros(0, np.int64))
            return
        keys = np.fromiter(((v.level << _LEVEL_SHIFT) | v.node_id for v in search.result.trace), np.int64,
                           len(search.result.trace))
        self._opened.append(keys)
        self._missed.append(np.fromiter(missed, np.int64, len(missed)))
        self._search.extend([no] * len(missed))

    def result(self, item_map: ItemMap | None = None) -> MissMap:
        """Place every miss gathered so far; ``item_map`` (complete) says which leaf holds each item."""
        item_map = item_map if item_map is not None else self.item_map
        index_map = self.index_map
        exps = tuple(dict.fromkeys(self._exps))
        counts = {exp: {band.level: np.zeros(len(band), np.int64) for band in index_map.levels} for exp in exps}
        misses = dict.fromkeys(exps, 0)
        scanned = dict.fromkeys(exps, 0)
        unlocated = dict.fromkeys(exps, 0)
        if not self._missed or item_map is None:
            for exp, n in _per_exp(self._exps, self._search):
                misses[exp] += n
                unlocated[exp] += n if item_map is None else 0
            return MissMap(index_map, exps, counts, misses, scanned, unlocated)
        items = np.concatenate(self._missed)
        search_of = np.asarray(self._search, np.int64)
        exp_of = np.asarray(self._exps, np.int64)[search_of]
        for exp in exps:
            misses[exp] = int((exp_of == exp).sum())
        leaf = _leaves_of(item_map, items)
        n_levels = len(index_map.levels)
        leaves_band = index_map.band(n_levels)
        order = np.argsort(leaves_band.node_ids, kind="stable")
        at = np.minimum(np.searchsorted(leaves_band.node_ids[order], leaf), max(len(leaves_band) - 1, 0))
        known = (leaf >= 0) & (leaves_band.node_ids[order][at] == leaf) if len(leaves_band) else leaf < -1
        for exp in exps:
            unlocated[exp] = int(((exp_of == exp) & ~known).sum())
        items, search_of, exp_of = items[known], search_of[known], exp_of[known]
        # positions of each miss's path nodes, leaf level up: -1 above a break (an unlinked node)
        pos = np.full((items.size, n_levels), -1, np.int64)
        pos[:, n_levels - 1] = order[at[known]]
        for depth in range(n_levels - 1, 0, -1):
            below = pos[:, depth]
            parents = index_map.levels[depth].parents
            pos[:, depth - 1] = np.where(below >= 0, parents[np.maximum(below, 0)], -1)
        # was each path node opened by its own search? (absent nodes above a break count as opened)
        opened = np.ones(pos.shape, bool)
        lengths = np.fromiter((a.size for a in self._opened), np.int64, len(self._opened))
        all_keys = (np.repeat(np.arange(len(self._opened), dtype=np.int64), lengths) << 40) | (
            np.concatenate(self._opened) if lengths.sum() else np.zeros(0, np.int64))
        all_keys.sort()
        for depth, band in enumerate(index_map.levels):
            here = pos[:, depth] >= 0
            key = (search_of[here] << 40) | np.int64(band.level << _LEVEL_SHIFT) | band.node_ids[pos[here, depth]]
            found = np.searchsorted(all_keys, key)
            found = np.minimum(found, max(all_keys.size - 1, 0))
            opened[here, depth] = all_keys[found] == key if all_keys.size else False
        closed = ~opened
        first = np.where(closed.any(axis=1), closed.argmax(axis=1), n_levels - 1)
        for exp in exps:
            mine = exp_of == exp
            scanned[exp] = int((mine & ~closed.any(axis=1)).sum())
            for depth, band in enumerate(index_map.levels):
                sel = mine & (first == depth)
                np.add.at(counts[exp][band.level], pos[sel, depth], 1)
        return MissMap(index_map, exps, counts, misses, scanned, unlocated)


def _per_exp(exps: Sequence[int], search_of: Sequence[int]) -> list[tuple[int, int]]:
    tally: dict[int, int] = {}
    for s in search_of:
        tally[exps[s]] = tally.get(exps[s], 0) + 1
    return list(tally.items())


def _leaves_of(item_map: ItemMap, items: np.ndarray) -> np.ndarray:
    """The leaf holding each item (the first one for a duplicated id); -1 for an item in no leaf."""
    ids = item_map.item_ids
    if not ids.size:
        return np.full(items.size, -1, np.int64)
    at = np.minimum(np.searchsorted(ids, items), ids.size - 1)
    return np.where(ids[at] == items, item_map.leaves[at], -1)
