"""Self-reachability: does a search with an item's own vector at search_exp 1 reach its own leaf?

At search_exp 1 (k = 1) the search stops at the first leaf it pops that holds items, so the
question is which leaf entry has the lowest pop key (:mod:`pop_order`). That is answered for a
batch of items at once, level by level, keeping only entries whose key is not above the key of the
item's own path (only those can pop before its own leaf): about the work of one search per item,
in BLAS. An item whose first leaf is decided by exactly equal keys is searched with ecp_search.
An item that does not reach home is a *stray*; the level named is the first on the path where the
search's node differs from the item's own (lvl_1 = it chose another top-level branch).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ecpfs_viewer.model.blas import one_blas_thread
from ecpfs_viewer.model.diagnostics.pop_order import (
    EntryTree,
    append_score,
    entry_tree,
    first_keys,
    key_le,
    lex_order,
    sibling_ties,
)
from ecpfs_viewer.model.formatting import format_percent
from ecpfs_viewer.model.search.ecp import ecp_search
from ecpfs_viewer.model.search.index import IndexReader
from ecpfs_viewer.model.search.queries import sample_items
from ecpfs_viewer.model.search.reader import as_float32, on_stored_vectors, score_block
from ecpfs_viewer.model.search.results import ProgressCallback, Reporter, SearchCancelled, SearchParams
from ecpfs_viewer.model.tasks import checkpoint

#: Indexes with more items than this are checked on a seeded sample of SAMPLE items.
FULL_LIMIT = 250_000
SAMPLE = 20_000
BATCH = 8192
SLACK = np.float32(1e-5)  # relative widening of the pruning bound (only speed depends on it)


@dataclass(frozen=True)
class ReachabilityReport:
    """Which items find their way home; strays with the leaf they reached and the level they left."""

    levels: int
    checked: int
    total_items: int
    sampled: bool
    seed: int
    stray_items: np.ndarray  # int64 item ids, ascending
    stray_leaf: np.ndarray  # their own leaf
    stray_reached: np.ndarray  # the first leaf their search scanned (-1: none)
    stray_level: np.ndarray  # 1-based level where the path leaves their branch
    searched: int = 0  # items settled by ecp_search (exactly equal keys)
    leaf_items: dict[int, int] = field(default_factory=dict)  # items of every stored leaf

    @property
    def strays(self) -> int:
        return len(self.stray_items)

    @property
    def reached(self) -> int:
        return self.checked - self.strays

    @property
    def share_reached(self) -> float:
        return self.reached / self.checked if self.checked else 1.0

    def by_level(self) -> dict[int, int]:
        """Strays per level at which they leave their branch (levels with none left out)."""
        levels, counts = np.unique(self.stray_level, return_counts=True)
        return {int(lv): int(c) for lv, c in zip(levels, counts, strict=True)}

    def strays_of_leaf(self, leaf: int) -> list[dict[str, int]]:
        """The items of one leaf that would not find their way home, as table rows."""
        rows = np.flatnonzero(self.stray_leaf == leaf)
        return [self._row(int(j)) for j in rows]

    def stray_rows(self) -> list[dict[str, int]]:
        return [self._row(j) for j in range(self.strays)]

    def _row(self, j: int) -> dict[str, int]:
        return {"item_id": int(self.stray_items[j]), "leaf": int(self.stray_leaf[j]),
                "reached_leaf": int(self.stray_reached[j]), "leaves_branch_at": int(self.stray_level[j])}

    def per_leaf(self) -> dict[int, int]:
        """Strays per own leaf (for the map)."""
        leaves, counts = np.unique(self.stray_leaf, return_counts=True)
        return {int(a): int(c) for a, c in zip(leaves, counts, strict=True)}

    def sentence(self) -> str:
        """The rule and the numbers, for check --deep and the pages."""
        what = f"{_n(self.checked)} items" if not self.sampled else \
            f"{_n(self.checked)} sampled items (seed {self.seed}) of {_n(self.total_items)}"
        if not self.strays:
            return f"all {what} reach their own leaf with search_exp 1"
        share = format_percent(self.strays / self.checked, 1)
        levels = "; ".join(f"{c} leave their branch at lvl_{lv}" for lv, c in sorted(self.by_level().items()))
        return (f"{_n(self.strays)} of {what} ({share}) do not reach their own leaf with "
                f"search_exp 1; {levels}")

    def to_dict(self) -> dict[str, Any]:
        return {"checked": self.checked, "total_items": self.total_items, "sampled": self.sampled,
                "seed": self.seed, "reached": self.reached, "share_reached": self.share_reached,
                "strays_by_level": {f"lvl_{lv}": c for lv, c in self.by_level().items()},
                "settled_by_search": self.searched, "text": self.sentence(), "strays": self.stray_rows()}


def _n(value: int) -> str:
    return f"{value:,}"


@on_stored_vectors
def self_reachability(index: IndexReader, *, seed: int = 0, full_limit: int = FULL_LIMIT, sample: int = SAMPLE,
                      progress: ProgressCallback | None = None, cancel: threading.Event | None = None
                      ) -> ReachabilityReport:
    """Check every item (a seeded sample of ``sample`` when the index holds more than ``full_limit``)."""
    reporter = Reporter(progress, cancel)
    total = index.total_items if index.total_items is not None else 0
    sampled = total > full_limit
    if sampled:
        item_map = index.locator.read_everything(reporter)
        assert item_map is not None  # read_everything reads every leaf
        leaves, counts = np.unique(item_map.leaves, return_counts=True)
        total = len(item_map)
        chosen = sample_items(index, sample, seed, progress, cancel)
        items = np.asarray(chosen.self_ids, np.int64)
        vectors = chosen.vectors
        where = item_map.lookup(items)
        own_leaf = np.array([where[int(i)][0] for i in items], np.int64)
    else:
        items, own_leaf, vectors = _all_items(index, reporter)
        leaves, counts = np.unique(own_leaf, return_counts=True)
        total = len(items)
    present = dict.fromkeys(index.leaf_ids(), 0)
    present.update({int(a): int(c) for a, c in zip(leaves, counts, strict=True)})
    tree = entry_tree(index, present)
    home = tree.leaf_entry_of_node()
    own_entry = np.array([home.get(int(n), -1) for n in own_leaf.tolist()], np.int64)
    reached_leaf = np.full(len(items), -1, np.int64)
    tied = np.zeros(len(items), bool)
    for start in range(0, len(items), BATCH):
        part = slice(start, start + BATCH)
        with one_blas_thread():  # thousands of skinny products: waking BLAS threads costs more than they give
            reached_leaf[part], tied[part] = _first_leaves(tree, vectors[part], own_entry[part], cancel)
        reporter.report("searching with each item's own vector", min(start + BATCH, len(items)), len(items))
    for j in np.flatnonzero(tied).tolist():  # exactly equal keys: the heap's push order decides
        checkpoint(cancel, SearchCancelled)
        result = ecp_search(index, vectors[j], SearchParams(k=1, search_exp=1))
        scanned = [v.node_id for v in result.trace if v.is_leaf]
        reached_leaf[j] = own_leaf[j] if own_leaf[j] in scanned else (scanned[0] if scanned else -1)
    stray = np.flatnonzero(reached_leaf != own_leaf)
    level = _leaving_level(tree, own_entry[stray], reached_leaf[stray], home)
    order = np.argsort(items[stray], kind="stable")
    stray = stray[order]
    return ReachabilityReport(index.levels, len(items), total, sampled, seed, items[stray], own_leaf[stray],
                              reached_leaf[stray], level[order], int(tied.sum()), present)


def _all_items(index: IndexReader, reporter: Reporter) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every stored item: ids, own leaf, vectors (leaves read in blocks, not cached)."""
    leaf_ids = index.leaf_ids()
    ids, leaves, vectors = [], [], []
    step = 256
    for start in range(0, len(leaf_ids), step):
        block = leaf_ids[start:start + step]
        for leaf, node in zip(block, index.read_nodes(index.levels, block, reporter), strict=True):
            if node is not None and len(node.ids):
                ids.append(node.ids)
                leaves.append(np.full(len(node.ids), leaf, np.int64))
                vectors.append(node.vectors)
        reporter.report("reading leaves", min(start + step, len(leaf_ids)), len(leaf_ids))
    if not ids:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, index.dim), np.float32)
    return np.concatenate(ids), np.concatenate(leaves), np.concatenate(vectors)


@on_stored_vectors
def _own_keys(tree: EntryTree, queries: np.ndarray, q_sq: np.ndarray, own_entry: np.ndarray) -> np.ndarray:
    """Each query's pop key of its own leaf entry (the bound); +inf where it has none."""
    depth = tree.depth
    chain = np.empty((len(queries), depth), np.int64)
    entry = np.where(own_entry < 0, 0, own_entry)
    for lv in reversed(tree.levels):
        chain[:, lv.level - 1] = entry
        entry = np.where(entry < 0, 0, lv.parent[entry])
    keys = first_keys(len(queries), depth)
    q64 = queries.astype(np.float64)
    for lv in tree.levels:
        rows = chain[:, lv.level - 1]
        dots = as_float32(np.einsum("ij,ij->i", q64, lv.vectors[rows]))
        scores = score_block(tree.metric, tree.is_normalized, dots, lv.sq_norms[rows], q_sq)
        keys = append_score(keys, scores)
    with np.errstate(invalid="ignore"):
        widened = np.where(np.isfinite(keys), keys + np.abs(keys) * SLACK + SLACK, keys)
    widened[own_entry < 0] = np.inf
    out: np.ndarray = widened.astype(np.float32)
    return out


@on_stored_vectors
def _first_leaves(tree: EntryTree, queries: np.ndarray, own_entry: np.ndarray,
                  cancel: threading.Event | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For each query the leaf node of the first stored, non-empty leaf entry it pops, and whether
    that was decided by exactly equal keys (then ecp_search decides)."""
    n = len(queries)
    q_sq = as_float32(np.einsum("ij,ij->i", queries.astype(np.float64), queries.astype(np.float64)))
    bound = _own_keys(tree, queries, q_sq, own_entry)
    # level 1: every root entry of every query
    first = tree.levels[0]
    scores = tree.scores(1, queries, q_sq)
    qidx = np.repeat(np.arange(n), len(first.node))
    entry = np.tile(np.arange(len(first.node)), n)
    keys = append_score(first_keys(len(qidx), tree.depth), scores.reshape(-1))
    tied = sibling_ties(scores)
    keep = key_le(keys, bound[qidx])
    qidx, entry, keys = qidx[keep], entry[keep], keys[keep]
    leaf = tree.levels[-1]
    for lv in tree.levels[:-1]:
        ok = lv.exists[entry] & (lv.child_stop[entry] > lv.child_start[entry])
        qidx, entry, keys = qidx[ok], entry[ok], keys[ok]
        order = np.argsort(entry, kind="stable")
        qidx, entry, keys = qidx[order], entry[order], keys[order]
        bounds = np.flatnonzero(np.diff(entry)) + 1
        parts_q, parts_e, parts_k = [], [], []
        for a, b in zip(np.r_[0, bounds].tolist(), np.r_[bounds, len(entry)].tolist(), strict=True):
            if a == b:
                continue
            checkpoint(cancel, SearchCancelled)  # between groups: a late GUI thread goes first
            e = int(entry[a])
            lo, hi = int(lv.child_start[e]), int(lv.child_stop[e])
            group = qidx[a:b]
            child_scores = tree.scores(lv.level + 1, queries[group], q_sq[group], slice(lo, hi))
            if lv.level + 1 == tree.depth:  # leaf entries: a key grows with the score, so the best child
                usable = leaf.exists[lo:hi] & (tree.leaf_items[lo:hi] > 0)  # of each pair is its first
                if not usable.any():
                    continue
                scores_ok = np.where(usable, child_scores, np.float32(np.inf))
                best = scores_ok.argmin(axis=1)
                low = scores_ok[np.arange(len(best)), best]
                tied[group[(scores_ok == low[:, None]).sum(axis=1) > 1]] = True
                parts_q.append(group)
                parts_e.append(lo + best)
                parts_k.append(append_score(keys[a:b], low))
                continue
            tied[group[sibling_ties(child_scores)]] = True
            width = hi - lo
            cq = np.repeat(group, width)
            ck = append_score(np.repeat(keys[a:b], width, axis=0), child_scores.reshape(-1))
            ce = np.tile(np.arange(lo, hi), b - a)
            keep = key_le(ck, bound[cq])
            parts_q.append(cq[keep])
            parts_e.append(ce[keep])
            parts_k.append(ck[keep])
        if not parts_q:
            qidx, entry, keys = np.zeros(0, np.int64), np.zeros(0, np.int64), keys[:0]
            break
        qidx, entry, keys = np.concatenate(parts_q), np.concatenate(parts_e), np.concatenate(parts_k)
    if len(entry):
        ok = leaf.exists[entry] & (tree.leaf_items[entry] > 0)
        qidx, entry, keys = qidx[ok], entry[ok], keys[ok]
    reached = np.full(n, -1, np.int64)
    if len(entry) == 0:
        return reached, np.ones(n, bool)
    order = lex_order(keys, qidx)
    qidx, entry, keys = qidx[order], entry[order], keys[order]
    head = np.r_[True, qidx[1:] != qidx[:-1]]
    reached[qidx[head]] = leaf.node[entry[head]]
    same_next = np.r_[(qidx[1:] == qidx[:-1]) & (keys[1:] == keys[:-1]).all(axis=1), False]
    tied[qidx[head & same_next]] = True
    tied[np.setdiff1d(np.arange(n), qidx[head])] = True  # nothing left under the bound: let search say
    return reached, tied


def _leaving_level(tree: EntryTree, own_entry: np.ndarray, reached_leaf: np.ndarray, home: dict[int, int]
                   ) -> np.ndarray:
    """1-based level of the first node on the search's path that is not on the item's own path."""
    if len(own_entry) == 0:
        return np.zeros(0, np.int64)
    reached_entry = np.array([home.get(int(n), -1) for n in reached_leaf.tolist()], np.int64)
    own_path = tree.node_path(np.where(own_entry < 0, 0, own_entry))
    their_path = tree.node_path(np.where(reached_entry < 0, 0, reached_entry))
    differ = own_path != their_path
    level: np.ndarray = np.where(differ.any(axis=1), differ.argmax(axis=1) + 1, tree.depth)
    return level.astype(np.int64)
