"""The chunk map: one cell per chunk, colours, missing and partial chunks, tooltip, click, big grids."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zarr
from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QColor, QHelpEvent, QPalette
from PySide6.QtWidgets import QToolTip

from ecpfs_viewer.gui.metadata.chunk_map import ChunkMapWidget
from ecpfs_viewer.gui.widgets.colormaps import MISSING_RGB, lookup_table
from ecpfs_viewer.model.formatting import format_bytes
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.chunks import ChunkStats, chunk_stats
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

MISSING_CHUNKS = {(0, 1), (2, 3), (3, 0)}


@pytest.fixture
def hierarchy(tmp_path: Path) -> Hierarchy:
    path = tmp_path / "chunks.zarr"
    root = zarr.open_group(path, mode="w")
    rng = np.random.default_rng(3)
    grid = rng.normal(size=(40, 40)).astype(np.float32)
    for i, j in MISSING_CHUNKS:  # all-fill chunks are not written
        grid[i * 10:(i + 1) * 10, j * 10:(j + 1) * 10] = 0
    grid[30:40, 30:40] = 1.0  # one chunk that compresses to almost nothing
    root.create_array("grid", shape=grid.shape, chunks=(10, 10), dtype="float32", fill_value=0)[:] = grid
    ids = np.arange(1, 1001, dtype=np.uint32)
    ids[70:140] = 0  # chunks 10 and 11 (7 rows each) hold only fill
    root.create_array("ids", shape=ids.shape, chunks=(7,), dtype="uint32", fill_value=0)[:] = ids
    node = root.create_group("lvl_1").create_group("node_3")
    node.create_array("embeddings", shape=(37, 16), chunks=(256, 16), dtype="float32")[:] = (
        rng.normal(size=(37, 16)).astype(np.float32))
    root.create_array("cube", shape=(4, 6, 8), chunks=(2, 2, 2), dtype="int16")[:] = 1
    sharded = np.arange(40 * 40, dtype=np.float32).reshape(40, 40)
    sharded[20:40, 20:30] = 0  # two inner chunks of the last shard hold only fill
    root.create_array("sharded", shape=(40, 40), shards=(20, 20), chunks=(10, 10), dtype="float32",
                      fill_value=0)[:] = sharded
    root.create_array("empty", shape=(0, 4), chunks=(10, 4), dtype="float32")
    return Hierarchy(open_store(path))


@pytest.fixture
def chunk_map(show) -> ChunkMapWidget:
    return show(ChunkMapWidget(), 640, 400)


def center(widget: ChunkMapWidget, index: tuple[int, ...]) -> QPoint:
    rect = widget.cell_rect(index)
    assert rect is not None
    return rect.center()


def pixel(widget: ChunkMapWidget, x: int, y: int) -> tuple[int, int, int]:
    color = QColor(widget.canvas.image.pixel(x, y))
    return color.red(), color.green(), color.blue()


def test_one_cell_per_chunk_with_caption(chunk_map, hierarchy) -> None:
    stats = chunk_stats(hierarchy, "grid")
    chunk_map.set_stats(stats)
    assert chunk_map.cell_count() == 16
    caption = chunk_map.caption_text()
    assert caption.startswith("16 chunks: 13 stored, 3 missing (read as fill); ")
    assert f"compression ratio {stats.compression_ratio:.2f}" in caption


def test_missing_chunks_are_grey_and_stored_ones_follow_the_colour_map(chunk_map, hierarchy) -> None:
    stats = chunk_stats(hierarchy, "grid")
    chunk_map.set_stats(stats)
    lut = lookup_table()
    for index in np.ndindex(*stats.grid_shape):
        color = chunk_map.cell_color(index)
        rgb = (color.red(), color.green(), color.blue())
        if index in MISSING_CHUNKS:
            assert rgb == MISSING_RGB
        else:
            assert rgb != MISSING_RGB
    largest = np.unravel_index(np.argmax(stats.stored), stats.grid_shape)
    smallest = (3, 3)  # the constant chunk
    assert chunk_map.cell_color(largest) == QColor(*lut[-1])
    assert chunk_map.cell_color(smallest) == QColor(*lut[0])  # the scale spans smallest..largest stored chunk
    present = stats.stored[stats.stored >= 0]
    assert chunk_map._low_label.text() == f"stored {format_bytes(present.min())}"
    assert chunk_map._high_label.text() == format_bytes(present.max())
    # the picture itself: the centre of a missing cell is grey or its darker hatching, never a map colour
    point = center(chunk_map, (2, 3))
    assert pixel(chunk_map, point.x(), point.y()) in (MISSING_RGB, (88, 88, 88))


def test_hovering_a_cell_shows_its_description(chunk_map, hierarchy, qtbot) -> None:
    stats = chunk_stats(hierarchy, "grid")
    chunk_map.set_stats(stats)
    point = center(chunk_map, (2, 3))
    expected = stats.describe_cell((2, 3))
    assert "missing" in expected
    assert chunk_map.tooltip_at(point) == expected
    canvas = chunk_map.canvas
    event = QHelpEvent(QEvent.Type.ToolTip, point, canvas.mapToGlobal(point))
    canvas.event(event)
    qtbot.waitUntil(lambda: QToolTip.text() == expected, timeout=2000)
    assert chunk_map.tooltip_at(QPoint(630, 390)) == ""  # outside the grid: no tooltip


def test_clicking_a_cell_emits_its_chunk_index(chunk_map, hierarchy, qtbot) -> None:
    chunk_map.set_stats(chunk_stats(hierarchy, "grid"))
    with qtbot.waitSignal(chunk_map.chunk_clicked) as signal:
        qtbot.mouseClick(chunk_map.canvas, Qt.MouseButton.LeftButton, pos=center(chunk_map, (1, 2)))
    assert signal.args == [(1, 2)]
    assert chunk_map.selected_chunk() == (1, 2)


def test_1d_grid_wraps_into_rows_and_keeps_indexes(chunk_map, hierarchy, qtbot) -> None:
    stats = chunk_stats(hierarchy, "ids")
    chunk_map.set_stats(stats)
    assert chunk_map.cell_count() == 143
    assert "wrapped into rows" in chunk_map.caption_text()
    rects = [chunk_map.cell_rect((i,)) for i in (0, 1, 142)]
    assert rects[1].left() > rects[0].left() and rects[2].top() > rects[0].top()
    for index in [(10,), (11,)]:
        color = chunk_map.cell_color(index)
        assert (color.red(), color.green(), color.blue()) == MISSING_RGB
    with qtbot.waitSignal(chunk_map.chunk_clicked) as signal:
        qtbot.mouseClick(chunk_map.canvas, Qt.MouseButton.LeftButton, pos=center(chunk_map, (100,)))
    assert signal.args == [(100,)]
    assert chunk_map.tooltip_at(center(chunk_map, (100,))) == stats.describe_cell((100,))


def test_underfilled_node_chunk_is_drawn_partly_filled(chunk_map, hierarchy) -> None:
    stats = chunk_stats(hierarchy, "lvl_1/node_3/embeddings", node_array=True)
    chunk_map.set_stats(stats)
    assert chunk_map.cell_count() == 1
    assert "37 of 256 chunk rows used" in chunk_map.caption_text()
    rect = chunk_map.cell_rect((0, 0))
    x = rect.center().x()
    used = pixel(chunk_map, x, rect.top() + 1)
    unused = pixel(chunk_map, x, rect.top() + rect.height() * 3 // 4)
    cell = chunk_map.cell_color((0, 0))
    assert used == (cell.red(), cell.green(), cell.blue())
    base = chunk_map.canvas.palette().color(QPalette.ColorRole.Base)
    assert unused != used and unused != (base.red(), base.green(), base.blue())
    # the used rows fill the top of the cell, about 37/256 of it
    column = [pixel(chunk_map, x, y) for y in range(rect.top(), rect.bottom())]
    filled = sum(1 for p in column if p == used)
    assert abs(filled / (rect.height() - 1) - 37 / 256) < 0.05
    assert chunk_map._partial_label.isVisibleTo(chunk_map)


def test_partial_cell_reads_as_used_and_unused_in_a_light_palette(chunk_map, hierarchy) -> None:
    palette = QPalette(chunk_map.palette())
    for role, color in ((QPalette.ColorRole.Window, "#efefef"), (QPalette.ColorRole.Base, "#ffffff"),
                        (QPalette.ColorRole.Text, "#000000")):
        palette.setColor(role, QColor(color))
    chunk_map.setPalette(palette)
    chunk_map.set_stats(chunk_stats(hierarchy, "lvl_1/node_3/embeddings", node_array=True))
    rect = chunk_map.cell_rect((0, 0))
    x = rect.center().x()
    used = pixel(chunk_map, x, rect.top() + 1)
    unused = pixel(chunk_map, x, rect.bottom() - 3)
    white = (255, 255, 255)
    assert used != unused
    assert used != white and unused != white
    assert sum(abs(a - b) for a, b in zip(unused, white, strict=False)) > 40  # not white on white
    assert sum(abs(a - b) for a, b in zip(unused, used, strict=False)) > 40
    # the big cell is labelled with its rows, in dark text over the pale unused part
    shown = chunk_map.canvas.grab().toImage()
    dark = sum(1 for y in range(rect.top(), rect.bottom(), 2) for x in range(rect.left(), rect.right(), 2)
               if QColor(shown.pixel(x, y)).lightness() < 100)
    assert dark > 10
    assert chunk_map._labels[0][1] == "37 / 256 rows used"


def test_a_nearly_empty_chunk_keeps_a_visible_sliver(chunk_map) -> None:
    stats = ChunkStats(path="a", shape=(1, 4), chunk_shape=(100_000, 4), shard_shape=None, grid_shape=(1, 1),
                       n_chunks=1, n_present=1, n_missing=0, stored_bytes_total=10, logical_bytes=16,
                       compression_ratio=1.6, stored=np.array([[10]]), stored_rows=1)
    chunk_map.set_stats(stats)
    rect = chunk_map.cell_rect((0, 0))
    cell = chunk_map.cell_color((0, 0))
    x = rect.center().x()
    column = [pixel(chunk_map, x, y) for y in range(rect.top(), rect.bottom())]
    assert sum(1 for p in column if p == (cell.red(), cell.green(), cell.blue())) >= 3


def test_one_chunk_is_drawn_as_a_big_cell(chunk_map, hierarchy) -> None:
    chunk_map.set_stats(chunk_stats(hierarchy, "lvl_1/node_3/embeddings", node_array=True))
    rect = chunk_map.cell_rect((0, 0))
    assert rect.width() == rect.height() >= 120
    assert rect.height() <= chunk_map.canvas.height()


def test_3d_grid_is_flattened_with_a_note(chunk_map, hierarchy, qtbot) -> None:
    chunk_map.set_stats(chunk_stats(hierarchy, "cube"))
    assert chunk_map.cell_count() == 2 * 3 * 4
    assert "flattened" in chunk_map.caption_text()
    with qtbot.waitSignal(chunk_map.chunk_clicked) as signal:
        qtbot.mouseClick(chunk_map.canvas, Qt.MouseButton.LeftButton, pos=center(chunk_map, (1, 2, 3)))
    assert signal.args == [(1, 2, 3)]


def test_empty_and_cleared(chunk_map, hierarchy) -> None:
    chunk_map.set_stats(chunk_stats(hierarchy, "empty"))
    assert chunk_map.cell_count() == 0
    chunk_map.set_stats(chunk_stats(hierarchy, "grid"))
    chunk_map.set_stats(None)
    assert chunk_map.cell_count() == 0 and chunk_map.caption_text() == ""


def test_large_grid_is_one_image_and_maps_clicks(chunk_map, qtbot) -> None:
    rng = np.random.default_rng(0)
    stored = rng.integers(1_000, 500_000, size=(200, 500)).astype(np.int64)
    stored[rng.random(stored.shape) < 0.1] = -1
    present = int((stored >= 0).sum())
    stats = ChunkStats(path="big", grid_shape=(200, 500), chunk_shape=(10, 10), shard_shape=None,
                       n_chunks=100_000, n_present=present, n_missing=100_000 - present,
                       stored_bytes_total=int(stored[stored >= 0].sum()), logical_bytes=None,
                       compression_ratio=None, stored=stored, shape=(2000, 5000), stored_rows=200)
    chunk_map.resize(1100, 600)
    chunk_map.set_stats(stats)
    assert chunk_map.cell_count() == 100_000
    assert len(chunk_map.canvas.findChildren(object)) < 10  # drawn, not built from widgets
    with qtbot.waitSignal(chunk_map.chunk_clicked) as signal:
        qtbot.mouseClick(chunk_map.canvas, Qt.MouseButton.LeftButton, pos=center(chunk_map, (123, 456)))
    assert signal.args == [(123, 456)]


def test_sharded_array_shows_inner_chunks_and_shard_edges(chunk_map, hierarchy) -> None:
    stats = chunk_stats(hierarchy, "sharded")
    chunk_map.set_stats(stats)
    assert chunk_map.cell_count() == 16  # inner chunks, not the 4 shards
    assert chunk_map.caption_text().startswith("16 inner chunks: 14 stored, 2 missing (read as fill)")
    assert "4 inner chunks per shard" in chunk_map.caption_text()
    for index in [(2, 2), (3, 2)]:
        color = chunk_map.cell_color(index)
        assert (color.red(), color.green(), color.blue()) == MISSING_RGB
    assert "in shard c/1/1" in chunk_map.tooltip_at(center(chunk_map, (3, 2)))
    # the shard edge after the second cell column is drawn in the text colour
    text = chunk_map.canvas.palette().color(QPalette.ColorRole.Text)
    edge_x = chunk_map.cell_rect((0, 1)).left() + chunk_map.cell_rect((0, 1)).width() - 1
    assert pixel(chunk_map, edge_x, center(chunk_map, (0, 0)).y()) == (text.red(), text.green(), text.blue())


@pytest.mark.parametrize("dark", [False, True])
def test_the_unused_rows_swatch_is_not_the_top_of_the_ramp(chunk_map, hierarchy, dark) -> None:
    if dark:
        palette = QPalette(chunk_map.palette())
        for role, color in ((QPalette.ColorRole.Window, "#2b2b2b"), (QPalette.ColorRole.Base, "#1e1e1e"),
                            (QPalette.ColorRole.Text, "#e6e6e6")):
            palette.setColor(role, QColor(color))
        chunk_map.setPalette(palette)
    chunk_map.set_stats(chunk_stats(hierarchy, "lvl_1/node_3/embeddings", node_array=True))
    assert chunk_map._partial_swatch.isVisibleTo(chunk_map)
    swatch = chunk_map._partial_swatch.pixmap().toImage()
    top = np.asarray(lookup_table()[-1], dtype=int)  # viridis' yellow: the biggest chunk
    colours = {QColor(swatch.pixel(x, y)).getRgb()[:3] for x in range(swatch.width()) for y in range(swatch.height())}
    assert len(colours) == 2  # a used strip and the pale unused rest
    for colour in colours:
        assert np.abs(np.asarray(colour) - top).sum() > 120, colour
