"""The nodes of a level measured from their documents: ids, sizes, chunk rows, and what is wrong.

A level of a local index with many nodes has its far end measured by a helper process
(model/storage/far_end.py) with the same code on its own opening of the folder, each batch sent
back as its measures, its findings and the stamps its reads took.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs import node_arrays
from ecpfs_viewer.model.ecpfs.findings import Finding
from ecpfs_viewer.model.ecpfs.node_arrays import (
    NodeArrays,
    NodeList,
    check_node,
    read_node_arrays,
)
from ecpfs_viewer.model.ecpfs.paths import parse_node_name
from ecpfs_viewer.model.ecpfs.summary import IndexSummary
from ecpfs_viewer.model.storage.far_end import FarEnd, local_root, open_local, worth_a_helper
from ecpfs_viewer.model.storage.read_stamps import ReadStamps, recording_now
from ecpfs_viewer.model.storage.stamps import Stamps
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import sorted_naturally

#: a level with at least this many nodes has its far end measured by a helper
HELPER_MIN_NODES = 16384
#: nodes a helper's batch holds (the grid both ends measure on)
HELPER_BATCH_NODES = 2048
_JOB = f"{__name__}:measure_job"

#: what the helper sends for a batch: its measures, its findings, the stamps its reads took (None: not asked)
Batch = tuple["Measured", list[Finding], Stamps | None]

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

    def merge(self, measured: Measured, findings: list[Finding]) -> None:
        """Add the measures of the nodes after those measured so far (a helper's batch)."""
        ids, sizes, chunk_rows, empty, broken, sizeless, unread = measured
        self.ids.extend(ids)
        self.sizes.extend(sizes)
        for rows, count in chunk_rows.items():
            self.chunk_rows[rows] = self.chunk_rows.get(rows, 0) + count
        self.empty.extend(empty)
        self.broken.update(broken)
        self.sizeless.update(sizeless)
        self.unread.update(unread)
        self.findings.extend(findings)

    def result(self) -> Measured:
        return self.ids, self.sizes, self.chunk_rows, self.empty, self.broken, self.sizeless, self.unread


class EarlyHelper:
    """A helper started on a level's folder as the file system lists it, before the Hierarchy has
    listed the level (its documents read, a couple of seconds at 200,000 nodes): used only if the
    level's nodes turn out to be exactly those, in the same order, none unread."""

    def __init__(self, nodes: NodeList, helper: FarEnd) -> None:
        self.nodes, self.helper = nodes, helper

    @staticmethod
    def start(h: Hierarchy, path: str, leaf: bool | None, summary: IndexSummary) -> EarlyHelper | None:
        root = local_root(h.store)
        if root is None or _expected(leaf) is None:
            return None
        try:
            with os.scandir(os.path.join(root[0], h.store.key(path))) as entries:
                names = [entry.name for entry in entries if entry.is_dir(follow_symlinks=False)]
        except OSError:
            return None
        named = [(node_id, name) for name in names if (node_id := parse_node_name(name)) is not None]
        if not worth_a_helper(len(named), HELPER_MIN_NODES):
            return None
        listed = NodeList.of([(node_id, f"{path}/{name}") for node_id, name in sorted_naturally(named, lambda n: n[1])])
        helper = _start_helper(h, listed, _expected(leaf), leaf, summary)
        return None if helper is None else EarlyHelper(listed, helper)

    def helper_for(self, nodes: NodeList) -> FarEnd | None:
        """The helper, when it measures exactly these nodes; else stopped, None."""
        if not nodes.unread and np.array_equal(nodes.ids, self.nodes.ids) and nodes.paths == self.nodes.paths:
            return self.helper
        self.helper.stop()
        return None


def _expected(leaf: bool | None) -> str | None:
    return "item_ids" if leaf else "node_ids" if leaf is not None else None


def measure_nodes(h: Hierarchy, nodes: NodeList, leaf: bool | None, summary: IndexSummary,
                  findings: list[Finding], early: EarlyHelper | None = None) -> Measured:
    """The nodes' documents read (``read_node_arrays``) and measured (:class:`Measure`), the far end
    of many nodes of a local index by a helper (``early``'s when it measures these nodes); the same
    measures and findings in the same order."""
    measure = Measure(leaf, summary, findings)
    expected = _expected(leaf)
    helper = early.helper_for(nodes) if early is not None else None
    if helper is None:
        helper = _start_helper(h, nodes, expected, leaf, summary)
    at = 0
    try:
        while helper is not None and at < len(nodes):
            if at >= helper.low():
                taken = helper.take(at)
                helper = None
                if taken is not None:
                    _merge(measure, taken)
                    at = len(nodes)
                break
            end = helper.next_end(at)
            _measure(h, nodes, at, end, expected, measure)
            at = end
    finally:
        if helper is not None:
            helper.stop()
    _measure(h, nodes, at, len(nodes), expected, measure)
    return measure.result()


def _measure(h: Hierarchy, nodes: NodeList, low: int, high: int, expected: str | None, measure: Measure) -> None:
    """Measure the nodes low:high, their entries made a document batch at a time."""
    step = node_arrays.DOCUMENT_BATCH_NODES
    for start in range(low, high, step):
        read_node_arrays(h, nodes.arrays(start, min(start + step, high)), expected, measure.add)


def _merge(measure: Measure, taken: list[Batch]) -> None:
    recorder = recording_now()
    for measured, found, stamps in taken:
        measure.merge(measured, found)
        if recorder is not None and stamps is not None:
            recorder.put(stamps)


def _start_helper(h: Hierarchy, nodes: NodeList, expected: str | None, leaf: bool | None,
                  summary: IndexSummary) -> FarEnd | None:
    root = local_root(h.store)
    if root is None or expected is None or not worth_a_helper(len(nodes), HELPER_MIN_NODES):
        return None
    ids = nodes.ids

    def accept(first: int, end: int, value: Any) -> bool:
        (found, sizes, _rows, _empty, broken, sizeless, missing), _found, _stamps = value
        asked = set(ids[first:end].tolist())
        return len(found) == len(sizes) and asked.issuperset({*found, *broken, *sizeless, *missing})

    setup = (*root, ids, "\0".join(nodes.paths), nodes.unread, expected, leaf, summary, recording_now() is not None)
    return FarEnd(_JOB, setup, len(nodes), 0, HELPER_BATCH_NODES, accept)


def measure_job(folder: str, root_key: str, ids: np.ndarray, joined_paths: str, unread: dict[int, str | None],
                expected: str, leaf: bool | None, summary: IndexSummary, record: bool) -> Callable[[int, int], Batch]:
    """In the helper: the measuring of the nodes ``low:high`` (their ids, paths joined by NUL, and
    why each that could not be listed was not)."""
    store = open_local(folder, root_key)
    h = Hierarchy(store)
    listed = NodeList(ids, joined_paths.split("\0"), unread)

    def batch(low: int, high: int) -> Batch:
        nodes = listed.arrays(low, high)
        found: list[Finding] = []
        measure = Measure(leaf, summary, found)
        if not record:
            read_node_arrays(h, nodes, expected, measure.add)
            return measure.result(), found, None
        reads = ReadStamps(folder)
        reads.expect((store.key(node.path, name, "zarr.json"), node.node_id) for node in nodes
                     for name in ("embeddings", expected))
        with reads.recording():
            read_node_arrays(h, nodes, expected, measure.add)
        return measure.result(), found, reads.stamps()

    return batch
