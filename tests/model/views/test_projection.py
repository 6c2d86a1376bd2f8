"""2-D projections (model/views/projection.py): PCA on synthetic clusters, and the node, leaf and level
pictures of a built index whose two clusters must separate on the first axis."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
import zarr

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.ecpfs import shared_level_stats
from ecpfs_viewer.model.ecpfs.nodes import ROOT, NodeError, NodeRef
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.tasks import Cancelled
from ecpfs_viewer.model.views.projection import ProjectionKind, pca_2d, project_level, project_node
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

ROWS, DIM, TARGET = 1200, 12, 10


def two_blobs(rows: int, dim: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two Gaussian blobs 30 apart along a random direction; returns (points, blob of each point)."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=dim)
    direction /= np.linalg.norm(direction)
    blob = rng.integers(0, 2, rows)
    points = rng.normal(size=(rows, dim)) + np.outer(blob * 30 - 15, direction)
    return points.astype(np.float32), blob


def separates(coords: np.ndarray, labels: np.ndarray) -> bool:
    """True when a threshold on the first axis splits the two labels exactly."""
    a, b = coords[labels == 0, 0], coords[labels == 1, 0]
    return bool(a.max() < b.min() or b.max() < a.min())


@pytest.fixture(scope="module")
def blobs_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """A 3-level index of two_blobs (offset representatives: rep r is item r * TARGET)."""
    folder = tmp_path_factory.mktemp("projection")
    points, blob = two_blobs(ROWS, DIM)
    np.save(folder / "blobs.npy", points)
    build_index(folder / "blobs.npy", folder / "blobs.zarr", BuildParams(levels=3, target_cluster_items=TARGET))
    return folder / "blobs.zarr", blob


def read(index: Path, path: str) -> np.ndarray:
    return np.asarray(zarr.open_array(str(index), path=path, mode="r")[...])


def test_pca_separates_synthetic_clusters_on_the_first_axis() -> None:
    points, blob = two_blobs(4000, 32)
    pca = pca_2d(points)
    assert pca.coords.shape == (4000, 2) and pca.coords.dtype == np.float32
    assert separates(pca.coords, blob)
    assert pca.explained[0] > 0.8 > pca.explained[1] > 0  # one dominant axis: the blob direction
    np.testing.assert_allclose(np.linalg.norm(pca.axes, axis=1), 1.0)
    again = pca_2d(points[::-1])
    np.testing.assert_allclose(again.coords[::-1], pca.coords, atol=1e-3)  # same picture, same signs


def test_pca_of_degenerate_inputs() -> None:
    assert pca_2d(np.zeros((0, 4))).coords.shape == (0, 2)
    single = pca_2d(np.ones((1, 3)))
    assert single.explained == (0.0, 0.0) and single.coords.tolist() == [[0.0, 0.0]]
    line = pca_2d(np.arange(10, dtype=np.float64).reshape(10, 1))  # one dimension: no second axis
    assert line.explained == pytest.approx((1.0, 0.0)) and np.all(line.coords[:, 1] == 0)


def test_level_representatives_coloured_by_parent_separate(blobs_index: tuple[Path, np.ndarray]) -> None:
    index, blob = blobs_index
    h = Hierarchy(open_store(index))
    projection = project_level(h, 3)
    above = shared_level_stats(h, 2)
    assert projection.kind is ProjectionKind.LEVEL and not projection.sampled and projection.note == ""
    assert projection.class_names == tuple(f"lvl_2/node_{i}" for i in above.node_ids)
    assert projection.count == projection.total_points == int(above.sizes.sum())
    assert not projection.id_is_item.any() and not projection.marked.any()
    for cls, name in enumerate(projection.class_names):  # each point is a row of the parent it is coloured by
        assert sorted(projection.ids[projection.classes == cls].tolist()) == sorted(read(index, f"{name}/node_ids"))
    rep_items = read(index, "rep_item_ids")[projection.ids]  # node id -> representative item -> its blob
    assert separates(projection.coords, blob[rep_items])
    assert projection.explained[0] > projection.explained[1] > 0
    first = project_level(h, 1)
    assert first.class_names == ("index",) and sorted(first.ids.tolist()) == list(range(len(first.ids)))


def test_internal_node_rows_and_members_by_child(blobs_index: tuple[Path, np.ndarray]) -> None:
    index, _ = blobs_index
    h = Hierarchy(open_store(index))
    node = NodeRef(2, int(shared_level_stats(h, 2).node_ids[0]))
    children = read(index, f"{node.path}/node_ids")
    rows = project_node(h, node)
    assert rows.kind is ProjectionKind.NODE_ROWS and rows.ids.tolist() == children.tolist()
    assert rows.classes.tolist() == list(range(len(children)))
    assert rows.class_names == tuple(f"lvl_3/node_{c}" for c in children)
    members = project_node(h, node, members=True)
    assert members.kind is ProjectionKind.NODE_MEMBERS and members.marked.sum() == len(children)
    leaves = shared_level_stats(h, 3)
    for cls, child in enumerate(children.tolist()):
        mine = members.classes == cls
        items = members.ids[mine & ~members.marked]
        assert members.id_is_item[mine & ~members.marked].all()
        if child in leaves.node_ids:
            assert sorted(items.tolist()) == sorted(read(index, f"lvl_3/node_{child}/item_ids"))
    assert members.label(int(np.flatnonzero(members.marked)[0])).startswith("node ")


def test_leaf_members_with_the_representative_marked(blobs_index: tuple[Path, np.ndarray]) -> None:
    index, _ = blobs_index
    h = Hierarchy(open_store(index))
    leaf = NodeRef(3, int(shared_level_stats(h, 3).node_ids[1]))
    projection = project_node(h, leaf)
    items = read(index, f"{leaf.path}/item_ids")
    assert projection.kind is ProjectionKind.LEAF and projection.class_names == ("members", "representative")
    assert projection.count == len(items) + 1 and projection.marked.sum() == 1
    marked = int(np.flatnonzero(projection.marked)[0])
    rep_item = int(read(index, "rep_item_ids")[leaf.node_id])
    assert projection.ids[marked] == rep_item and projection.label(marked) == f"item {rep_item} (representative)"
    assert sorted(projection.ids[~projection.marked].tolist()) == sorted(items.tolist())


def test_large_projections_are_seeded_samples(blobs_index: tuple[Path, np.ndarray]) -> None:
    index, _ = blobs_index
    h = Hierarchy(open_store(index))
    members = project_node(h, ROOT, members=True, max_points=12)  # 5 root rows, about 6 rows per child
    assert members.count <= 12 and members.marked.sum() == 5 and members.sampled
    assert members.total_points > members.count and "seeded sample" in members.note
    small = project_level(h, 3, max_points=40, seed=1)
    assert small.count == 40 and small.total_points == ROWS // TARGET and "(seed 1)" in small.note
    assert project_level(h, 3, max_points=40, seed=1).ids.tolist() == small.ids.tolist()
    assert project_level(h, 3, max_points=40, seed=2).ids.tolist() != small.ids.tolist()


def test_projection_errors_progress_and_cancel(blobs_index: tuple[Path, np.ndarray]) -> None:
    index, _ = blobs_index
    h = Hierarchy(open_store(index))
    with pytest.raises(NodeError, match="not a level"):
        project_level(h, 4)
    with pytest.raises(NodeError):
        project_node(h, NodeRef(3, 10**6))
    seen: list[tuple[int, int]] = []
    project_level(h, 3, progress=lambda p: seen.append((p.done, p.total)))
    assert seen and seen[-1][0] == seen[-1][1]
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Cancelled):
        project_level(h, 3, cancel=cancel)
