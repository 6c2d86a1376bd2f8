"""The embedding map's t-SNE placement (model/diagnostics/embedding_map/tsne.py, placements.py): the
two clusters land apart, a leaf's items lie around its representative, every picture on the way
keeps them there, the cache keeps the methods apart, and without openTSNE the choice is refused in
one sentence. Figures computed here from the vectors the index was built from."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from index_factory import build_two_clusters

from ecpfs_viewer.model.diagnostics.embedding_map import Placement, representatives
from ecpfs_viewer.model.diagnostics.embedding_map.placements import (
    MAP_PLACEMENTS,
    TSNE_STAND_IN,
    map_placement,
    placed_map,
)
from ecpfs_viewer.model.diagnostics.embedding_map.progressive import MapPicture
from ecpfs_viewer.model.diagnostics.embedding_map.tsne import MISSING, LayoutProjection, LayoutUnavailable
from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.tasks import Cancelled, Progress

ITEMS, DIM = 600, 8


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, np.ndarray]:
    return build_two_clusters(tmp_path_factory.mktemp("tsne"), ITEMS, DIM)


@pytest.fixture(scope="module")
def deeper(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, np.ndarray]:
    """Three levels (4, 16 and 60 nodes): a cap of 20 lays out lvl_2 and places the leaves around it."""
    return build_two_clusters(tmp_path_factory.mktemp("tsne3"), ITEMS, DIM, levels=3, target_cluster_items=10)


def _apart(placement: Placement, side: np.ndarray) -> None:
    own = side[placement.item_ids]
    a, b = placement.coords[own == 0].mean(axis=0), placement.coords[own == 1].mean(axis=0)
    spread = max(np.linalg.norm(placement.coords[own == c] - m, axis=1).mean() for c, m in ((0, a), (1, b)))
    assert np.linalg.norm(a - b) > 3 * spread  # two well-separated clusters stay apart


def _around_their_representatives(reader: IndexReader, placement: Placement) -> None:
    """A leaf's representative (the row of its parent that names it) is marked where its items gather:
    they lie, by root mean square, REACH (0.25) of the way from it to the nearest other leaf's (a leaf
    of one item: on it), and
    nearly every item is nearer its own leaf's representative than any other."""
    ids, marks = representatives(reader, placement.projection, reader.levels)
    at = {int(n): xy for n, xy in zip(ids, marks, strict=True)}
    origins = np.array([at[int(leaf)] for leaf in placement.leaf_ids], np.float64)
    nearest_other = np.array([np.sort(np.linalg.norm(origins - o, axis=1))[1] for o in origins])
    for p in range(placement.leaf_ids.size):
        items = placement.coords[placement.leaf_items(p)].astype(np.float64)
        rms = np.sqrt(((items - origins[p]) ** 2).sum(axis=1).mean()) if items.size else 0.0
        if len(items) > 1:
            assert rms == pytest.approx(0.25 * nearest_other[p], rel=1e-3)
        else:  # its one item is its representative
            assert rms < 1e-6 * nearest_other[p]
    nearest = np.argmin(np.linalg.norm(placement.coords[:, None, :] - origins[None], axis=2), axis=1)
    assert np.mean(nearest == placement.leaf_pos) > 0.9


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ECPFS_VIEWER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_tsne_places_the_clusters_apart_and_each_leafs_items_around_its_representative(built, own_cache) -> None:
    pytest.importorskip("openTSNE")  # both legs of the suite install it (the layout extra)
    path, data, side = built
    reader = IndexReader(path)
    pictures: list[MapPicture] = []
    done = placed_map(reader, "tsne", fit_items=100, block_leaves=8, on_picture=pictures.append)
    placement = done.placement
    layout = placement.projection
    assert isinstance(layout, LayoutProjection) and not placement.unplaced and not placement.from_cache
    assert np.array_equal(np.sort(placement.item_ids), np.arange(ITEMS))  # every item once
    leaves = reader.leaf_ids()
    assert layout.anchor_level == reader.levels and layout.anchored == len(leaves) and layout.below == 0
    assert "t-SNE of the representatives of the" in layout.describe

    _apart(placement, side)
    _around_their_representatives(reader, placement)

    # a vector placed with its leaf (a query with the first leaf its search scanned) lands as its item
    rows = np.arange(0, ITEMS, 37)
    xy = layout.project(data[placement.item_ids[rows]], placement.leaf_ids[placement.leaf_pos[rows]])
    assert np.allclose(xy, placement.coords[rows], atol=1e-3 * float(np.ptp(placement.coords)))

    # the first picture at once on the PCA axes, said to be a stand-in; then the same sample laid out
    stand_in, *laid_out = pictures
    assert stand_in.placement.sample and stand_in.stand_in == TSNE_STAND_IN
    assert not isinstance(stand_in.placement.projection, LayoutProjection)
    assert laid_out and np.array_equal(laid_out[0].placement.item_ids, stand_in.placement.item_ids)
    where = np.argsort(placement.item_ids)
    for shown in laid_out:  # the same layout throughout: what was drawn stays where it was drawn
        assert shown.placement.projection is layout and shown.stand_in == ""
        assert np.allclose(shown.placement.coords, placement.coords[where[shown.placement.item_ids]], atol=1e-5)


def test_the_cache_keeps_the_methods_apart(built, own_cache) -> None:
    pytest.importorskip("openTSNE")
    path, _data, _side = built
    pca = placed_map(IndexReader(path), "pca", fit_items=100)
    assert not isinstance(pca.placement.projection, LayoutProjection)
    tsne = placed_map(IndexReader(path), "tsne", fit_items=100)
    assert isinstance(tsne.placement.projection, LayoutProjection)
    assert not tsne.placement.from_cache  # the PCA entry did not answer for it
    again = placed_map(IndexReader(path), "tsne", fit_items=100)
    assert again.placement.from_cache and isinstance(again.placement.projection, LayoutProjection)
    assert np.array_equal(again.placement.coords, tsne.placement.coords)
    assert np.array_equal(again.placement.projection.origin, tsne.placement.projection.origin)
    pca_again = placed_map(IndexReader(path), "pca", fit_items=100)
    assert pca_again.placement.from_cache and not isinstance(pca_again.placement.projection, LayoutProjection)
    assert np.array_equal(pca_again.placement.coords, pca.placement.coords)


def test_without_opentsne_the_choice_is_refused_in_one_sentence(built, own_cache, monkeypatch) -> None:
    path, _data, _side = built
    monkeypatch.setitem(sys.modules, "openTSNE", None)  # what an absent package does to an import
    method = map_placement("tsne")
    assert method.refusal() == MISSING and "pip install 'ecpfs-viewer[layout]'" in MISSING
    assert MISSING.count(".") == 1 and "\n" not in MISSING
    with pytest.raises(LayoutUnavailable) as refused:
        placed_map(IndexReader(path), "tsne", fit_items=100)
    assert str(refused.value) == MISSING
    assert [m.id for m in MAP_PLACEMENTS] == ["pca", "tsne"] and map_placement("pca").refusal() == ""


def test_a_cap_lays_out_a_higher_level_and_places_the_leaves_around_it(deeper, own_cache) -> None:
    pytest.importorskip("openTSNE")
    path, _data, side = deeper
    reader = IndexReader(path)
    placement = placed_map(reader, "tsne", fit_items=100, cap=20).placement
    layout = placement.projection
    assert isinstance(layout, LayoutProjection) and not placement.unplaced
    assert (layout.anchor_level, layout.anchored, layout.below) == (2, 16, 60)
    assert "of the 16 nodes of lvl_2" in layout.describe and "lvl_3 has 60 nodes, more than the 20" in layout.describe
    assert np.array_equal(np.sort(placement.item_ids), np.arange(ITEMS))
    _apart(placement, side)
    _around_their_representatives(reader, placement)
    few = placed_map(IndexReader(path), "tsne", fit_items=100, cap=5).placement  # lvl_1: 4 nodes, too few
    assert few.projection.anchor_level == 1 and "on the PCA axes (too few for t-SNE)" in few.projection.describe
    _around_their_representatives(reader, few)
    with pytest.raises(LayoutUnavailable, match=r"at most 3 representatives and lvl_1 of .* has 4 nodes"):
        placed_map(IndexReader(path), "tsne", fit_items=100, cap=3)


def test_a_cancel_during_the_layout_stops_it_and_keeps_nothing(deeper, own_cache) -> None:
    pytest.importorskip("openTSNE")
    path, _data, _side = deeper
    token = threading.Event()

    def progress(report: Progress) -> None:
        if report.message.startswith("t-SNE") and report.done >= 50:
            token.set()  # in the middle of the optimisation: the next callback stops it

    with pytest.raises(Cancelled):
        placed_map(IndexReader(path), "tsne", fit_items=100, cap=20, progress=progress, cancel=token)
    assert not placed_map(IndexReader(path), "tsne", fit_items=100, cap=20).placement.from_cache


def test_a_parent_that_cannot_be_read_leaves_out_only_its_leaves_and_names_them(deeper, own_cache, tmp_path) -> None:
    pytest.importorskip("openTSNE")
    import shutil

    path, _data, _side = deeper
    copy = tmp_path / "bad.zarr"
    shutil.copytree(path, copy)
    parent = IndexReader(copy).level_node_ids(2)[1]
    children = set(IndexReader(copy).node(2, parent).ids.tolist()) & set(IndexReader(copy).leaf_ids())
    (copy / "lvl_2" / f"node_{parent}" / "embeddings" / "zarr.json").write_text("{ not json")
    placement = placed_map(IndexReader(copy), "tsne", fit_items=100).placement
    assert {leaf for leaf, _why in placement.unplaced} == children and children
    assert all("its parent could not be read" in why for _leaf, why in placement.unplaced)
    assert placement.count == ITEMS - sum(IndexReader(path).node(3, c).ids.size for c in children)
    assert not placed_map(IndexReader(copy), "tsne", fit_items=100).placement.from_cache  # not kept
