"""The plot pane: what it plots for each kind of array, the subset field, the cap, errors, export."""

from __future__ import annotations

import csv
import threading
from pathlib import Path

import numpy as np
import pytest
import zarr
from PySide6.QtCore import QCoreApplication, QPointF, Qt
from PySide6.QtGui import QColor, QImage, QPalette
from PySide6.QtWidgets import QFileDialog

from ecpfs_viewer.gui.data.plot_pane import PlotPane
from ecpfs_viewer.gui.data.plot_views.heatmap_look import DEFAULT_LOOK
from ecpfs_viewer.gui.runtime.settings import settings
from ecpfs_viewer.gui.runtime.workers import thread_pool
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.views import plot_data as plot_data_module
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

RNG = np.random.default_rng(7)
MATRIX = (RNG.normal(size=(300, 64)) + np.linspace(0, 3, 64)).astype(np.float32)
VECTOR = (np.sin(np.arange(1000) / 30) * 100).astype(np.int32)
DECADES = 10.0 ** np.arange(-3, 5, dtype=np.float64).reshape(2, 4)  # 0.001 ... 10,000
NAMES = np.array(["alpha", "beta", "gamma, with comma", "δέλτα"])


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "arrays.zarr"
    root = zarr.open_group(path, mode="w")
    root.create_array("matrix", shape=MATRIX.shape, chunks=(100, 64), dtype="float32")[:] = MATRIX
    root.create_array("vector", shape=VECTOR.shape, chunks=(1000,), dtype="int32")[:] = VECTOR
    root.create_array("scalar", shape=(), dtype="uint32")[...] = 42
    root.create_array("label", shape=(), dtype=str)[...] = "L2"
    root.create_array("names", shape=NAMES.shape, dtype=str)[:] = NAMES
    root.create_array("flags", shape=(4, 5), dtype=bool)[:] = np.eye(4, 5, dtype=bool)
    cube = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 3, 4)
    root.create_array("cube", shape=cube.shape, dtype="float64")[:] = cube
    with_nan = np.array([1.0, np.nan, 2.0, 2.5, np.inf, 3.0], dtype=np.float32)
    root.create_array("with_nan", shape=with_nan.shape, dtype="float32")[:] = with_nan
    root.create_array("all_nan", shape=(3,), dtype="float64")[:] = np.nan
    root.create_array("decades", shape=DECADES.shape, dtype="float64")[:] = DECADES
    root.create_array("not_positive", shape=(2, 3), dtype="float32")[:] = -np.arange(6).reshape(2, 3)
    return path


@pytest.fixture
def hierarchy(store_path: Path) -> Hierarchy:
    return Hierarchy(open_store(store_path))


@pytest.fixture
def pane(show) -> PlotPane:
    return show(PlotPane(), 900, 600)


def show(qtbot, pane: PlotPane, h: Hierarchy, path: str, text: str | None = None) -> None:
    """Ask for an array (or a selection of it) and wait until its pictures or its message are shown."""
    with qtbot.waitSignal(pane.shown, timeout=10_000):
        if text is None:
            pane.show_array(h, path)
        else:
            pane.show_selection(h, path, text)


def press_enter(qtbot, pane: PlotPane) -> None:
    with qtbot.waitSignal(pane.shown, timeout=10_000):
        qtbot.keyClick(pane.subset_edit, Qt.Key.Key_Return)


def test_2d_array_shows_heatmap_of_default_subset(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "matrix")
    assert pane.current_view() == "Heatmap"
    assert pane.offered_views() == ["Heatmap", "Histogram", "Table"]
    assert pane.subset_edit.text() == "0:100, :"  # the default subset stays inside the first chunk
    image = pane.image_item.image
    assert image.dtype == np.float32 and image.flags.c_contiguous
    np.testing.assert_array_equal(image, MATRIX[:100])
    low, high = pane.image_item.levels
    assert MATRIX[:100].min() <= low < high <= MATRIX[:100].max()
    assert pane.heatmap.colorbar.levels() == pytest.approx((low, high))
    assert "100 x 64 float32" in pane.summary_label.text()


def click_heatmap(qtbot, pane: PlotPane, row: float, col: float) -> None:
    heatmap = pane.heatmap
    scene_pos = heatmap.heat_plot.vb.mapViewToScene(QPointF(col, row))
    widget_pos = heatmap.view.mapFromScene(scene_pos)
    qtbot.mouseClick(heatmap.view.viewport(), Qt.MouseButton.LeftButton, pos=widget_pos)


def test_clicking_a_heatmap_row_plots_that_row(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "matrix")
    with qtbot.waitSignal(pane.row_selected) as signal:
        click_heatmap(qtbot, pane, row=37.2, col=10.0)
    assert signal.args == [37]
    x, y = pane.curve_item.getData()
    np.testing.assert_allclose(y, MATRIX[37])
    np.testing.assert_array_equal(x, np.arange(64))


def test_subset_field_reads_the_typed_selection(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "matrix")
    pane.subset_edit.clear()
    qtbot.keyClicks(pane.subset_edit, "150:160, 8:16")
    press_enter(qtbot, pane)
    np.testing.assert_array_equal(pane.image_item.image, MATRIX[150:160, 8:16])
    assert pane.current_subset().offsets == (150, 8)
    # axes show array indexes: the image starts at column 8, row 150
    rect = pane.image_item.mapRectToParent(pane.image_item.boundingRect())
    assert (rect.left(), rect.top(), rect.width(), rect.height()) == (7.5, 149.5, 8, 10)  # cells centred on indexes
    with qtbot.waitSignal(pane.row_selected) as signal:
        click_heatmap(qtbot, pane, row=152.6, col=9.0)
    assert signal.args == [153] and pane.selected_row() == 153
    assert pane.heatmap.row_plot.titleLabel.text == "row 153"
    x, y = pane.curve_item.getData()
    np.testing.assert_allclose(y, MATRIX[153, 8:16])
    np.testing.assert_array_equal(x, np.arange(8, 16))


def test_1d_array_shows_a_line(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "vector")
    assert pane.current_view() == "Line"
    assert pane.offered_views() == ["Line", "Histogram", "Table"]
    x, y = pane.curve_item.getData()
    np.testing.assert_array_equal(y, VECTOR)
    np.testing.assert_array_equal(x, np.arange(1000))
    assert pane.curve_item.opts["symbol"] is None  # 1,000 points: no markers
    show(qtbot, pane, hierarchy, "vector", "100:200")
    x, y = pane.curve_item.getData()
    np.testing.assert_array_equal(y, VECTOR[100:200])
    assert x[0] == 100 and x[-1] == 199
    assert pane.curve_item.opts["symbol"] == "o"  # 100 points: a marker on each
    pane.line.step_check.setChecked(True)
    x, y = pane.curve_item.getData()
    np.testing.assert_array_equal(y, VECTOR[100:200])  # same values, drawn as steps:
    assert len(x) == 101 and (x[0], x[-1]) == (99.5, 199.5)  # one edge more than values, around each index
    assert pane.curve_item.opts["symbol"] is None


def test_histogram_of_integers_has_one_bin_per_value(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "vector")
    assert pane.show_view("Histogram")
    assert pane.current_view() == "Histogram"
    counts, _edges = pane.histogram_counts()
    values, expected = np.unique(VECTOR, return_counts=True)
    assert len(counts) == VECTOR.max() - VECTOR.min() + 1
    np.testing.assert_array_equal(counts[values - VECTOR.min()], expected)
    assert counts.sum() == VECTOR.size
    _, shown = pane.histogram.item.getData()
    np.testing.assert_array_equal(shown, counts)


def test_histogram_of_floats_counts_finite_values(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "with_nan")
    counts, edges = pane.histogram_counts()
    assert counts.sum() == 4  # NaN and inf are left out
    assert edges[0] == 1.0 and edges[-1] == 3.0
    assert "1 NaN · 1 +inf" in pane.summary_label.text()


def test_histogram_of_no_finite_value_is_empty_and_says_why(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "all_nan")
    counts, _edges = pane.histogram_counts()
    assert counts.size == 0
    assert "3 NaN" in pane.summary_label.text() and "min" not in pane.summary_label.text()
    assert "percentiles" not in pane.summary_label.text()
    assert pane.show_view("Histogram")
    _, shown = pane.histogram.item.getData()
    assert shown.tolist() == [0]  # one flat bin, not a stale picture


def test_histogram_bins_range_and_log_count_are_the_users(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "matrix")
    assert pane.show_view("Histogram")
    hist = pane.histogram
    values = MATRIX[:100].ravel()
    hist.bins_box.setFocus()
    hist.bins_box.selectAll()
    qtbot.keyClicks(hist.bins_box, "7")
    qtbot.keyClick(hist.bins_box, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: hist.counts.size == 7, timeout=10_000)
    assert hist.counts.sum() == values.size
    assert (hist.edges[0], hist.edges[-1]) == pytest.approx((values.min(), values.max()))
    hist.low_edit.setFocus()
    qtbot.keyClicks(hist.low_edit, "0")
    hist.high_edit.setFocus()  # leaving the field applies it
    qtbot.keyClicks(hist.high_edit, "2")
    qtbot.keyClick(hist.high_edit, Qt.Key.Key_Return)
    inside = int(np.count_nonzero((values >= 0) & (values <= 2)))
    qtbot.waitUntil(lambda: hist.edges[0] == 0.0 and hist.edges[-1] == 2.0, timeout=10_000)
    assert hist.counts.sum() == inside and hist.counts.size == 7
    assert hist.note.isVisible() and f"{values.size - inside:,} finite values outside the range" in hist.note.text()
    qtbot.mouseClick(hist.log_box, Qt.MouseButton.LeftButton)
    assert hist.plot.getAxis("left").logMode
    _, shown = hist.item.getData()
    np.testing.assert_allclose(shown, np.log10(np.where(hist.counts > 0, hist.counts, 0.5)))
    show(qtbot, pane, hierarchy, "matrix", "0:50, :")  # the same array: its range is kept
    qtbot.waitUntil(lambda: hist.counts.sum() == np.count_nonzero((MATRIX[:50] >= 0) & (MATRIX[:50] <= 2)),
                    timeout=10_000)
    show(qtbot, pane, hierarchy, "vector")  # another array: its own range, the bins still 7
    assert pane.current_view() == "Histogram" and hist.low_edit.text() == "" and hist.high_edit.text() == ""
    qtbot.waitUntil(lambda: hist.counts.size == 7 and hist.counts.sum() == VECTOR.size, timeout=10_000)
    hist.bins_box.setValue(0)  # auto again: the worker's one bin per value
    qtbot.waitUntil(lambda: hist.counts.size == VECTOR.max() - VECTOR.min() + 1, timeout=10_000)
    hist.low_edit.setText("5000")  # above every value: nothing counted, drawn flat on the log axis
    hist.high_edit.setText("6000")
    hist.high_edit.editingFinished.emit()
    qtbot.waitUntil(lambda: hist.counts.size == 0, timeout=10_000)
    _, shown = hist.item.getData()
    assert np.isfinite(shown).all() and f"{VECTOR.size:,} finite values outside" in hist.note.text()
    hist.low_edit.setText("5")
    hist.high_edit.setText("1")
    hist.high_edit.editingFinished.emit()
    assert "The range is empty" in hist.note.text()


def test_the_tab_the_user_picked_stays_open_where_it_applies(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "matrix")
    qtbot.mouseClick(pane.tabs.tabBar(), Qt.MouseButton.LeftButton,
                     pos=pane.tabs.tabBar().tabRect(pane.tabs.indexOf(pane.histogram)).center())
    assert pane.current_view() == "Histogram"
    show(qtbot, pane, hierarchy, "matrix", "0:10, :")
    assert pane.current_view() == "Histogram"
    show(qtbot, pane, hierarchy, "names")  # no histogram for strings: the best view opens
    assert pane.current_view() == "Table" and pane.offered_views() == ["Table"]
    assert not pane.show_view("Histogram")
    show(qtbot, pane, hierarchy, "vector")
    assert pane.current_view() == "Histogram"


def test_rank0_value_is_shown_as_text(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "scalar")
    assert pane.current_view() == "Value" and pane.offered_views() == ["Value"]
    assert pane.value_text() == "42"
    show(qtbot, pane, hierarchy, "label")
    assert pane.value_text() == "L2"


def test_string_array_is_shown_as_a_table(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "names")
    assert pane.current_view() == "Table"
    model = pane.table.table.model()
    assert model.rowCount() == 4
    assert [model.index(r, 0).data() for r in range(4)] == list(NAMES)
    show(qtbot, pane, hierarchy, "names", "2:4")
    assert [model.index(r, 0).data() for r in range(2)] == list(NAMES[2:])
    assert model.headerData(0, Qt.Orientation.Vertical) == "2"  # rows named by their array index


def test_bool_array_is_plotted_as_ints(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "flags")
    assert pane.show_view("Heatmap")
    np.testing.assert_array_equal(pane.image_item.image, np.eye(4, 5))


def test_3d_array_flattens_trailing_axes_with_a_note(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "cube")
    np.testing.assert_array_equal(pane.image_item.image, np.arange(24).reshape(2, 12))
    assert "flattened" in pane.summary_label.text()


def test_element_cap_refuses_with_a_message_and_the_pane_recovers(qtbot, pane, hierarchy) -> None:
    pane.max_elements = 1000
    show(qtbot, pane, hierarchy, "matrix", ":, :")
    message = pane.message_text()
    assert "19,200 elements" in message and "1,000" in message
    assert pane.current_subset() is None
    assert pane.subset_edit.isEnabled() and pane.subset_edit.text() == ":, :"
    pane.subset_edit.setText("0:10, 0:10")
    press_enter(qtbot, pane)
    assert pane.message_text() == ""
    np.testing.assert_array_equal(pane.image_item.image, MATRIX[:10, :10])


def test_unparsable_selection_shows_why(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "matrix", "rows 1 to 5")  # nothing on screen yet: the pane says it too
    message = pane.message_text()
    assert message.startswith("Cannot show matrix [rows 1 to 5]:\ncannot parse")
    assert "Traceback" not in message and "SelectionError" not in message
    assert pane.subset_error_text().startswith("Cannot read [rows 1 to 5]: cannot parse")
    assert not pane.export_button.isEnabled()


def test_a_bad_selection_is_explained_under_the_field_and_the_pictures_stay(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "matrix")
    assert pane.show_view("Histogram")
    for typed in ("0:10, oops", "0:5, 0:5, 0:5", "999:, 70"):
        pane.subset_edit.setText(typed)
        press_enter(qtbot, pane)
        error = pane.subset_error_text()
        assert error.startswith(f"Cannot read [{typed}]: ") and "Traceback" not in error
        assert pane.subset_error.isVisible() and pane.subset_error.geometry().top() < pane.stack.geometry().top()
        assert pane.message_text() == "" and pane.current_view() == "Histogram"  # the pane and its tabs kept
        assert pane.offered_views() == ["Heatmap", "Histogram", "Table"]
        assert pane.current_subset() is not None and pane.current_subset().text == "0:100, :"
        assert pane.subset_edit.text() == typed  # left for the user to correct
        assert pane.export_button.isEnabled()
    assert QColor(pane.subset_error.palette().color(pane.subset_error.foregroundRole())) != \
        pane.palette().color(QPalette.ColorRole.WindowText)  # in the error colour
    pane.subset_edit.setText("0:10, 0:10")
    press_enter(qtbot, pane)
    assert pane.subset_error_text() == "" and not pane.subset_error.isVisible()
    np.testing.assert_array_equal(pane.current_subset().data, MATRIX[:10, :10])


def test_corrupt_chunk_shows_a_message_then_next_array_works(qtbot, pane, store_path) -> None:
    (store_path / "matrix" / "c" / "0" / "0").write_bytes(b"this is not zstd data")
    h = Hierarchy(open_store(store_path))
    show(qtbot, pane, h, "matrix")
    message = pane.message_text()
    assert "matrix" in message and message.startswith("Cannot show")
    assert "Traceback" not in message
    show(qtbot, pane, h, "vector")
    assert pane.message_text() == ""
    np.testing.assert_array_equal(pane.curve_item.getData()[1], VECTOR)


def test_exports_write_the_subset(qtbot, pane, hierarchy, tmp_path, monkeypatch) -> None:
    show(qtbot, pane, hierarchy, "matrix", "10:20, 0:5")
    chosen: list[str] = []

    def fake_dialog(parent, title, name, file_filter):
        target = str(tmp_path / ("export" + Path(name).suffix))
        chosen.append(target)
        return target, file_filter

    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(fake_dialog))
    pane.export_npy_action.trigger()
    np.testing.assert_array_equal(np.load(chosen[-1]), MATRIX[10:20, :5])
    pane.export_csv_action.trigger()
    table = np.loadtxt(chosen[-1], delimiter=",", dtype=np.float32, skiprows=1)  # a header line, then
    np.testing.assert_allclose(table[:, 1:], MATRIX[10:20, :5])  # each row led by its index in the array
    assert table[:, 0].tolist() == list(range(10, 20))
    pane.export_png_action.trigger()
    image = QImage(chosen[-1])
    assert not image.isNull() and image.width() >= 200


def test_csv_export_of_strings_round_trips(qtbot, pane, hierarchy, tmp_path) -> None:
    show(qtbot, pane, hierarchy, "names")
    target = tmp_path / "names.csv"
    pane.export_csv(str(target))
    with open(target, newline="", encoding="utf-8") as handle:
        assert [row[1] for row in csv.reader(handle)] == ["value", *NAMES]


def finish_background_work() -> None:
    """Let every read end and deliver its (possibly stale) result to the GUI thread."""
    assert thread_pool().waitForDone(10_000)
    QCoreApplication.processEvents()


def test_result_for_an_array_left_behind_is_dropped(qtbot, pane, hierarchy, monkeypatch) -> None:
    real = plot_data_module.read_subset
    release = threading.Event()
    finished: list[str] = []

    def gated_read(h, path, text, max_elements):
        if path == "matrix":  # the first request ends only after the second one is on screen
            assert release.wait(10)
        result = real(h, path, text, max_elements=max_elements)
        finished.append(path)
        return result

    monkeypatch.setattr(plot_data_module, "read_subset", gated_read)
    pane.show_array(hierarchy, "matrix")
    show(qtbot, pane, hierarchy, "vector")
    release.set()
    finish_background_work()
    assert finished == ["vector", "matrix"]  # the matrix result did arrive, and was dropped
    assert pane.current_subset().path == "vector"
    assert pane.current_view() == "Line"
    np.testing.assert_array_equal(pane.curve_item.getData()[1], VECTOR)


def test_clear_drops_pending_result_and_shows_a_hint(qtbot, pane, hierarchy) -> None:
    pane.show_array(hierarchy, "matrix")
    pane.clear()
    finish_background_work()
    assert pane.current_subset() is None and not pane.busy
    assert pane.message_text().startswith("Select an array")
    assert not pane.export_button.isEnabled()
    assert pane.image_item.image is None


def test_plots_follow_a_dark_palette(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "matrix")
    dark = QPalette(pane.palette())
    dark.setColor(QPalette.ColorRole.Base, QColor(30, 30, 30))
    dark.setColor(QPalette.ColorRole.Text, QColor(230, 230, 230))
    pane.setPalette(dark)
    for view in (pane.heatmap.view, pane.line.view, pane.histogram.view):
        assert view.backgroundBrush().color() == QColor(30, 30, 30)
    axis = pane.heatmap.heat_plot.getAxis("left")
    assert axis.textPen().color() == QColor(230, 230, 230)


DTYPES = ["float16", "float32", "float64", "int8", "int16", "int32", "int64",
          "uint8", "uint16", "uint32", "uint64", "bool"]


def _extremes(dtype: np.dtype) -> np.ndarray:
    """404 x 128 values of dtype reaching both ends of its range (where a float32 would round)."""
    if dtype.kind == "b":
        return np.arange(404 * 128).reshape(404, 128) % 3 == 0
    if dtype.kind == "f":  # a quarter of the range each way (the histogram's span stays finite), and 1 + eps
        info = np.finfo(dtype)
        ends = [-info.max / 4, info.max / 4, 0, 1, 1 + info.eps, info.tiny]
    else:
        info = np.iinfo(dtype)
        ends = [info.min, info.max, 0, 1, info.max - 1]
    values = np.resize(np.array(ends, dtype=dtype), 404 * 128).reshape(404, 128)
    values[1:, :] = np.roll(values[1:, :], 1, axis=1)
    return values


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_export_menu_writes_and_the_statistics_line_reports_the_stored_dtype(
        qtbot, pane, tmp_path, monkeypatch, dtype_name: str) -> None:
    dtype = np.dtype(dtype_name)
    values = _extremes(dtype)
    root = zarr.open_group(tmp_path / "typed.zarr", mode="w")
    for name in ("embeddings", "plain"):  # an ecpfs embeddings array was widened to float32 before
        root.create_array(name, shape=values.shape, chunks=(404, 128), dtype=dtype)[...] = values
    h = Hierarchy(open_store(tmp_path / "typed.zarr"))
    chosen: list[str] = []

    def save_dialog(parent, title, name, file_filter):
        chosen.append(str(tmp_path / f"export{len(chosen)}{Path(name).suffix}"))
        return chosen[-1], file_filter

    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(save_dialog))
    for name in ("embeddings", "plain"):
        show(qtbot, pane, h, name, ":, :")
        assert pane.summary_label.text().startswith(f"{name} [:, :]: 404 x 128 {dtype_name}")
        pane.export_npy_action.trigger()
        written = np.load(chosen[-1])
        assert written.dtype == dtype
        np.testing.assert_array_equal(written, values)
        pane.export_csv_action.trigger()
        with open(chosen[-1], newline="", encoding="utf-8") as handle:
            rows = list(csv.reader(handle))[1:]
        parsed = np.array([[dtype.type(int(v)) if dtype.kind in "iub" else dtype.type(v) for v in row[1:]]
                           for row in rows], dtype=dtype)
        np.testing.assert_array_equal(parsed, values)  # the text reads back as the same stored values
        assert [int(row[0]) for row in rows] == list(range(404))


# -- heatmap colours -------------------------------------------------------------------------------

def test_clipping_colours_are_announced_and_the_full_range_removes_the_warning(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "matrix")  # 6,400 floats: the robust range leaves 1% outside
    heat = pane.heatmap
    assert heat.clip_label.isVisible()
    low, high = pane.image_item.levels
    values = MATRIX[:100]
    clipped = np.count_nonzero((values < low) | (values > high))
    assert clipped > 0
    assert heat.clip_text().startswith(f"Colours clip {clipped / values.size:.1%} of values ({clipped:,})")
    assert f"the data {values.min():.4g} … {values.max():.4g}" in heat.clip_text()
    heat.choices["range"].setFocus()
    with qtbot.waitSignal(heat.recoloured, timeout=10_000):  # other scales are computed in a worker
        qtbot.keyClick(heat.choices["range"], Qt.Key.Key_Down)
    assert heat.choices["range"].currentText() == "full (min–max)"
    assert tuple(pane.image_item.levels) == pytest.approx((values.min(), values.max()))
    assert heat.clip_text() == "" and not heat.clip_label.isVisible()


def test_the_warnings_link_shows_the_full_range(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "matrix")
    label = pane.heatmap.clip_label
    assert "show the full range" in label.text()
    label.setFocus()
    qtbot.keyClick(label, Qt.Key.Key_Tab)  # to the link, as keyboard users reach it
    with qtbot.waitSignal(pane.heatmap.recoloured, timeout=10_000):
        qtbot.keyClick(label, Qt.Key.Key_Return)
    assert pane.heatmap.choice("range") == "full" and not label.isVisible()


def test_integer_heatmaps_show_every_value_and_warn_of_nothing(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "flags")
    assert pane.show_view("Heatmap")
    assert pane.heatmap.clip_text() == "" and not pane.heatmap.clip_label.isVisible()


def test_dragging_the_colour_bar_counts_what_it_clips(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "flags")
    assert pane.show_view("Heatmap")
    pane.heatmap.colorbar.setLevels((0.5, 1.0))
    pane.heatmap.colorbar.sigLevelsChangeFinished.emit(pane.heatmap.colorbar)  # as a released handle does
    zeros = int(np.count_nonzero(np.eye(4, 5) == 0))
    assert pane.heatmap.clip_text().startswith(f"Colours clip {zeros / 20:.1%} of values ({zeros})")


def test_log_scale_colours_decades_and_names_what_it_cannot_colour(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "decades")
    assert pane.show_view("Heatmap")
    heat = pane.heatmap
    with qtbot.waitSignal(heat.recoloured, timeout=10_000):
        heat.set_choice("scale", "log")
    np.testing.assert_allclose(pane.image_item.image, np.log10(DECADES), rtol=1e-6)
    assert tuple(pane.image_item.levels) == pytest.approx((-3.0, 4.0))
    assert heat.colorbar.axis.logMode and heat.clip_text() == ""
    show(qtbot, pane, hierarchy, "matrix")  # another array opens in its own (linear) look
    assert heat.choice("scale") == "linear" and not heat.colorbar.axis.logMode
    with qtbot.waitSignal(heat.recoloured, timeout=10_000):
        heat.set_choice("scale", "log")  # signed: the values <= 0 are drawn blank, and counted
    qtbot.waitUntil(lambda: heat.scale is not None and heat.scale.scale == "log", timeout=10_000)
    negative = int(np.count_nonzero(MATRIX[:100] <= 0))
    assert f"{negative:,} values ≤ 0 have no place on a log scale (drawn blank)" in heat.clip_text()
    assert np.isnan(pane.image_item.image).sum() == negative


def test_log_scale_of_data_without_positive_values_is_refused_with_the_reason(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "not_positive")
    assert pane.show_view("Heatmap")  # six values open as a table
    pane.heatmap.set_choice("scale", "log")
    qtbot.waitUntil(lambda: pane.heatmap.clip_text().startswith("No log scale"), timeout=10_000)
    text = pane.heatmap.clip_text()
    assert text.startswith("No log scale: none of the 6 finite values is above 0 (linear shown)")
    np.testing.assert_array_equal(pane.image_item.image, -np.arange(6).reshape(2, 3))
    assert not pane.heatmap.colorbar.axis.logMode


def test_colour_map_choice_recolours_and_is_remembered(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "matrix")
    viridis = pane.heatmap.grab().toImage()
    box = pane.heatmap.choices["colormap"]
    box.setFocus()
    with qtbot.waitSignal(pane.heatmap.recoloured, timeout=10_000):
        qtbot.keyClick(box, Qt.Key.Key_End)  # the last map: the diverging one
    assert box.currentText() == "diverging (signed data)"
    assert pane.heatmap.colorbar.colorMap().name == "CET-D1A"
    low, high = pane.image_item.levels
    assert low == pytest.approx(-high)  # a diverging map centres signed data on 0
    assert pane.heatmap.grab().toImage() != viridis
    pane.heatmap.set_choice("range", "full")
    show(qtbot, pane, hierarchy, "flags")  # another array: the default look
    assert pane.show_view("Heatmap")
    assert pane.heatmap.look() == DEFAULT_LOOK and pane.heatmap.colorbar.colorMap().name == "viridis"
    show(qtbot, pane, hierarchy, "matrix", "0:50, :")  # back: its own look again
    assert pane.heatmap.choice("colormap") == "CET-D1A" and pane.heatmap.choice("range") == "full"
    assert pane.heatmap.colorbar.colorMap().name == "CET-D1A"
    qtbot.waitUntil(lambda: pane.image_item.levels is not None
                    and pane.image_item.levels[0] == pytest.approx(-pane.image_item.levels[1]), timeout=10_000)


def test_every_colour_map_is_offered_and_reversible(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "matrix")
    heat = pane.heatmap
    box = heat.choices["colormap"]
    assert [box.itemText(i) for i in range(box.count())] == [
        "viridis", "magma", "inferno", "plasma", "cividis", "gray", "diverging (signed data)"]
    with qtbot.waitSignal(heat.recoloured, timeout=10_000):
        heat.set_choice("colormap", "CET-L1")
    lut = heat.colorbar.colorMap().getLookupTable(nPts=2, alpha=False)
    assert lut.tolist() == [[0, 0, 0], [255, 255, 255]]  # gray: black to white
    qtbot.mouseClick(heat.reverse_box, Qt.MouseButton.LeftButton)
    assert heat.reverse_box.isChecked()
    lut = heat.colorbar.colorMap().getLookupTable(nPts=2, alpha=False)
    assert lut.tolist() == [[255, 255, 255], [0, 0, 0]]
    # the cached map itself is untouched: another array's gray still runs black to white
    show(qtbot, pane, hierarchy, "flags")
    assert pane.show_view("Heatmap")
    with qtbot.waitSignal(heat.recoloured, timeout=10_000):
        heat.set_choice("colormap", "CET-L1")
    assert heat.colorbar.colorMap().getLookupTable(nPts=2, alpha=False).tolist()[0] == [0, 0, 0]


def test_reset_view_brings_back_the_default_look_and_the_whole_picture(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "decades")
    assert pane.show_view("Heatmap")
    heat = pane.heatmap
    with qtbot.waitSignal(heat.recoloured, timeout=10_000):
        heat.set_choice("scale", "log")
    heat.reverse_box.setChecked(True)
    heat.heat_plot.setXRange(1, 2, padding=0)  # zoomed in
    qtbot.mouseClick(heat.reset_button, Qt.MouseButton.LeftButton)
    assert heat.look() == DEFAULT_LOOK
    qtbot.waitUntil(lambda: heat.scale is not None and heat.scale.scale == "linear", timeout=10_000)
    assert not heat.colorbar.axis.logMode
    np.testing.assert_allclose(pane.image_item.image, DECADES, rtol=1e-6)  # the values, not their logs
    (x0, x1), _ = heat.heat_plot.viewRange()
    assert x0 <= -0.5 + 1e-6 and x1 >= 3.5 - 1e-6  # all four columns again
    show(qtbot, pane, hierarchy, "matrix")
    show(qtbot, pane, hierarchy, "decades")
    assert heat.look() == DEFAULT_LOOK  # the reset look is what the array keeps


def test_old_global_heatmap_settings_do_not_colour_new_data(qtbot, show, hierarchy) -> None:
    store = settings()
    for key, value in (("heatmap/colormap", "CET-D1A"), ("heatmap/scale", "log"), ("heatmap/range", "full")):
        store.setValue(key, value)
    store.sync()
    pane = show(PlotPane(), 900, 600)
    with qtbot.waitSignal(pane.shown, timeout=10_000):
        pane.show_array(hierarchy, "matrix")
    assert pane.heatmap.look() == DEFAULT_LOOK
    assert pane.heatmap.scale is not None and pane.heatmap.scale.scale == "linear"
    assert not np.isnan(pane.image_item.image).any()  # not a blank, speckled log image


def test_statistics_show_percentiles_and_each_kind_of_missing_value(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "vector")
    expected = " · ".join(f"p{q} {np.percentile(VECTOR, q):.6g}" for q in (1, 5, 50, 95, 99))
    assert pane.summary_label.text().splitlines()[1] == f"percentiles: {expected}"
    show(qtbot, pane, hierarchy, "with_nan")
    assert pane.summary_label.text().splitlines()[0].endswith("· 1 NaN · 1 +inf")


def test_the_clipping_warning_follows_a_dark_palette(qtbot, pane, hierarchy) -> None:
    show(qtbot, pane, hierarchy, "matrix")
    assert "#9a6700" in pane.heatmap.clip_label.text()
    dark = QPalette(pane.palette())
    dark.setColor(QPalette.ColorRole.Window, QColor(40, 40, 40))
    pane.setPalette(dark)
    assert "#e3b341" in pane.heatmap.clip_label.text()
