"""Sets of queries for recall: rows of a matrix, the index's saved queries, or sampled stored items."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ecpfs_viewer.model.search.results import ProgressCallback, QueryError, Reporter, SearchError
from ecpfs_viewer.model.search.sampling import dense_sample
from ecpfs_viewer.model.storage.remote import ListingUnavailableError
from ecpfs_viewer.model.zarrtree.nodes import natural_key

if TYPE_CHECKING:
    from ecpfs_viewer.model.search.index import IndexReader


@dataclass(frozen=True)
class QuerySet:
    """Query vectors, and for each the stored item it is (None for outside queries)."""

    vectors: np.ndarray  # (n, dim) float32
    self_ids: tuple[int | None, ...]
    source: str  # for the user: '100 sampled items (seed 0)', 'queries.npy', '3 saved queries'

    def __len__(self) -> int:
        return len(self.vectors)


def queries_from_array(index: IndexReader, array: Any, source: str, rows: list[int] | None = None) -> QuerySet:
    """Rows of a matrix (all, or the given rows) as queries; checked for dimension and finiteness."""
    matrix = np.asarray(array)
    if matrix.ndim == 1:
        matrix = matrix[None, :]
    if matrix.ndim != 2:
        raise QueryError(f"{source}: expected a 2-D array of queries, got shape {matrix.shape}")
    if rows is not None:
        for r in rows:
            if not 0 <= r < len(matrix):
                raise QueryError(f"row {r} is outside {source} ({len(matrix)} rows)")
        matrix = matrix[rows]
    if len(matrix) == 0:
        raise QueryError(f"{source} holds no queries")
    return QuerySet(index.prepare_queries(matrix), (None,) * len(matrix), source)


def saved_query_ids(index: IndexReader) -> list[str]:
    """Ids of the queries upstream saved under queries/ (§1.8), in natural order."""
    try:
        entries = index.store.list_dir("queries")
    except (FileNotFoundError, ListingUnavailableError):  # no listing on a static web server
        return []
    return sorted((name for name, is_dir in entries if is_dir is not False and name.isdigit()), key=natural_key)


def saved_queries(index: IndexReader, ids: list[str] | None = None) -> QuerySet:
    """The vectors of saved queries (queries/Q/query), all of them or the given ids."""
    wanted = saved_query_ids(index) if ids is None else ids
    if not wanted:
        raise SearchError("the index has no saved queries (queries/*)")
    arrays = index.arrays.read([f"queries/{q}/query" for q in wanted])
    for qid, vector in zip(wanted, arrays, strict=True):
        if vector is None:
            raise SearchError(f"saved query {qid} not found (no queries/{qid}/query)")
    vectors = [np.asarray(v, np.float32).reshape(-1) for v in arrays if v is not None]
    if len({len(v) for v in vectors}) != 1:
        raise QueryError("saved queries have different lengths")
    matrix = np.stack(vectors)
    label = f"saved query {wanted[0]}" if len(wanted) == 1 else f"{len(wanted)} saved queries"
    return QuerySet(index.prepare_queries(matrix), (None,) * len(wanted), label)


def sample_items(index: IndexReader, n: int, seed: int = 0, progress: ProgressCallback | None = None,
                 cancel: threading.Event | None = None) -> QuerySet:
    """N stored items drawn without replacement (reproducible from seed), as queries of themselves."""
    reporter = Reporter(progress, cancel)
    if n < 1:
        raise QueryError(f"the sample needs at least 1 item (got {n})")
    if not index.locator.complete:  # one pass that holds no item map (model/search/sampling.py)
        drawn = dense_sample(index, n, seed, reporter)
        if drawn is not None:
            index.hold_scan_order(drawn.leaf_order)
            leaves = sorted(set(drawn.leaves.tolist()))
            nodes = dict(zip(leaves, index.nodes(index.levels, leaves, reporter), strict=True))
            vectors = np.empty((len(drawn.items), index.dim), np.float32)
            for j, (item, leaf, row) in enumerate(zip(drawn.items.tolist(), drawn.leaves.tolist(),
                                                      drawn.rows.tolist(), strict=True)):
                node = nodes[leaf]
                if node is None or row >= len(node.ids) or int(node.ids[row]) != item:
                    raise SearchError(f"item {item} is no longer in lvl_{index.levels}/node_{leaf}, row {row}: "
                                      "the index changed while it was sampled")
                vectors[j] = node.vectors[row]
            return QuerySet(vectors, tuple(drawn.items.tolist()), f"{len(drawn.items)} sampled items (seed {seed})")
    ids = index.locator.all_item_ids(reporter)
    if len(ids) == 0:
        raise SearchError("the index holds no items to sample")
    rng = np.random.default_rng(seed)
    chosen = np.sort(ids[rng.choice(len(ids), size=min(n, len(ids)), replace=False)])
    vectors = index.vectors_for_items(chosen.tolist(), reporter)
    return QuerySet(vectors, tuple(int(i) for i in chosen), f"{len(chosen)} sampled items (seed {seed})")
