"""The embedding map's model: placements, colours, density frames, picking and the cache entry, each
checked against figures this test computes itself from the vectors it built the index from."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from index_factory import build_two_clusters

from ecpfs_viewer.model.diagnostics.embedding_map import (
    PALETTE,
    DensityIndex,
    LeafShare,
    MapProjection,
    Placement,
    ViewRect,
    by_level,
    cached_placement,
    colour_sums,
    density_frame,
    fit_projection,
    from_overlay,
    leaves_under,
    open_placement,
    place_items,
    query_overlay,
    representatives,
    select_box,
    select_polygon,
    size_colours,
)
from ecpfs_viewer.model.diagnostics.index_map import size_overlay
from ecpfs_viewer.model.diagnostics.index_map_layout import layout_index
from ecpfs_viewer.model.search import IndexReader, SearchParams
from ecpfs_viewer.model.search.ecp import ecp_search
from ecpfs_viewer.model.tasks import Cancelled, CancelToken

ITEMS, DIM = 600, 8


def _two_clusters(folder: Path, seed: int = 3) -> tuple[Path, np.ndarray, np.ndarray]:
    return build_two_clusters(folder, ITEMS, DIM, seed)


def _own_pca(data: np.ndarray) -> np.ndarray:
    """The two principal coordinates of data, each axis's largest loading positive."""
    centred = data.astype(np.float64) - data.mean(axis=0, dtype=np.float64)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    axes = vt[:2] * np.sign(vt[:2][np.arange(2), np.argmax(np.abs(vt[:2]), axis=1)])[:, None]
    return centred @ axes.T


@pytest.fixture
def index(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    return _two_clusters(tmp_path)


def test_every_item_is_placed_once_on_the_principal_axes_and_the_two_clusters_land_apart(index) -> None:
    path, data, side = index
    reader = IndexReader(path)
    index_map = layout_index(reader)
    placement = open_placement(reader, index_map, fit_items=ITEMS)  # the sample is every leaf: exact axes
    assert placement.count == ITEMS and sorted(placement.item_ids.tolist()) == list(range(ITEMS))
    expected = _own_pca(data)[placement.item_ids]
    np.testing.assert_allclose(placement.coords, expected, rtol=1e-4, atol=1e-3)
    x = placement.coords[:, 0]
    a, b = x[side[placement.item_ids] == 0], x[side[placement.item_ids] == 1]
    assert a.max() < b.min() or b.max() < a.min()  # the first axis separates them, no overlap
    # items of leaf position p are a run, and they are the leaf's item_ids as stored
    for p, leaf in enumerate(placement.leaf_ids):
        stored = reader.node(reader.levels, int(leaf)).ids
        assert placement.item_ids[placement.leaf_items(p)].tolist() == stored.tolist()
        assert (placement.leaf_pos[placement.leaf_items(p)] == p).all()


def test_a_small_fit_sample_still_places_every_item_and_takes_the_sample_as_read(index) -> None:
    path, data, _ = index
    reader = IndexReader(path)
    index_map = layout_index(reader)
    first = fit_projection(reader, index_map, fit_items=100, seed=7)
    assert first.sample and 100 <= first.count < ITEMS
    full = place_items(reader, index_map, first.projection, first=first, leaf_batch=3)
    again = place_items(reader, index_map, first.projection, leaf_batch=5)  # every leaf read
    assert full.count == ITEMS
    np.testing.assert_allclose(full.coords, again.coords, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(full.coords, first.projection.project(data[full.item_ids]), rtol=1e-5, atol=1e-5)
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        place_items(reader, index_map, first.projection, cancel=token)


def test_density_counts_sum_to_the_items_in_view_at_every_level_of_detail(index) -> None:
    path, _, _ = index
    reader = IndexReader(path)
    index_map = layout_index(reader)
    placement = open_placement(reader, index_map)
    density = DensityIndex(placement, grid=64)
    sums = colour_sums(density, by_level(index_map, 1))
    whole = density.bounds
    coarse = density_frame(density, sums, whole, 16, 16, point_limit=0)
    assert coarse.source == "cells" and coarse.total == ITEMS and coarse.points is None
    fine = density_frame(density, sums, whole, 400, 300, point_limit=0)
    assert fine.source == "items" and fine.total == ITEMS and fine.pixel_scale == 1
    # past the item budget, finer than the grid: the fine cells on coarser pixels, and it says so
    budget = density_frame(density, sums, whole, 400, 300, point_limit=0, item_budget=10)
    assert budget.source == "cells" and budget.total == ITEMS and budget.pixel_scale == 7  # ceil(400 / 64)
    assert budget.counts.shape == (43, 58)
    x0, x1, y0, y1 = placement.bounds()
    part = ViewRect(x0, (x0 + x1) / 2, y0, y1)
    xy = placement.coords
    inside = int(((xy[:, 0] >= part.x0) & (xy[:, 0] < part.x1) & (xy[:, 1] >= part.y0) & (xy[:, 1] < part.y1)).sum())
    frame = density_frame(density, sums, part, 200, 200)
    assert frame.total == inside and frame.points is not None and frame.points.size == inside
    assert sorted(frame.points.tolist()) == np.flatnonzero(
        (xy[:, 0] >= part.x0) & (xy[:, 0] < part.x1) & (xy[:, 1] >= part.y0) & (xy[:, 1] < part.y1)).tolist()
    # a pixel whose items all lie under one level-1 node shows that node's palette colour
    codes = by_level(index_map, 1).leaf_codes[placement.leaf_pos]
    i = int(frame.points[0])
    px = int((xy[i, 0] - part.x0) / part.width * 200)
    py = int((part.y1 - xy[i, 1]) / part.height * 200)
    here = [j for j in frame.points.tolist() if int((xy[j, 0] - part.x0) / part.width * 200) == px
            and int((part.y1 - xy[j, 1]) / part.height * 200) == py]
    assert len({int(codes[j]) for j in here}) == 1  # 200 x 200 pixels over one cluster's half
    assert frame.rgb[py, px].tolist() == PALETTE[int(codes[i]) % len(PALETTE)].tolist()
    assert frame.counts[py, px] == len(here)


def test_colours_by_level_and_by_overlay_follow_each_items_ancestors(index) -> None:
    path, _, _ = index
    reader = IndexReader(path)
    index_map = layout_index(reader)
    placement = open_placement(reader, index_map)
    level1 = by_level(index_map, 1)
    leaf = by_level(index_map, 2)
    for p in range(0, placement.count, 37):
        location = reader.locate(int(placement.item_ids[p]))
        lp = placement.leaf_pos[p]
        assert level1.names[level1.leaf_codes[lp]] == f"lvl_1/node_{location.path[0].node_id}"
        assert leaf.names[leaf.leaf_codes[lp]] == f"lvl_2/node_{location.leaf}"
    size = size_colours(index_map)
    rows = index_map.band(2).rows.astype(np.float64)
    np.testing.assert_allclose(size.leaf_values, np.log2(rows / np.median(rows)))
    up = from_overlay(index_map, size_overlay(index_map), level=1)
    lvl1_sizes = index_map.band(1).sizes
    assert np.allclose(up.leaf_values, np.log2(lvl1_sizes / np.median(lvl1_sizes))[level1.leaf_codes])
    assert not level1.note  # two level-1 clusters: no repeats
    many = by_level(index_map, 2)
    assert (len(many.names) > 20) == bool(many.note)


def test_a_querys_path_lands_on_its_own_leafs_points(index) -> None:
    path, data, _ = index
    reader = IndexReader(path)
    index_map = layout_index(reader)
    placement = open_placement(reader, index_map)
    item = 123
    result = ecp_search(reader, data[item], SearchParams(k=5, search_exp=2))
    own_leaf = reader.locate(item).leaf
    overlay = query_overlay(placement, data[item], result, missed=[(own_leaf, reader.locate(item).row)])
    p = int(np.flatnonzero(placement.item_ids == item)[0])
    np.testing.assert_allclose(overlay.query_xy, placement.coords[p], atol=1e-4)
    assert overlay.scanned_leaves[0] == own_leaf and p in overlay.scanned[0].tolist()
    assert int(overlay.results[0]) == p  # its own vector: itself first
    assert placement.item_ids[overlay.results].tolist() == [h.item_id for h in result.hits]
    assert overlay.missed.tolist() == [p]
    own = placement.coords[overlay.scanned[0]]
    assert (own.min(axis=0) <= overlay.query_xy).all() and (overlay.query_xy <= own.max(axis=0)).all()


def test_hover_and_box_selection_name_the_leaves_and_nodes_under_them(index) -> None:
    path, _, _ = index
    reader = IndexReader(path)
    index_map = layout_index(reader)
    placement = open_placement(reader, index_map)
    density = DensityIndex(placement)
    x, y = (float(v) for v in placement.coords[42])
    tiny = ViewRect(x - 1e-4, x + 1e-4, y - 1e-4, y + 1e-4)
    under = leaves_under(density, tiny)
    assert under and under[0].leaf_id == int(placement.leaf_ids[placement.leaf_pos[42]])
    box = select_box(density, index_map, density.bounds)
    assert box.count == ITEMS and sorted(box.item_ids.tolist()) == list(range(ITEMS))
    for level in (1, 2):
        ids, counts = box.nodes[level]
        assert int(counts.sum()) == ITEMS and set(ids.tolist()) == set(index_map.band(level).node_ids.tolist())


def test_a_lasso_selects_exactly_the_cluster_it_is_drawn_round_and_not_its_notch(index) -> None:
    path, _, side = index
    reader = IndexReader(path)
    index_map = layout_index(reader)
    placement = open_placement(reader, index_map)
    density = DensityIndex(placement)
    xy, own_side = placement.coords.astype(np.float64), side[placement.item_ids]
    left = int(own_side[np.argmin(xy[:, 0])])
    mine = xy[own_side == left]
    (x0, y0), (x1, y1) = mine.min(axis=0), mine.max(axis=0)
    gap = (x1 + xy[own_side != left, 0].min()) / 2  # half-way to the other cluster along the first axis
    m = 0.01 * (x1 - x0)
    roofed = [(x0 - m, y0 - m), (gap, y0 - m), (gap, y1 + m), ((x0 + gap) / 2, y1 + 5), (x0 - m, y1 + m)]
    chosen = select_polygon(density, index_map, np.array(roofed))
    assert chosen.positions.tolist() == np.flatnonzero(own_side == left).tolist()
    assert sorted(chosen.item_ids.tolist()) == np.flatnonzero(side == left).tolist()
    assert int(chosen.nodes[2][1].sum()) == chosen.count and chosen.polygon is not None
    # a U round the cluster: the notch cut from the top down to the middle holds none of what it holds
    cx, cy, third = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 6
    u = [(x0 - m, y0 - m), (x1 + m, y0 - m), (x1 + m, y1 + m), (cx + third, y1 + m), (cx + third, cy),
         (cx - third, cy), (cx - third, y1 + m), (x0 - m, y1 + m)]
    notch = (xy[:, 0] > cx - third) & (xy[:, 0] < cx + third) & (xy[:, 1] > cy)
    expected = np.flatnonzero((own_side == left) & ~notch)
    assert notch[own_side == left].sum() > 10 and expected.size > 10
    assert select_polygon(density, index_map, np.array(u)).positions.tolist() == expected.tolist()
    rect = ViewRect(x0 - m, gap, y0 - m, y1 + m)  # the same rectangle as a box and as a lasso
    corners = [(rect.x0, rect.y0), (rect.x1, rect.y0), (rect.x1, rect.y1), (rect.x0, rect.y1)]
    assert np.array_equal(select_polygon(density, index_map, np.array(corners)).positions,
                          select_box(density, index_map, rect).positions)
    assert select_polygon(density, index_map, np.array(roofed[:2])).count == 0  # two points hold nothing


def test_the_cache_answers_a_second_opening_and_not_once_a_leaf_changed(index) -> None:
    path, _, _ = index
    reader = IndexReader(path)
    index_map = layout_index(reader)
    first = open_placement(reader, index_map)
    assert not first.from_cache
    again_reader = IndexReader(path)  # a later opening (the entry is on disk, not in this reader)
    again = cached_placement(again_reader, layout_index(again_reader))
    assert again is not None and again.from_cache
    np.testing.assert_array_equal(again.coords, first.coords)
    np.testing.assert_array_equal(again.item_ids, first.item_ids)
    leaf = int(first.leaf_ids[3])
    chunk = next(p for p in (path / f"lvl_2/node_{leaf}/embeddings").rglob("*") if p.is_file()
                 and p.name != "zarr.json")
    chunk.write_bytes(chunk.read_bytes())  # the same bytes, rewritten: its stamp changes
    os.utime(chunk, ns=(chunk.stat().st_atime_ns, chunk.stat().st_mtime_ns))
    later = IndexReader(path)
    assert cached_placement(later, layout_index(later)) is None
    assert not open_placement(later, layout_index(later)).from_cache


def test_a_leaf_that_cannot_be_read_is_named_not_drawn_as_nothing(index) -> None:
    path, _, _ = index
    reader = IndexReader(path)
    index_map = layout_index(reader)
    leaf = int(index_map.band(2).node_ids[2])
    chunk = next(p for p in (path / f"lvl_2/node_{leaf}/embeddings").rglob("*") if p.is_file()
                 and p.name != "zarr.json")
    chunk.write_bytes(b"not zstd")
    placement = open_placement(IndexReader(path), index_map)
    assert [u[0] for u in placement.unplaced] == [leaf] and placement.unplaced[0][1]
    assert placement.count == ITEMS - int(index_map.band(2).rows[2])
    assert "could not be read" in placement.note
    assert cached_placement(IndexReader(path), index_map) is None  # an incomplete placement is not kept


def test_representatives_are_placed_like_items_on_the_same_axes(index) -> None:
    path, _, _ = index
    reader = IndexReader(path)
    index_map = layout_index(reader)
    placement = open_placement(reader, index_map)
    ids, xy = representatives(reader, placement.projection, 1)
    assert ids.tolist() == list(range(len(index_map.band(1))))
    np.testing.assert_allclose(xy, placement.projection.project(reader.root.vectors))
    ids, xy = representatives(reader, placement.projection, 2)
    assert sorted(ids.tolist()) == sorted(index_map.band(2).node_ids.tolist()) and xy.shape == (ids.size, 2)
    # a leaf's representative is one of its items (rep_selection picks items): it sits on one of its points
    leaf = int(ids[0])
    own = placement.coords[placement.leaf_items(placement.leaf_position(leaf))]
    assert np.min(np.abs(own - xy[0]).sum(axis=1)) < 1e-3


def test_leaves_whose_size_the_map_does_not_know_are_read_not_skipped(index) -> None:
    from dataclasses import replace

    path, _, _ = index
    reader = IndexReader(path)
    index_map = layout_index(reader)
    leaves = index_map.band(2)
    unknown = replace(index_map, levels=(index_map.band(1), replace(leaves, rows=np.full(len(leaves), -1))))
    placement = open_placement(reader, unknown, fit_items=50)
    assert placement.count == ITEMS and not placement.unplaced


def test_a_leaf_under_the_pointer_is_named_with_its_items_in_the_right_number() -> None:
    assert LeafShare(20, 1, 1 / 3).describe(2) == "lvl_2/node_20: 1 item (33%)"
    assert LeafShare(3, 1200, 0.5).describe(3) == "lvl_3/node_3: 1,200 items (50%)"


def test_a_cells_frame_is_each_cells_count_on_the_pixel_of_its_centre_and_rgba_blends_it(index) -> None:
    """The cells frame, against each fine cell's count put on the pixel of its centre here; the
    picture, against the blend written out here, when most pixels hold items and when few do."""
    path, _, _ = index
    reader = IndexReader(path)
    placement = open_placement(reader, layout_index(reader))
    density = DensityIndex(placement, grid=64)
    sums = colour_sums(density, by_level(layout_index(reader), 1))
    b = density.bounds
    view = ViewRect(b.x0 + b.width * 0.1, b.x1 - b.width * 0.05, b.y0 + b.height * 0.2, b.y1)
    frame = density_frame(density, sums, view, 50, 40, point_limit=0, item_budget=0)
    assert frame.source == "cells" and frame.cell_level == 0
    expected = np.zeros((40, 50), np.int64)
    cw, ch = density.cell_size(0)
    for (row, col), count in np.ndenumerate(density.pyramid[0]):
        x, y = b.x0 + (col + 0.5) * cw, b.y0 + (row + 0.5) * ch
        px, py = int(np.floor((x - view.x0) / view.width * 50)), int(np.floor((view.y1 - y) / view.height * 40))
        if 0 <= px < 50 and 0 <= py < 40:
            expected[py, px] += count
    assert np.array_equal(frame.counts, expected) and frame.total < ITEMS  # part of the map in view

    background = (10, 20, 30)
    sparse = density_frame(density, sums, b, 400, 300)  # a few hundred items on 120,000 pixels
    dense = density_frame(density, sums, b, 8, 6)  # a third of the pixels hold items
    assert (sparse.counts > 0).mean() < 0.25 <= (dense.counts > 0).mean() < 1  # the two ways rgba computes
    for shown in (sparse, dense):
        per_cell = shown.cells_per_pixel if shown.source == "cells" else 1
        shade = shown.counts / np.maximum(per_cell, 1)
        alpha = 0.45 + 0.55 * np.sqrt(shade / shade.max())
        blend = shown.rgb * alpha[..., None] + np.asarray(background) * (1 - alpha[..., None])
        want = np.where((shown.counts > 0)[..., None], np.floor(blend + 0.5), background)
        got = shown.rgba(background)
        assert np.abs(got[..., :3].astype(int) - want.astype(int)).max() <= 1 and (got[..., 3] == 255).all()


def test_evenly_spread_items_are_drawn_evenly_whatever_cells_a_pixel_was_given() -> None:
    """Items on a lattice that puts 13 x 13 of them in every inner cell of a 64 x 64 grid (the bounds
    are padded by 2 %: 801 points a side), drawn on 40 x 40 pixels: some pixels are given one cell
    along an axis, some two. Their counts differ, their colour must not (it showed the cell grid as
    darker lines)."""
    g, n = 64, 801
    lattice = np.stack(np.meshgrid(np.arange(n), np.arange(n)), axis=-1).reshape(-1, 2).astype(np.float32)
    projection = MapProjection(np.zeros(2), np.eye(2), (0.5, 0.5), lattice.shape[0], 0)
    placement = Placement(projection, np.arange(1, dtype=np.int64), np.array([0, lattice.shape[0]]), lattice,
                          np.arange(lattice.shape[0], dtype=np.int64))
    density = DensityIndex(placement, grid=g)
    assert (density.pyramid[0][2:-2, 2:-2] == 13 * 13).all()
    frame = density_frame(density, None, density.bounds, 40, 40, point_limit=0, item_budget=0)
    assert frame.source == "cells" and frame.total == n * n
    inner = np.s_[3:-3, 3:-3]  # pixels over the inner cells only
    assert len(np.unique(frame.counts[inner])) > 1  # pixels were given different numbers of cells
    picture = frame.rgba()[inner][..., :3]
    assert (picture == picture[0, 0]).all()


def test_the_cells_computed_a_block_at_a_time_are_those_computed_at_once(index, monkeypatch) -> None:
    """DensityIndex works out the items' cells a block at a time (bounded temporaries at 10M items):
    blocks of 7 items give the same cells, order and counts as one block."""
    from ecpfs_viewer.model.diagnostics.embedding_map import density as density_module

    path, _, _ = index
    reader = IndexReader(path)
    placement = open_placement(reader, layout_index(reader))
    whole = DensityIndex(placement, grid=64)
    monkeypatch.setattr(density_module, "CELL_BLOCK", 7)
    blocks = DensityIndex(placement, grid=64)
    assert np.array_equal(whole.item_cells(), blocks.item_cells()) and np.array_equal(whole.order, blocks.order)
    # the cells the order keeps are each item's own, as its coordinates give them
    assert np.array_equal(whole.item_cells(), whole._cells(placement.coords))
    assert np.array_equal(whole.sorted_cells(5, 40), whole.item_cells()[whole.order[5:40]])
    assert all(np.array_equal(a, b) for a, b in zip(whole.pyramid, blocks.pyramid, strict=True))
    assert placement.count > 7 * 10


def test_colour_sums_binned_a_block_at_a_time_are_each_cells_channels_summed(index, monkeypatch) -> None:
    """colour_sums bins the items a block at a time (bounded temporaries at 10M items): with blocks of
    5 items each fine cell's sum is still what its items' leaves add, computed here item by item."""
    from ecpfs_viewer.model.diagnostics.embedding_map import density as density_module

    path, _, _ = index
    reader = IndexReader(path)
    index_map = layout_index(reader)
    placement = open_placement(reader, index_map)
    density = DensityIndex(placement, grid=32)
    monkeypatch.setattr(density_module, "SUM_BLOCK", 5)
    sums = colour_sums(density, by_level(index_map, 1))
    rgb = sums.colours.leaf_rgb().astype(np.float64)
    expected = np.zeros((3, 32 * 32))
    cells = density._cells(placement.coords)
    for item in range(placement.count):  # each item adds its leaf's colour to its cell
        leaf = np.searchsorted(placement.leaf_start, item, side="right") - 1
        expected[:, cells[item]] += rgb[leaf]
    for channel in range(3):
        np.testing.assert_allclose(sums.pyramids[channel][0].reshape(-1), expected[channel], rtol=1e-5)
    assert placement.count > 5 * 10


def test_bounds_taken_a_block_at_a_time_are_those_of_the_finite_items(index, monkeypatch) -> None:
    """Placement.bounds looks at the items a block at a time (no copy of every finite one at 10M
    items): with blocks of 7, items that are not finite (in whole blocks too) are still left out."""
    from dataclasses import replace

    from ecpfs_viewer.model.diagnostics.embedding_map import placement as placement_module

    path, _, _ = index
    reader = IndexReader(path)
    placement = open_placement(reader, layout_index(reader))
    coords = placement.coords.copy()
    coords[:9, 0] = np.nan  # the first block wholly, and into the second
    coords[20, 1] = np.inf
    coords[-1] = -np.inf
    monkeypatch.setattr(placement_module, "BOUNDS_BLOCK", 7)
    bounded = replace(placement, coords=coords)
    finite = coords[np.isfinite(coords).all(axis=1)]
    assert bounded.bounds() == (finite[:, 0].min(), finite[:, 0].max(), finite[:, 1].min(), finite[:, 1].max())
    assert replace(placement, coords=np.full_like(coords, np.nan)).bounds() == (-1.0, 1.0, -1.0, 1.0)


@pytest.mark.parametrize("colouring", ["level1", "size"])
def test_a_frame_binned_a_band_of_rows_at_a_time_is_the_frame_binned_at_once(index, monkeypatch, colouring) -> None:
    """density_frame bins the items (or cells) in view a band of cell rows at a time (bounded temporaries
    at 10M items): with bands of 3 items every frame, items or cells, is the one binned whole."""
    from ecpfs_viewer.model.diagnostics.embedding_map import density as density_module

    path, _, _ = index
    reader = IndexReader(path)
    index_map = layout_index(reader)
    placement = open_placement(reader, index_map)
    density = DensityIndex(placement, grid=32)
    colours = by_level(index_map, 1) if colouring == "level1" else size_colours(index_map)
    sums = colour_sums(density, colours)
    whole = density.bounds
    near = whole.zoomed(3, *placement.coords[0].tolist())
    views = [(whole, 16, 16, {}), (whole, 24, 20, {}), (whole, 400, 300, {"point_limit": 0}),
             (near, 300, 200, {"point_limit": 0}), (whole, 400, 300, {"point_limit": 0, "item_budget": 10})]
    at_once = [density_frame(density, sums, rect, w, h, **options) for rect, w, h, options in views]
    monkeypatch.setattr(density_module, "FRAME_BLOCK", 3)
    banded = [density_frame(density, sums, rect, w, h, **options) for rect, w, h, options in views]
    assert {f.source for f in at_once} == {"cells", "items"}
    for a, b in zip(at_once, banded, strict=True):
        assert (a.source, a.pixel_scale) == (b.source, b.pixel_scale) and a.total == b.total > 0
        assert np.array_equal(a.counts, b.counts) and np.array_equal(a.rgb, b.rgb)
    assert len(density.row_bands(whole, 3)) > 10
