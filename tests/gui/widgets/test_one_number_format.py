"""Issue 37 "Numbers formatted one way everywhere": after a search with the exact comparison, a recall
sweep, the index map's "where recall is lost", Query Workload and Self-Reachability, no table of the
window shows a Python repr (True/False, 47911.6, 200000): counts are grouped, bytes in KiB/MiB,
shares in percent, ids keep their digits; fraction axes have no SI scaling."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from defect_indexes import move_leaf
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTableView
from window_driver import open_index_map, open_window, run_recall, wait_idle

from ecpfs_viewer.gui.widgets.rows_table import RowsModel
from ecpfs_viewer.model.formatting import format_cell
from tests.index_factory import build_clustered_index

#: Python's own writing of a value: a bool, an ungrouped count of 4+ digits, a float with more digits than shown.
RAW = re.compile(r"^(True|False|None|nan|-?\d{4,}(\.\d+)?|-?\d*\.\d{5,}|-?\d+(\.\d+)?e[+-]\d+)$")


@pytest.mark.parametrize(("value", "kind", "text"), [
    (200_000, "", "200,000"), (200_000, "id", "200000"), (59_209_100, "bytes", "56.5 MiB"),
    (47_911.6, "bytes", "46.8 KiB"), (False, "", "no"), (0.8125, "", "0.8125"), (0.125, "percent", "12.5%"),
    (47_911.6, "", "47,911.6"), (None, "", "—"),
])
def test_the_one_cell_formatter(value, kind, text) -> None:
    assert format_cell(value, kind) == text


def _tables(*widgets) -> list[tuple[str, RowsModel]]:
    found = []
    for widget in widgets:
        for view in widget.findChildren(QTableView):
            model = view.model()
            if isinstance(model, RowsModel) and model.rowCount():
                found.append((type(widget).__name__ + "/" + ",".join(
                    str(model.headerData(c, Qt.Orientation.Horizontal)) for c in range(model.columnCount())), model))
    return found


def test_every_table_writes_numbers_one_way(qtbot, tmp_path: Path) -> None:
    path = build_clustered_index(tmp_path, 4000, 8, clusters=10, levels=3, target_cluster_items=20)
    move_leaf(path)  # strays for Self-Reachability to list
    win = open_window(qtbot, path)
    panel = win.search.panel
    win.search.show_panel()
    panel.form.compare_check.setChecked(True)
    panel.form.item_edit.setText("1234")
    with qtbot.waitSignal(panel.finished, timeout=20000):
        panel.run_button.click()
    panel.tabs.setCurrentWidget(panel.path_view)
    qtbot.waitUntil(lambda: panel.path_view.leaves_model.rowCount() > 0, timeout=10000)
    recall = run_recall(qtbot, win, 30, "1, 2, 64")
    index_map = open_index_map(qtbot, win)
    win.diagnostics.workload_action.trigger()
    workload = win.diagnostics.workload
    workload.count.setValue(100)
    workload.run_button.click()
    qtbot.waitUntil(lambda: workload.workload is not None, timeout=30000)
    win.diagnostics.reachability_action.trigger()
    reach = win.diagnostics.reachability
    reach.run_button.click()
    qtbot.waitUntil(lambda: reach.report is not None, timeout=30000)
    wait_idle(qtbot, win, timeout=20000)

    tables = _tables(win, workload, reach)
    names = " | ".join(name for name, _ in tables)
    for wanted in ("rank,item id", "search_exp,recall@10", "exact rank,item id", "node,misses",
                   "leaf,visits", "visit,leaf", "item,own leaf"):
        assert wanted in names, names
    bad = [(name, model.headerData(c, Qt.Orientation.Horizontal), text)
           for name, model in tables for row in model.texts() for c, text in enumerate(row)
           if model.kind(c) != "id" and RAW.match(text)]
    assert not bad
    numbers = recall.numbers_model.texts()
    headers = [recall.numbers_model.headerData(c, Qt.Orientation.Horizontal)
               for c in range(recall.numbers_model.columnCount())]
    assert all(re.fullmatch(r"[\d.]+ (B|KiB|MiB)", row[headers.index("read\nmean")]) for row in numbers)
    distances = [row[headers.index("distances\nmean")] for row in numbers]
    assert any("," in d for d in distances), distances  # over a thousand distances per query: grouped
    assert all(re.fullmatch(r"\d+(\.\d+)?%", row[2]) for row in index_map.lost_model.texts())
    assert all(re.fullmatch(r"\d+(\.\d+)?%", row[3]) for row in workload.hot_model.texts())
    assert not recall.recall_plot.getAxis("left").autoSIPrefix
