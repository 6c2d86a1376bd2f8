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
