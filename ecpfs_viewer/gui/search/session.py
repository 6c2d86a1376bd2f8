"""What the search views share: the index reader of the store on screen, how a score is shown, and
the tree marks of a search's visited nodes."""

from __future__ import annotations

import threading

from ecpfs_viewer.gui.tree.marks import MarkKind, RowMark
from ecpfs_viewer.model.ecpfs.opened_index import opened_index_of
from ecpfs_viewer.model.search import IndexReader, SearchError, SearchResult, index_reader
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

#: The tree-marks layer the search owns (validation has its own).
MARKS_LAYER = "search"


class SearchSession:
    """The :class:`IndexReader` over the window's hierarchy, built on first use in a worker.

    The GUI thread only swaps the hierarchy (never waits for a reader being built); a reader built
    for a hierarchy that was replaced meanwhile is not kept.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hierarchy: Hierarchy | None = None
        self._reader: IndexReader | None = None

    @property
    def hierarchy(self) -> Hierarchy | None:
        return self._hierarchy

    def set_hierarchy(self, hierarchy: Hierarchy | None) -> None:
        with self._lock:
            if hierarchy is not self._hierarchy:
                self._hierarchy, self._reader = hierarchy, None

    def reader(self) -> IndexReader:
        """The reader (reads the info scalars and index_root the first time): call in a worker."""
        with self._lock:
            hierarchy, reader = self._hierarchy, self._reader
        if hierarchy is None:
            raise SearchError("open an ecpfs index first")
        if reader is not None:
            return reader
        reader = index_reader(opened_index_of(hierarchy))
        with self._lock:
            if self._hierarchy is hierarchy and self._reader is None:
                self._reader = reader
        return reader


def score_header(metric: str) -> str:
    """The column title of item scores: a distance for L2, the inner product for IP."""
    return "inner product" if metric == "IP" else "distance"


def shown_score(metric: str, score: float) -> float:
    """A lower-is-better search score as the user knows it (IP scores are negated dot products)."""
    return -score if metric == "IP" else score


def visited_marks(result: SearchResult, metric: str) -> dict[str, RowMark]:
    """Tree marks for every node the search popped, each saying when and how it ranked."""
    marks: dict[str, RowMark] = {}
    for visit, v in enumerate(result.trace, 1):
        kind = "leaf" if v.is_leaf else "node"
        text = (f"Search visit {visit} ({kind}): {score_header(metric)} {shown_score(metric, v.score):.6g}, "
                f"rank {v.rank} of {v.siblings} among its siblings")
        previous = marks.get(v.path)
        marks[v.path] = RowMark(MarkKind.VISITED, text if previous is None else f"{previous.tooltip}\n{text}")
    return marks
