"""The index overview panel: what a user reads at the root and at each level, and where clicks lead."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QCoreApplication, Qt

from ecpfs_viewer.gui.overview.panel import IndexOverviewPanel
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


@pytest.fixture
def panel(overview_panel):
    return overview_panel


def wait_idle(qtbot, panel: IndexOverviewPanel) -> None:
    qtbot.waitUntil(lambda: not panel.busy, timeout=20000)


def click_row(qtbot, table, row: int) -> None:
    rect = table.visualItemRect(table.item(row, 1))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def test_root_summary_and_clean_report(qtbot, panel: IndexOverviewPanel, two_clusters_path: Path) -> None:
    panel.show_index(Hierarchy(open_store(two_clusters_path)))
    wait_idle(qtbot, panel)
    text = panel.summary_text().splitlines()
    for line in ("Format version: 1", "Levels: 2", "Metric: L2", "Normalized: false", "Total items: 8",
                 "Next item id: 8", "Representatives (R): 4",
                 "Fan-out (root rows): 2  (expected ceil(R^(1/L)) = 2)", "Dimension: 2",
                 "Stored dtype: float32", "Node chunk rows: 65,536", "Representative chunk rows: 1,048,576",
                 "Written by: zarrs 0.23.14"):
        assert line in text
    assert not panel.banner.isVisible()
    assert panel.index_page.verdict.text().startswith("<b>No errors</b>")
    assert panel.index_page.findings.row_texts() == [("", "No errors or warnings.")]
    assert "4 of 4 usable leaves decoded" in panel.index_page.checked.text()


def test_clicking_a_finding_requests_its_node(qtbot, panel: IndexOverviewPanel, two_clusters_copy: Path) -> None:
    shutil.rmtree(two_clusters_copy / "lvl_2" / "node_1" / "item_ids")
    panel.show_index(Hierarchy(open_store(two_clusters_copy)))
    wait_idle(qtbot, panel)
    rows = panel.index_page.findings.row_texts()
    row = rows.index(("lvl_2/node_1", "has embeddings but no ids array (node_ids or item_ids); upstream reports "
                                      "it as corrupt"))
    assert "<b>1 error</b>" in panel.index_page.verdict.text()
    table = panel.index_page.findings
    assert table.horizontalHeaderItem(1).text() == "Code"
    assert table.row_codes()[row] == "ECPFS-E041"  # the stable code beside the message, its meaning as tooltip
    assert table.item(row, 1).toolTip().startswith("Embeddings without ids: ")
    with qtbot.waitSignal(panel.node_requested, timeout=2000) as signal:
        click_row(qtbot, panel.index_page.findings, row)
    assert signal.args == ["lvl_2/node_1"]


def test_legacy_index_banner(qtbot, panel: IndexOverviewPanel, two_clusters_copy: Path) -> None:
    for name in ("info/format_version", "info/total_items", "info/next_item_id"):
        shutil.rmtree(two_clusters_copy / name)
    panel.show_index(Hierarchy(open_store(two_clusters_copy)))
    wait_idle(qtbot, panel)
    assert panel.banner.isVisible()
    assert panel.banner.text.text().startswith("Legacy index: pre-v1 Rust index: missing info/total_items")
    assert "Index: Rust pre-v1 index" in panel.summary_text()


def test_unsupported_version_banner(qtbot, panel: IndexOverviewPanel, two_clusters_copy: Path) -> None:
    import zarr

    zarr.open_array(two_clusters_copy / "info" / "format_version", mode="r+")[...] = 2
    panel.show_index(Hierarchy(open_store(two_clusters_copy)))
    wait_idle(qtbot, panel)
    assert panel.banner.text.text().startswith("Unsupported index: format version 2 is not supported")
    assert "Format version: 2 (unsupported)" in panel.summary_text()


def test_level_statistics_and_plots(qtbot, panel: IndexOverviewPanel, two_clusters_copy: Path) -> None:
    shutil.rmtree(two_clusters_copy / "lvl_2" / "node_2")
    panel.show_level(Hierarchy(open_store(two_clusters_copy)), 2)
    wait_idle(qtbot, panel)
    text = panel.summary_text().splitlines()
    assert "Nodes: 3 of at most 4  (min(ns^2, R))" in text
    assert "Gaps (ids with no node): 1  (ids 2)" in text
    assert "Sum of leaf sizes: 6  (differs from total items 8)" in text
    heights = panel.level_page.histogram_bars.opts["height"]
    assert list(heights) == [3]  # three nodes of 2 rows
    xs, ys = panel.level_page.profile_bars.getData()
    assert ys.tolist() == [2, 2, 2] and len(xs) == 4
    assert [panel.level_page.bar_path(i) for i in range(3)] == ["lvl_2/node_0", "lvl_2/node_1", "lvl_2/node_3"]
    with qtbot.waitSignal(panel.node_requested, timeout=2000) as signal:
        item = panel.level_page.largest.topLevelItem(2)
        qtbot.mouseClick(panel.level_page.largest.viewport(), Qt.MouseButton.LeftButton,
                         pos=panel.level_page.largest.visualItemRect(item).center())
    assert signal.args == ["lvl_2/node_3"]


def test_internal_level_sizes(qtbot, panel: IndexOverviewPanel, two_clusters_path: Path) -> None:
    panel.show_level(Hierarchy(open_store(two_clusters_path)), 1)
    wait_idle(qtbot, panel)
    assert "Node size (rows): min 1 · median 2 · mean 2 · max 3" in panel.summary_text()
    assert [panel.level_page.largest.topLevelItem(i).text(0) for i in range(2)] == ["node_1", "node_0"]
    assert np.sum(panel.level_page.histogram_bars.opts["height"]) == 2


def test_moving_on_drops_the_old_result(qtbot, panel: IndexOverviewPanel, two_clusters_path: Path) -> None:
    h = Hierarchy(open_store(two_clusters_path))
    panel.show_index(h)
    panel.show_level(h, 2)  # the user moved on before the index summary arrived
    wait_idle(qtbot, panel)
    assert panel.stack.currentWidget() is panel.level_page
    assert panel.index_page.summary is None and panel.index_page.report is None
    assert panel.level_page.view is not None and panel.level_page.view.stats.node_count == 4


def test_find_missing_children_decodes_the_level_above(qtbot, panel: IndexOverviewPanel,
                                                       two_clusters_copy: Path) -> None:
    shutil.rmtree(two_clusters_copy / "lvl_2" / "node_1")
    panel.show_level(Hierarchy(open_store(two_clusters_copy)), 2)
    wait_idle(qtbot, panel)
    assert panel.level_page.refs_label.text() == ""  # metadata only until the user asks
    qtbot.mouseClick(panel.level_page.refs_button, Qt.MouseButton.LeftButton)
    wait_idle(qtbot, panel)
    assert panel.level_page.refs_label.text() == "1 of 4 referenced children do not exist: node_1. Search skips them."


def test_largest_and_smallest_tables_show_whole_numbers(qtbot, panel: IndexOverviewPanel) -> None:
    from ecpfs_viewer.model.ecpfs import NodeSize

    panel.resize(920, 760)  # the overview's share of a 1280 x 800 window
    panel.stack.setCurrentWidget(panel.level_page)
    nodes = [NodeSize(i, f"lvl_3/node_{123_450 + i}", 1_234_567 - i) for i in range(10)]
    panel.level_page.largest.set_nodes(nodes)
    QCoreApplication.processEvents()  # the columns resized to their contents
    table = panel.level_page.largest
    metrics = table.fontMetrics()
    for row in range(table.topLevelItemCount()):
        item = table.topLevelItem(row)
        assert item.text(1) == f"{1_234_567 - row:,}"
        for column in (0, 1):
            assert table.columnWidth(column) >= metrics.horizontalAdvance(item.text(column))
    assert table.header().length() <= table.viewport().width()  # nothing hidden behind a scroll bar
    assert table.horizontalScrollBar().maximum() == 0


def test_validation_progress_is_throttled(qtbot, panel: IndexOverviewPanel, two_clusters_path: Path,
                                          monkeypatch) -> None:
    import threading

    from ecpfs_viewer.gui.overview import index_page
    from ecpfs_viewer.model.validation import CheckProgress

    release = threading.Event()

    def chatty_validate(h, *, progress, cancel):
        for done in range(1, 1001):  # a flood of updates, far faster than anyone can read
            progress(CheckProgress(done, 1000, "Decoding leaves"))
        release.wait(10)
        raise RuntimeError("not wanted")

    monkeypatch.setattr(index_page, "validate", chatty_validate)
    bar = panel.index_page.progress
    shown: list[int] = []
    bar.valueChanged.connect(shown.append)
    panel.show_index(Hierarchy(open_store(two_clusters_path)))
    try:
        qtbot.waitUntil(lambda: bar.value() == 1000, timeout=5000)  # the last update is shown
        assert bar.text() == "Decoding leaves (1000 / 1000)"
        assert len(shown) <= 20  # not 1,000 repaints: at most one every PROGRESS_INTERVAL_MS
    finally:
        release.set()


def test_level_page_reuses_the_statistics_validation_computed(qtbot, panel: IndexOverviewPanel,
                                                              two_clusters_path: Path) -> None:
    h = Hierarchy(open_store(two_clusters_path))
    panel.show_index(h)
    wait_idle(qtbot, panel)
    leaves = panel.index_page.report.levels[-1]
    panel.show_level(h, 2)
    wait_idle(qtbot, panel)
    assert panel.level_page.view.stats is leaves  # the same object: the 4 nodes' metadata was not parsed again
    assert "Nodes: 4 of at most 4  (min(ns^2, R))" in panel.summary_text().splitlines()


def test_level_page_does_not_wait_for_a_running_validation(qtbot, panel: IndexOverviewPanel,
                                                           two_clusters_path: Path, monkeypatch) -> None:
    import threading

    from ecpfs_viewer.gui.overview import index_page
    release = threading.Event()
    started = threading.Event()

    def slow_validate(h, *, progress, cancel):
        started.set()
        release.wait(10)  # a long (remote) validation holding its turn as the one heavy job
        raise RuntimeError("not wanted")

    monkeypatch.setattr(index_page, "validate", slow_validate)
    h = Hierarchy(open_store(two_clusters_path))
    panel.show_index(h)
    qtbot.waitUntil(started.is_set, timeout=5000)
    try:
        panel.show_level(h, 2)
        qtbot.waitUntil(lambda: panel.level_page.view is not None, timeout=5000)
        assert panel.level_page.view.stats.node_count == 4
    finally:
        release.set()
