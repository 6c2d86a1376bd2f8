"""A node's facts without its whole level (model/ecpfs/levels.nodes_stats, node_info(whole_level=False)):
what a node page shows at once on a level of 40,000 nodes, the same as with the level's statistics
but for the comparison with the level; and level statistics computed under one lock per level."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
from index_factory import build_clustered_index

from ecpfs_viewer.model.ecpfs import held_level_stats, nodes_stats, shared_level_stats
from ecpfs_viewer.model.ecpfs.level_stats_cache import LevelStatsCache
from ecpfs_viewer.model.ecpfs.nodes import NodeRef
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.views.node_info import children_of, leaf_items, node_info
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 levels, 2,000 vectors of 8 dimensions, about 10 items per leaf."""
    return build_clustered_index(tmp_path_factory.mktemp("alone"), 2000, 8, clusters=6, seed=11,
                                 levels=3, target_cluster_items=10)


def test_a_leaf_alone_has_the_facts_of_the_whole_level_but_the_comparison(built: Path) -> None:
    whole = Hierarchy(open_store(built))
    stats = shared_level_stats(whole, 3)
    ref = NodeRef(3, int(stats.node_ids[len(stats.node_ids) // 3]))
    expected = node_info(whole, ref)

    alone = Hierarchy(open_store(built))
    info = node_info(alone, ref, whole_level=False)
    assert held_level_stats(alone, 3) is None  # the leaf level was not parsed
    assert (info.exists, info.is_leaf, info.rows, info.representative, info.chunk_use, info.findings) == (
        expected.exists, expected.is_leaf, expected.rows, expected.representative, expected.chunk_use,
        expected.findings)
    assert info.level_median is None and info.level_nodes == 0 and expected.level_median is not None
    assert np.array_equal(leaf_items(alone, ref, whole_level=False).ids, leaf_items(whole, ref).ids)
    assert held_level_stats(alone, 3) is None
    # once the level's statistics are held, the lone call uses them
    shared_level_stats(alone, 3)
    assert node_info(alone, ref, whole_level=False).level_median == expected.level_median


def test_children_alone_have_the_sizes_and_problems_the_whole_level_gives(built: Path, tmp_path: Path) -> None:
    copy = tmp_path / "index.zarr"
    shutil.copytree(built, copy)
    whole = Hierarchy(open_store(copy))
    parent = next(ref for ref in (NodeRef(2, int(i)) for i in shared_level_stats(whole, 2).node_ids)
                  if len(children_of(whole, ref).rows) >= 3)
    first = children_of(whole, parent).rows
    shutil.rmtree(copy / first[1].ref.path)  # a child that the parent references but that is gone
    (copy / first[2].ref.path / "item_ids" / "zarr.json").write_text("{ not json")
    whole, alone = Hierarchy(open_store(copy)), Hierarchy(open_store(copy))
    listed = children_of(whole, parent).rows
    lone = children_of(alone, parent, whole_level=False).rows
    assert held_level_stats(alone, 3) is None
    assert [(r.ref, r.rows) for r in lone] == [(r.ref, r.rows) for r in listed]
    assert lone[1].rows is None and "does not exist" in lone[1].finding.message
    assert lone[2].finding is not None and lone[2].finding.message == listed[2].finding.message


def test_a_missing_node_alone_does_not_exist(built: Path) -> None:
    info = node_info(Hierarchy(open_store(built)), NodeRef(3, 999_999), whole_level=False)
    assert not info.exists and info.findings[0].message == "does not exist (search skips it)"


def test_nodes_stats_measure_only_the_named_nodes(built: Path) -> None:
    h = Hierarchy(open_store(built))
    level = shared_level_stats(h, 3)
    picked = [int(i) for i in level.node_ids[[0, 5, 9]]]
    few = nodes_stats(Hierarchy(open_store(built)), 3, [picked[2], picked[0], picked[1], picked[0]])
    assert few.subset and few.node_ids.tolist() == picked
    assert few.sizes.tolist() == [int(level.sizes[i]) for i in (0, 5, 9)]


def test_a_level_computing_does_not_hold_up_another_level() -> None:
    """A node page's parent levels are computed while the leaf level is still being parsed."""
    cache: LevelStatsCache[str] = LevelStatsCache()
    leaf_started, leaf_may_end = threading.Event(), threading.Event()

    def slow_leaf_level() -> str:
        leaf_started.set()
        leaf_may_end.wait(30)
        return "lvl_3"

    leaf = threading.Thread(target=lambda: cache.get_or_compute(3, ("k",), slow_leaf_level))
    leaf.start()
    try:
        assert leaf_started.wait(30)
        assert cache.get_or_compute(2, ("k",), lambda: "lvl_2") == "lvl_2"  # not waiting for level 3
        assert cache.peek(3, ("k",)) is None and cache.peek(2, ("k",)) == "lvl_2"
    finally:
        leaf_may_end.set()
        leaf.join(30)
    assert cache.get(3) == "lvl_3" and cache.peek(3, ("other key",)) is None
