"""One-line summaries of tree nodes: an array's shape and dtype, an ecpfs node's row count.

The tree asks for thousands of these when a level opens, so row counts come from level
statistics already computed elsewhere, or from a scan of the stored ``zarr.json`` bytes, before
any full parse. Qt-free: the tree model only renders the :class:`NodeSummary` values.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from ecpfs_viewer.model.ecpfs import cached_level_stats, parse_array_meta
from ecpfs_viewer.model.ecpfs.paths import ends_in_node, parse_level, parse_node_name
from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.storage.opening import join_key
from ecpfs_viewer.model.storage.side_by_side import carry_context
from ecpfs_viewer.model.tasks import Cancelled, checkpoint
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import Node, NodeKind, parent_path

#: How many summaries a worker hands back at a time (one GUI update per batch).
SUMMARY_BATCH = 250
#: batches whose documents a remote store is asked for side by side: while one batch waits for its
#: slowest answers the next one's requests fill the store's slots
READ_AHEAD = 3
_SHAPE_RE = re.compile(rb'"shape"\s*:\s*\[\s*(\d+)\s*[,\]]')
_ARRAY_TYPE_RE = re.compile(rb'"node_type"\s*:\s*"array"')


@dataclass(frozen=True)
class NodeSummary:
    """What the tree's second column says about a node; error set when its metadata is unreadable."""

    path: str
    kind: NodeKind | None = None
    shape: str = ""  # "8 x 2" for arrays
    dtype: str = ""
    rows: int | None = None  # embeddings rows of an ecpfs node
    error: str | None = None


def needs_summary(node: Node) -> bool:
    """True for nodes whose summary says something: arrays and ecpfs nodes (lvl_N/node_M)."""
    return node.kind is NodeKind.ARRAY or (node.kind.is_container and ends_in_node(node.path))


def summarize_nodes(hierarchy: Hierarchy, paths: list[str], *,
                    progress: Callable[[list[NodeSummary]], None],
                    cancel: threading.Event) -> list[NodeSummary]:
    """Summaries of paths, sent to progress in batches; returns the last (partial) batch."""
    batch: list[NodeSummary] = []
    known = LevelRows(hierarchy)
    parts = [paths[start:start + SUMMARY_BATCH] for start in range(0, len(paths), SUMMARY_BATCH)]
    # remote: a batch's documents read at once (not two round trips a node), and the next batch's
    # asked for while this one's are read, so the wait for a batch's slowest answers is not idle
    with _ReadAhead(hierarchy, known, parts if hierarchy.store.local_path is None else []) as ahead:
        for k, part in enumerate(parts):
            ahead.wait(k)
            for path in part:
                try:
                    checkpoint(cancel)
                except Cancelled:  # a cancelled listing hands back nothing
                    return []
                batch.append(summarize_node(hierarchy, path, known))
            if len(batch) >= SUMMARY_BATCH:
                progress(batch)
                batch = []
    return batch


class _ReadAhead:
    """The documents of batch k, then k+1, ... read by :data:`READ_AHEAD` threads, each batch in one
    call of ``Hierarchy.prefetch`` (the store's one limit of requests in flight bounds them all);
    a cancelled summary leaves at most that many batches to finish, none started after."""

    def __init__(self, hierarchy: Hierarchy, known: LevelRows, parts: list[list[str]]) -> None:
        self._known, self._parts = known, parts
        self._prefetch = carry_context(hierarchy.prefetch)  # what is read counts for the caller's action
        self._asked: list[Future[object]] = []
        self._pool = ThreadPoolExecutor(READ_AHEAD, thread_name_prefix="tree-rows-read-ahead") if parts else None

    def wait(self, k: int) -> None:
        """Until batch k's documents are read (held by the hierarchy), the next ones asked for."""
        if self._pool is None:
            return
        while len(self._asked) < min(k + READ_AHEAD, len(self._parts)):
            part = self._parts[len(self._asked)]
            keys = [*part, *(join_key(p, "embeddings") for p in part
                             if ends_in_node(p) and self._known.rows(p) is None)]
            self._asked.append(self._pool.submit(self._prefetch, keys))
        self._asked[k].result()

    def __enter__(self) -> _ReadAhead:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


class LevelRows:
    """Node rows from level statistics already computed for validation or the overview (shared)."""

    def __init__(self, hierarchy: Hierarchy) -> None:
        self.hierarchy = hierarchy
        self._levels: dict[str, dict[int, int] | None] = {}

    def rows(self, path: str) -> int | None:
        """Rows of the ecpfs node at path, if its level's statistics are cached (no I/O)."""
        level, _, name = path.rpartition("/")
        if level not in self._levels:
            number = parse_level(level)  # a level of the index at the store's root
            stats = cached_level_stats(self.hierarchy, number) if number is not None else None
            self._levels[level] = None if stats is None else dict(
                zip(stats.node_ids.tolist(), stats.sizes.tolist(), strict=False))
        sizes = self._levels[level]
        node_id = parse_node_name(name)
        return None if sizes is None or node_id is None else sizes.get(node_id)


def summarize_node(hierarchy: Hierarchy, path: str, known: LevelRows | None = None) -> NodeSummary:
    """Shape and dtype of an array, rows of an ecpfs node; one bad node never raises."""
    try:
        node = hierarchy.node(path)
        if node.kind is NodeKind.ARRAY:
            details = hierarchy.details(path)
            if details.error or details.array is None:
                return NodeSummary(path, node.kind, error=details.error or f"{path}: no array metadata")
            return NodeSummary(path, node.kind, shape=details.array.describe_shape(), dtype=details.array.dtype)
        if node.kind.is_container and ends_in_node(path):
            rows = known.rows(path) if known is not None else None
            if rows is None:
                rows = _node_rows(hierarchy, join_key(path, "embeddings"))
            return NodeSummary(path, node.kind, rows=rows)
        return NodeSummary(path, node.kind)
    except Exception as exc:  # one bad node must not stop its siblings' summaries
        return NodeSummary(path, error=f"{path}: {describe_exception(exc)}")


def _node_rows(hierarchy: Hierarchy, path: str) -> int | None:
    """Rows of an ecpfs node's embeddings from the stored shape (thousands per level: a plain JSON
    parse, or a scan of the bytes when the document names one shape)."""
    if not hierarchy.is_listed(parent_path(path)):  # the usual case: read the one document directly
        held = hierarchy.held(path)
        raw = held.raw if held is not None and held.zarr_format == 3 else \
            hierarchy.store.read(hierarchy.store.key(path, "zarr.json"))
        rows = None if raw is None else scan_rows(raw)
        if rows is not None:
            return rows
    node = hierarchy.node(path)
    if node.kind is not NodeKind.ARRAY or node.raw is None:
        return None
    meta = parse_array_meta(node.path, node.raw, node.zarr_format)
    return None if isinstance(meta, str) or not meta.shape else meta.rows


def scan_rows(raw: bytes) -> int | None:
    """The first dimension of a Zarr v3 array document, when it unambiguously has one (else None)."""
    if raw.count(b'"shape"') != 1 or raw.count(b'"node_type"') != 1 or not _ARRAY_TYPE_RE.search(raw):
        return None
    match = _SHAPE_RE.search(raw)
    return None if match is None else int(match.group(1))
