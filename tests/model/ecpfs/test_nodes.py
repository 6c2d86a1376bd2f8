"""Node navigation (model/ecpfs/nodes.py, model/views/node_info.py): parent lookup, breadcrumb, node facts,
children, leaf items and spread, on the upstream two_clusters fixture and small built indexes."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
import zarr

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.ecpfs import Severity, shared_level_stats
from ecpfs_viewer.model.ecpfs.nodes import (
    ROOT,
    NodeError,
    NodeRef,
    breadcrumb,
    forget_node_caches,
    node_ref_of,
    parent_map,
    parent_of,
    read_arrays,
)
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.tasks import Cancelled
from ecpfs_viewer.model.views.node_info import (
    children_of,
    distances_to,
    freedman_diaconis_bins,
    leaf_items,
    node_info,
    node_spread,
)
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def gaussian_index(folder: Path, *, levels: int = 3, metric: str = "L2", rows: int = 3000, dim: int = 8,
                   target: int = 10, seed: int = 3) -> Path:
    """An index built from random Gaussian clusters, the way tests/model/test_build.py builds."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 8, size=(12, dim))
    data = (centres[rng.integers(0, len(centres), rows)] + rng.normal(0, 1, size=(rows, dim))).astype(np.float32)
    if metric == "IP":  # inner-product routing needs unit vectors (a rep must reach its own node)
        data /= np.linalg.norm(data, axis=1, keepdims=True)
    np.save(folder / "data.npy", data)
    build_index(folder / "data.npy", folder / "index.zarr", BuildParams(levels=levels, target_cluster_items=target,
                                                                         metric=metric))
    return folder / "index.zarr"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return gaussian_index(tmp_path_factory.mktemp("nodes"))


@pytest.fixture
def tc(two_clusters_path: Path) -> Hierarchy:
    return Hierarchy(open_store(two_clusters_path))


def read(index: Path, path: str) -> np.ndarray:
    return np.asarray(zarr.open_array(str(index), path=path, mode="r")[...])


# -- NodeRef --------------------------------------------------------------------------------------


def test_node_ref_parses_node_paths_and_paths_inside_a_node() -> None:
    assert NodeRef.parse("lvl_3/node_812") == NodeRef(3, 812)
    assert NodeRef.parse("/lvl_2/node_5/embeddings/") == NodeRef(2, 5)
    assert NodeRef.parse("index_root/embeddings") is ROOT
    assert NodeRef(3, 812).path == "lvl_3/node_812" and ROOT.label == "index" and ROOT.path == "index_root"
    assert node_ref_of("lvl_0/node_1") is None  # format version 1 has no level 0
    assert node_ref_of("lvl_2") is None and node_ref_of("rep_item_ids") is None
    with pytest.raises(NodeError, match="not a node path"):
        NodeRef.parse("lvl_x/node_1")


# -- parent lookup ---------------------------------------------------------------------------------


def test_parent_of_on_two_clusters(tc: Hierarchy) -> None:
    # lvl_1/node_1 leads reps {1, 2, 3}: row 1 of it leads lvl_2/node_2; root row 1 leads lvl_1/node_1
    assert parent_of(tc, NodeRef(2, 2)).parent == NodeRef(1, 1) and parent_of(tc, NodeRef(2, 2)).row == 1
    assert (parent_of(tc, NodeRef(2, 0)).parent, parent_of(tc, NodeRef(2, 0)).row) == (NodeRef(1, 0), 0)
    assert (parent_of(tc, NodeRef(1, 1)).parent, parent_of(tc, NodeRef(1, 1)).row) == (ROOT, 1)
    assert parent_of(tc, ROOT).parent is None and parent_of(tc, ROOT).finding is None
    orphan = parent_of(tc, NodeRef(2, 9))
    assert orphan.parent is None and orphan.finding is not None
    assert "no row of lvl_1 references node id 9" in orphan.finding.message


def test_parent_map_agrees_with_every_node_ids_array(built: Path) -> None:
    h = Hierarchy(open_store(built))
    for level in (2, 3):
        above = shared_level_stats(h, level - 1)
        expected = {}
        for parent in above.node_ids.tolist():
            for row, child in enumerate(read(built, f"lvl_{level - 1}/node_{parent}/node_ids").tolist()):
                expected[child] = (NodeRef(level - 1, parent), row)
        mapping = parent_map(h, level)
        assert mapping.parents_read == mapping.parents_total == above.node_count and not mapping.findings
        assert {int(c): mapping.lookup(int(c)) for c in mapping.child_ids} == expected
        for child in shared_level_stats(h, level).node_ids.tolist():  # every existing node has its parent
            assert parent_of(h, NodeRef(level, child)).parent == expected[child][0]


def test_parent_maps_are_cached_per_hierarchy_until_refresh(built: Path) -> None:
    h = Hierarchy(open_store(built))
    first = parent_map(h, 3)
    requests = h.store.stats().requests
    assert parent_map(h, 3) is first and h.store.stats().requests == requests  # no read at all
    assert parent_map(Hierarchy(open_store(built)), 3) is not first  # another Hierarchy, its own map
    h.refresh("lvl_2")
    assert parent_map(h, 3) is not first
    second = parent_map(h, 3)
    forget_node_caches(h, "lvl_2/node_0")
    assert parent_map(h, 3) is not second


def test_parent_map_reports_progress_and_cancels(built: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):  # first: once built, the map is kept in the index's cache
        parent_map(Hierarchy(open_store(built)), 3, cancel=cancel)
    h = Hierarchy(open_store(built))
    seen: list[tuple[int, int]] = []
    parent_map(h, 3, progress=lambda p: seen.append((p.done, p.total)))
    total = shared_level_stats(h, 2).node_count
    assert seen[-1] == (total, total) and all(t == total for _, t in seen)


def test_parent_lookup_works_through_a_zip(two_clusters_path: Path, tmp_path: Path) -> None:
    archive = shutil.make_archive(str(tmp_path / "tc"), "zip", two_clusters_path)
    h = Hierarchy(open_store(archive))
    assert breadcrumb(h, NodeRef(2, 3)).text == "index > lvl_1/node_1 > lvl_2/node_3"


def test_duplicate_reference_is_a_finding(two_clusters_copy: Path) -> None:
    zarr.open_array(str(two_clusters_copy), path="lvl_1/node_1/node_ids", mode="r+")[0] = 0  # 0 is led by node_0 too
    h = Hierarchy(open_store(two_clusters_copy))
    mapping = parent_map(h, 2)
    assert mapping.lookup(0) == (NodeRef(1, 0), 0)  # the first parent wins
    assert any("led by two rows" in f.message and f.path == "lvl_2/node_0" for f in mapping.findings)


# -- breadcrumb -------------------------------------------------------------------------------------


def test_breadcrumb_follows_parents_to_the_root(built: Path) -> None:
    h = Hierarchy(open_store(built))
    leaf = int(shared_level_stats(h, 3).node_ids[-1])
    crumbs = breadcrumb(h, NodeRef(3, leaf))
    refs = [c.ref for c in crumbs.crumbs]
    assert refs[0] == ROOT and refs[-1] == NodeRef(3, leaf) and [r.level for r in refs if r] == [0, 1, 2, 3]
    assert crumbs.complete
    assert crumbs.text == " > ".join(["index", refs[1].path, refs[2].path, f"lvl_3/node_{leaf}"])  # type: ignore[union-attr]
    for parent, child in zip(crumbs.crumbs, crumbs.crumbs[1:], strict=False):  # each row really leads the child
        assert parent.ref is not None and child.ref is not None and child.row is not None
        if parent.ref.is_root:
            assert child.row == child.ref.node_id
        else:
            assert read(built, f"{parent.ref.path}/node_ids")[child.row] == child.ref.node_id


def test_breadcrumb_of_an_unreferenced_node_says_so(tc: Hierarchy) -> None:
    crumbs = breadcrumb(tc, NodeRef(2, 9))
    assert crumbs.text == "index > ? > lvl_2/node_9" and not crumbs.complete
    assert crumbs.crumbs[-1].finding is not None
    assert breadcrumb(tc, ROOT).text == "index"


# -- node facts, children, items ---------------------------------------------------------------------


def test_node_info_of_a_leaf(built: Path) -> None:
    h = Hierarchy(open_store(built))
    stats = shared_level_stats(h, 3)
    node = int(stats.node_ids[len(stats.node_ids) // 2])
    info = node_info(h, NodeRef(3, node))
    rows = read(built, f"lvl_3/node_{node}/item_ids").size
    assert info.exists and info.is_leaf and info.ids_name == "item_ids" and info.rows == rows
    assert info.level_nodes == stats.node_count and info.level_median == float(np.median(stats.sizes))
    assert info.relative_size == pytest.approx(rows / np.median(stats.sizes))
    rep = info.representative
    assert rep is not None and rep.rep_row == node and rep.item_id == int(read(built, "rep_item_ids")[node])
    assert read(built, f"{rep.parent.path}/node_ids")[rep.row] == node
    chunk_rows = zarr.open_array(str(built), path=f"lvl_3/node_{node}/embeddings", mode="r").chunks[0]
    assert info.chunk_use is not None and info.chunk_use.chunk_rows == chunk_rows
    assert info.chunk_use.fraction == pytest.approx(rows / (chunk_rows * -(-rows // chunk_rows)))
    assert not info.findings


def test_node_info_of_the_root_and_of_a_missing_node(tc: Hierarchy) -> None:
    root = node_info(tc, ROOT)
    assert root.rows == 2 and root.representative is None and root.is_leaf is False
    missing = node_info(tc, NodeRef(2, 9))
    assert not missing.exists and missing.rows is None and missing.representative is None
    assert missing.findings[0].message == "does not exist (search skips it)"


def test_children_with_row_counts(tc: Hierarchy) -> None:
    table = children_of(tc, NodeRef(1, 1))
    assert [(c.row, c.ref.path, c.rows) for c in table.rows] == [
        (0, "lvl_2/node_1", 2), (1, "lvl_2/node_2", 2), (2, "lvl_2/node_3", 2)]
    assert [c.ref.path for c in children_of(tc, ROOT).rows] == ["lvl_1/node_0", "lvl_1/node_1"]
    with pytest.raises(NodeError, match="is a leaf"):
        children_of(tc, NodeRef(2, 2))


def test_missing_and_broken_children_are_shown_in_place(two_clusters_copy: Path) -> None:
    shutil.rmtree(two_clusters_copy / "lvl_2/node_3")
    shutil.rmtree(two_clusters_copy / "lvl_2/node_2/item_ids")
    table = children_of(Hierarchy(open_store(two_clusters_copy)), NodeRef(1, 1))
    ok, broken, missing = table.rows
    assert ok.finding is None and ok.rows == 2
    assert broken.rows == 2 and broken.finding is not None and broken.finding.severity is Severity.ERROR
    assert "no ids array" in broken.finding.message
    assert missing.rows is None and missing.finding is not None and table.missing == 1
    assert missing.finding.message == "referenced by lvl_1/node_1 row 2 but does not exist (search skips it)"


def test_leaf_items_range_and_member_problems(two_clusters_copy: Path, tc: Hierarchy) -> None:
    items = leaf_items(tc, NodeRef(2, 2))
    assert items.ids.tolist() == [4, 5] and items.id_range == (4, 5) and items.count == 2 and not items.problems
    zarr.open_array(str(two_clusters_copy), path="lvl_2/node_3/item_ids", mode="r+")[:] = [9, 9]  # next_item_id = 8
    bad = leaf_items(Hierarchy(open_store(two_clusters_copy)), NodeRef(2, 3))
    assert [(p.row, p.item_id) for p in bad.problems] == [(0, 9), (1, 9)] and bad.problem_count == 3
    assert "not below next_item_id (8)" in bad.problems[0].finding.message
    with pytest.raises(NodeError, match="not a leaf"):
        leaf_items(tc, NodeRef(1, 1))


def test_read_arrays_gives_failures_in_place(tc: Hierarchy) -> None:
    found = read_arrays(tc, ["rep_item_ids", "lvl_9/node_0/embeddings"])
    assert isinstance(found[0], np.ndarray) and found[0].tolist() == [0, 2, 4, 6]
    assert isinstance(found[1], str) and "lvl_9/node_0/embeddings" in found[1]


# -- spread --------------------------------------------------------------------------------------------


def test_spread_of_two_clusters_node(tc: Hierarchy) -> None:
    spread = node_spread(tc, NodeRef(1, 1))  # rows (1,1), (10,10), (11,11); representative (1,1)
    assert spread.measure == "L2 distance" and spread.representative == (ROOT, 1)
    np.testing.assert_allclose(spread.distances, [0, 9 * np.sqrt(2), 10 * np.sqrt(2)])
    assert (spread.minimum, spread.median, spread.maximum) == pytest.approx((0, 9 * np.sqrt(2), 10 * np.sqrt(2)))
    assert spread.counts.sum() == 3 and spread.edges[0] == 0 and spread.edges[-1] == pytest.approx(10 * np.sqrt(2))
    assert spread.farthest[:2] == ((2, 3), (1, 2))  # (row, node id), farthest first
    with pytest.raises(NodeError, match="no representative"):
        node_spread(tc, ROOT)


def test_spread_of_a_leaf_matches_numpy_with_progress_and_cancel(built: Path) -> None:
    h = Hierarchy(open_store(built))
    node = int(shared_level_stats(h, 3).node_ids[0])
    link = parent_of(h, NodeRef(3, node))
    assert link.parent is not None and link.row is not None
    centre = read(built, f"{link.parent.path}/embeddings")[link.row]
    rows = read(built, f"lvl_3/node_{node}/embeddings")
    seen: list[tuple[int, int]] = []
    spread = node_spread(h, NodeRef(3, node), progress=lambda p: seen.append((p.done, p.total)))
    np.testing.assert_allclose(spread.distances, np.linalg.norm(rows - centre, axis=1), rtol=1e-6)
    assert seen[-1] == (len(rows), len(rows)) and spread.counts.sum() == len(rows)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):
        node_spread(h, NodeRef(3, node), cancel=cancel)


def test_spread_uses_the_negated_inner_product_on_ip_indexes(tmp_path: Path) -> None:
    index = gaussian_index(tmp_path, levels=2, metric="IP", rows=500)
    h = Hierarchy(open_store(index))
    node = int(shared_level_stats(h, 2).node_ids[0])
    link = parent_of(h, NodeRef(2, node))
    assert link.parent is not None and link.row is not None
    centre = read(index, f"{link.parent.path}/embeddings")[link.row]
    spread = node_spread(h, NodeRef(2, node))
    assert spread.measure == "negated inner product"
    np.testing.assert_allclose(spread.distances, -(read(index, f"lvl_2/node_{node}/embeddings") @ centre), rtol=1e-5)


def test_distances_to() -> None:
    rows = np.array([[3, 4], [0, 0]], dtype=np.int8)
    assert distances_to(rows, np.zeros(2), "L2").tolist() == [5.0, 0.0]
    assert distances_to(rows, np.array([1.0, 1.0]), "IP").tolist() == [-7.0, 0.0]


def test_freedman_diaconis_bins() -> None:
    uniform = np.linspace(0, 1, 1000)  # IQR 0.5, width 2 * 0.5 / 10 = 0.1 -> 10 bins
    assert freedman_diaconis_bins(uniform) == 10
    assert freedman_diaconis_bins(np.random.default_rng(0).normal(size=100_000), cap=40) == 40
    assert freedman_diaconis_bins(np.full(50, 3.0)) == 1 and freedman_diaconis_bins(np.array([])) == 1
    spiky = np.r_[np.zeros(99), 1.0]  # IQR 0 but not constant: Sturges, ceil(log2 100) + 1
    assert freedman_diaconis_bins(spiky) == 8
    assert freedman_diaconis_bins(np.array([0.0, np.nan, 1.0, 2.0, 3.0])) >= 1


def test_broken_nodes_beyond_the_level_finding_cap_still_say_so(built: Path, tmp_path: Path) -> None:
    index = Path(shutil.copytree(built, tmp_path / "copy.zarr"))
    leaves = [int(i) for i in shared_level_stats(Hierarchy(open_store(index)), 3).node_ids[:12]]
    for leaf in leaves:  # twelve alike problems: the level keeps ten and folds the rest into one line
        shutil.rmtree(index / f"lvl_3/node_{leaf}/item_ids")
    h = Hierarchy(open_store(index))
    last = NodeRef(3, leaves[-1])
    info = node_info(h, last)
    assert info.exists and [f.severity for f in info.findings] == [Severity.ERROR]
    link = parent_of(h, last)
    assert link.parent is not None and link.row is not None
    row = children_of(h, link.parent).rows[link.row]
    assert row.ref == last and row.rows is not None and row.finding is not None
    assert row.finding.severity is Severity.ERROR
