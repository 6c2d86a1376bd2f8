"""A level's parent links kept in the index's cache (model/ecpfs/parent_links.py) and one node's
parent read only as far as needed (model/ecpfs/nodes.py): the node page in a later process, or
before the level's map is built."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import zarr

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs import nodes
from ecpfs_viewer.model.ecpfs.index_cache import index_cache
from ecpfs_viewer.model.ecpfs.nodes import NodeRef, breadcrumb, parent_map, parent_of
from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("links")
    rng = np.random.default_rng(5)
    np.save(folder / "data.npy", rng.normal(0, 8, size=(3000, 8)).astype(np.float32))
    build_index(folder / "data.npy", folder / "index.zarr", BuildParams(levels=3, target_cluster_items=10))
    return folder / "index.zarr"


@pytest.fixture
def copy(built: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(built, tmp_path / "index.zarr"))


def node_ids(index: Path, parent: int) -> list[int]:
    return [int(i) for i in zarr.open_array(str(index), path=f"lvl_2/node_{parent}/node_ids", mode="r")[...]]


def parents(index: Path) -> list[int]:
    return sorted(int(p.name[5:]) for p in (index / "lvl_2").iterdir() if p.name.startswith("node_"))


def opened(index: Path) -> Hierarchy:
    """A new Hierarchy (as a later process has), its level listed and its cache attached."""
    h = Hierarchy(open_store(index))
    h.children("lvl_2")
    assert index_cache(h).disk is not None
    return h


def reads(h: Hierarchy, ref: NodeRef) -> tuple[tuple[NodeRef | None, int | None], int]:
    before = h.store.stats().requests
    link = parent_of(h, ref)
    return (link.parent, link.row), h.store.stats().requests - before


def test_a_later_hierarchy_answers_from_the_kept_links_without_reading_node_ids(copy: Path) -> None:
    expected = parent_map(Hierarchy(open_store(copy)), 3)  # reads every node_ids of lvl_2, keeps the links
    h = opened(copy)
    for child in expected.child_ids.tolist()[::7]:
        parent, row = expected.lookup(child) or (None, None)
        assert reads(h, NodeRef(3, child)) == ((parent, row), 0)
    assert breadcrumb(h, NodeRef(3, int(expected.child_ids[-1]))).complete


def test_links_kept_by_locate_serve_the_node_page(copy: Path) -> None:
    reader = IndexReader(str(copy))
    location = reader.locate(5)  # a present item: locate keeps each level's links
    h = opened(copy)
    assert reads(h, NodeRef(3, location.leaf)) == ((NodeRef(2, location.path[-2].node_id), location.path[-1].row), 0)


def test_a_rewritten_node_ids_makes_the_page_answer_afresh(copy: Path) -> None:
    parent_map(Hierarchy(open_store(copy)), 3)  # kept
    first, second = parents(copy)[:2]
    moved, taken = node_ids(copy, second)[0], node_ids(copy, first)[0]
    ids = zarr.open_array(str(copy), path=f"lvl_2/node_{first}/node_ids", mode="r+")
    ids[0] = moved  # `moved` is now led by both (the first parent wins); `taken` by none
    h = opened(copy)
    (parent, row), read = reads(h, NodeRef(3, moved))
    assert (parent, row) == (NodeRef(2, first), 0) and read > 0
    orphan = parent_of(h, NodeRef(3, taken))
    assert orphan.parent is None and orphan.finding is not None and orphan.finding.code == fc.NO_PARENT


def test_a_swapped_level_makes_the_page_answer_afresh(copy: Path) -> None:
    parent_map(Hierarchy(open_store(copy)), 3)
    last = parents(copy)[-1]
    child = node_ids(copy, last)[0]
    shutil.rmtree(copy / f"lvl_2/node_{last}")  # the level loses a parent: its children have none
    h = opened(copy)
    link = parent_of(h, NodeRef(3, child))
    assert link.parent is None and link.finding is not None and link.finding.code == fc.NO_PARENT


def test_links_read_under_an_older_listing_are_not_kept(copy: Path) -> None:
    h = opened(copy)  # lvl_2 listed now
    first, last = parents(copy)[0], parents(copy)[-1]
    shutil.copytree(copy / f"lvl_2/node_{first}", copy / f"lvl_2/node_{last + 1}")  # a parent the listing lacks
    parent_map(h, 3)
    child = node_ids(copy, first)[0]
    assert reads(opened(copy), NodeRef(3, child))[1] > 0  # read afresh: nothing was kept under the new folder's stamp


def test_one_parent_is_read_only_as_far_as_the_first_node_ids_that_names_it(
        copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nodes, "READ_BATCH", 4)
    listed = parents(copy)
    assert len(listed) > 12
    truth = parent_map(Hierarchy(open_store(copy)), 3)
    monkeypatch.setenv("ECPFS_VIEWER_CACHE", str(copy.parent / "empty-cache"))  # nothing kept: read anew
    h = opened(copy)
    early = node_ids(copy, listed[0])[1]
    (parent, row), read = reads(h, NodeRef(3, early))
    assert (parent, row) == truth.lookup(early) and read <= 4 * 2 + 1  # one batch (a document, a chunk each), a listing
    late = node_ids(copy, listed[-1])[0]
    (parent, row), read = reads(h, NodeRef(3, late))
    assert (parent, row) == truth.lookup(late) and read >= len(listed)
    assert reads(opened(copy), NodeRef(3, early)) == (truth.lookup(early), 0)  # read to the end: the links kept
    assert reads(h, NodeRef(3, 10**9))[0] == (None, None)  # none names it: every node_ids read, the map held
    assert reads(h, NodeRef(3, early)) == (truth.lookup(early), 0)
