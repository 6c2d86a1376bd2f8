"""The nodes of a level measured from their documents: ids, sizes, chunk rows, and what is wrong."""

from __future__ import annotations

from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.findings import Finding
from ecpfs_viewer.model.ecpfs.node_arrays import NodeArrays, check_node, read_node_arrays
from ecpfs_viewer.model.ecpfs.summary import IndexSummary
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

Measured = tuple[list[int], list[int], dict[int, int], list[str], set[int], dict[int, str], dict[int, str]]


class Measure:
    """Ids and sizes of the nodes that have embeddings, the commonest chunk rows, the empty, broken,
    sizeless (no usable embeddings: "unreadable" or "missing") and unread nodes; each node's
    problems appended to findings. Measured a batch of nodes at a time as their documents are read
    (``read_node_arrays``), each node's parsed documents let go once measured: a level's all held
    at once grew with the index (200,000 leaves at 10M items)."""

    def __init__(self, leaf: bool | None, summary: IndexSummary, findings: list[Finding]) -> None:
        self.leaf, self.summary, self.findings = leaf, summary, findings
        self.ids: list[int] = []
        self.sizes: list[int] = []
        self.chunk_rows: dict[int, int] = {}
        self.empty: list[str] = []
        self.broken: set[int] = set()
        self.sizeless: dict[int, str] = {}
        self.unread: dict[int, str] = {}

    def add(self, nodes: list[NodeArrays]) -> None:
        for node in nodes:
            self._add(node)
            node.emb = node.ids = None

    def _add(self, node: NodeArrays) -> None:
        if node.unread is not None:
            self.unread[node.node_id] = node.unread
            return
        for message in node.errors:
            self.findings.append(Finding(fc.NODE_METADATA, node.path, message))
        if node.emb is None and node.ids is None:
            if not node.errors:
                self.empty.append(node.path)
            return
        check_node(node, self.leaf, self.summary, self.findings)
        if node.errors or node.emb is None or node.ids is None:
            self.broken.add(node.node_id)
        if node.emb is None:
            self.sizeless[node.node_id] = "unreadable" if "embeddings" in node.unreadable else "missing"
        else:
            self.ids.append(node.node_id)
            self.sizes.append(node.emb.rows)
            if node.emb.chunk_rows is not None:
                self.chunk_rows[node.emb.chunk_rows] = self.chunk_rows.get(node.emb.chunk_rows, 0) + 1

    def result(self) -> Measured:
        return self.ids, self.sizes, self.chunk_rows, self.empty, self.broken, self.sizeless, self.unread


def measure_nodes(h: Hierarchy, nodes: list[NodeArrays], leaf: bool | None, summary: IndexSummary,
              findings: list[Finding]) -> Measured:
    """The nodes' documents read (``read_node_arrays``) and measured (:class:`Measure`)."""
    measure = Measure(leaf, summary, findings)
    read_node_arrays(h, nodes, "item_ids" if leaf else "node_ids" if leaf is not None else None, measure.add)
    return measure.result()
