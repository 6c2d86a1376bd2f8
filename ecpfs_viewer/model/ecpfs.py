"""What an ecpfs index is: recognise its generation, summarise it, and measure each level.

Everything here reads metadata (``zarr.json`` documents and listings) and at most a few rank-0
scalars, never a node's chunks, so the summary of a 4,000-node level costs a fraction of a second.
The one step that has to decode data, finding children that ``node_ids`` reference but that do
not exist, is a separate function (:func:`referenced_children`). Problems are returned as
:class:`Finding` values naming the path they concern; nothing here raises on a bad store.
Format reference: ``docs/ecpfs-format.md`` (§1 layout, §5 ``ecp info``, §7 older formats).
"""

from __future__ import annotations

import json
import re
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from ecpfs_viewer.model.formatting import count_noun
from ecpfs_viewer.model.hierarchy import (
    Hierarchy,
    Node,
    NodeKind,
    describe_exception,
    load_json_object,
    natural_key,
    writer_of,
)
from ecpfs_viewer.model.sizing import STORED_DTYPES, fan_out

SUPPORTED_FORMAT_VERSION = 1
#: Arrays the upstream loader needs besides ``info/format_version`` (§1.5), in upstream's order.
REQUIRED_ARRAYS = ("info/levels", "info/metric", "info/total_items", "info/next_item_id",
                   "rep_item_ids", "index_root/embeddings")
INFO_INTEGERS = ("info/format_version", "info/levels", "info/total_items", "info/next_item_id")
LEGAL_METRICS = ("L2", "IP")
#: Integer metric codes of the Python generations G0/G1 (§7).
LEGACY_METRIC_CODES = {0: "L2", 1: "IP", 2: "COS"}
ROOT_EMBEDDINGS = "index_root/embeddings"
_NODE_RE = re.compile(r"^node_(\d+)$")
_DIGITS_RE = re.compile(r"\d+")
_LEVEL_RE = re.compile(r"^lvl_(\d+)$")
#: At most this many gap ids are kept (the count is always exact).
MAX_LISTED_IDS = 1000
#: Saved queries whose persisted_at scalar is read; the rest are only counted.
MAX_QUERIES_READ = 200


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Finding:
    """One problem (or note) about an index, with the store path it concerns ('' = the root).

    ``sampled`` is empty for a complete check, else says what part was examined.
    """

    severity: Severity
    path: str
    message: str
    sampled: str = ""

    def describe(self) -> str:
        where = self.path or "/"
        note = f" [sampled: {self.sampled}]" if self.sampled else ""
        return f"{self.severity.value.upper()}: {where}: {self.message}{note}"

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity.value, "path": self.path, "message": self.message,
                "sampled": self.sampled or None}


def _error(path: str, message: str) -> Finding:
    return Finding(Severity.ERROR, path, message)


def _warning(path: str, message: str) -> Finding:
    return Finding(Severity.WARNING, path, message)


# -- light array metadata ---------------------------------------------------------------------

@dataclass(frozen=True)
class ArrayMeta:
    """Shape, data type and chunk rows of an array, parsed straight from its stored document.

    ``Hierarchy.details`` builds zarr's full metadata object (about 0.3 ms per array); for
    thousands of node arrays a plain ``json.loads`` of the cached bytes is ten times cheaper.
    """

    path: str
    shape: tuple[int, ...]
    data_type: str  # Zarr v3 name ('float32', 'string', 'uint32'...) or numpy name for v2
    chunk_shape: tuple[int, ...]
    attributes: dict[str, Any]

    @property
    def rows(self) -> int:
        return self.shape[0] if self.shape else 1

    @property
    def chunk_rows(self) -> int | None:
        return self.chunk_shape[0] if self.chunk_shape else None


def parse_array_meta(path: str, raw: bytes, zarr_format: int | None = 3) -> ArrayMeta | str:
    """ArrayMeta from a stored ``zarr.json`` (or v2 ``.zarray``); an error message otherwise."""
    where = f"{path}/{'zarr.json' if zarr_format != 2 else '.zarray'}"
    doc = load_json_object(raw, where)
    if isinstance(doc, str):
        return doc
    try:
        shape = tuple(int(s) for s in doc["shape"])
        if zarr_format == 2:
            data_type = np.dtype(doc["dtype"]).name if isinstance(doc["dtype"], str) else json.dumps(doc["dtype"])
            chunks = tuple(int(c) for c in doc.get("chunks") or shape)
        else:
            stored = doc["data_type"]
            data_type = stored if isinstance(stored, str) else str(stored.get("name", stored))
            grid = doc.get("chunk_grid") or {}
            chunks = tuple(int(c) for c in (grid.get("configuration") or {}).get("chunk_shape", shape))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return f"{where}: invalid array metadata ({describe_exception(exc)})"
    attributes = doc.get("attributes") if isinstance(doc.get("attributes"), dict) else {}
    return ArrayMeta(path, shape, data_type, chunks, attributes)


class MetadataReader:
    """Looks paths up through directory listings (cached by Hierarchy) and collects findings."""

    def __init__(self, h: Hierarchy) -> None:
        self.h = h
        self.findings: list[Finding] = []
        self._maps: dict[str, dict[str, Node] | None] = {}
        self._metas: dict[str, ArrayMeta | None] = {}

    def children(self, path: str) -> dict[str, Node] | None:
        """Children of a container path by name, or None when it does not exist or cannot be listed."""
        if path in self._maps:
            return self._maps[path]
        result: dict[str, Node] | None = None
        parent, _, name = path.rpartition("/")
        if path:
            above = self.children(parent)
            node = None if above is None else above.get(name)
            if node is None or not node.kind.is_container:
                self._maps[path] = None
                return None
        try:
            result = {n.name: n for n in self.h.children(path)}
        except OSError as exc:
            self.findings.append(_error(path, f"cannot list: {describe_exception(exc)}"))
        self._maps[path] = result
        return result

    def node(self, path: str) -> Node | None:
        parent, _, name = path.rpartition("/")
        above = self.children(parent)
        return None if above is None else above.get(name)

    def exists(self, path: str) -> bool:
        return self.node(path) is not None

    def array(self, path: str) -> ArrayMeta | None:
        """Metadata of the array at path; None (with a finding when broken) if it is not a usable array."""
        if path in self._metas:
            return self._metas[path]
        node = self.node(path)
        meta: ArrayMeta | None = None
        if node is None:
            pass
        elif node.kind is NodeKind.ERROR:
            self.findings.append(_error(path, f"unreadable metadata: {node.error}"))
        elif node.kind is not NodeKind.ARRAY or node.raw is None:
            self.findings.append(_error(path, f"expected an array, found {node.kind.value}"))
        else:
            parsed = parse_array_meta(path, node.raw, node.zarr_format)
            if isinstance(parsed, str):
                self.findings.append(_error(path, parsed))
            else:
                meta = parsed
        self._metas[path] = meta
        return meta

    def scalar(self, path: str) -> Any:
        """The value of a scalar array, or None with an error finding naming the path."""
        if self.array(path) is None:
            return None
        try:
            value = self.h.read_scalar(path)
        except Exception as exc:  # ArrayReadError, or zarr refusing the metadata
            self.findings.append(_error(path, f"unreadable value: {describe_exception(exc)}"))
            return None
        if isinstance(value, np.ndarray):
            self.findings.append(_error(path, f"expected a single value, found shape {value.shape}"))
            return None
        return value

    def integer(self, path: str) -> int | None:
        value = self.scalar(path)
        if value is None:
            return None
        try:
            return int(value)
        except (TypeError, ValueError):
            self.findings.append(_error(path, f"expected an integer, found {value!r}"))
            return None


# -- detection ---------------------------------------------------------------------------------

class Generation(StrEnum):
    """Which writer produced a store (§7), from the newest to the oldest."""

    V1 = "format version 1"
    UNSTAMPED = "version 1 without version stamp"
    NEWER = "newer format"
    RUST_PRE_V1 = "Rust pre-v1 index"
    PYTHON_JUNE_2025 = "June-2025 Python index"
    PYTHON_EARLY = "early Python index"
    NOT_INDEX = "not an ecpfs index"


@dataclass(frozen=True)
class IndexLayout:
    """The generation of an index and why we think so."""

    generation: Generation
    reason: str
    format_version: int | None = None
    missing: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()

    @property
    def supported(self) -> bool:
        """True when upstream's v1 loaders would open it (a v1 or unstamped index)."""
        return self.generation in (Generation.V1, Generation.UNSTAMPED)

    @property
    def is_index(self) -> bool:
        return self.generation is not Generation.NOT_INDEX

    @property
    def is_legacy(self) -> bool:
        return self.generation in (Generation.RUST_PRE_V1, Generation.PYTHON_JUNE_2025,
                                   Generation.PYTHON_EARLY)

    def to_dict(self) -> dict[str, Any]:
        return {"generation": self.generation.value, "supported": self.supported, "reason": self.reason,
                "format_version": self.format_version, "missing": list(self.missing)}


def detect_index(h: Hierarchy) -> IndexLayout:
    """Recognise the index generation of a store (§7 detection order); never raises."""
    return _detect(MetadataReader(h))


def _detect(reader: MetadataReader) -> IndexLayout:
    missing = tuple(p for p in REQUIRED_ARRAYS if not reader.exists(p))
    findings = lambda: tuple(reader.findings)  # noqa: E731 - read after each step
    if reader.exists("info/format_version"):
        version = reader.integer("info/format_version")
        if version is None:
            return IndexLayout(Generation.NOT_INDEX, "info/format_version cannot be read, so the format is unknown",
                               None, missing, findings())
        if version != SUPPORTED_FORMAT_VERSION:
            return IndexLayout(Generation.NEWER, f"format version {version} is not supported "
                               f"(this viewer reads version {SUPPORTED_FORMAT_VERSION}); the store is still "
                               "browsable as plain Zarr", version, missing, findings())
        reason = "format version 1" + (f"; missing required arrays: {', '.join(missing)}" if missing else "")
        return IndexLayout(Generation.V1, reason, 1, missing, findings())
    levels = reader.array("info/levels")
    metric = reader.array("info/metric")
    python_levels = levels is not None and levels.shape == (1,)
    int_metric = metric is not None and _is_integer_type(metric.data_type)
    if python_levels or int_metric:
        traits = []
        if python_levels:
            traits.append(f"info/levels has shape (1,) ({levels.data_type})")  # type: ignore[union-attr]
        if int_metric:
            traits.append(f"info/metric is an integer ({metric.data_type})")  # type: ignore[union-attr]
        if reader.exists("lvl_0"):
            return IndexLayout(Generation.PYTHON_EARLY, "legacy Python ecpfs index (pre-Rust, levels from lvl_0): "
                               + "; ".join([*traits, "lvl_0 exists"]) + "; rebuild required", None,
                               missing, findings())
        if reader.exists("index_root/node_ids"):
            traits.append("index_root/node_ids exists")
        return IndexLayout(Generation.PYTHON_JUNE_2025, "legacy Python ecpfs index (June 2025, pre-Rust): "
                           + "; ".join(traits) + "; rebuild required", None, missing, findings())
    counters = [p for p in ("info/total_items", "info/next_item_id") if not reader.exists(p)]
    if metric is not None and metric.data_type == "string" and counters:
        return IndexLayout(Generation.RUST_PRE_V1, f"pre-v1 Rust index: missing {', '.join(counters)}; "
                           "rebuild or add the counters", None, missing, findings())
    if not missing:
        return IndexLayout(Generation.UNSTAMPED, "every version 1 array is present but info/format_version "
                           "is missing; read as version 1", None, missing, findings())
    all_missing = ("info/format_version", *missing)
    return IndexLayout(Generation.NOT_INDEX, "not a valid ecpfs index, missing: " + ", ".join(all_missing),
                       None, all_missing, findings())


def _is_integer_type(data_type: str) -> bool:
    return data_type.startswith(("int", "uint"))


# -- summary -----------------------------------------------------------------------------------



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
        if not self.representatives or not self.levels or self.levels < 1:
            return None
        return fan_out(self.representatives, self.levels)

    def max_nodes(self, level: int) -> int | None:
        """Upper bound min(ns^N, R) of the node count of level N."""
        if self.fan_out is None or self.representatives is None or level < 1:
            return None
        if self.fan_out <= 1:
            return min(1, self.representatives)
        return min(self.fan_out ** level, self.representatives)

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
    """The index header: detection plus the info scalars and shapes; never raises."""
    reader = MetadataReader(h)
    try:
        return _summarize(reader, time.time() if now is None else now)
    except Exception as exc:  # a bug or an unforeseen store must still give the user a message
        layout = IndexLayout(Generation.NOT_INDEX, f"cannot summarise: {describe_exception(exc)}")
        return IndexSummary(layout, findings=(*tuple(reader.findings), _error("", layout.reason)))


def _summarize(reader: MetadataReader, now: float) -> IndexSummary:
    layout = _detect(reader)
    values: dict[str, Any] = {}
    if not layout.is_index and not any(reader.exists(p) for p in REQUIRED_ARRAYS):
        return IndexSummary(layout, findings=tuple(reader.findings))
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
            reader.findings.append(_error(ROOT_EMBEDDINGS, problem))
    for meta in (root, rep_ids, rep_emb, reader.array("info/levels")):
        if meta is not None and writer_of(meta.attributes):
            values["writer"] = writer_of(meta.attributes)
            break
    root_names = reader.children("") or {}
    values["level_paths"] = tuple(sorted((n for n in root_names if _LEVEL_RE.match(n)), key=natural_key))
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
    if _is_integer_type(meta.data_type) or (isinstance(value, (int, np.integer)) and not isinstance(value, bool)):
        code = int(value)
        return LEGACY_METRIC_CODES.get(code, f"unknown code {code}")
    if not isinstance(value, str):
        reader.findings.append(_error("info/metric", f"expected a string, found {value!r}"))
        return None
    if value not in LEGAL_METRICS:
        reader.findings.append(
            _error("info/metric", f"{value!r} is not a metric ecpfs knows (expected 'L2' or 'IP', case-sensitive)")
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


# -- per-level statistics ------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeSize:
    node_id: int
    path: str
    rows: int


@dataclass(frozen=True, eq=False)
class LevelStats:
    """Node count, gaps and node sizes of one ``lvl_N``, from metadata only (no chunk decoding)."""

    level: int
    path: str
    is_leaf: bool | None
    node_ids: np.ndarray  # int64, ascending; nodes that have an embeddings array
    sizes: np.ndarray  # int64 rows of each node's embeddings, same order
    max_nodes: int | None  # min(ns^N, R)
    gap_count: int  # ids below max_nodes with no node
    gap_ids: tuple[int, ...]  # the first MAX_LISTED_IDS of them
    out_of_range_ids: tuple[int, ...]  # node ids >= max_nodes
    chunk_rows: int | None  # declared chunk rows of the node arrays (most common value)
    total_items: int | None
    empty_nodes: tuple[str, ...] = ()  # node groups without arrays
    other_entries: tuple[str, ...] = ()  # names that are not node_<id>
    findings: tuple[Finding, ...] = ()
    seconds: float = 0.0
    broken_ids: frozenset[int] = frozenset()  # nodes with a missing or unreadable array

    @property
    def node_count(self) -> int:
        return int(self.node_ids.size)

    @property
    def min_size(self) -> int | None:
        return int(self.sizes.min()) if self.sizes.size else None

    @property
    def max_size(self) -> int | None:
        return int(self.sizes.max()) if self.sizes.size else None

    @property
    def median_size(self) -> float | None:
        return float(np.median(self.sizes)) if self.sizes.size else None

    @property
    def mean_size(self) -> float | None:
        return float(self.sizes.mean()) if self.sizes.size else None

    @property
    def total_rows(self) -> int:
        return int(self.sizes.sum())

    @property
    def leaf_sum(self) -> int | None:
        """Sum of leaf sizes, to compare with total_items (None above the leaf level)."""
        return self.total_rows if self.is_leaf else None

    def node_path(self, node_id: int) -> str:
        return f"{self.path}/node_{node_id}"

    def histogram(self, max_bins: int = 40) -> tuple[np.ndarray, np.ndarray]:
        """Counts and bin edges of node sizes; one bin per size when the sizes span few values."""
        if not self.sizes.size:
            return np.zeros(0, dtype=np.int64), np.zeros(1)
        low, high = int(self.sizes.min()), int(self.sizes.max())
        if high - low + 1 <= max_bins:
            edges = np.arange(low, high + 2, dtype=np.float64) - 0.5
        else:
            edges = np.linspace(low, high + 1, max_bins + 1)
        counts, edges = np.histogram(self.sizes, bins=edges)
        return counts.astype(np.int64), edges

    def largest(self, count: int = 5) -> list[NodeSize]:
        order = np.argsort(-self.sizes, kind="stable")[:count]
        return [
            NodeSize(int(self.node_ids[i]), self.node_path(int(self.node_ids[i])), int(self.sizes[i])) for i in order
        ]

    def smallest(self, count: int = 5) -> list[NodeSize]:
        order = np.argsort(self.sizes, kind="stable")[:count]
        return [
            NodeSize(int(self.node_ids[i]), self.node_path(int(self.node_ids[i])), int(self.sizes[i])) for i in order
        ]

    @property
    def underfill(self) -> float | None:
        """Mean fraction of the first chunk each node uses (rows / chunk rows, capped at 1)."""
        if not self.sizes.size or not self.chunk_rows:
            return None
        return float(np.minimum(self.sizes / self.chunk_rows, 1.0).mean())

    @property
    def nodes_in_one_chunk(self) -> int:
        """Nodes whose rows fit in a single chunk (reading them decodes one whole padded chunk)."""
        if not self.chunk_rows:
            return 0
        return int((self.sizes <= self.chunk_rows).sum())

    def to_dict(self) -> dict[str, Any]:
        counts, edges = self.histogram()
        return {
            "level": self.level,
            "path": self.path,
            "is_leaf": self.is_leaf,
            "node_count": self.node_count,
            "max_nodes": self.max_nodes,
            "gap_count": self.gap_count,
            "gap_ids": list(self.gap_ids[:100]),
            "out_of_range_ids": list(self.out_of_range_ids[:100]),
            "size_min": self.min_size,
            "size_median": self.median_size,
            "size_mean": self.mean_size,
            "size_max": self.max_size,
            "total_rows": self.total_rows,
            "leaf_sum": self.leaf_sum,
            "total_items": self.total_items,
            "chunk_rows": self.chunk_rows,
            "underfill": self.underfill,
            "histogram": {"counts": counts.tolist(), "edges": edges.tolist()},
            "largest": [n.__dict__ for n in self.largest()],
            "smallest": [n.__dict__ for n in self.smallest()],
            "empty_nodes": list(self.empty_nodes),
            "other_entries": list(self.other_entries),
            "findings": [f.to_dict() for f in self.findings],
        }


def level_stats(h: Hierarchy, level: int, summary: IndexSummary | None = None) -> LevelStats:
    """Statistics of ``lvl_{level}`` from the metadata of its nodes; never raises.

    Reads the level listing through the Hierarchy (cached, shared with the tree) and each node's
    ``embeddings`` / ids ``zarr.json`` in one batch; a node whose arrays are not the expected ones
    is listed to explain what it holds.
    """
    started = time.perf_counter()
    summary = summary if summary is not None else summarize(h)
    path = f"lvl_{level}"
    try:
        stats = _level_stats(h, level, path, summary)
    except Exception as exc:  # never let a bad store escape to the caller
        stats = _empty_level(
            level, path, summary, (_error(path, f"cannot compute statistics: {describe_exception(exc)}"),)
        )
    object.__setattr__(stats, "seconds", time.perf_counter() - started)
    return stats


# Statistics shared by validation, the level overview and the tree's row counts: parsing the
# 8,000 node documents of a 4,000-node level takes a third of a second, so it is done once per
# Hierarchy and level. An entry is valid while the Hierarchy still holds the same root and level
# listings (Hierarchy.refresh of the level or above drops them); forget_level_stats drops entries
# after a refresh inside a level.
_SHARED: weakref.WeakKeyDictionary[Hierarchy, dict[int, _SharedLevel]] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()  # held while computing, so a second caller waits and reuses the result


def _listings(h: Hierarchy, level: int) -> tuple[list[Node] | None, list[Node] | None]:
    """The cached root and level listings (the objects themselves; None when not listed)."""
    path = f"lvl_{level}"
    return (h.children("") if h.is_listed("") else None, h.children(path) if h.is_listed(path) else None)


def _summary_key(summary: IndexSummary, level: int) -> tuple[Any, ...]:
    """The summary fields level statistics use."""
    return (summary.levels, summary.max_nodes(level), summary.total_items, summary.dim, summary.dtype)


def _still_valid(h: Hierarchy, level: int, entry: _SharedLevel) -> bool:
    root, listing = _listings(h, level)
    return root is entry.root and listing is entry.listing


@dataclass(frozen=True, eq=False)
class _SharedLevel:
    root: list[Node] | None  # held (not just their ids) so a refreshed listing can never look the same
    listing: list[Node] | None
    summary_key: tuple[Any, ...]
    stats: LevelStats


def shared_level_stats(h: Hierarchy, level: int, summary: IndexSummary | None = None) -> LevelStats:
    """:func:`level_stats`, computed once per Hierarchy and level and then reused; never raises."""
    summary = summary if summary is not None else summarize(h)
    key = _summary_key(summary, level)
    with _SHARED_LOCK:
        entries = _SHARED.setdefault(h, {})
        cached = entries.get(level)
        if cached is not None and cached.summary_key == key and _still_valid(h, level, cached):
            return cached.stats
        stats = level_stats(h, level, summary)
        entries[level] = _SharedLevel(*_listings(h, level), key, stats)  # listed by now
        return stats


def cached_level_stats(h: Hierarchy, level: int) -> LevelStats | None:
    """The shared statistics of a level if already computed and still valid (no I/O, no parsing).

    While another thread computes statistics this waits for it (so a caller that would otherwise
    parse the same documents itself gets the result instead of competing for the interpreter)."""
    with _SHARED_LOCK:
        cached = _SHARED.get(h, {}).get(level)
        return cached.stats if cached is not None and _still_valid(h, level, cached) else None


def forget_level_stats(h: Hierarchy, path: str = "") -> None:
    """Drop shared statistics that a refresh of path (and below) makes stale."""
    path = path.strip("/")
    match = _LEVEL_RE.match(path.split("/", 1)[0]) if path else None
    with _SHARED_LOCK:
        entries = _SHARED.get(h)
        if entries is None:
            return
        if match is None:
            entries.clear()
        else:
            entries.pop(int(match.group(1)), None)


def _empty_level(level: int, path: str, summary: IndexSummary, findings: tuple[Finding, ...]) -> LevelStats:
    empty = np.zeros(0, dtype=np.int64)
    return LevelStats(
        level,
        path,
        None,
        empty,
        empty,
        summary.max_nodes(level),
        0,
        (),
        (),
        None,
        summary.total_items,
        findings=findings,
    )


@dataclass
class _NodeArrays:
    node_id: int
    path: str
    names: set[str] | None = None  # arrays found by listing (slow path only)
    emb: ArrayMeta | None = None
    ids: ArrayMeta | None = None
    ids_name: str | None = None
    errors: list[str] = field(default_factory=list)


def _level_stats(h: Hierarchy, level: int, path: str, summary: IndexSummary) -> LevelStats:
    findings: list[Finding] = []
    try:
        if path not in {n.name for n in h.children("")}:
            return _empty_level(level, path, summary, (_error(path, "level does not exist"),))
        listed = h.children(path)
    except OSError as exc:
        return _empty_level(level, path, summary, (_error(path, f"cannot list: {describe_exception(exc)}"),))
    leaf: bool | None = None if summary.levels is None else level == summary.levels
    nodes: list[_NodeArrays] = []
    others: list[str] = []
    for child in listed:
        match = _NODE_RE.match(child.name)
        if match is None or not child.kind.is_container:
            others.append(child.name)
            if child.kind is NodeKind.ERROR:
                findings.append(_error(child.path, f"unreadable metadata: {child.error}"))
            continue
        if child.kind is NodeKind.ERROR:
            findings.append(_error(child.path, f"unreadable group metadata: {child.error}"))
        nodes.append(_NodeArrays(int(match.group(1)), child.path))
    expected_ids = "item_ids" if leaf else "node_ids" if leaf is not None else None
    _read_node_arrays(h, nodes, expected_ids)

    ids: list[int] = []
    sizes: list[int] = []
    chunk_rows: dict[int, int] = {}
    empty: list[str] = []
    broken: set[int] = set()
    for node in nodes:
        for message in node.errors:
            findings.append(_error(node.path, message))
        if node.emb is None and node.ids is None:
            if not node.errors:
                empty.append(node.path)
            continue
        _check_node(node, leaf, summary, findings)
        if node.errors or node.emb is None or node.ids is None:
            broken.add(node.node_id)
        if node.emb is not None:
            ids.append(node.node_id)
            sizes.append(node.emb.rows)
            if node.emb.chunk_rows is not None:
                chunk_rows[node.emb.chunk_rows] = chunk_rows.get(node.emb.chunk_rows, 0) + 1
    if empty:
        findings.append(
            _warning(
                path, f"{count_noun(len(empty), 'node group')} without arrays (search skips them), e.g. {empty[0]}"
            )
        )
    order = np.argsort(np.asarray(ids, dtype=np.int64), kind="stable")
    node_ids = np.asarray(ids, dtype=np.int64)[order]
    size_arr = np.asarray(sizes, dtype=np.int64)[order]
    limit = summary.max_nodes(level)
    gap_count, gap_ids, out_of_range = 0, (), ()
    if limit is not None:
        present = np.zeros(limit, dtype=bool)
        inside = node_ids[node_ids < limit]
        present[inside] = True
        gaps = np.flatnonzero(~present)
        gap_count, gap_ids = int(gaps.size), tuple(int(g) for g in gaps[:MAX_LISTED_IDS])
        out_of_range = tuple(int(i) for i in node_ids[node_ids >= limit][:MAX_LISTED_IDS])
        if node_ids.size > limit:
            findings.append(_warning(path, f"{node_ids.size} nodes, more than the possible min(ns^N, R) = {limit}"))
        if out_of_range:
            findings.append(
                _warning(
                    path,
                    f"{count_noun(len(out_of_range), 'node id')} at or above min(ns^N, R) = {limit}, "
                    f"e.g. {path}/node_{out_of_range[0]}",
                )
            )
    common_rows = max(chunk_rows, key=chunk_rows.__getitem__) if chunk_rows else None
    return LevelStats(
        level,
        path,
        leaf,
        node_ids,
        size_arr,
        limit,
        gap_count,
        gap_ids,
        out_of_range,
        common_rows,
        summary.total_items,
        tuple(empty),
        tuple(others),
        cap_findings(findings),
        broken_ids=frozenset(broken),
    )


def cap_findings(findings: list[Finding], per_kind: int = 10) -> tuple[Finding, ...]:
    """Keep the first few findings of each kind and one line counting the rest (4,000 alike say little)."""
    kept: list[Finding] = []
    counts: dict[tuple[Severity, str], list[Finding]] = {}
    for finding in findings:
        key = (finding.severity, _DIGITS_RE.sub("#", finding.message))
        seen = counts.setdefault(key, [])
        seen.append(finding)
        if len(seen) <= per_kind:
            kept.append(finding)
    for (severity, _), group in counts.items():
        if len(group) > per_kind:
            first = group[0]
            parent = first.path.split("/node_")[0] if "/node_" in first.path else first.path
            kept.append(Finding(severity, parent, f"... and {len(group) - per_kind} more like: {first.message}"))
    return tuple(kept)


def _read_node_arrays(h: Hierarchy, nodes: list[_NodeArrays], expected_ids: str | None) -> None:
    """Fill emb/ids of every node: one batch read of the expected documents, listing only odd nodes."""
    fast = [n for n in nodes if not h.is_listed(n.path)] if expected_ids else []
    if fast:
        keys: list[str] = []
        for node in fast:
            keys += [
                h.store.key(node.path, "embeddings", "zarr.json"),
                h.store.key(node.path, expected_ids, "zarr.json"),
            ]  # type: ignore[arg-type]
        raws = _read_many(h, keys)
        for i, node in enumerate(fast):
            emb_raw, ids_raw = raws[2 * i], raws[2 * i + 1]
            if emb_raw is None or ids_raw is None:
                continue  # explained by the listing below
            node.names = {"embeddings", expected_ids}  # type: ignore[arg-type]
            node.emb = _meta_or_error(node, "embeddings", emb_raw, 3)
            node.ids = _meta_or_error(node, expected_ids, ids_raw, 3)  # type: ignore[arg-type]
            node.ids_name = expected_ids
    for node in nodes:
        if node.names is None:
            _list_node(h, node)


def _read_many(h: Hierarchy, keys: list[str]) -> list[bytes | None]:
    if h.store.local_path is not None or len(keys) <= 64:
        return h.store.read_many(keys)
    # Remote stores: read_many already overlaps requests; split so progress stays smooth.
    size = 512
    parts = [keys[i : i + size] for i in range(0, len(keys), size)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(h.store.read_many, parts))
    return [raw for part in results for raw in part]


def _meta_or_error(node: _NodeArrays, name: str, raw: bytes, zarr_format: int | None) -> ArrayMeta | None:
    parsed = parse_array_meta(f"{node.path}/{name}", raw, zarr_format)
    if isinstance(parsed, str):
        node.errors.append(parsed)
        return None
    return parsed


def _list_node(h: Hierarchy, node: _NodeArrays) -> None:
    try:
        children = {c.name: c for c in h.children(node.path)}
    except OSError as exc:
        node.errors.append(f"cannot list: {describe_exception(exc)}")
        node.names = set()
        return
    node.names = set(children)
    for name in ("embeddings", "node_ids", "item_ids"):
        child = children.get(name)
        if child is None:
            continue
        if child.kind is NodeKind.ERROR:
            node.errors.append(f"{name}: unreadable metadata: {child.error}")
            continue
        if child.kind is not NodeKind.ARRAY or child.raw is None:
            node.errors.append(f"{name}: expected an array, found {child.kind.value}")
            continue
        meta = _meta_or_error(node, name, child.raw, child.zarr_format)
        if name == "embeddings":
            node.emb = meta
        elif node.ids is None:
            node.ids, node.ids_name = meta, name
        else:
            node.errors.append("has both node_ids and item_ids")


def _check_node(node: _NodeArrays, leaf: bool | None, summary: IndexSummary, findings: list[Finding]) -> None:
    """Per-node metadata checks of §10 items 3, 5 and 6."""
    if node.emb is None:
        findings.append(_error(node.path, f"has {node.ids_name} but no embeddings array"))
        return
    if node.ids is None:
        findings.append(
            _error(node.path, "has embeddings but no ids array (node_ids or item_ids); upstream reports it as corrupt")
        )
        return
    if leaf is not None:
        wanted = "item_ids" if leaf else "node_ids"
        if node.ids_name != wanted:
            where = "the leaf level" if leaf else "an internal level"
            findings.append(_error(f"{node.path}/{node.ids_name}", f"wrong ids array for {where} (expected {wanted})"))
    if node.ids.rows != node.emb.rows or len(node.ids.shape) != 1:
        findings.append(
            _error(
                node.path,
                f"embeddings has {node.emb.rows} rows but {node.ids_name} has "
                f"{node.ids.rows} (shape {list(node.ids.shape)}); they must agree",
            )
        )
    if len(node.emb.shape) != 2:
        findings.append(_error(f"{node.path}/embeddings", f"expected 2 dimensions, found shape {list(node.emb.shape)}"))
    elif summary.dim is not None and node.emb.shape[1] != summary.dim:
        findings.append(
            _error(
                f"{node.path}/embeddings",
                f"dimension {node.emb.shape[1]} differs from index_root/embeddings ({summary.dim})",
            )
        )
    if summary.dtype is not None and node.emb.data_type != summary.dtype:
        findings.append(
            _error(
                f"{node.path}/embeddings",
                f"data type {node.emb.data_type} differs from index_root/embeddings ({summary.dtype})",
            )
        )
    elif node.emb.data_type not in STORED_DTYPES and summary.dtype is None:
        findings.append(
            _error(
                f"{node.path}/embeddings", f"data type {node.emb.data_type} is not one of {', '.join(STORED_DTYPES)}"
            )
        )
    if node.ids.data_type != "uint32":
        findings.append(_error(f"{node.path}/{node.ids_name}", f"ids must be uint32, found {node.ids.data_type}"))


# -- referenced children (decodes node_ids) -------------------------------------------------------


@dataclass(frozen=True)
class ReferencedChildren:
    """Which nodes of a level the level above points to, and which of those do not exist.

    Unlike :func:`level_stats` this decodes the ``node_ids`` arrays of the level above.
    """

    level: int
    referenced: int  # distinct child ids referenced
    missing_ids: tuple[int, ...]  # referenced but absent (first MAX_LISTED_IDS)
    missing_count: int
    invalid_refs: tuple[tuple[str, int], ...]  # (parent path, id) with id >= R
    parents_read: int
    parents_total: int
    findings: tuple[Finding, ...] = ()

    @property
    def complete(self) -> bool:
        return self.parents_read == self.parents_total


def referenced_children(
    h: Hierarchy,
    level: int,
    summary: IndexSummary | None = None,
    stats: LevelStats | None = None,
    *,
    max_parents: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
) -> ReferencedChildren:
    """Decode the parents' node_ids (root rows for level 1) and find referenced-but-missing children."""
    summary = summary if summary is not None else summarize(h)
    stats = stats if stats is not None else level_stats(h, level, summary)
    findings: list[Finding] = []
    present = set(stats.node_ids.tolist())
    if level == 1:
        refs = set(range(summary.fan_out or 0))
        parents_read = parents_total = 1
        invalid: list[tuple[str, int]] = []
    else:
        above = level_stats(h, level - 1, summary)
        parents = [above.node_path(int(i)) for i in above.node_ids]
        parents_total = len(parents)
        if max_parents is not None and parents_total > max_parents:
            picks = np.linspace(0, parents_total - 1, max_parents).round().astype(int)
            parents = [parents[i] for i in sorted(set(picks.tolist()))]
        refs = set()
        invalid = []
        parents_read = 0
        for done, parent in enumerate(parents):
            if cancel is not None and cancel.is_set():
                break
            try:
                values = h.read_array(f"{parent}/node_ids").astype(np.int64).ravel()
            except Exception as exc:
                findings.append(_error(f"{parent}/node_ids", f"unreadable: {describe_exception(exc)}"))
                continue
            parents_read += 1
            refs.update(values.tolist())
            if summary.representatives is not None:
                bad = values[values >= summary.representatives]
                invalid += [(parent, int(v)) for v in bad[:10]]
            if progress is not None:
                progress(done + 1, len(parents))
    missing = sorted(refs - present)
    return ReferencedChildren(
        level,
        len(refs),
        tuple(missing[:MAX_LISTED_IDS]),
        len(missing),
        tuple(invalid[:MAX_LISTED_IDS]),
        parents_read,
        parents_total,
        tuple(findings),
    )
