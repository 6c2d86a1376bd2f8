"""How items moved between the leaves of two builds of the same items.

Both leaf assignments come from the item maps (item id -> leaf, for a whole index, vectorised);
on the ids both hold, one contingency table (leaf of A x leaf of B, counted with numpy in O(items))
gives everything exactly: the pair agreement (of the item pairs sharing a leaf in A, the share that
also share one in B), the adjusted Rand index, and the flows. A leaf of A "stays" in the leaf of B
that took most of its items; every other cell of its row is a flow of items that moved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ecpfs_viewer.model.search.item_map import ItemMap

#: Flows listed (the largest first).
TOP_FLOWS = 50


class LeafFlow(NamedTuple):
    """Items of one leaf of A that went to a leaf of B other than the one most of them went to."""

    leaf_a: int
    leaf_b: int
    items: int
    leaf_a_size: int  # items of leaf_a held by both indexes
    stayed_in: int  # the leaf of B most of leaf_a's items went to

    def to_dict(self) -> dict[str, int]:
        return self._asdict()


@dataclass(frozen=True)
class Migration:
    """The leaf assignments of two indexes compared on the item ids both hold."""

    common_items: int
    only_a: int
    only_b: int
    leaves_a: int  # leaves of A holding a common item
    leaves_b: int
    pair_agreement: float  # pairs sharing a leaf in A that share one in B
    pair_agreement_b: float  # the same from B's side
    adjusted_rand: float
    moved_items: int  # items outside their A leaf's main B leaf
    flows: tuple[LeafFlow, ...]  # the largest first, at most TOP_FLOWS
    flow_count: int  # every non-main cell of the table

    @property
    def moved_share(self) -> float:
        return self.moved_items / self.common_items if self.common_items else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "flows"}
        out["moved_share"] = self.moved_share
        out["flows"] = [f.to_dict() for f in self.flows]
        return out


def _first_of_each(item_map: ItemMap) -> tuple[np.ndarray, np.ndarray]:
    """Unique ids and the leaf holding each (the first leaf for a duplicated id, as a lookup answers)."""
    ids = item_map.item_ids
    if not len(ids):
        return ids, item_map.leaves
    first = np.concatenate(([True], ids[1:] != ids[:-1]))
    return ids[first], item_map.leaves[first]


def _pairs(counts: np.ndarray) -> int:
    c = counts.astype(np.int64)
    return int((c * (c - 1) // 2).sum())


def compare_assignments(a: ItemMap, b: ItemMap, top: int = TOP_FLOWS) -> Migration:
    """Pair agreement, adjusted Rand index and the largest flows of two item maps, exactly."""
    ids_a, leaves_a = _first_of_each(a)
    ids_b, leaves_b = _first_of_each(b)
    common, at_a, at_b = np.intersect1d(ids_a, ids_b, assume_unique=True, return_indices=True)
    n = len(common)
    la_values, la = np.unique(leaves_a[at_a], return_inverse=True)
    lb_values, lb = np.unique(leaves_b[at_b], return_inverse=True)
    cells, counts = np.unique(la.astype(np.int64) * len(lb_values) + lb, return_counts=True)
    row, col = cells // max(len(lb_values), 1), cells % max(len(lb_values), 1)
    row_sums = np.bincount(la, minlength=len(la_values))
    col_sums = np.bincount(lb, minlength=len(lb_values))
    together = _pairs(counts)
    pairs_a, pairs_b = _pairs(row_sums), _pairs(col_sums)
    all_pairs = n * (n - 1) // 2
    expected = pairs_a * pairs_b / all_pairs if all_pairs else 0.0
    ceiling = (pairs_a + pairs_b) / 2
    ari = 1.0 if ceiling == expected else (together - expected) / (ceiling - expected)
    # each row's main cell: the largest count (ties: the lowest leaf of B), cells are sorted by row then column
    order = np.lexsort((col, -counts, row))
    main = np.zeros(len(cells), bool)
    firsts = order[np.concatenate(([True], row[order][1:] != row[order][:-1]))] if len(cells) else order
    main[firsts] = True
    main_col = np.empty(len(la_values), np.int64)
    main_col[row[firsts]] = col[firsts]
    others = np.flatnonzero(~main)
    biggest = others[np.lexsort((col[others], row[others], -counts[others]))][:top]
    flows = tuple(LeafFlow(int(la_values[row[i]]), int(lb_values[col[i]]), int(counts[i]), int(row_sums[row[i]]),
                           int(lb_values[main_col[row[i]]])) for i in biggest)
    return Migration(n, len(ids_a) - n, len(ids_b) - n, len(la_values), len(lb_values),
                     together / pairs_a if pairs_a else 1.0, together / pairs_b if pairs_b else 1.0, float(ari),
                     int(counts[others].sum()), flows, len(others))
