"""Self-reachability on real builds: equal to ecp_search per item, and a leaf whose items were moved
by hand is named with the level at which its items leave their branch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from defect_indexes import move_leaf

from ecpfs_viewer.model.diagnostics.reachability import self_reachability
from ecpfs_viewer.model.search.ecp import ecp_search
from ecpfs_viewer.model.search.index import IndexReader
from ecpfs_viewer.model.search.results import SearchParams
from tests.index_factory import build_clustered_index


def _first_leaf(index: IndexReader, vector: np.ndarray, own: int) -> int:
    result = ecp_search(index, vector, SearchParams(k=1, search_exp=1))
    scanned = [v.node_id for v in result.trace if v.is_leaf]
    return own if own in scanned else scanned[0]


@pytest.fixture(scope="module")
def three_levels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_clustered_index(tmp_path_factory.mktemp("reach"), 1500, 12, clusters=10, levels=3,
                                 target_cluster_items=20)


def test_equals_ecp_search_for_every_item(three_levels: Path) -> None:
    index = IndexReader(three_levels)
    report = self_reachability(index)
    assert report.checked == 1500 and not report.sampled
    strays = {int(i): int(r) for i, r in zip(report.stray_items, report.stray_reached, strict=True)}
    item_map = index.locator.read_everything()
    assert item_map is not None
    for leaf in index.leaf_ids():
        node = index.node(index.levels, leaf)
        assert node is not None
        for item, vector in zip(node.ids.tolist(), node.vectors, strict=True):
            assert _first_leaf(index, vector, leaf) == strays.get(item, leaf)
    assert report.reached + report.strays == 1500


def test_moved_leaf_is_named_with_its_items_and_level(tmp_path: Path) -> None:
    path = build_clustered_index(tmp_path, 1500, 12, clusters=10, levels=3, target_cluster_items=20)
    clean = self_reachability(IndexReader(path))
    leaf, items, level = move_leaf(path)
    report = self_reachability(IndexReader(path))
    rows = report.strays_of_leaf(leaf)
    named = {r["item_id"] for r in rows}
    assert set(items) <= named | {int(i) for i in clean.stray_items}
    assert len(named) >= len(items) - 1  # the moved vectors lead to the donor's branch
    assert {r["leaves_branch_at"] for r in rows if r["item_id"] in items} == {level}
    assert f"leave their branch at lvl_{level}" in report.sentence()
    assert report.strays > clean.strays


def test_sample_on_larger_index(three_levels: Path) -> None:
    report = self_reachability(IndexReader(three_levels), full_limit=1000, sample=300, seed=3)
    assert report.sampled and report.checked == 300
    assert "300 sampled items (seed 3) of 1,500" in report.sentence()


def test_map_values_put_the_strays_on_the_moved_leaf(tmp_path: Path) -> None:
    from ecpfs_viewer.model.diagnostics.overlays import stray_share_by_node

    path = build_clustered_index(tmp_path, 1500, 12, clusters=10, levels=3, target_cluster_items=20)
    leaf, items, _ = move_leaf(path)
    values = stray_share_by_node(self_reachability(IndexReader(path)))
    assert max(values, key=lambda key: values[key]) == (3, leaf)
    assert values[(3, leaf)] >= (len(items) - 1) / len(items)


def test_cancel_stops_self_reachability(three_levels: Path) -> None:
    import threading

    from ecpfs_viewer.model.search.results import SearchCancelled

    cancel = threading.Event()
    phases: list[str] = []

    def progress(report: object) -> None:
        phases.append(str(getattr(report, "phase", "")))
        cancel.set()

    with pytest.raises(SearchCancelled):
        self_reachability(IndexReader(three_levels), progress=progress, cancel=cancel)
    assert phases == ["reading leaves"]
