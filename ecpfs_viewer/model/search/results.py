"""The values search hands to its callers: parameters, hits, trace entries, progress and errors.

Plain frozen dataclasses so a GUI worker can pass them across threads and a panel can render
them without knowing how they were computed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ecpfs_viewer.model.ecpfs.paths import node_path
from ecpfs_viewer.model.errors import UserError, describe_exception
from ecpfs_viewer.model.formatting import count_noun, format_bytes
from ecpfs_viewer.model.tasks import Cancelled, checkpoint


class SearchError(UserError):
    """Search could not run; the message says why in the user's terms (an item, a row, a path)."""


class QueryError(SearchError, ValueError):
    """A bad query or parameter: wrong dimension, NaN/Inf values, k < 1, search_exp < 0."""


class UnknownItemError(SearchError, KeyError):
    """An item id that no leaf of the index holds."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "unknown item"


class ItemIdRangeError(QueryError):
    """An item id the index's item_ids cannot hold (outside their stored data type's range)."""


class SearchCancelled(SearchError, Cancelled):
    """A long run stopped because its cancel flag was set."""


@dataclass(frozen=True)
class SearchParams:
    """The knobs of one eCP search pass (CLI defaults, spec §4.4)."""

    k: int = 10
    search_exp: int = 4
    max_increments: int = -1
    exclude: frozenset[int] = field(default_factory=frozenset)

    def problems(self) -> list[str]:
        """What is wrong with these parameters, in the CLI's option names; empty when fine."""
        found = []
        if self.k < 1:
            found.append(f"k must be at least 1 (got {self.k})")
        if self.search_exp < 0:
            found.append(f"search_exp must be >= 0 (got {self.search_exp})")
        if self.max_increments < -1:
            found.append(f"max_increments must be >= -1 (got {self.max_increments})")
        return found


def parse_search_exps(text: str) -> list[int]:
    """'1, 2 4' -> [1, 2, 4] in the order given, without repeats (the forms' search_exp fields);
    QueryError for anything else."""
    found: list[int] = []
    for part in text.replace(",", " ").split():
        if not part.isdigit():
            raise QueryError(f"search_exp values are whole numbers >= 0; {part!r} is not one")
        if int(part) not in found:
            found.append(int(part))
    if not found:
        raise QueryError("give at least one search_exp value, e.g. 1, 2, 4, 8")
    return found


@dataclass(frozen=True)
class SearchHit:
    """One returned item: lower score is better (L2 distance, or negated dot product for IP)."""

    item_id: int
    score: float
    leaf: int  # node id at the leaf level
    row: int  # row of the item inside that leaf

    def to_dict(self) -> dict[str, Any]:
        return {"item_id": self.item_id, "score": self.score, "leaf": self.leaf, "row": self.row}


@dataclass(frozen=True)
class VisitedNode:
    """One node the search popped from its heap, in popping order.

    ``score`` is lower-is-better like item scores. ``rank`` is the place (1 = best) its score had
    among the ``siblings`` entries pushed together with it: the rows of its parent node, or the
    rows of index_root for a level-1 node (``parent`` None).
    """

    level: int  # 1-based, as lvl_N
    node_id: int
    score: float
    is_leaf: bool
    rank: int = 1
    siblings: int = 1
    parent: int | None = None  # node id at level - 1; None for entries of index_root

    @property
    def path(self) -> str:
        return node_path(self.level, self.node_id)

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "node_id": self.node_id, "score": self.score, "is_leaf": self.is_leaf,
                "rank": self.rank, "siblings": self.siblings, "parent": self.parent}


@dataclass(frozen=True)
class UnreadableNode:
    """A node a search wanted but could not read (a damaged chunk or shard, a missing array, a
    failed request): the answer is for everything else, and says so."""

    level: int  # 1-based, as lvl_N
    node_id: int
    reason: str  # the read's message, naming the file or chunk and what is wrong

    @property
    def path(self) -> str:
        return node_path(self.level, self.node_id)

    def describe(self) -> str:
        return f"{self.path} could not be read: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "node_id": self.node_id, "path": self.path, "reason": self.reason}


def unreadable_node(level: int, node_id: int, exc: UserError) -> UnreadableNode:
    """The node named with why its read failed; a cancel is no failure of the node and is raised."""
    if isinstance(exc, Cancelled):
        raise exc
    return UnreadableNode(level, node_id, describe_exception(exc))


@dataclass(frozen=True)
class SearchCost:
    """What one search cost in units that do not depend on the machine (issue 23 §1).

    ``representatives_scored[0]`` counts the rows of index_root, ``[i]`` the rows of the internal
    nodes of lvl_i popped (their children's representatives); leaves' rows are ``items_scored``.
    ``bytes_read[i]`` and ``requests[i]`` are what this search read for the nodes of lvl_i (``[0]``:
    index_root, read when the index opens, so 0 here): a cold node costs its documents and chunks,
    a node already cached by an earlier search or a preload costs nothing, so a warm search reads 0.
    ``cold_bytes`` and ``cold_requests`` are what the same search would read with nothing cached
    (index_root included): each visited node's own read cost, remembered when it was read (shared by
    decoded size when it was read in a batch with others), the same for a warm search as a cold one.
    """

    representatives_scored: tuple[int, ...] = ()
    items_scored: int = 0
    nodes_visited: int = 0  # popped from the heap and read (missing nodes are not counted)
    leaves_scanned: int = 0
    bytes_read: tuple[int, ...] = ()  # per level, 0 = index_root
    requests: tuple[int, ...] = ()  # per level, 0 = index_root
    cold_bytes: tuple[int, ...] = ()  # per level, 0 = index_root
    cold_requests: tuple[int, ...] = ()  # per level, 0 = index_root

    @property
    def distance_computations(self) -> int:
        """Every vector the query was scored against: representatives and leaf items."""
        return sum(self.representatives_scored) + self.items_scored

    # the per-level figures summed over every level: what this search read, then what it would read
    # with nothing cached
    total_bytes = property(lambda self: sum(self.bytes_read), doc="Bytes read at every level together.")
    total_requests = property(lambda self: sum(self.requests), doc="Requests made at every level together.")
    total_cold_bytes = property(lambda self: sum(self.cold_bytes), doc="Bytes read with nothing cached.")
    total_cold_requests = property(lambda self: sum(self.cold_requests), doc="Requests made with nothing cached.")

    def describe(self) -> str:
        """One line for a terminal or a status bar: the machine-independent figures."""
        return (f"{self.distance_computations:,} distance computations "
                f"({sum(self.representatives_scored):,} representatives, {self.items_scored:,} items), "
                f"{self.nodes_visited:,} nodes visited, {self.leaves_scanned:,} leaves scanned, "
                f"{format_bytes(self.total_bytes)} read in {count_noun(self.total_requests, 'request')} "
                f"(cold: {format_bytes(self.total_cold_bytes)} in {count_noun(self.total_cold_requests, 'request')})")

    def to_dict(self) -> dict[str, Any]:
        return {"distance_computations": self.distance_computations,
                "representatives_scored": list(self.representatives_scored),
                "items_scored": self.items_scored, "nodes_visited": self.nodes_visited,
                "leaves_scanned": self.leaves_scanned, "bytes_read": list(self.bytes_read),
                "requests": list(self.requests), "total_bytes": self.total_bytes,
                "total_requests": self.total_requests, "cold_bytes": list(self.cold_bytes),
                "cold_requests": list(self.cold_requests), "total_cold_bytes": self.total_cold_bytes,
                "total_cold_requests": self.total_cold_requests}


@dataclass(frozen=True)
class SearchResult:
    """Items ascending by (score, item id), the visited-node trace, and what it cost."""

    hits: tuple[SearchHit, ...]
    trace: tuple[VisitedNode, ...]
    leaves_visited: int
    skipped: tuple[VisitedNode, ...] = ()  # popped entries whose node does not exist (gaps)
    seconds: float = 0.0
    cost: SearchCost = field(default_factory=SearchCost)
    #: popped nodes that could not be read: left out (an internal one with everything below it)
    unreadable: tuple[UnreadableNode, ...] = ()

    @property
    def items(self) -> list[tuple[int, float]]:
        """(item id, score) pairs, the shape the first search API returned."""
        return [(h.item_id, h.score) for h in self.hits]

    def to_dict(self) -> dict[str, Any]:
        return {"items": [h.to_dict() for h in self.hits], "trace": [v.to_dict() for v in self.trace],
                "leaves_visited": self.leaves_visited, "skipped": [v.to_dict() for v in self.skipped],
                "cost": self.cost.to_dict(), "unreadable": [u.to_dict() for u in self.unreadable]}


@dataclass(frozen=True)
class SearchProgress:
    """How far a long run got: a phase name and done/total in that phase's unit."""

    phase: str
    done: int
    total: int

    @property
    def message(self) -> str:
        """What the run does now (the shape of model.tasks.Progress)."""
        return self.phase


ProgressCallback = Callable[[SearchProgress], None]


class Reporter:
    """Progress and cancel for one long run: ``report`` raises SearchCancelled once cancel is set."""

    def __init__(self, progress: ProgressCallback | None = None, cancel: threading.Event | None = None) -> None:
        self._progress = progress
        self._cancel = cancel

    def check(self) -> None:
        checkpoint(self._cancel, SearchCancelled)

    def report(self, phase: str, done: int, total: int) -> None:
        self.check()
        if self._progress is not None:
            self._progress(SearchProgress(phase, done, total))
