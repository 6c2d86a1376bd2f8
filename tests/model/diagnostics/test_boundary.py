"""Boundary items: the share of a node's items whose two best candidate representatives nearly tie."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from index_factory import build_clustered_index

from ecpfs_viewer.model.diagnostics.boundary import boundary_items
from ecpfs_viewer.model.diagnostics.index_map_layout import layout_index
from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.search.reader import score_block


def test_boundary_shares_match_scoring_each_item_by_hand(tmp_path: Path) -> None:
    path = build_clustered_index(tmp_path, 600, 5, levels=2, target_cluster_items=20)
    reader = IndexReader(path)
    index_map = layout_index(reader)
    report = boundary_items(reader, index_map, tolerance=0.1, leaf_batch=7)
    assert report.scored == 600
    by_hand: dict[tuple[int, int], list[bool]] = {}
    for leaf in reader.leaf_ids():
        node = reader.node(2, leaf)
        location = reader.locate(int(node.ids[0]))
        parent = location.path[0].node_id
        for candidates, level, mine in ((reader.root, 1, parent), (reader.node(1, parent), 2, leaf)):
            dots = node.vectors.astype(np.float64) @ candidates.vectors.astype(np.float64).T
            scores = np.sort(score_block(reader.metric, reader.is_normalized, dots.astype(np.float32),
                                         candidates.sq_norms, node.sq_norms[:, None]), axis=1)
            near = (scores[:, 1] - scores[:, 0] <= 0.1 * np.abs(scores[:, 0])) if scores.shape[1] > 1 else \
                np.zeros(len(node.ids), bool)
            by_hand.setdefault((level, mine), []).extend(near.tolist())
    for (level, node_id), flags in by_hand.items():
        assert report.node_share(level, node_id) == (sum(flags), len(flags))
    assert report.level_share(1) == pytest.approx(
        sum(sum(f) for (lv, _), f in by_hand.items() if lv == 1) / 600)
    leaf = reader.leaf_ids()[0]
    assert "boundary items:" in report.describe(2, leaf)
    overlay = report.overlay()
    i = index_map.band(2).index_of(leaf)
    b, n = report.node_share(2, leaf)
    assert overlay.value(2, i) == pytest.approx(b / n)


def test_a_wider_tolerance_finds_more_boundary_items(tmp_path: Path) -> None:
    path = build_clustered_index(tmp_path, 400, 5, levels=2)
    reader = IndexReader(path)
    index_map = layout_index(reader)
    tight, loose = boundary_items(reader, index_map, 0.01), boundary_items(reader, index_map, 0.3)
    assert loose.level_share(2) > tight.level_share(2)


def test_rank_correlation_follows_the_order_and_skips_what_cannot_be_ranked() -> None:
    from ecpfs_viewer.model.diagnostics.boundary import rank_correlation

    a = np.array([0.1, 0.2, 0.3, 0.4, np.nan])
    assert rank_correlation(a, np.array([1.0, 2.0, 3.0, 10.0, 0.0])) == pytest.approx(1.0)
    assert rank_correlation(a, np.array([4.0, 3.0, 2.0, 1.0, 9.0])) == pytest.approx(-1.0)
    assert rank_correlation(a, np.array([0.0, 0.0, 1.0, 1.0, 0.0])) == pytest.approx(np.sqrt(0.8))
    assert rank_correlation(a, np.zeros(5)) is None and rank_correlation(a[:2], a[:2]) is None
