"""The table view as a user meets it: id arrays open as tables, node ids are links, item ids sit
beside a leaf's vectors, a selection copies as TSV, and a selection too large to read is read a
block of rows at a time. Also the plot pane defaults the issue asked for (small arrays whole,
Freedman-Diaconis bins, a constant's y range, the heatmap's cursor readout)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zarr
from PySide6.QtCore import QItemSelection, QItemSelectionModel, QPointF, Qt
from PySide6.QtGui import QGuiApplication

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.data.plot_pane import PlotPane
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

BIG = np.arange(200_000 * 3, dtype=np.int64).reshape(200_000, 3)


@pytest.fixture
def hierarchy(tmp_path: Path) -> Hierarchy:
    root = zarr.open_group(tmp_path / "t.zarr", mode="w")
    root.create_array("big", shape=BIG.shape, chunks=(10_000, 3), dtype="int64")[:] = BIG
    root.create_array("cube", shape=(3, 3, 3), chunks=(1, 1, 1), dtype="float32")[:] = \
        np.arange(27, dtype=np.float32).reshape(3, 3, 3)
    root.create_array("flat", shape=(50,), dtype="int32")[:] = 60_000
    values = np.random.default_rng(1).normal(size=160).astype(np.float32)
    root.create_array("sample", shape=(160,), dtype="float32")[:] = values
    return Hierarchy(open_store(tmp_path / "t.zarr"))


@pytest.fixture
def pane(show) -> PlotPane:
    return show(PlotPane(), 900, 600)


def show(qtbot, pane: PlotPane, h: Hierarchy, path: str, text: str | None = None) -> None:
    """Ask the pane for an array (or a selection) and wait until it is on screen."""
    with qtbot.waitSignal(pane.shown, timeout=10_000):
        pane.show_selection(h, path, text) if text is not None else pane.show_array(h, path)


def test_node_ids_open_as_a_table_and_a_click_selects_the_child(qtbot, two_clusters_path) -> None:
    win = create_main_window(str(two_clusters_path))
    qtbot.addWidget(win)
    win.resize(1280, 800)
    win.show()
    qtbot.waitUntil(lambda: win.session.hierarchy is not None, timeout=10_000)
    win.reveal_path("lvl_1/node_1/node_ids")
    qtbot.waitUntil(lambda: win.plot.current_data() is not None
                    and win.plot.current_data().subset.path == "lvl_1/node_1/node_ids", timeout=10_000)
    assert win.plot.current_view() == "Table"
    table = win.plot.table
    model = table.model
    assert [model.index(r, 0).data() for r in range(model.rowCount())] == ["1", "2", "3"]
    assert model.data(model.index(1, 0), Qt.ItemDataRole.ToolTipRole) == "2: click to open lvl_2/node_2"
    win.tabs.setCurrentIndex(win.TAB_DATA)
    rect = table.table.visualRect(model.index(1, 0))
    qtbot.mouseClick(table.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == "lvl_2/node_2",
                    timeout=10_000)
    qtbot.waitUntil(lambda: win.node_page.data is not None, timeout=10_000)
    win.close()


def test_a_leafs_vectors_have_their_item_ids_beside_them(qtbot, pane, two_clusters_path) -> None:
    h = Hierarchy(open_store(two_clusters_path))
    show(qtbot, pane, h, "lvl_2/node_1/embeddings")
    assert pane.current_view() == "Heatmap" and "Table" in pane.offered_views()  # vectors: heatmap first
    assert pane.show_view("Table")
    model = pane.table.model
    assert model.headerData(0, Qt.Orientation.Horizontal) == "item id"
    assert model.headerData(1, Qt.Orientation.Horizontal) == "0"
    assert [model.index(r, 0).data() for r in range(2)] == ["2", "3"]
    expected = h.read_array("lvl_2/node_1/embeddings")
    assert model.index(1, 2).data() == f"{float(expected[1, 1]):.6g}"
    show(qtbot, pane, h, "index_root/embeddings")  # the root's rows lead lvl_1 nodes: links
    assert pane.show_view("Table")
    assert pane.table.model.headerData(0, Qt.Orientation.Horizontal) == "child node"
    assert pane.table.model.link_at(pane.table.model.index(1, 0)) == "lvl_1/node_1"


def test_copy_a_selection_as_tsv(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "big", "10:14, :")
    assert pane.current_view() == "Table"  # integers, 12 values: a table first
    view = pane.table.table
    model = pane.table.model
    selection = QItemSelection(model.index(1, 0), model.index(2, 1))
    view.selectionModel().select(selection, QItemSelectionModel.SelectionFlag.ClearAndSelect)
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert QGuiApplication.clipboard().text() == "33\t34\n36\t37"
    assert model.headerData(0, Qt.Orientation.Vertical) == "10"


def test_a_selection_over_the_cap_is_read_a_block_at_a_time(qtbot, pane, hierarchy) -> None:
    pane.max_elements = 10_000
    show(qtbot, pane, hierarchy, "big", ":, :")
    assert "600,000 elements" in pane.message_text() and pane.table_button.isVisible()
    with qtbot.waitSignal(pane.shown, timeout=10_000):
        qtbot.mouseClick(pane.table_button, Qt.MouseButton.LeftButton)
    assert pane.current_view() == "Table" and pane.offered_views() == ["Table"]
    assert not pane.export_npy_action.isEnabled()  # nothing in memory to save
    model = pane.table.model
    assert model.lazy and model.rowCount() == 200_000
    qtbot.waitUntil(lambda: model.index(0, 2).data() == "2", timeout=10_000)
    pane.table.table.scrollTo(model.index(150_000, 0))
    qtbot.waitUntil(lambda: model.index(150_000, 1).data() == str(BIG[150_000, 1]), timeout=10_000)
    assert len(model.blocks_read()) <= 4  # only what was on screen, never the 200,000 rows
    view = pane.table.table
    view.selectionModel().select(QItemSelection(model.index(170_000, 0), model.index(170_001, 2)),
                                 QItemSelectionModel.SelectionFlag.ClearAndSelect)
    copied: list[str] = []
    pane.table.copy_selection(copied.append)  # rows not read yet are read first
    qtbot.waitUntil(lambda: bool(copied), timeout=10_000)
    assert copied[0] == "\t".join(map(str, BIG[170_000])) + "\n" + "\t".join(map(str, BIG[170_001]))


def test_small_arrays_are_shown_whole_and_bins_follow_the_data(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "cube")
    assert pane.subset_edit.text() == ":, :, :" and pane.image_item.image.shape == (3, 9)
    show(qtbot, pane, hierarchy, "sample")
    counts, _ = pane.histogram_counts()
    assert 5 <= len(counts) <= 20  # Freedman-Diaconis for 160 values, not 100 bins


def test_a_constant_gets_a_y_range_around_its_value(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "flat")
    assert pane.show_view("Line")
    low, high = pane.line.plot.vb.viewRange()[1]
    assert low < 60_000 < high and high - low <= 0.25 * 60_000


def test_the_heatmap_names_the_cell_under_the_cursor(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "cube")
    heatmap = pane.heatmap
    scene = heatmap.heat_plot.vb.mapViewToScene(QPointF(4.0, 2.0))
    qtbot.mouseMove(heatmap.view.viewport(), heatmap.view.mapFromScene(scene))
    qtbot.waitUntil(lambda: heatmap.hover_text() != "", timeout=5000)
    assert heatmap.hover_text() == "row 2, column 4: 22"


def test_a_wide_array_opens_without_measuring_every_cell(qtbot, pane, tmp_path: Path) -> None:
    """2,000 x 64 vectors open on the heatmap; the table behind its tab is filled only when it is
    opened, and fitting its columns asks for a few rows' cells, not Qt's default 1,000 rows."""
    root = zarr.open_group(tmp_path / "wide.zarr", mode="w")
    vectors = np.random.default_rng(2).normal(size=(2_000, 64)).astype(np.float32)
    root.create_array("embeddings", shape=vectors.shape, chunks=(500, 64), dtype="float32")[:] = vectors
    h = Hierarchy(open_store(tmp_path / "wide.zarr"))
    model = pane.table.model
    asked: list[int] = []
    data = model.data

    def counted(index, role=Qt.ItemDataRole.DisplayRole):  # type: ignore[no-untyped-def]
        asked.append(index.row())
        return data(index, role)

    model.data = counted  # type: ignore[method-assign]  # Qt's calls reach the instance's attribute
    show(qtbot, pane, h, "embeddings", "0:2000, :")
    assert pane.current_view() == "Heatmap" and "Table" in pane.offered_views()
    assert model.rowCount() == 0  # not drawn behind its tab
    assert pane.show_view("Table")
    assert model.rowCount() == 2_000 and model.index(1, 3).data() == f"{float(vectors[1, 3]):.6g}"
    assert asked and max(asked) < 200  # the measured rows and those on screen, not 1,000
