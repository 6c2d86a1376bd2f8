"""Node summaries for the tree's second column: arrays' shape and dtype, ecpfs nodes' rows."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.views.tree_rows import NodeSummary, needs_summary, scan_rows, summarize_node, summarize_nodes
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import NodeKind


def test_arrays_nodes_and_groups(two_clusters_path: Path) -> None:
    h = Hierarchy(open_store(two_clusters_path))
    embeddings = summarize_node(h, "lvl_2/node_0/embeddings")
    assert (embeddings.kind, embeddings.dtype, embeddings.error) == (NodeKind.ARRAY, "float32", None)
    assert embeddings.shape.endswith(" x 2")
    node = summarize_node(h, "lvl_2/node_0")
    assert node.rows == int(embeddings.shape.split()[0]) and node.shape == ""
    assert summarize_node(h, "lvl_2") == NodeSummary("lvl_2", h.node("lvl_2").kind)  # nothing to say
    assert [needs_summary(n) for n in h.children("lvl_2")] == [True] * 4
    assert not needs_summary(h.node("lvl_2"))


def test_a_broken_node_is_an_error_value_not_an_exception(two_clusters_copy: Path) -> None:
    meta = two_clusters_copy / "lvl_2" / "node_1" / "embeddings" / "zarr.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "shape": "three"}))
    h = Hierarchy(open_store(two_clusters_copy))
    broken = summarize_node(h, "lvl_2/node_1/embeddings")
    assert broken.error is not None and "lvl_2/node_1/embeddings" in broken.error
    paths = [f"lvl_2/node_{n}/embeddings" for n in range(4)]
    batches: list[list[NodeSummary]] = []
    last = summarize_nodes(h, paths, progress=batches.append, cancel=threading.Event())
    assert batches == [] and [s.path for s in last] == paths  # fewer than a batch: all in the result
    assert [s.error is None for s in last] == [True, False, True, True]


def test_scan_rows_only_trusts_unambiguous_documents() -> None:
    assert scan_rows(b'{"node_type": "array", "shape": [12, 4]}') == 12
    assert scan_rows(b'{"node_type": "array", "shape": [7]}') == 7
    assert scan_rows(b'{"node_type": "group"}') is None
    assert scan_rows(b'{"node_type": "array", "shape": [3], "attributes": {"shape": [9]}}') is None
