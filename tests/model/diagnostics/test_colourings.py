"""The registry of index-map colourings is the one table every overlay is made from: each overlay the
model makes names a colouring of it (and draws with its kind), and an unregistered one is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from index_factory import build_clustered_index

from ecpfs_viewer.model.diagnostics.boundary import boundary_items
from ecpfs_viewer.model.diagnostics.colourings import COLOURINGS, Need, colouring, colouring_ids
from ecpfs_viewer.model.diagnostics.index_map import (
    MapOverlay,
    fill_overlay,
    findings_overlay,
    overlay_from_nodes,
    size_overlay,
)
from ecpfs_viewer.model.diagnostics.index_map_layout import layout_index
from ecpfs_viewer.model.diagnostics.miss_map import MissMapCollector
from ecpfs_viewer.model.diagnostics.overlays import STRAYS_LEGEND, VISITS_LEGEND
from ecpfs_viewer.model.search import IndexReader, recall_sweep, sample_items


def test_ids_are_unique_and_every_need_is_served() -> None:
    assert len(colouring_ids()) == len(COLOURINGS) == len(set(colouring_ids()))
    assert colouring_ids() == ("size", "fill", "findings", "misses", "boundary", "workload", "strays")
    assert {c.needs for c in COLOURINGS} == set(Need)
    assert all(c.title and c.meaning for c in COLOURINGS)
    with pytest.raises(KeyError, match="no index-map colouring 'visits'; there are size, fill"):
        colouring("visits")


def test_every_overlay_the_model_makes_names_its_colouring(tmp_path: Path) -> None:
    reader = IndexReader(build_clustered_index(tmp_path, 600, 6, levels=2, target_cluster_items=20))
    index_map = layout_index(reader)
    collector = MissMapCollector(index_map)
    recall_sweep(reader, sample_items(reader, 10, seed=1), k=5, search_exps=(1, 3), observe=collector.observe)
    miss_map = collector.result(reader.locator.complete_map())
    leaf = (2, int(index_map.band(2).node_ids[0]))
    made = [size_overlay(index_map), fill_overlay(index_map), findings_overlay(index_map, []),
            miss_map.overlay(), miss_map.overlay(3), boundary_items(reader, index_map).overlay(),
            overlay_from_nodes(index_map, "workload", {leaf: 3.0}, VISITS_LEGEND),
            overlay_from_nodes(index_map, "strays", {leaf: 0.5}, STRAYS_LEGEND)]
    assert [o.key for o in made] == ["size", "fill", "findings", "misses", "misses:3", "boundary", "workload",
                                     "strays"]
    for overlay in made:
        assert overlay.kind == colouring(overlay.id).kind
        assert overlay.name.startswith(colouring(overlay.id).title)  # the display text may add a parameter
    assert made[4].name == "misses (search_exp 3)"
    with pytest.raises(KeyError, match="no index-map colouring 'visits'"):
        MapOverlay("visits", "visits", {}, "visits per node")
