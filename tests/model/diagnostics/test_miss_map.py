"""The miss map: every missed true neighbour counted at the first node of its path the search never opened."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from defect_indexes import build_moved_leaf_index
from index_factory import build_clustered_index

from ecpfs_viewer.model.diagnostics.index_map_layout import layout_index
from ecpfs_viewer.model.diagnostics.miss_map import MissMapCollector
from ecpfs_viewer.model.search import IndexReader, recall_sweep, sample_items
from ecpfs_viewer.model.search.queries import QuerySet


def test_each_miss_is_placed_where_its_search_turned_away(tmp_path: Path) -> None:
    path = build_clustered_index(tmp_path, 2000, 6, levels=3, target_cluster_items=20)
    reader = IndexReader(path)
    index_map = layout_index(reader)
    collector = MissMapCollector(index_map)
    seen = []

    def observe(search):
        seen.append(search)
        collector.observe(search)

    recall_sweep(reader, sample_items(reader, 40, seed=2), k=10, search_exps=(1, 4), observe=observe)
    miss_map = collector.result(reader.locator.complete_map())
    expected: dict[tuple[int, int, int], int] = {}
    for search in seen:  # the same rule, one miss at a time, through the locator's own ancestors
        opened = {(v.level, v.node_id) for v in search.result.trace}
        for item in search.missed:
            steps = reader.locate(item).path
            first = next(((s.level, s.node_id) for s in steps if (s.level, s.node_id) not in opened),
                         (steps[-1].level, steps[-1].node_id))
            key = (search.search_exp, *first)
            expected[key] = expected.get(key, 0) + 1
    got = {(exp, level, int(index_map.band(level).node_ids[i])): int(arr[i])
           for exp, per_level in miss_map.counts.items() for level, arr in per_level.items()
           for i in np.flatnonzero(arr)}
    assert got == expected and sum(expected.values()) > 0
    assert miss_map.total() == sum(len(s.missed) for s in seen)
    assert miss_map.total(1) > miss_map.total(4)
    summed: dict[tuple[int, int], int] = {}
    for (_, level, node), n in expected.items():
        summed[(level, node)] = summed.get((level, node), 0) + n
    lost = miss_map.lost(5)
    assert lost[0].misses == max(summed.values()) and miss_map.lost(5, 4)[0].misses == max(
        n for (exp, _, _), n in expected.items() if exp == 4)
    assert abs(sum(r.share for r in miss_map.lost(10_000)) - 1.0) < 1e-9
    document = miss_map.to_dict()
    assert [row["search_exp"] for row in document["per_search_exp"]] == [1, 4]
    assert document["lost_at"][0]["path"] == lost[0].path


def test_the_miss_map_puts_the_misses_of_a_moved_leaf_on_its_path(tmp_path: Path) -> None:
    defect = build_moved_leaf_index(tmp_path)
    reader = IndexReader(defect.path)
    index_map = layout_index(reader)
    collector = MissMapCollector(index_map)
    queries = QuerySet(defect.vectors[:30], tuple(int(i) for i in defect.item_ids[:30]), "moved items")
    recall_sweep(reader, queries, k=10, search_exps=(1, 2), observe=collector.observe)
    miss_map = collector.result(reader.locator.complete_map())
    on_path = {(s.level, s.node_id) for s in reader.locate(int(defect.item_ids[0])).path}
    top = miss_map.lost(1)[0]
    assert (top.level, top.node_id) in on_path
    assert top.share > 0.5
    overlay = miss_map.overlay()
    band = index_map.band(top.level)
    assert overlay.value(top.level, band.index_of(top.node_id)) == top.misses
