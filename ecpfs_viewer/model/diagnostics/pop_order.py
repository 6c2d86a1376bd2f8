"""The order in which eCP search pops the tree, for many queries at once (spec §4.3, vectorised).

The heap pops entries on their own score, not an accumulated one, so it is Prim's order over the
tree: of two entries, the one whose branch below their deepest common ancestor has the lower
*worst* score pops first. That order is the lexicographic order of a per-entry key: the weak suffix
maxima of the scores along the entry's path (each score not below every later one), largest first,
padded with -inf; an ancestor's key sorts before its descendants', as it pops first. A child scoring
exactly its parent's bottleneck keeps both values: it waits in the heap behind better siblings.
Scores come from the same float64 dot products
rounded to float32 as :func:`~ecpfs_viewer.model.search.reader.row_dots`, so every key is the
score ecp_search compares; only exactly equal keys (the heap then goes by push order) are left to
ecp_search itself, by the callers.

An *entry* is one row of a parent's embeddings (``index_root`` for level 1): a node referenced
twice is two entries, as it is two heap entries.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ecpfs_viewer.model.search.reader import NodeReader, as_float32, on_stored_vectors, score_block

NEG = np.float32(-np.inf)


@dataclass(frozen=True)
class EntryLevel:
    """The entries of one level (1-based): representative rows, the node each names, its parent entry."""

    level: int
    vectors: np.ndarray  # (n, dim) float64, for exact float32-rounded dots
    sq_norms: np.ndarray  # (n,) float32
    node: np.ndarray  # (n,) int64 node id at this level
    parent: np.ndarray  # (n,) int64 entry index at level - 1 (-1 at level 1)
    exists: np.ndarray  # (n,) bool: the node is stored (a missing one is popped and skipped)
    child_start: np.ndarray  # (n,) int64 first child entry at level + 1 (leaf level: 0)
    child_stop: np.ndarray  # (n,) int64


@dataclass(frozen=True)
class EntryTree:
    """Every heap entry an index can produce, level by level, with the leaves' item counts."""

    metric: str
    is_normalized: bool
    levels: tuple[EntryLevel, ...]
    leaf_items: np.ndarray  # (entries of the leaf level,) items in the leaf each leaf entry names

    @property
    def depth(self) -> int:
        return len(self.levels)

    @on_stored_vectors
    def scores(self, level: int, queries: np.ndarray, q_sq: np.ndarray, rows: slice | np.ndarray | None = None
               ) -> np.ndarray:
        """(queries, entries) lower-is-better scores of a level's entries (or some rows of them)."""
        lv = self.levels[level - 1]
        vectors = lv.vectors if rows is None else lv.vectors[rows]
        norms = lv.sq_norms if rows is None else lv.sq_norms[rows]
        dots = as_float32(queries.astype(np.float64) @ vectors.T)
        return score_block(self.metric, self.is_normalized, dots, norms, q_sq.reshape(-1, 1))

    def leaf_entry_of_node(self) -> dict[int, int]:
        """Leaf node id -> its first entry (the path a stored item takes home)."""
        leaf = self.levels[-1]
        out: dict[int, int] = {}
        for entry, node in enumerate(leaf.node.tolist()):
            out.setdefault(node, entry)
        return out

    def node_path(self, leaf_entries: np.ndarray) -> np.ndarray:
        """(n, depth) node id at each level on the path to each leaf entry."""
        out = np.empty((len(leaf_entries), self.depth), np.int64)
        entry = np.asarray(leaf_entries, np.int64)
        for lv in reversed(self.levels):
            out[:, lv.level - 1] = lv.node[entry]
            entry = lv.parent[entry]
        return out


@on_stored_vectors
def entry_tree(index: NodeReader, leaf_items: dict[int, int]) -> EntryTree:
    """The entries of every level, from index_root and each internal node (read once, cached);
    ``leaf_items`` gives the items of each stored leaf (a leaf absent from it is missing)."""
    depth = index.levels
    root = index.root
    n0 = len(root.ids)
    vectors, norms, nodes = root.vectors.astype(np.float64), root.sq_norms, root.ids.astype(np.int64)
    parent = np.full(n0, -1, np.int64)
    built: list[EntryLevel] = []
    for level in range(1, depth + 1):
        if level == depth:
            exists = np.fromiter((int(n) in leaf_items for n in nodes.tolist()), bool, len(nodes))
            zeros = np.zeros(len(nodes), np.int64)
            built.append(EntryLevel(level, vectors, norms, nodes, parent, exists, zeros, zeros))
            break
        read = index.nodes(level, sorted(set(nodes.tolist())))
        by_id = dict(zip(sorted(set(nodes.tolist())), read, strict=True))
        starts, stops = np.zeros(len(nodes), np.int64), np.zeros(len(nodes), np.int64)
        exists = np.zeros(len(nodes), bool)
        child_vectors, child_norms, child_nodes, child_parent = [], [], [], []
        at = 0
        for entry, node_id in enumerate(nodes.tolist()):
            data = by_id[node_id]
            starts[entry] = at
            if data is not None:
                exists[entry] = True
                child_vectors.append(data.vectors)
                child_norms.append(data.sq_norms)
                child_nodes.append(data.ids)
                child_parent.append(np.full(len(data.ids), entry, np.int64))
                at += len(data.ids)
            stops[entry] = at
        built.append(EntryLevel(level, vectors, norms, nodes, parent, exists, starts, stops))
        dim = root.vectors.shape[1]
        vectors = np.concatenate(child_vectors).astype(np.float64) if child_vectors else np.zeros((0, dim))
        norms = np.concatenate(child_norms) if child_norms else np.zeros(0, np.float32)
        nodes = np.concatenate(child_nodes).astype(np.int64) if child_nodes else np.zeros(0, np.int64)
        parent = np.concatenate(child_parent) if child_parent else np.zeros(0, np.int64)
    leaf = built[-1]
    items = np.array([leaf_items.get(int(n), 0) for n in leaf.node.tolist()], np.int64)
    return EntryTree(index.metric, index.is_normalized, tuple(built), items)


def append_score(keys: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Keys of children: drop the parent's trailing suffix maxima below the child's score, append it.

    ``keys`` is (n, depth), ``scores`` (n,); the result is (n, depth)."""
    keep = keys >= scores[:, None]
    at = keep.sum(axis=1)
    out = np.where(keep, keys, NEG)
    out[np.arange(len(scores)), at] = scores
    return out


def first_keys(n: int, depth: int) -> np.ndarray:
    """The key of 'nothing popped yet' for n queries."""
    return np.full((n, depth), NEG, np.float32)


def key_le(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise a <= b in lexicographic order (column 0 first)."""
    less = np.zeros(len(a), bool)
    equal = np.ones(len(a), bool)
    for c in range(a.shape[1]):
        less |= equal & (a[:, c] < b[:, c])
        equal &= a[:, c] == b[:, c]
    out: np.ndarray = less | equal
    return out


def sibling_ties(scores: np.ndarray) -> np.ndarray:
    """Per row of (queries, siblings) scores: do two siblings score exactly alike (push order decides)?"""
    if scores.shape[1] < 2:
        return np.zeros(len(scores), bool)
    ordered = np.sort(scores, axis=1)
    tied: np.ndarray = (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
    return tied


def lex_order(keys: np.ndarray, *major: np.ndarray) -> np.ndarray:
    """Indices sorting rows by the given major arrays, then by key (column 0 first)."""
    columns = [keys[:, c] for c in reversed(range(keys.shape[1]))]
    order: np.ndarray = np.lexsort((*columns, *reversed(major)))
    return order
