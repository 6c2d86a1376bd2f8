"""The arrays of each node of a level: one batch read of the expected documents, and per-node checks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.findings import Finding
from ecpfs_viewer.model.ecpfs.metadata import ArrayMeta, parse_array_meta
from ecpfs_viewer.model.ecpfs.sizing import STORED_DTYPES
from ecpfs_viewer.model.ecpfs.summary import IndexSummary
from ecpfs_viewer.model.errors import describe_exception, transport_failure
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy, Unanswered
from ecpfs_viewer.model.zarrtree.nodes import NodeKind


@dataclass
class NodeArrays:
    """What one node group holds, filled while its level's documents are read."""

    node_id: int
    path: str
    names: set[str] | None = None  # arrays found by listing (slow path only)
    emb: ArrayMeta | None = None
    ids: ArrayMeta | None = None
    ids_name: str | None = None
    errors: list[str] = field(default_factory=list)
    unreadable: set[str] = field(default_factory=set)  # arrays whose zarr.json is there but cannot be used
    unread: str | None = None  # why its documents could not be read on the way (no answer): not a fact


@dataclass(frozen=True)
class NodeList:
    """The nodes of a level to measure, held as three objects whatever their number: a NodeArrays
    each (with its list and set) is made a batch at a time, as they are measured. 200,000 of them
    made at once were 600,000 objects the window's collector walked on its GUI thread (young and
    middle-aged passes of 100-180 ms at 10M items)."""

    ids: np.ndarray  # int64, the node ids in listing order
    paths: list[str]
    unread: dict[int, str | None]  # position -> why its documents could not be read on the way

    @staticmethod
    def of(nodes: Sequence[tuple[int, str]], unread: dict[int, str | None] | None = None) -> NodeList:
        return NodeList(np.fromiter((node_id for node_id, _ in nodes), np.int64, len(nodes)),
                        [path for _, path in nodes], unread or {})

    def __len__(self) -> int:
        return len(self.paths)

    def arrays(self, low: int, high: int) -> list[NodeArrays]:
        """Fresh entries for the nodes at positions low:high."""
        unread = self.unread
        return [NodeArrays(node_id, self.paths[at]) if at not in unread else
                NodeArrays(node_id, self.paths[at], names=set(), unread=unread[at])
                for at, node_id in enumerate(self.ids[low:high].tolist(), low)]


#: Nodes whose documents are read in one batch: a level's all at once held every document's bytes
#: beside their parsed metadata (600,000 documents at 10M items); a batch still keeps a remote
#: store's in-flight budget busy.
DOCUMENT_BATCH_NODES = 4096


def read_node_arrays(h: Hierarchy, nodes: list[NodeArrays], expected_ids: str | None,
                     each_batch: Callable[[list[NodeArrays]], None] | None = None) -> None:
    """Fill emb/ids of every node: batch reads of the expected documents, listing only odd nodes.

    Documents the Hierarchy already holds (the node_ids a derived listing read) are not read
    again; the others are read DOCUMENT_BATCH_NODES nodes at a time with one multi-key read, so a
    remote store keeps its whole in-flight budget busy. Each batch, filled, is handed to
    ``each_batch`` in node order before the next is read (it may let go of what they hold). The
    first failed read is raised, as a level that cannot be read; a node whose documents could not
    be read on the way (no answer) is marked ``unread`` instead.
    """
    for start in range(0, len(nodes), DOCUMENT_BATCH_NODES):
        batch = nodes[start:start + DOCUMENT_BATCH_NODES]
        fast = [n for n in batch if not h.is_listed(n.path)] if expected_ids else []
        if fast and expected_ids:
            _read_batch(h, fast, expected_ids)
        for node in batch:
            if node.names is None:
                _list_node(h, node)
        if each_batch is not None:
            each_batch(batch)


def _read_batch(h: Hierarchy, batch: list[NodeArrays], expected_ids: str) -> None:
    """The expected documents of a batch of nodes, read together and parsed; their bytes are let go
    before the next batch is read."""
    raws = _documents(h, [f"{node.path}/{name}" for node in batch for name in ("embeddings", expected_ids)])
    for i, node in enumerate(batch):
        emb_raw, ids_raw = raws[2 * i], raws[2 * i + 1]
        unanswered = next((r for r in (emb_raw, ids_raw) if isinstance(r, Exception)), None)
        if unanswered is not None:
            node.unread, node.names = describe_exception(unanswered), set()
            continue
        if emb_raw is None or ids_raw is None:
            continue  # explained by the listing below
        node.names = {"embeddings", expected_ids}
        node.emb = _meta_or_error(node, "embeddings", emb_raw, 3)  # type: ignore[arg-type]
        node.ids = _meta_or_error(node, expected_ids, ids_raw, 3)  # type: ignore[arg-type]
        node.ids_name = expected_ids


def _documents(h: Hierarchy, paths: list[str]) -> list[bytes | Exception | None]:
    """The zarr.json of each path: held by the Hierarchy, else read in one batch (None if absent,
    the TransportError in place when it could not be read on the way).

    On a remote store the documents read are kept by the Hierarchy (``prefetch``): the tree, a
    derived listing of the level below and a second statistics run then ask for none of them.
    A local store reads them without keeping them (faster than building 8,000 nodes).
    """
    unanswered = h.prefetch(paths) if h.store.local_path is None else {}
    found: list[bytes | Exception | None] = [None] * len(paths)
    unread: list[int] = []
    for i, path in enumerate(paths):
        held = h.held(path)
        if path in unanswered:  # just failed on the way: not waited for twice (F5 asks again)
            found[i] = Unanswered(unanswered[path].error or f"{path}: could not be read")
        elif held is not None and held.zarr_format == 3 and held.raw is not None:
            found[i] = held.raw
        else:
            unread.append(i)
    values = h.store.read_many_or_errors([h.store.key(paths[i], "zarr.json") for i in unread])
    for i, value in zip(unread, values, strict=True):
        if isinstance(value, Exception) and transport_failure(value) is None:
            raise value
        found[i] = value
    return found


def _meta_or_error(node: NodeArrays, name: str, raw: bytes, zarr_format: int | None) -> ArrayMeta | None:
    parsed = parse_array_meta(f"{node.path}/{name}", raw, zarr_format)
    if isinstance(parsed, str):
        node.errors.append(parsed)
        node.unreadable.add(name)
        return None
    return parsed


def _list_node(h: Hierarchy, node: NodeArrays) -> None:
    try:
        children = {c.name: c for c in h.children(node.path)}
    except OSError as exc:
        if transport_failure(exc) is not None:
            node.unread, node.names = describe_exception(exc), set()
            return
        node.errors.append(f"cannot list: {describe_exception(exc)}")
        node.names = set()
        return
    node.names = set(children)
    for name in ("embeddings", "node_ids", "item_ids"):
        child = children.get(name)
        if child is None:
            continue
        if child.unread:
            node.unread = child.error
            continue
        if child.kind is NodeKind.ERROR:
            node.errors.append(f"{name}: unreadable metadata: {child.error}")
            node.unreadable.add(name)
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


def check_node(node: NodeArrays, leaf: bool | None, summary: IndexSummary, findings: list[Finding]) -> None:
    """Per-node metadata checks of §10 items 3, 5 and 6 (an unreadable array was reported as such)."""
    if node.emb is None:
        if "embeddings" not in node.unreadable:
            findings.append(Finding(fc.IDS_WITHOUT_EMBEDDINGS,
                                    node.path, f"has {node.ids_name} but no embeddings array"))
        return
    if node.ids is None:
        if node.unreadable - {"embeddings"}:
            return
        findings.append(
            Finding(fc.EMBEDDINGS_WITHOUT_IDS,
                    node.path, "has embeddings but no ids array (node_ids or item_ids); upstream reports it as corrupt")
        )
        return
    if leaf is not None:
        wanted = "item_ids" if leaf else "node_ids"
        if node.ids_name != wanted:
            where = "the leaf level" if leaf else "an internal level"
            findings.append(Finding(fc.WRONG_IDS_ARRAY,
                                    f"{node.path}/{node.ids_name}", f"wrong ids array for {where} (expected {wanted})"))
    if node.ids.rows != node.emb.rows or len(node.ids.shape) != 1:
        findings.append(
            Finding(
                fc.ROW_COUNT_MISMATCH, node.path,
                f"embeddings has {node.emb.rows} rows but {node.ids_name} has "
                f"{node.ids.rows} (shape {list(node.ids.shape)}); they must agree",
            )
        )
    if len(node.emb.shape) != 2:
        findings.append(Finding(fc.EMBEDDINGS_NOT_2D, f"{node.path}/embeddings",
                                f"expected 2 dimensions, found shape {list(node.emb.shape)}"))
    elif summary.dim is not None and node.emb.shape[1] != summary.dim:
        findings.append(
            Finding(
                fc.DIMENSION_DIFFERS, f"{node.path}/embeddings",
                f"dimension {node.emb.shape[1]} differs from index_root/embeddings ({summary.dim})",
            )
        )
    if summary.dtype is not None and node.emb.data_type != summary.dtype:
        findings.append(
            Finding(
                fc.DTYPE_DIFFERS, f"{node.path}/embeddings",
                f"data type {node.emb.data_type} differs from index_root/embeddings ({summary.dtype})",
            )
        )
    elif node.emb.data_type not in STORED_DTYPES and summary.dtype is None:
        findings.append(
            Finding(
                fc.STORED_DTYPE, f"{node.path}/embeddings",
                f"data type {node.emb.data_type} is not one of {', '.join(STORED_DTYPES)}"
            )
        )
    if node.ids.data_type != "uint32":
        findings.append(Finding(fc.IDS_NOT_UINT32,
                                f"{node.path}/{node.ids_name}", f"ids must be uint32, found {node.ids.data_type}"))


