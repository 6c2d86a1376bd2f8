"""The node page on a large level: it is shown from the node's own documents, and the comparison
with its whole level (the median size) fills in when that level's statistics arrive."""

from __future__ import annotations

from pathlib import Path

import pytest
from index_factory import build_clustered_index

from ecpfs_viewer.gui.overview.node_page import NodePage
from ecpfs_viewer.model.ecpfs import held_level_stats, shared_level_stats
from ecpfs_viewer.model.ecpfs.nodes import NodeRef
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 levels, 2,000 vectors of 8 dimensions, about 10 items per leaf."""
    return build_clustered_index(tmp_path_factory.mktemp("pageload"), 2000, 8, clusters=6, seed=7,
                                 levels=3, target_cluster_items=10)


def test_a_leaf_page_shows_before_its_level_is_measured_then_compares_with_it(qtbot, show, built) -> None:
    page: NodePage = show(NodePage(), 900, 600)
    leaf = NodeRef(3, int(shared_level_stats(Hierarchy(open_store(built)), 3).node_ids[4]))
    h = Hierarchy(open_store(built))
    seen: dict[str, object] = {}
    page.loaded.connect(lambda: seen.update(median=page.data.info.level_median, facts=page.facts_text()))
    page.show_node(h, leaf)
    qtbot.waitUntil(lambda: "facts" in seen, timeout=10_000)
    rows = page.data.info.rows
    assert seen["median"] is None and f"Size: {rows:,} rows" in str(seen["facts"])  # its own size at once
    assert page.listing_label.text().startswith(f"{rows:,} items")
    qtbot.waitUntil(lambda: "x the level's median" in page.facts_text() and not page.busy, timeout=10_000)
    level = held_level_stats(h, 3)
    assert level is not None and f"{level.node_count:,} nodes" in page.facts_text()


def test_leaving_a_node_drops_its_level_comparison(qtbot, show, built) -> None:
    page: NodePage = show(NodePage(), 900, 600)
    h = Hierarchy(open_store(built))
    ids = shared_level_stats(Hierarchy(open_store(built)), 3).node_ids
    first, second = NodeRef(3, int(ids[1])), NodeRef(2, 0)
    with qtbot.waitSignal(page.loaded, timeout=10_000):
        page.show_node(h, first)
    with qtbot.waitSignal(page.loaded, timeout=10_000):
        page.show_node(h, second)  # before the first node's level comparison arrived, or after
    qtbot.waitUntil(lambda: not page.busy, timeout=10_000)
    assert page.data.info.ref == second and "lvl_2/node_0" in page.facts_text()
    assert "x the level's median" in page.facts_text()
