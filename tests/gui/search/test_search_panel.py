"""The Search panel as a user drives it: type an item id, run, read the results, double-click one, see the
tree marks and the path; Go to Item; run a small recall sweep, see the plot, export it, cancel one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QHeaderView
from window_driver import run_recall

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.gui.runtime.workers import thread_pool
from ecpfs_viewer.gui.tree.marks import MarkKind
from ecpfs_viewer.gui.widgets.ask_dialog import AskDialog
from ecpfs_viewer.gui.window.main_window import MainWindow
from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.search import IndexReader


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A three-level index of 2,000 clustered 6-D vectors (leaves of about 20 items)."""
    tmp = tmp_path_factory.mktemp("search_gui")
    rng = np.random.default_rng(3)
    centers = rng.standard_normal((16, 6)) * 5
    vectors = centers[rng.integers(0, 16, 2000)] + rng.standard_normal((2000, 6))
    np.save(tmp / "vectors.npy", vectors.astype(np.float32))
    build_index(tmp / "vectors.npy", tmp / "index.zarr", BuildParams(levels=3, target_cluster_items=20))
    return tmp / "index.zarr"


@pytest.fixture
def window(qtbot, show, tmp_path: Path):
    """window(location): the main window on a store, active (shortcuts reach only the active window)."""
    app_settings.use_settings_dir(tmp_path / "settings")

    def make(location: Path | str) -> MainWindow:
        win = show(create_main_window(str(location)), 1280, 900)  # closed by qtbot after the test
        win.activateWindow()
        qtbot.waitUntil(lambda: win.isActiveWindow() and win.session.hierarchy is not None and not win.is_busy(),
                        timeout=10000)
        return win

    return make


def idle(qtbot, win: MainWindow, timeout: int = 20000) -> None:
    qtbot.waitUntil(lambda: not win.is_busy(), timeout=timeout)


def search_item(qtbot, win: MainWindow, item: str) -> None:
    """Ctrl+Shift+F, type the item id, Ctrl+Enter; wait for the results."""
    qtbot.keyClick(win, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    panel = win.search.panel
    assert win.search.dock.isVisible() and panel.form.item_edit.hasFocus()
    qtbot.keyClicks(panel.form.item_edit, item)
    with qtbot.waitSignal(panel.finished, timeout=20000):
        qtbot.keyClick(panel.form.item_edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    idle(qtbot, win)


def double_click_row(qtbot, view, row: int) -> None:
    rect = view.visualRect(view.model().index(row, 1))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def test_search_an_item_see_results_open_one_and_see_marks(qtbot, window, index_path):
    win = window(index_path)
    search_item(qtbot, win, "17")
    panel = win.search.panel
    rows = panel.results_model.texts()
    assert len(rows) == 10
    assert rows[0][:3] == ["1", "17", "0"]  # the item itself, at distance 0
    assert [r[0] for r in rows] == [str(i) for i in range(1, 11)]
    assert panel.results_model.headerData(2, Qt.Orientation.Horizontal) == "distance"
    reader = IndexReader(index_path)
    expected = reader.search(reader.vector_for_item(17), panel.form.params())
    assert [int(r[1]) for r in rows] == [h.item_id for h in expected.hits]
    assert "item 17: 10 results from" in panel.status_text() and "exact neighbours found" in panel.status_text()

    trace = panel.exploration.result.trace
    model = win.tree_model
    for visit, node in enumerate(trace, 1):
        marks = model.marks_at(node.path)
        assert marks and marks[0].kind is MarkKind.VISITED and f"Search visit {visit} " in marks[0].tooltip
    unvisited = next(n for n in range(len(IndexReader(index_path).root.ids)) if (1, n) not in
                     {(v.level, v.node_id) for v in trace})
    assert model.marks_at(f"lvl_1/node_{unvisited}") == []

    hit = panel.exploration.result.hits[3]
    double_click_row(qtbot, panel.results_view, 3)
    target = f"lvl_3/node_{hit.leaf}/embeddings"
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == target, timeout=10000)
    qtbot.waitUntil(lambda: win.plot.selected_row() == hit.row, timeout=10000)
    assert win.tabs.currentIndex() == win.TAB_DATA
    leaf_row = win.tree_panel.view_index(model.index_for_path(f"lvl_3/node_{hit.leaf}"))
    assert leaf_row.isValid() and leaf_row.data(Qt.ItemDataRole.BackgroundRole) is not None  # tinted: visited
    assert "Search visit" in leaf_row.data(Qt.ItemDataRole.ToolTipRole)


def test_path_view_shows_levels_and_visited_leaves(qtbot, window, index_path):
    win = window(index_path)
    search_item(qtbot, win, "250")
    panel = win.search.panel
    panel.tabs.setCurrentIndex(panel.TAB_PATH)
    view = panel.path_view
    result = panel.exploration.result
    levels = view.level_rows()
    assert [level for level, _ in levels] == [1, 2, 3]
    root_path, root_children, root_entered = levels[0][1][0]
    assert root_path == "index_root" and root_children == len(IndexReader(index_path).root.ids)
    assert root_entered == [v.node_id for v in result.trace if v.level == 1]
    assert len(view.shown_plots) == 3
    leaves = view.leaves_model.texts()
    assert [r[1] for r in leaves] == [v.path for v in result.trace if v.is_leaf]
    assert sum(int(r[6]) for r in leaves) == len(result.hits)
    cost = result.cost
    assert view.cost.isVisible()
    assert f"Cost: {cost.distance_computations:,} distance computations, {cost.nodes_visited:,} nodes visited, " \
           f"{cost.leaves_scanned:,} leaves scanned" in view.cost.text()
    tip = view.cost.toolTip()
    assert all(f"<td>{name}</td>" in tip for name in ("index_root", "lvl_1", "lvl_2", "lvl_3 (leaves)"))
    assert f"<td align=right>{cost.items_scored:,}</td>" in tip  # the items the leaves scored
    double_click_row(qtbot, view.leaves_view, 0)
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == leaves[0][1], timeout=10000)


def test_a_replaced_query_never_shows(qtbot, window, index_path):
    win = window(index_path)
    panel = win.search.panel
    win.search.show_panel()
    shown = []
    panel.finished.connect(lambda: shown.append(panel.exploration.label if panel.exploration else None))
    panel.form.item_edit.setText("5")
    panel.run()
    panel.form.item_edit.setText("6")
    panel.run()
    qtbot.waitUntil(lambda: bool(shown), timeout=20000)
    assert thread_pool().waitForDone(20000)
    QApplication.processEvents()  # deliver anything the first search queued (it must be dropped)
    assert shown == ["item 6"]


def test_bad_queries_say_why(qtbot, window, index_path, tmp_path):
    win = window(index_path)
    panel = win.search.panel
    win.search.show_panel()
    panel.run()
    assert panel.status_text() == "type an item id"
    panel.form.item_edit.setText("123456")
    with qtbot.waitSignal(panel.finished, timeout=20000):
        panel.run()
    assert "item 123456 is not in any leaf" in panel.status_text()
    assert panel.results_model.rowCount() == 0
    panel.form.set_kind("file")
    np.save(tmp_path / "q.npy", np.ones((2, 3), np.float32))
    panel.form.file_edit.setText(str(tmp_path / "q.npy"))
    with qtbot.waitSignal(panel.finished, timeout=20000):
        panel.run()
    assert "3 dimensions, the index has 6" in panel.status_text()
    panel.form.exclude_edit.setText("1, x")
    panel.run()
    assert "'x' is not an item id" in panel.status_text()


def test_search_with_a_heatmap_row(qtbot, window, index_path):
    win = window(index_path)
    win.search.show_panel()
    panel = win.search.panel
    path = "lvl_3/node_2/embeddings"
    win.tabs.setCurrentIndex(win.TAB_DATA)
    win.reveal_path(path)
    qtbot.waitUntil(lambda: win.plot.current_data() is not None and win.plot.current_subset().path == path,
                    timeout=10000)
    win.plot.select_row(4)  # as a click on heatmap row 4
    assert panel.form.use_row_button.isEnabled() and win.search.search_row_action.isEnabled()
    with qtbot.waitSignal(panel.finished, timeout=20000):
        win.search.search_row_action.trigger()
    assert panel.exploration.label == f"{path} row 4"
    reader = IndexReader(index_path)
    item = int(reader.node(3, 2).ids[4])
    assert panel.results_model.texts()[0][1] == str(item)  # the stored row finds itself first


def test_go_to_item_says_in_the_dialog_why_an_item_cannot_be_gone_to(qtbot, window, index_path):
    """The dialog stays open with the reason under the field (not only on the status bar), then goes."""
    win = window(index_path)
    reader = IndexReader(index_path)
    leaf, row = reader.locator.find_one(1234)
    messages: list[str] = []
    win.statusBar().messageChanged.connect(messages.append)
    seen: list[str] = []

    def try_ids() -> None:  # runs inside the dialog's own event loop
        dialog = QApplication.activeModalWidget()
        assert isinstance(dialog, AskDialog) and dialog.windowTitle() == "Go to Item"
        for text, answer in (
                ("99999", "Item 99999 is not in this index"),
                ("9223372036854775808", "item 9223372036854775808 cannot be in this index: its item ids are "
                                        "stored as uint32, from 0 to 4,294,967,295"),  # not numpy's overflow
                ("4x", "'4x' is not an item id (a whole number)")):
            dialog.edit.setText(text)
            qtbot.mouseClick(dialog.buttons.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)
            qtbot.waitUntil(lambda answer=answer: dialog.problem_text() == answer, timeout=10000)
            seen.append(text if dialog.isVisible() else "closed")
        dialog.edit.setText("1234")
        qtbot.keyClick(dialog.edit, Qt.Key.Key_Return)

    QTimer.singleShot(0, try_ids)
    qtbot.keyClick(win, Qt.Key.Key_G, Qt.KeyboardModifier.ControlModifier)
    assert seen == ["99999", "9223372036854775808", "4x"]  # each refused in place, the dialog still open
    assert "Item 99999 is not in this index" in messages  # the status bar says it too
    target = f"lvl_3/node_{leaf}/embeddings"
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == target, timeout=10000)
    qtbot.waitUntil(lambda: win.plot.selected_row() == row, timeout=10000)
    assert any(m.startswith(f"item 1234 is in lvl_3/node_{leaf}, row {row}; path: index_root row") for m in messages)
    assert QApplication.activeModalWidget() is None


def test_recall_sweep_plot_misses_export_and_cancel(qtbot, window, index_path, tmp_path):
    win = window(index_path)
    recall = run_recall(qtbot, win, 12, "1, 4")
    report = recall.outcome.report
    assert [r.search_exp for r in report.rows] == [1, 4]
    assert [row[0] for row in recall.numbers_model.texts()] == ["1", "4"]
    xs, ys = recall.recall_plot.listDataItems()[0].getData()
    assert list(ys) == pytest.approx([r.recall for r in report.rows])
    assert list(xs) == pytest.approx([0.0, 2.0])  # log2 of search_exp
    leaves_mean = recall.leaves_plot.listDataItems()[0].getData()[1]
    assert list(leaves_mean) == pytest.approx([r.leaves_mean for r in report.rows])
    assert "recall@10 over 12 queries" in recall.status.text()
    headers = [recall.numbers_model.headerData(c, Qt.Orientation.Horizontal) for c in
               range(recall.numbers_model.columnCount())]
    distances = headers.index("distances\nmean")
    assert headers[distances:] == ["distances\nmean", "distances\np95", "nodes\nmean", "nodes\np95", "read\nmean",
                                   "read\np95", "requests\nmean", "requests\np95"]
    assert "Distance computations" in recall.numbers_model.headerData(distances, Qt.Orientation.Horizontal,
                                                                      Qt.ItemDataRole.ToolTipRole)
    means = [float(r[distances].replace(",", "")) for r in recall.numbers_model.texts()]
    assert means == pytest.approx([r.distance_computations_mean for r in report.rows], abs=0.05)
    read = [r[distances + 4] for r in recall.numbers_model.texts()]
    assert means[0] < means[1] and all(t.endswith("B") and not t.startswith("0 ") for t in read)
    recall.numbers_view.scrollTo(recall.numbers_model.index(0, distances))  # the columns may not all fit
    click_header(qtbot, recall.numbers_view, distances)
    click_header(qtbot, recall.numbers_view, distances)
    assert [row[0] for row in recall.numbers_model.texts()] == ["4", "1"]  # the costlier search_exp first
    recall.numbers_view.scrollTo(recall.numbers_model.index(0, 0))
    click_header(qtbot, recall.numbers_view, 0)
    shown = recall.misses_model.texts()
    assert shown and all(r[0] == "1" for r in shown)  # the first search_exp's misses
    assert len(shown) == round((1 - report.rows[0].recall) * 12 * 10)
    assert "the search stopped after" in shown[0][7]
    double_click_row(qtbot, recall.misses_view, 0)
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == f"{shown[0][5]}/embeddings",
                    timeout=10000)
    qtbot.waitUntil(lambda: win.plot.selected_row() == int(shown[0][6]), timeout=10000)

    csv_path = recall.export_csv(str(tmp_path / "recall.csv"))
    assert Path(csv_path).read_text().splitlines()[1].startswith("1,")
    data = json.loads(Path(recall.export_json(str(tmp_path / "recall.json"))).read_text())
    assert [row["search_exp"] for row in data["rows"]] == [1, 4] and data["missed"]

    recall.n_spin.setValue(500)
    recall.exps_edit.setText("1, 2, 4, 8, 16, 32")
    with qtbot.waitSignal(recall.finished, timeout=10000):
        recall.run()
        qtbot.mouseClick(recall.cancel_button, Qt.MouseButton.LeftButton)
    assert recall.status.text() == "Cancelled." and recall.outcome is None
    assert recall.run_button.isEnabled() and not recall.cancel_button.isEnabled()
    assert thread_pool().waitForDone(30000)


def test_closing_or_changing_the_store_clears_the_search(qtbot, window, index_path, two_clusters_path):
    win = window(index_path)
    search_item(qtbot, win, "3")
    assert win.tree_model.marks_at(win.search.panel.exploration.result.trace[0].path)
    win.open_location(str(two_clusters_path))
    qtbot.waitUntil(lambda: win.session.hierarchy is not None and not win.is_busy(), timeout=10000)
    panel = win.search.panel
    assert panel.exploration is None and panel.results_model.rowCount() == 0
    panel.form.item_edit.setText("3")
    with qtbot.waitSignal(panel.finished, timeout=20000):
        panel.run()
    assert panel.exploration.label == "item 3" and panel.exploration.levels == 2
    win.close_store()
    assert panel.exploration is None and panel.session.hierarchy is None
    panel.run()
    assert panel.status_text() == "Open an ecpfs index first."


def test_a_plain_zarr_store_is_not_searchable(qtbot, window, tmp_path):
    import zarr

    zarr.create_array(str(tmp_path / "plain.zarr"), shape=(4, 2), dtype="float32")
    win = window(tmp_path / "plain.zarr")
    panel = win.search.panel
    win.search.show_panel()
    panel.form.item_edit.setText("1")
    with qtbot.waitSignal(panel.finished, timeout=20000):
        panel.run()
    assert "cannot open index" in panel.status_text()


def test_saved_queries_in_search_and_recall(qtbot, window, two_clusters_copy):
    import zarr

    group = zarr.open_group(two_clusters_copy, mode="a")
    for qid, vector in (("0", [10.4, 10.4]), ("3", [0.0, 0.0])):
        group.create_array(f"queries/{qid}/query", data=np.array(vector, np.float32))
    win = window(two_clusters_copy)
    win.search.show_panel()
    panel = win.search.panel
    panel.form.source_combo.setCurrentIndex(panel.form.source_combo.findText("Saved query"))
    qtbot.waitUntil(lambda: panel.form.saved_combo.count() == 2, timeout=10000)
    panel.form.saved_combo.setCurrentText("3")
    panel.form.k_spin.setValue(3)
    with qtbot.waitSignal(panel.finished, timeout=20000):
        qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)
    assert panel.exploration.label == "saved query 3"
    assert [r[1] for r in panel.results_model.texts()] == ["0", "1", "2"]  # nearest the origin
    recall = panel.recall_view
    recall.source_combo.setCurrentIndex(recall.source_combo.findData("saved"))
    recall.k_spin.setValue(2)
    recall.exps_edit.setText("0")
    with qtbot.waitSignal(recall.finished, timeout=20000):
        recall.run()
    assert recall.numbers_model.texts()[0][:2] == ["0", "1"] and recall.outcome.report.source == "2 saved queries"
    assert recall.recall_plot.listDataItems()[0].getData()[0].tolist() == [0.0]  # search_exp 0: linear axis


def click_header(qtbot, view, column: int) -> None:
    header = view.horizontalHeader()
    x = header.sectionViewportPosition(column) + header.sectionSize(column) // 2
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, header.height() // 2))


def test_results_sort_by_a_header_click_and_why_it_was_missed_takes_the_width_left(qtbot, window, index_path):
    win = window(index_path)
    win.search.panel.form.exp_spin.setValue(1)  # one leaf: some true neighbours are missed
    win.search.panel.form.k_spin.setValue(30)
    search_item(qtbot, win, "17")
    panel = win.search.panel
    view, model = panel.results_view, panel.results_model
    distances = [float(r[2]) for r in model.texts()]
    click_header(qtbot, view, 2)
    click_header(qtbot, view, 2)
    assert [float(r[2]) for r in model.texts()] == sorted(distances, reverse=True)  # by value, farthest first
    far = max(panel.exploration.result.hits, key=lambda h: h.score)
    double_click_row(qtbot, view, 0)  # the row shown first: the farthest hit
    target = f"lvl_3/node_{far.leaf}/embeddings"
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == target, timeout=10000)
    qtbot.waitUntil(lambda: win.plot.selected_row() == far.row, timeout=10000)

    misses = panel.misses_view
    header = misses.horizontalHeader()
    assert panel.misses_model.rowCount() > 0
    assert header.sectionResizeMode(5) is QHeaderView.ResizeMode.Stretch
    assert header.length() <= misses.viewport().width()  # no sideways scrolling to read a row
    why = panel.misses_model.texts()[0][5]
    assert panel.misses_model.index(0, 5).data(Qt.ItemDataRole.ToolTipRole) == why  # the whole text on hover
    metrics = misses.fontMetrics()
    for column in range(5):  # the other columns show their text whole
        widest = max(metrics.horizontalAdvance(r[column]) for r in panel.misses_model.texts())
        assert header.sectionSize(column) > widest


def test_internal_words_read_plainly_or_explain_themselves(qtbot, window, index_path):
    win = window(index_path)
    search_item(qtbot, win, "17")
    panel = win.search.panel
    assert "nodes visited" in panel.status_text() and "popped" not in panel.status_text()
    assert "opened" in panel.status.toolTip()
    tip = panel.results_model.headerData(5, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
    assert "true nearest neighbours" in tip  # "exact rank"
    tip = panel.misses_model.headerData(5, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
    assert "did not open" in tip  # "why it was missed"
    panel.tabs.setCurrentIndex(panel.TAB_PATH)  # drawn when shown
    leaves = panel.path_view.leaves_model
    assert "parent's children" in leaves.headerData(3, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
    assert "nodes visited" in panel.path_view.summary.text()


def test_recall_with_a_scheduler_gives_the_same_numbers_and_is_remembered(qtbot, window, index_path):
    win = window(index_path)
    local = [(r.recall, r.leaves_mean, r.distance_computations_mean)
             for r in run_recall(qtbot, win, 10, "1, 2").outcome.report.rows]
    recall = win.search.panel.recall_view
    recall.scheduler_edit.setText("cluster-please")
    recall.run()
    assert recall.status.text().startswith("Scheduler must be 'threads' or a scheduler address") and not recall.busy
    recall.scheduler_edit.setText("threads")  # dask's threads: the same graph the workers of a cluster run
    with qtbot.waitSignal(recall.finished, timeout=60000):
        recall.run()
    assert recall.outcome is not None, recall.status.text()
    assert [(r.recall, r.leaves_mean, r.distance_computations_mean) for r in recall.outcome.report.rows] == local
    assert app_settings.settings().value("recall/scheduler") == "threads"


def test_a_leaf_that_cannot_be_read_is_named_and_the_rest_answered(qtbot, window, two_clusters_copy):
    """One bad node spoils only itself: the search and its comparison with exact search answer from
    every other leaf, and the status line names the leaf and why."""
    (two_clusters_copy / "lvl_2" / "node_1" / "embeddings" / "c" / "0" / "0").write_bytes(b"not zstd at all")
    win = window(two_clusters_copy)
    search_item(qtbot, win, "0")
    panel = win.search.panel
    qtbot.waitUntil(lambda: "exact neighbours found" in panel.status_text(), timeout=20000)
    assert [r[1] for r in panel.results_model.texts()] == ["0", "1", "4", "5", "6", "7"]  # none of node_1's
    assert "Left out: lvl_2/node_1 could not be read: lvl_2/node_1/embeddings/c/0/0" in panel.status_text()
    assert "cannot be decoded" in panel.status_text()
    assert [u.path for u in panel.exploration.unreadable] == ["lvl_2/node_1"]
    assert "color" in panel.status.styleSheet()  # said as a partial answer, in the error colour
