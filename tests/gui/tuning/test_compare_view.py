"""File > Compare With…: the comparison window beside the open index, driven as a user does."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from index_factory import build_clustered_index
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QMenu
from window_driver import open_window

from ecpfs_viewer.gui.tuning.compare_view import CompareView
from ecpfs_viewer.gui.window.main_window import MainWindow
from ecpfs_viewer.model.formatting import format_bytes
from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.tuning.compare import COST_AXES, compare_indexes


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    fine = build_clustered_index(tmp_path_factory.mktemp("fine"), 600, 8, target_cluster_items=20)
    coarse = build_clustered_index(tmp_path_factory.mktemp("coarse"), 600, 8, target_cluster_items=75)
    return fine, coarse


def _done(qtbot, win: MainWindow) -> CompareView:
    qtbot.waitUntil(lambda: bool(win.comparisons), timeout=5000)
    view = win.comparisons[-1]
    qtbot.waitUntil(lambda: view.searched is not None and not view.busy, timeout=60_000)
    return view


def test_compare_with_url_from_the_file_menu_shows_identical_indexes_agree(qtbot, monkeypatch, two_clusters_path,
                                                                            http_data_url: str) -> None:
    from ecpfs_viewer.gui.window import open_dialogs

    url = f"{http_data_url}/two_clusters.zarr"

    def accept(dialog: open_dialogs.OpenUrlDialog) -> int:
        dialog.url.setText(url)
        return 1

    monkeypatch.setattr(open_dialogs.OpenUrlDialog, "exec", accept)
    win = open_window(qtbot, two_clusters_path)
    file_menu = next(m for m in win.menuBar().findChildren(QMenu) if m.title() == "&File")
    compare_menu = win.commands.compare_menu
    assert compare_menu.menuAction() in file_menu.actions() and compare_menu.title() == "Compare &With"
    assert compare_menu.isEnabled()
    assert [a.text() for a in compare_menu.actions()] == ["Index &Folder…", "&Zip…", "&URL…"]
    win.commands.compare_url_action.trigger()
    view = _done(qtbot, win)
    assert view.location_b == url and view.isVisible()
    assert "pair agreement 1.0000" in view.migration_label.text() and "adjusted Rand index 1.0000" in \
        view.migration_label.text()
    assert view.flows_box.model.rowCount() == 0 and view.queries_box.model.rowCount() == 0
    summary = view.summary_box.model
    marked = {summary.row(r)[0] for r in range(summary.rowCount()) if summary.is_highlighted(r)}
    assert marked == {"disk bytes", "files"}  # the server lists nothing: only the disk figures are unknown in B
    win.close_store()
    assert not compare_menu.isEnabled()


def test_compare_two_builds_plots_exports_and_opens_a_query(qtbot, two_builds, tmp_path: Path) -> None:
    fine, coarse = two_builds
    win = open_window(qtbot, fine)
    win.open_comparison(str(coarse))  # what File > Compare With > Index Folder… calls with the folder chosen
    view = _done(qtbot, win)
    expected = compare_indexes(IndexReader(fine), IndexReader(coarse), sample=200, k=10, search_exps=(1, 2, 4, 8))
    moved = expected.migration
    assert moved is not None
    assert f"adjusted Rand index {moved.adjusted_rand:.4f}" in view.migration_label.text()
    assert view.flows_box.model.rowCount() == len(moved.flows) > 0
    curve = view.curve_box.model
    assert [curve.row(r)[2] for r in range(curve.rowCount())] == [
        round(p.recall, 4) for p in expected.recall.curve_a + expected.recall.curve_b]
    summary = view.summary_box.model
    assert any(summary.is_highlighted(r) and summary.row(r)[0] == "lvl_2 nodes" for r in range(summary.rowCount()))
    # the charts: CDF toggle and another cost axis redraw; PNGs saved
    view.tabs.setCurrentIndex(1)
    view.shape_combo.setCurrentIndex(1)
    assert view.balance_plot.getPlotItem().listDataItems()
    assert view.export_chart("balance", str(tmp_path / "balance.png"))
    view.tabs.setCurrentIndex(3)
    view.axis_combo.setCurrentIndex(view.axis_combo.findData("leaves_scanned"))
    xs = list(view.recall_plot.getPlotItem().listDataItems()[0].xData)
    assert xs == [p.leaves_scanned for p in expected.recall.curve_a]
    assert view.export_chart("recall_vs_cost", str(tmp_path / "recall.png"))
    assert not QImage(str(tmp_path / "recall.png")).isNull()
    # every table exports
    for name in ("summary", "balance", "flows", "recall_vs_cost", "differing_queries"):
        assert view.export_table(name, str(tmp_path / f"{name}.csv"))
        with open(tmp_path / f"{name}.csv", encoding="utf-8") as handle:
            assert len(list(csv.reader(handle))) == len(view.tables[name].rows) + 1
    assert view.export_table("flows", str(tmp_path / "flows.json"))
    flows = json.loads((tmp_path / "flows.json").read_text())["rows"]
    assert [f["items moved"] for f in flows] == [f.items for f in moved.flows]
    # a differing query: its two paths
    view.tabs.setCurrentIndex(4)
    assert view.queries_box.model.rowCount() > 0
    table = view.queries_box.view
    table.setFocus()
    table.setCurrentIndex(table.model().index(0, 0))
    qtbot.keyClick(table, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: view.trace_a.model.rowCount() > 0 and view.trace_b.model.rowCount() > 0, timeout=20_000)
    assert view.trace_a.model.row(0)[1].startswith("lvl_1/node_")
    assert "Query" in view.path_label.text()
    view.close()
    qtbot.waitUntil(lambda: not win.comparisons, timeout=5000)


def test_cancel_stops_the_comparison(qtbot, two_builds) -> None:
    fine, coarse = two_builds
    win = open_window(qtbot, fine)
    win.open_comparison(str(coarse))
    view = win.comparisons[-1]
    qtbot.waitUntil(lambda: view.opened is not None, timeout=30_000)
    view.sample_spin.setValue(600)
    view.exps_edit.setText("1, 2, 4, 8, 16, 32")
    view.run()
    assert view.cancel_button.isEnabled()
    view.cancel()
    assert view.status.text() == "Cancelled." and view.run_button.isEnabled() and not view.busy
    view.exps_edit.setText("1, x")
    view.run()
    assert "'x' is not one" in view.status.text()


def test_compare_writes_numbers_as_the_main_window_does_and_escape_closes_it(qtbot, two_builds) -> None:
    """Issue 37 §8: counts grouped, bytes in KiB/MiB, yes/no, recall ticks without SI scaling; Escape closes."""
    fine, coarse = two_builds
    win = open_window(qtbot, fine)
    win.open_comparison(str(coarse))
    view = _done(qtbot, win)
    view.show()
    shown = {row[0]: row for row in view.summary_box.model.texts()}
    values = {view.summary_box.model.row(r)[0]: view.summary_box.model.row(r)
              for r in range(view.summary_box.model.rowCount())}
    assert shown["normalized"][1:3] == ["no", "no"]  # not "False"
    disk = values["disk bytes"][1]
    assert shown["disk bytes"][1] == format_bytes(disk) and shown["disk bytes"][1].endswith("iB")
    files = values["files"][1]
    assert shown["files"][1] == f"{files:,}"
    curve = view.curve_box.model
    bytes_column = list(COST_AXES).index("bytes_cold") + 3
    cold = curve.row(0)[bytes_column]
    assert curve.texts()[0][bytes_column] == format_bytes(cold)  # 46.8 KiB, not 47911.6
    assert curve.texts()[0][2] == f"{curve.row(0)[2]:.4g}"  # recall as a fraction
    view.tabs.setCurrentIndex(3)
    label = view.recall_plot.getPlotItem().getAxis("left").labelString()
    assert "recall@10" in label and "(x" not in label
    # the progress text: one line from the left edge, not wrapped beside a hidden bar
    assert not view.status.wordWrap() and view.status.mapTo(view, QPoint(0, 0)).x() < 30
    assert view.status.height() < 2 * view.status.fontMetrics().lineSpacing()
    assert view.isVisible()
    qtbot.keyClick(view.tabs, Qt.Key.Key_Escape)  # from a child with focus, as a user presses it
    qtbot.waitUntil(lambda: not view.isVisible(), timeout=5000)
    win.close()


def _curve_answers(view: CompareView) -> list[tuple]:
    """The recall-vs-cost rows without what depends on the clock or on how this process read a leaf."""
    heads = [view.curve_box.model.headerData(c, Qt.Orientation.Horizontal)
             for c in range(view.curve_box.model.columnCount())]
    kept = [c for c, h in enumerate(heads) if not any(w in str(h) for w in ("milliseconds", "bytes"))]
    return [tuple(view.curve_box.model.row(r)[c] for c in kept) for r in range(view.curve_box.model.rowCount())]


def test_compare_with_a_scheduler_gives_the_same_numbers_and_is_remembered(qtbot, two_builds) -> None:
    """The Scheduler field the Tune dialog and the Recall tab have, through compare_recall(..., scheduler=)."""
    from ecpfs_viewer.gui.runtime import settings as app_settings
    from ecpfs_viewer.gui.tuning.compare_view import SCHEDULER_KEY

    fine, coarse = two_builds
    win = open_window(qtbot, fine)
    win.open_comparison(str(coarse))
    view = _done(qtbot, win)
    local = _curve_answers(view)
    assert local
    view.scheduler_edit.setText("cluster-please")
    view.run()
    assert view.status.text().startswith("Scheduler must be 'threads' or a scheduler address") and not view.busy
    view.scheduler_edit.setText("threads")  # dask's threads: the same graph the workers of a cluster run
    with qtbot.waitSignal(view.finished, timeout=60_000):
        view.run()
    assert _curve_answers(view) == local, view.status.text()
    assert app_settings.settings().value(SCHEDULER_KEY) == "threads"
    view.close()
    win.open_comparison(str(coarse))
    again = _done(qtbot, win)
    assert again.scheduler_edit.text() == "threads"


@pytest.mark.long
def test_compare_on_a_scheduler_no_worker_joins_says_so(qtbot, two_builds, tmp_path: Path, monkeypatch) -> None:
    """A real `dask scheduler` with no worker: the window says so within the wait, as an error, and can run again."""
    pytest.importorskip("distributed", reason="dask.distributed is part of the scale extra")
    from dask_cluster import dask_cluster

    from ecpfs_viewer.model.search import cluster as cluster_module

    monkeypatch.setattr(cluster_module, "WORKER_WAIT_SECONDS", 2.0)
    fine, coarse = two_builds
    win = open_window(qtbot, fine)
    win.open_comparison(str(coarse))
    view = _done(qtbot, win)
    with dask_cluster(tmp_path, workers=0) as empty:
        view.scheduler_edit.setText(empty.address)
        with qtbot.waitSignal(view.finished, timeout=60_000):
            view.run()
    assert f"no workers joined the scheduler at {empty.address} within 2 s" in view.status.text()
    assert view.run_button.isEnabled() and not view.busy


def test_the_drift_simulation_opens_from_compare(qtbot, two_builds) -> None:
    """Issue 38: the drift simulation is reached from Compare too (as from Build and Tune)."""
    from PySide6.QtCore import Qt

    from ecpfs_viewer.gui.tuning.drift_sim_dialog import DriftSimDialog

    fine, coarse = two_builds
    win = open_window(qtbot, fine)
    win.open_comparison(str(coarse))
    view = win.comparisons[-1]
    qtbot.mouseClick(view.drift_button, Qt.MouseButton.LeftButton)
    dialog = view.findChild(DriftSimDialog)
    assert dialog is not None and dialog.isVisible()
    dialog.close()


def test_a_narrow_comparison_window_puts_its_form_on_two_lines(qtbot, two_builds) -> None:
    """In a window narrower than the form's one line (at 1.5x the Compare window is about 530 px
    wide) the queries and the sweep stand on two lines, every field and button whole, not squeezed
    onto one ("o…" for the file field, the end of the search_exp values)."""
    fine, coarse = two_builds
    win = open_window(qtbot, fine)
    win.open_comparison(str(coarse))
    view = win.comparisons[-1]
    qtbot.waitUntil(lambda: view.opened is not None, timeout=30_000)
    view.resize(560, 640)
    qtbot.waitUntil(lambda: view.form_row.wrapped and view.k_spin.mapTo(view.form_row, QPoint(0, 0)).y() > 0)
    for widget in (view.sample_spin, view.k_spin, view.run_button, view.cancel_button):
        assert widget.width() >= widget.sizeHint().width(), widget
        assert widget.mapTo(view, widget.rect().topRight()).x() <= view.width()
    exps = view.exps_edit
    assert exps.width() >= exps.fontMetrics().horizontalAdvance(exps.text()) + 8
    assert view.file_edit.width() >= view.file_edit.fontMetrics().horizontalAdvance("or queries.npy")
    view.resize(1400, 640)
    qtbot.waitUntil(lambda: not view.form_row.wrapped)
