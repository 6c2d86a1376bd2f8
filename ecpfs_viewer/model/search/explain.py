"""Why eCP search missed a true neighbour: where its path left the search, and how far the search got.

For each exact neighbour the search did not return, walk its ancestor path from level 1 down and
find the first node the search never popped. That node's parent was expanded (or it is a root
entry), so it sat in the heap; its rank among its siblings says how far from the best it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ecpfs_viewer.model.ecpfs.paths import node_path
from ecpfs_viewer.model.errors import UserError, describe_exception
from ecpfs_viewer.model.search.locate import ItemLocation
from ecpfs_viewer.model.search.results import SearchHit, SearchResult
from ecpfs_viewer.model.tasks import Cancelled

if TYPE_CHECKING:
    from ecpfs_viewer.model.search.index import IndexReader


@dataclass(frozen=True)
class MissedNeighbour:
    """One true neighbour the search did not return, and why.

    ``reason``: 'not reached' (the search stopped first: ``left_at`` is the first ancestor it
    never popped, ranked ``rank`` of ``siblings`` under ``parent``; no rank when the parent cannot
    be read), 'unreachable' (no node above links to its leaf), 'path unreadable' (the nodes above
    its leaf could not be read: ``unread`` says why), or 'outranked' (its leaf was scanned but k
    items scored at least as well: a tie at the cut-off).
    """

    item_id: int
    score: float
    true_rank: int  # 1-based place in the exact list
    location: ItemLocation
    reason: str
    left_at: tuple[int, int] | None = None  # (level, node id) where the path left the search
    parent: tuple[int, int] | None = None  # (level, node id) of left_at's parent; (0, 0) = index_root
    rank: int | None = None
    siblings: int | None = None
    leaves_visited: int = 0
    unread: str | None = None  # why the path above its leaf could not be read ('path unreadable')

    def describe(self) -> str:
        """One line, e.g. 'item 70439 is in lvl_3/node_812 under lvl_2/node_50 (rank 9 of 16 under
        lvl_1/node_3); the search stopped after 4 leaves, before reaching it'."""
        where = f"item {self.item_id} is in {self.location.leaf_path}"
        if self.reason == "unreachable":
            return f"{where}, which no node above links to: eCP search can never reach it"
        if self.reason == "path unreadable":
            return (f"{where}; the nodes above it could not be read, so where the search left it is unknown: "
                    f"{self.unread}")
        if self.reason == "outranked":
            return f"{where}, which the search scanned; it tied with or fell below the k items returned"
        assert self.left_at is not None and self.parent is not None
        left = node_path(*self.left_at)
        under = "index_root" if self.parent[0] == 0 else node_path(*self.parent)
        head = where if left == self.location.leaf_path else f"{where} under {left}"
        place = f"rank {self.rank} of {self.siblings}" if self.rank is not None else "rank unknown"
        return (f"{head} ({place} under {under}); the search stopped after "
                f"{self.leaves_visited} {'leaf' if self.leaves_visited == 1 else 'leaves'}, before reaching it")

    def to_dict(self) -> dict[str, Any]:
        return {"item_id": self.item_id, "score": self.score, "true_rank": self.true_rank,
                "leaf": self.location.leaf, "row": self.location.row, "reason": self.reason,
                "left_at": None if self.left_at is None else {"level": self.left_at[0], "node_id": self.left_at[1]},
                "parent": None if self.parent is None else {"level": self.parent[0], "node_id": self.parent[1]},
                "rank": self.rank, "siblings": self.siblings, "leaves_visited": self.leaves_visited,
                "path": [s.to_dict() for s in self.location.path], "unread": self.unread, "text": self.describe()}


def explain_misses(index: IndexReader, query: Any, result: SearchResult,
                   truth: Sequence[SearchHit]) -> tuple[MissedNeighbour, ...]:
    """For each exact neighbour (``truth``, best first) missing from ``result``, why it was missed."""
    q, q_sq = index.prepare_query(query)
    returned = {h.item_id for h in result.hits}
    popped = {(v.level, v.node_id) for v in result.trace}
    found: list[MissedNeighbour] = []
    for true_rank, hit in enumerate(truth, 1):
        if hit.item_id in returned:
            continue
        try:
            path, complete = index.locator.ancestors(hit.leaf)
        except UserError as exc:  # a damaged node above the leaf: said, the other misses still explained
            if isinstance(exc, Cancelled):
                raise
            found.append(MissedNeighbour(hit.item_id, hit.score, true_rank, ItemLocation(
                hit.item_id, hit.leaf, hit.row, (), False), "path unreadable", leaves_visited=result.leaves_visited,
                unread=describe_exception(exc)))
            continue
        location = ItemLocation(hit.item_id, hit.leaf, hit.row, path, complete)
        if not complete:
            found.append(MissedNeighbour(hit.item_id, hit.score, true_rank, location, "unreachable",
                                         leaves_visited=result.leaves_visited))
            continue
        left = next((s for s in path if (s.level, s.node_id) not in popped), None)
        if left is None:
            found.append(MissedNeighbour(hit.item_id, hit.score, true_rank, location, "outranked",
                                         leaves_visited=result.leaves_visited))
            continue
        position = path.index(left)
        parent = (0, 0) if position == 0 else (left.level - 1, path[position - 1].node_id)
        try:
            parent_node = index.root if position == 0 else index.node(*parent)
        except UserError as exc:  # named in the search's unreadable nodes; the rank is unknown
            if isinstance(exc, Cancelled):
                raise
            parent_node = None
        rank = siblings = None
        if parent_node is not None and 0 <= left.row < len(parent_node.ids):
            scores = index.scores(parent_node, q, q_sq)
            rank = int((scores < scores[left.row]).sum()) + 1
            siblings = len(scores)
        found.append(MissedNeighbour(hit.item_id, hit.score, true_rank, location, "not reached",
                                     (left.level, left.node_id), parent, rank, siblings, result.leaves_visited))
    return tuple(found)
