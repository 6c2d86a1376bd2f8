"""eCP search over a stored index (spec §4), locate, exact search for ground truth, recall@k, and
why a search missed a neighbour. Read-only and Qt-free; works on every store the app opens.

- ``reader``: :class:`NodeReader` (info, cached nodes, scores), what the algorithms read through;
- ``index``: :class:`IndexReader`, the entry point: the reader with every operation below;
- ``ecp``: the search itself, with a trace of popped nodes;
- ``locate``: item id -> leaf, row, ancestor path, from ids arrays only;
- ``exact``: exact k nearest neighbours in float32 blocks;
- ``queries`` / ``recall``: query sets and recall@k sweeps over search_exp;
- ``explain``: for each missed true neighbour, where its path left the search.
"""

from typing import TYPE_CHECKING

from ecpfs_viewer.model.lazy import lazy_exports

if TYPE_CHECKING:
    from ecpfs_viewer.model.search.ecp import ecp_search
    from ecpfs_viewer.model.search.exact import ExactNeighbours, exact_knn
    from ecpfs_viewer.model.search.explain import MissedNeighbour, explain_misses
    from ecpfs_viewer.model.search.index import IndexReader, index_reader
    from ecpfs_viewer.model.search.locate import ItemLocation, ItemLocator, PathStep
    from ecpfs_viewer.model.search.queries import (
        QuerySet,
        queries_from_array,
        sample_items,
        saved_queries,
        saved_query_ids,
    )
    from ecpfs_viewer.model.search.reader import NodeData, NodeReader
    from ecpfs_viewer.model.search.recall import RecallReport, RecallRow, recall_at_k, recall_sweep
    from ecpfs_viewer.model.search.results import (
        ItemIdRangeError,
        QueryError,
        SearchCancelled,
        SearchError,
        SearchHit,
        SearchParams,
        SearchProgress,
        SearchResult,
        UnknownItemError,
        VisitedNode,
    )

__all__ = [
    "ExactNeighbours",
    "IndexReader",
    "ItemIdRangeError",
    "ItemLocation",
    "ItemLocator",
    "MissedNeighbour",
    "NodeData",
    "NodeReader",
    "PathStep",
    "QueryError",
    "QuerySet",
    "RecallReport",
    "RecallRow",
    "SearchCancelled",
    "SearchError",
    "SearchHit",
    "SearchParams",
    "SearchProgress",
    "SearchResult",
    "UnknownItemError",
    "VisitedNode",
    "ecp_search",
    "exact_knn",
    "explain_misses",
    "index_reader",
    "queries_from_array",
    "recall_at_k",
    "recall_sweep",
    "sample_items",
    "saved_queries",
    "saved_query_ids",
]

# imported on first use, so that a submodule (paths, locate) can be imported without the rest
__getattr__ = lazy_exports(__name__, {
    "ecp": ("ecp_search",),
    "exact": ("ExactNeighbours", "exact_knn"),
    "explain": ("MissedNeighbour", "explain_misses"),
    "index": ("IndexReader", "index_reader"),
    "locate": ("ItemLocation", "ItemLocator", "PathStep"),
    "queries": ("QuerySet", "queries_from_array", "sample_items", "saved_queries", "saved_query_ids"),
    "reader": ("NodeData", "NodeReader"),
    "recall": ("RecallReport", "RecallRow", "recall_at_k", "recall_sweep"),
    "results": (
        "ItemIdRangeError", "QueryError", "SearchCancelled", "SearchError", "SearchHit", "SearchParams",
        "SearchProgress", "SearchResult", "UnknownItemError", "VisitedNode"
    ),
})
