"""The Index map as a user meets it: opened from the index overview, hover names a node, a click opens
it, the tree's selection is outlined, the colour-by choice recolours it; after a recall sweep of
queries near a leaf whose items were moved, the miss map puts the misses on that leaf's path (the
map, the list, the tree's marks, the node and level pages)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from defect_indexes import build_moved_leaf_index
from PySide6.QtCore import QPoint, Qt
from window_driver import click_map_button, open_index_map, open_window, select, selected_path, wait_idle

from ecpfs_viewer.gui.diagnostics.index_map import LOST_HEADERS
from ecpfs_viewer.model.search import IndexReader


@pytest.fixture(scope="module")
def defect(tmp_path_factory: pytest.TempPathFactory):
    return build_moved_leaf_index(tmp_path_factory.mktemp("map_gui"))


def _centre(view, level: int, node_id: int) -> QPoint:
    rect = view.node_rect(level, node_id)
    assert rect is not None
    return rect.center().toPoint()


def test_the_map_names_opens_outlines_and_recolours_nodes(qtbot, defect, tmp_path: Path) -> None:
    win = open_window(qtbot, defect.path, 1280, 900)
    assert win.index_map.show_action in win.places.menu.actions()  # View > Panels > Index map opens it too
    panel = open_index_map(qtbot, win)
    view = panel.view
    assert panel.offered()[:2] == ["size", "fill"]
    assert panel.overlay_names()[:2] == ["size vs level median", "chunk fill"]
    assert "size vs level median" in panel.legend.text() and "x median" in panel.legend.text()
    leaves = panel.index_map.band(2)
    widest = int(leaves.node_ids[int(np.argmax(leaves.sizes))])
    qtbot.mouseMove(view, _centre(view, 2, widest))
    qtbot.waitUntil(lambda: view.hover_text.startswith(f"lvl_2/node_{widest}\n"), timeout=5_000)
    assert f"{int(leaves.sizes.max()):,} items beneath" in view.hover_text

    qtbot.mouseClick(view, Qt.MouseButton.LeftButton, pos=_centre(view, 2, widest))
    qtbot.waitUntil(lambda: selected_path(win) == f"lvl_2/node_{widest}", timeout=10_000)
    wait_idle(qtbot, win, 20_000)
    assert view.selected == (2, widest)
    assert win.node_page.shown is not None and win.node_page.shown[1].path == f"lvl_2/node_{widest}"

    select(qtbot, win, "lvl_1/node_0")
    assert view.selected == (1, 0)
    before = view.grab().toImage()
    panel.colour_by("fill")
    assert "chunk fill" in panel.legend.text()
    after = view.grab().toImage()
    assert before != after
    qtbot.wait(1)  # the map keeps its outline through the recolouring
    assert view.selected == (1, 0)

    wheel_before = view.span
    view.zoom(4.0, view.width() / 2)
    assert view.span[1] - view.span[0] == pytest.approx((wheel_before[1] - wheel_before[0]) / 4)
    qtbot.keyClick(view, Qt.Key.Key_Home)
    assert view.span == wheel_before


def test_the_miss_map_puts_the_misses_of_the_moved_leaf_on_its_path(qtbot, defect, tmp_path: Path) -> None:
    queries = tmp_path / "near_moved.npy"
    np.save(queries, defect.vectors[:20] + np.float32(0.001))
    on_path = {s.path for s in IndexReader(defect.path).locate(int(defect.item_ids[0])).path}
    win = open_window(qtbot, defect.path, 1280, 900)
    panel = open_index_map(qtbot, win)
    win.search.show_panel()
    search = win.search.panel
    search.tabs.setCurrentIndex(search.TAB_RECALL)
    recall = search.recall_view
    recall.source_combo.setCurrentIndex(recall.source_combo.findData("file"))
    recall.file_edit.setText(str(queries))
    recall.exps_edit.setText("1, 2")
    with qtbot.waitSignal(recall.finished, timeout=60_000):
        qtbot.mouseClick(recall.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.miss_map is not None, timeout=10_000)
    wait_idle(qtbot, win, 20_000)

    assert panel.colour_combo.currentText() == "misses (all search_exp)"
    top = panel.lost_rows()[0]
    assert top in on_path
    share = float(panel.lost_model.index(0, 2).data().rstrip("%")) / 100
    assert share > 0.5
    win.resize(810, 506)  # the window at 1280x800 under QT_SCALE_FACTOR=1.5: every column still whole
    qtbot.waitUntil(lambda: win.width() == 810)
    header, metrics = panel.lost_view.horizontalHeader(), panel.lost_view.fontMetrics()
    assert header.sectionViewportPosition(2) + header.sectionSize(2) <= header.viewport().width()
    for column in range(3):
        texts = [*panel.lost_model.longest_texts(column), LOST_HEADERS[column]]
        assert header.sectionSize(column) >= max(metrics.horizontalAdvance(text) for text in texts), column
    win.resize(1280, 900)
    marks = win.tree_model.marks_at(top)
    assert marks and "true neighbours lost here" in marks[0].tooltip

    view = panel.view
    level, node_id = (int(top.split("/")[0][4:]), int(top.split("_")[-1]))
    win.index_map.show_map()  # the map's tab, in front of the Search tab the sweep ran in
    qtbot.mouseMove(view, _centre(view, level, node_id))
    qtbot.waitUntil(lambda: view.hover_text.startswith(top + "\n"), timeout=5_000)
    assert "misses (all search_exp):" in view.hover_text

    row = panel.lost_view.visualRect(panel.lost_model.index(0, 0)).center()
    qtbot.mouseClick(panel.lost_view.viewport(), Qt.MouseButton.LeftButton, pos=row)
    qtbot.mouseDClick(panel.lost_view.viewport(), Qt.MouseButton.LeftButton, pos=row)
    qtbot.waitUntil(lambda: selected_path(win) == top, timeout=10_000)
    wait_idle(qtbot, win, 20_000)
    qtbot.waitUntil(lambda: "Recall lost here" in win.node_page.facts_text(), timeout=10_000)
    assert view.selected == (level, node_id)

    select(qtbot, win, f"lvl_{level}")
    page = win.overview.level_page
    qtbot.waitUntil(lambda: "Recall lost at this level" in page.summary_text(), timeout=10_000)
    assert f"Most lost at: {top} (" in page.summary_text()
    panel.colour_by("boundary")  # with boundary items too, the level page correlates the two
    qtbot.waitUntil(lambda: "Boundary items vs misses" in page.summary_text(), timeout=60_000)


def test_boundary_items_are_computed_on_demand_and_shown_on_the_map_and_node_page(qtbot, defect) -> None:
    win = open_window(qtbot, defect.path, 1280, 900)
    panel = open_index_map(qtbot, win)
    qtbot.waitUntil(lambda: "findings" in panel.offered(), timeout=30_000)  # the opening validation's
    leaf = int(panel.index_map.band(2).node_ids[0])
    select(qtbot, win, f"lvl_2/node_{leaf}")
    assert "Boundary items" not in win.node_page.facts_text()
    panel.colour_by("boundary")
    qtbot.waitUntil(lambda: panel.boundary is not None and not panel.busy, timeout=60_000)
    assert panel.colour_combo.currentText() == "boundary items (5%)"
    assert "share of the node's items whose second-best representative" in panel.legend.text()
    b, n = panel.boundary.node_share(2, leaf)
    assert n == int(panel.index_map.band(2).sizes[0])
    qtbot.waitUntil(lambda: "Boundary items" in win.node_page.facts_text(), timeout=10_000)
    assert f"({b:,} of {n:,} score a second representative" in win.node_page.facts_text()
    view = panel.view
    win.index_map.show_map()  # the map's tab, in front of the node page
    moves = itertools.count()

    def hovering() -> bool:  # moved again until it lands: the tab just shown may still be laid out
        qtbot.mouseMove(view, _centre(view, 2, leaf) + QPoint(next(moves) % 2, 0))
        return view.hover_text.startswith(f"lvl_2/node_{leaf}\n")

    qtbot.waitUntil(hovering, timeout=10_000)
    assert "boundary items (5%):" in view.hover_text


def test_a_first_picture_of_the_tree_comes_before_the_leaves_are_measured(qtbot, defect) -> None:
    """The map shows the tree as listed while the leaves' documents are read (at 10M items 0.4 s
    against 7 s), says so, and hover says the items are not read yet; then the map in items. A user
    who cancels on the first picture keeps it, is told what it is, and showing the map again lays it out."""
    win = open_window(qtbot, defect.path, 1280, 900)
    panel = win.index_map.panel
    seen: list[tuple[bool, bool, str, list[str], bool]] = []

    def first_picture(sketch) -> None:
        leaf = int(sketch.band(2).node_ids[0])
        seen.append((panel.view.index_map is sketch and sketch.sketch, panel.index_map is None, panel.status.text(),
                     panel.view.index_map.facts(2, leaf), panel.busy))

    panel.sketch_shown.connect(first_picture)
    click_map_button(qtbot, win)
    qtbot.waitUntil(lambda: panel.index_map is not None and not panel.busy, timeout=30_000)
    assert len(seen) == 1
    drawn, no_map_yet, status, facts, busy = seen[0]
    assert drawn and no_map_yet and busy
    assert status.startswith("A first picture: the tree as listed") and "reading the leaves' sizes" in status
    assert "items not read yet" in facts
    assert panel.view.index_map is panel.index_map and not panel.index_map.sketch
    assert panel.index_map.total == 1500 and panel.status.text().startswith(f"{panel.index_map.node_count:,} nodes")

    win2 = open_window(qtbot, defect.path, 1280, 900)
    panel2 = win2.index_map.panel
    def cancel_once(_sketch) -> None:
        panel2.sketch_shown.disconnect(cancel_once)
        panel2.cancel()

    panel2.sketch_shown.connect(cancel_once)
    click_map_button(qtbot, win2)
    qtbot.waitUntil(lambda: panel2.status.text().startswith("Cancelled: the map shows the tree as listed"),
                    timeout=30_000)
    wait_idle(qtbot, win2, 20_000)
    assert panel2.index_map is None and panel2.view.index_map is not None and panel2.view.index_map.sketch
    win2.index_map.show_map()
    qtbot.waitUntil(lambda: panel2.index_map is not None and not panel2.busy, timeout=30_000)
    assert not panel2.view.index_map.sketch and panel2.index_map.total == 1500
