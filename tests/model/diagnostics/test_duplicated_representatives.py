"""An index with a pair of duplicated representatives (issue 24's second known defect): two sibling
leaves led by the same vector. Boundary items put every item of the first on the boundary, and
self-reachability names every item of the second: search never chooses it over its twin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zarr
from index_factory import build_clustered_index

from ecpfs_viewer.model.diagnostics.boundary import boundary_items
from ecpfs_viewer.model.diagnostics.index_map_layout import layout_index
from ecpfs_viewer.model.diagnostics.reachability import self_reachability
from ecpfs_viewer.model.search import IndexReader


@pytest.fixture
def twins(tmp_path: Path) -> tuple[Path, int, int]:
    """A 2-level build; in the lvl_1 node with the most leaves, the second leaf's representative row
    overwritten with the first's. Returns the index and the two leaves (first, second)."""
    path = build_clustered_index(tmp_path, 1200, 6, clusters=8, levels=2, target_cluster_items=25)
    level = zarr.open_group(str(path / "lvl_1"), mode="r")
    parent = max(level.group_keys(), key=lambda name: (level[name]["node_ids"].shape[0], name))
    children = np.asarray(level[parent]["node_ids"][...], np.int64)
    assert len(children) >= 2
    reps = zarr.open_array(str(path / "lvl_1" / parent / "embeddings"), mode="r+")
    reps[1] = reps[0]
    return path, int(children[0]), int(children[1])


def _items(reader: IndexReader, leaf: int) -> set[int]:
    return {int(i) for i in reader.node(2, leaf).ids}


def test_duplicated_representatives_put_the_first_leaf_on_the_boundary(twins) -> None:
    path, first, _second = twins
    reader = IndexReader(path)
    report = boundary_items(reader, layout_index(reader))
    boundary, scored = report.node_share(2, first)
    assert scored == len(_items(reader, first)) > 0 and boundary == scored  # its twin scores exactly as well


def test_self_reachability_names_every_item_of_the_second_twin(twins) -> None:
    path, first, second = twins
    reader = IndexReader(path)
    report = self_reachability(reader)
    strays = {r["item_id"]: r for r in report.stray_rows()}
    mine = _items(reader, second)
    assert mine and mine <= set(strays)  # the tie goes to the first row: the second is never opened
    assert all(strays[i]["reached_leaf"] != second for i in mine)
    assert not _items(reader, first) & set(strays)  # the first twin's items still find their way home
