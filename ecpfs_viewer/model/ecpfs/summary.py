"""The index header (what ``ecp info`` prints and more), from metadata and a few scalars."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.findings import Finding
from ecpfs_viewer.model.ecpfs.layout import (
    REQUIRED_ARRAYS,
    Generation,
    IndexLayout,
    detect,
    is_integer_type,
)
from ecpfs_viewer.model.ecpfs.metadata import MetadataReader
from ecpfs_viewer.model.ecpfs.paths import ROOT_EMBEDDINGS, parse_level
from ecpfs_viewer.model.ecpfs.sizing import capped_power, fan_out
from ecpfs_viewer.model.errors import describe_exception, transport_failure
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import natural_key, writer_of

LEGAL_METRICS = ("L2", "IP")
#: Integer metric codes of the Python generations G0/G1 (§7).
LEGACY_METRIC_CODES = {0: "L2", 1: "IP", 2: "COS"}
#: Saved queries whose persisted_at scalar is read; the rest are only counted.
MAX_QUERIES_READ = 200


@dataclass(frozen=True)
class SavedQuery:
    """A query upstream persisted under ``queries/Q`` (§1.8), from metadata and one scalar."""

    query_id: str
    path: str
    persisted_at: int | None
    age_seconds: float | None
    buffered_items: int | None
    heap_entries: int | None
    exclude_size: int  # 0 when the exclude array is absent (only written when non-empty)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class IndexSummary:
    """Everything `ecp info` prints and the rest of the index header (§9 'Show'), no chunk reads."""

    layout: IndexLayout
    levels: int | None = None
    metric: str | None = None
    is_normalized: bool = False
    normalized_stored: bool = False  # False: the array is absent, which means false
    total_items: int | None = None
    next_item_id: int | None = None
    representatives: int | None = None
    fan_out: int | None = None
    dim: int | None = None
    dtype: str | None = None
    node_chunk_rows: int | None = None
    rep_chunk_rows: int | None = None
    writer: str | None = None
    has_rep_embeddings: bool = False
    level_paths: tuple[str, ...] = ()
    saved_queries: tuple[SavedQuery, ...] = ()
    saved_query_count: int = 0
    findings: tuple[Finding, ...] = ()
    #: why the header could not be read on the way (no answer): then nothing above is a fact
    unread: str | None = None

    @property
    def format_version(self) -> int | None:
        return self.layout.format_version

    @property
    def gap(self) -> int | None:
        """Ids reserved by an insert but never written (next_item_id − total_items)."""
        if self.total_items is None or self.next_item_id is None:
            return None
        return self.next_item_id - self.total_items

    @property
    def expected_fan_out(self) -> int | None:
        """ceil(R ** (1/L)) in double precision, what the builder would have chosen."""
        if not self.representatives or not self.levels or self.levels < 1 or self.representatives < 0:
            return None
        return fan_out(self.representatives, self.levels)

    def max_nodes(self, level: int) -> int | None:
        """Upper bound min(ns^N, R) of the node count of level N."""
        if self.fan_out is None or self.representatives is None or level < 1:
            return None
        if self.fan_out <= 1:
            return min(1, self.representatives)
        return capped_power(self.fan_out, level, self.representatives)

    def to_dict(self) -> dict[str, Any]:
        return {
            "layout": self.layout.to_dict(),
            "format_version": self.format_version,
            "levels": self.levels, "metric": self.metric,
            "is_normalized": self.is_normalized, "is_normalized_stored": self.normalized_stored,
            "total_items": self.total_items, "next_item_id": self.next_item_id, "reserved_gap": self.gap,
            "representatives": self.representatives, "fan_out": self.fan_out,
            "expected_fan_out": self.expected_fan_out, "dim": self.dim, "dtype": self.dtype,
            "node_chunk_rows": self.node_chunk_rows, "rep_chunk_rows": self.rep_chunk_rows,
            "writer": self.writer, "has_rep_embeddings": self.has_rep_embeddings,
            "level_paths": list(self.level_paths),
            "saved_query_count": self.saved_query_count,
            "saved_queries": [q.to_dict() for q in self.saved_queries],
            "findings": [f.to_dict() for f in self.findings],
        }


def summarize(h: Hierarchy, *, now: float | None = None) -> IndexSummary:
    """The index header: detection plus the info scalars and shapes; never raises.

    What the layout means (legacy, newer, not an index) is ``summary.layout.finding``, once; it is
    not repeated in ``findings``, which hold the problems met while reading.
    """
    reader = MetadataReader(h)
    try:
        return _summarize(reader, time.time() if now is None else now)
    except Exception as exc:  # a bug or an unforeseen store must still give the user a message
        if transport_failure(exc) is not None:  # not read, so not 'not an index': says so, kept nowhere
            message = f"could not be read: {describe_exception(exc)}"
            return IndexSummary(IndexLayout(Generation.NOT_INDEX, message), findings=tuple(reader.findings),
                                unread=message)
        layout = IndexLayout(Generation.NOT_INDEX, f"cannot summarise: {describe_exception(exc)}")
        return IndexSummary(layout, findings=tuple(reader.findings))


def _summarize(reader: MetadataReader, now: float) -> IndexSummary:
    layout = detect(reader)
    values: dict[str, Any] = {}
    if layout.generation is Generation.UNREAD or (not layout.is_index
                                                   and not any(reader.exists(p) for p in REQUIRED_ARRAYS)):
        return IndexSummary(layout, findings=tuple(reader.findings))  # no header: nothing of it is known
    values["levels"] = reader.integer("info/levels") if reader.exists("info/levels") else None
    values["metric"] = _metric(reader)
    if reader.exists("info/is_normalized"):
        stored = reader.scalar("info/is_normalized")
        values["is_normalized"] = bool(stored) if stored is not None else False
        values["normalized_stored"] = True
    for key in ("total_items", "next_item_id"):
        if reader.exists(f"info/{key}"):
            values[key] = reader.integer(f"info/{key}")
    rep_ids = reader.array("rep_item_ids")
    if rep_ids is not None:
        values["representatives"] = rep_ids.rows
        values["rep_chunk_rows"] = rep_ids.chunk_rows
    rep_emb = reader.array("rep_embeddings")
    values["has_rep_embeddings"] = rep_emb is not None
    if rep_ids is None and rep_emb is not None:
        values["rep_chunk_rows"] = rep_emb.chunk_rows
    root = reader.array(ROOT_EMBEDDINGS)
    if root is not None:
        values["fan_out"] = root.rows
        values["node_chunk_rows"] = root.chunk_rows
        values["dtype"] = root.data_type
        if len(root.shape) == 2:
            values["dim"] = root.shape[1]
        else:
            problem = f"expected 2 dimensions (rows, dim), found shape {root.shape}"
            reader.findings.append(Finding(fc.ROOT_SHAPE, ROOT_EMBEDDINGS, problem))
    for meta in (root, rep_ids, rep_emb, reader.array("info/levels")):
        if meta is not None and writer_of(meta.attributes):
            values["writer"] = writer_of(meta.attributes)
            break
    root_names = reader.children("") or {}
    values["level_paths"] = tuple(sorted((n for n in root_names if parse_level(n) is not None), key=natural_key))
    queries, count = _saved_queries(reader, now)
    values["saved_queries"], values["saved_query_count"] = queries, count
    return IndexSummary(layout, findings=tuple(reader.findings), **values)


def _metric(reader: MetadataReader) -> str | None:
    meta = reader.array("info/metric")
    if meta is None:
        return None
    value = reader.scalar("info/metric")
    if value is None:
        return None
    if is_integer_type(meta.data_type) or (isinstance(value, (int, np.integer)) and not isinstance(value, bool)):
        code = int(value)
        return LEGACY_METRIC_CODES.get(code, f"unknown code {code}")
    if not isinstance(value, str):
        reader.findings.append(Finding(fc.WRONG_VALUE, "info/metric", f"expected a string, found {value!r}"))
        return None
    if value not in LEGAL_METRICS:
        reader.findings.append(
            Finding(fc.UNKNOWN_METRIC,
                    "info/metric", f"{value!r} is not a metric ecpfs knows (expected 'L2' or 'IP', case-sensitive)")
        )
    return value


def _saved_queries(reader: MetadataReader, now: float) -> tuple[tuple[SavedQuery, ...], int]:
    names = reader.children("queries")
    if not names:
        return (), 0
    ids = sorted((n for n, node in names.items() if node.kind.is_container), key=natural_key)
    found: list[SavedQuery] = []
    for qid in ids[:MAX_QUERIES_READ]:
        base = f"queries/{qid}"
        persisted = reader.integer(f"{base}/persisted_at") if reader.exists(f"{base}/persisted_at") else None
        items = reader.array(f"{base}/items_id") if reader.exists(f"{base}/items_id") else None
        heap = reader.array(f"{base}/tree_pq_node_id") if reader.exists(f"{base}/tree_pq_node_id") else None
        exclude = reader.array(f"{base}/exclude") if reader.exists(f"{base}/exclude") else None
        found.append(
            SavedQuery(
                qid,
                base,
                persisted,
                None if persisted is None else now - persisted,
                None if items is None else items.rows,
                None if heap is None else heap.rows,
                0 if exclude is None else exclude.rows,
            )
        )
    return tuple(found), len(ids)

