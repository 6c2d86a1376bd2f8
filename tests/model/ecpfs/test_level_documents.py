"""A level's node documents are read and parsed a batch of nodes at a time: all at once held every
document's bytes beside the parsed metadata (600,000 documents at 10M items), and the statistics
are the same whatever the batch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from index_factory import build_clustered_index, hierarchy

from ecpfs_viewer.model.ecpfs import node_arrays
from ecpfs_viewer.model.ecpfs.levels import level_stats
from ecpfs_viewer.model.ecpfs.summary import summarize


@pytest.mark.parametrize("batch", [1, 7, 4096])
def test_the_documents_are_read_a_batch_at_a_time_with_the_same_statistics(tmp_path: Path, monkeypatch,
                                                                           batch: int) -> None:
    index = build_clustered_index(tmp_path, 3000, 8)
    expected = level_stats(hierarchy(index), 2)
    monkeypatch.setattr(node_arrays, "DOCUMENT_BATCH_NODES", batch)
    h = hierarchy(index)
    summary = summarize(h)
    calls: list[int] = []
    real = h.store.read_many_or_errors

    def counted(keys, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(sum(k.endswith(("/embeddings/zarr.json", "/item_ids/zarr.json")) for k in keys))
        return real(keys, *args, **kwargs)

    h.store.read_many_or_errors = counted  # type: ignore[method-assign]
    found = level_stats(h, 2, summary)
    leaves = len(expected.node_ids)
    assert max(calls) <= 2 * batch  # an embeddings and an item_ids document per node, a batch at a time
    assert sum(calls) >= 2 * leaves
    np.testing.assert_array_equal(found.node_ids, expected.node_ids)
    np.testing.assert_array_equal(found.sizes, expected.sizes)
    assert (found.findings, found.chunk_rows, found.total_items) == (expected.findings, expected.chunk_rows,
                                                                     expected.total_items)


def test_each_batch_is_measured_and_let_go_before_the_next_is_read(tmp_path: Path, monkeypatch) -> None:
    """A level's parsed documents held all at once grew with the index (10M items: 200,000 leaves'
    two documents each): every batch's are dropped once measured, before the next batch is read."""
    index = build_clustered_index(tmp_path, 3000, 8)
    monkeypatch.setattr(node_arrays, "DOCUMENT_BATCH_NODES", 16)
    batches: list[list[node_arrays.NodeArrays]] = []
    still_held: list[int] = []
    real = node_arrays._read_batch

    def watched(h, batch, expected_ids):  # type: ignore[no-untyped-def]
        still_held.append(sum(n.emb is not None or n.ids is not None for earlier in batches for n in earlier))
        batches.append(batch)
        return real(h, batch, expected_ids)

    monkeypatch.setattr(node_arrays, "_read_batch", watched)
    stats = level_stats(hierarchy(index), 2)
    assert len(batches) > 3 and sum(stats.sizes) == 3000
    assert still_held == [0] * len(batches)


def test_a_levels_node_entries_are_made_a_batch_at_a_time(tmp_path: Path, monkeypatch) -> None:
    """200,000 entries made at once (each with its list and set) were objects the window's collector
    walked on its GUI thread: only a batch's exist at any time."""
    import gc

    from ecpfs_viewer.model.ecpfs import node_measure
    from ecpfs_viewer.model.ecpfs.node_arrays import NodeArrays

    index = build_clustered_index(tmp_path, 3000, 8)
    expected = level_stats(hierarchy(index), 2)
    assert len(expected.node_ids) > 40
    monkeypatch.setattr(node_arrays, "DOCUMENT_BATCH_NODES", 8)
    alive: list[int] = []
    real = node_measure.read_node_arrays

    def counting(h, nodes, *args):  # type: ignore[no-untyped-def]
        alive.append(sum(isinstance(o, NodeArrays) for o in gc.get_objects()))
        real(h, nodes, *args)

    monkeypatch.setattr(node_measure, "read_node_arrays", counting)
    found = level_stats(hierarchy(index), 2)
    assert len(alive) >= len(expected.node_ids) // 8 and max(alive) <= 8  # fails when every entry is made first
    assert np.array_equal(found.node_ids, expected.node_ids) and np.array_equal(found.sizes, expected.sizes)
    assert found.findings == expected.findings
