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



def test_a_remote_level_is_summarised_with_the_next_batches_documents_asked_meanwhile(tmp_path: Path,
                                                                                     monkeypatch) -> None:
    """Over a remote store each batch of documents ends in a wait for its slowest answer: one batch
    at a time, the 40,000 leaves of the 2M index took 53 s at 50 ms a request (requests floor 32 s);
    with three batches asked side by side 40 s, as long as a bare client's. Each node's summary is
    its local one, the rows still arrive a batch at a time and in order, each document is asked once."""
    from index_factory import build_clustered_index
    from remote_fixtures import serve_static

    from ecpfs_viewer.model.views import tree_rows

    index = build_clustered_index(tmp_path, 1200, 4, target_cluster_items=20)
    monkeypatch.setattr(tree_rows, "SUMMARY_BATCH", 4)
    local = Hierarchy(open_store(index))
    paths = [node.path for node in local.children("lvl_2")]
    assert len(paths) >= 40
    side_by_side = threading.Barrier(tree_rows.READ_AHEAD, timeout=30)  # broken unless that many run at once
    with serve_static(tmp_path) as (base, tally):
        remote = Hierarchy(open_store(f"{base}/{index.name}"))
        groups: list[int] = []
        real = remote.prefetch

        def prefetch(keys, **kwargs):  # type: ignore[no-untyped-def]
            groups.append(sum(1 for k in keys if not k.endswith("/embeddings")))
            if len(groups) <= tree_rows.READ_AHEAD:
                side_by_side.wait()
            return real(keys, **kwargs)

        remote.prefetch = prefetch  # type: ignore[method-assign]
        before = len(tally.paths)
        batches: list[list[NodeSummary]] = []
        last = summarize_nodes(remote, paths, progress=batches.append, cancel=threading.Event())
        asked = tally.paths[before:]
    assert groups == [4] * (len(paths) // 4) + ([len(paths) % 4] if len(paths) % 4 else [])
    assert all(len(b) == 4 for b in batches)
    got = [s for b in batches for s in b] + last
    local_batches: list[list[NodeSummary]] = []
    local_last = summarize_nodes(local, paths, progress=local_batches.append, cancel=threading.Event())
    assert got == [s for b in local_batches for s in b] + local_last
    assert all(s.rows for s in got) and len(asked) == len(set(asked)) == 2 * len(paths)


def test_a_cancelled_remote_summary_asks_for_no_batch_after_it(tmp_path: Path, monkeypatch) -> None:
    from index_factory import build_clustered_index
    from remote_fixtures import serve_static

    from ecpfs_viewer.model.views import tree_rows

    index = build_clustered_index(tmp_path, 1200, 4, target_cluster_items=20)
    monkeypatch.setattr(tree_rows, "SUMMARY_BATCH", 4)
    paths = [node.path for node in Hierarchy(open_store(index)).children("lvl_2")]
    cancel = threading.Event()
    with serve_static(tmp_path) as (base, _tally):
        remote = Hierarchy(open_store(f"{base}/{index.name}"))
        groups: list[int] = []
        real = remote.prefetch

        def prefetch(keys, **kwargs):  # type: ignore[no-untyped-def]
            groups.append(len(keys))
            return real(keys, **kwargs)

        remote.prefetch = prefetch  # type: ignore[method-assign]

        def progress(_batch: list[NodeSummary]) -> None:
            cancel.set()  # the user cancels once the first rows are shown

        assert summarize_nodes(remote, paths, progress=progress, cancel=cancel) == []
    assert len(groups) <= 1 + tree_rows.READ_AHEAD < len(paths) // 4
