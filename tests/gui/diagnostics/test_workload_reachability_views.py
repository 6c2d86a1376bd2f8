"""The Diagnostics menu as a user drives it: Query Workload on sampled items (histogram, hot leaves, a
double-click opens the leaf, CSV/JSON/PNG export, cancel) and Self-Reachability on an index with a leaf
moved by hand (its strays listed, and listed again on that leaf's page)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from defect_indexes import move_leaf
from window_driver import open_index_map

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.window.main_window import MainWindow
from ecpfs_viewer.model.diagnostics.workload import replay
from ecpfs_viewer.model.search import IndexReader, SearchParams, sample_items
from tests.index_factory import build_clustered_index


@pytest.fixture
def opened(qtbot, tmp_path: Path):
    path = build_clustered_index(tmp_path, 1500, 12, clusters=10, levels=3, target_cluster_items=20)
    moved = move_leaf(path)
    win = create_main_window(str(path))
    qtbot.addWidget(win)
    win.resize(1280, 800)
    win.show()
    qtbot.waitUntil(lambda: not win.is_busy() and win.diagnostics.workload_action.isEnabled(), timeout=15000)
    yield win, path, moved
    win.close()


def test_workload_dialog_shows_and_exports(qtbot, opened, tmp_path: Path) -> None:
    win, path, _ = opened
    win.diagnostics.workload_action.trigger()
    dialog = win.diagnostics.workload
    assert dialog is not None and dialog.isVisible()
    dialog.count.setValue(200)
    dialog.search_exp.setValue(2)
    dialog.run_button.click()
    qtbot.waitUntil(lambda: dialog.workload is not None, timeout=30000)
    index = IndexReader(path)
    direct = replay(index, sample_items(index, 200), SearchParams(k=10, search_exp=2))
    assert dialog.workload.leaves_per_query.tolist() == direct.leaves_per_query.tolist()
    assert "200 queries" in dialog.summary.text() and "top 1%" in dialog.summary.text()
    assert dialog.hot_model.rowCount() == len(direct.hot_leaves())
    first = str(dialog.hot_model.row(0)[0])
    assert first == direct.hot_leaves()[0]["path"]
    dialog.hot_view.activated.emit(dialog.hot_model.index(0, 0))
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == first, timeout=8000)
    for kind in ("csv", "json", "png"):
        dialog.export(kind, str(tmp_path / f"w.{kind}"))
    lines = (tmp_path / "w.csv").read_text().splitlines()
    assert lines[0] == "level,node_id,size,visits" and len(lines) - 1 == len(dialog.workload.visits_rows())
    assert json.loads((tmp_path / "w.json").read_text())["queries"] == 200
    assert (tmp_path / "w.png").stat().st_size > 1000
    _shots(dialog, "workload")


def test_workload_cancel(qtbot, opened) -> None:
    win, _, _ = opened
    dialog = win.diagnostics.open_workload()
    dialog.count.setValue(1500)
    dialog.run_button.click()
    dialog.cancel_button.click()
    qtbot.waitUntil(lambda: dialog.run_button.isEnabled(), timeout=30000)
    assert dialog.summary.text() == "Cancelled." and dialog.workload is None
    assert not dialog.progress.isVisible()


def test_self_reachability_lists_the_moved_leaf_on_its_page(qtbot, opened) -> None:
    win, _, (leaf, items, level) = opened
    win.diagnostics.reachability_action.trigger()
    dialog = win.diagnostics.reachability
    assert dialog is not None
    dialog.run_button.click()
    qtbot.waitUntil(lambda: dialog.report is not None, timeout=30000)
    assert "do not reach their own leaf with search_exp 1" in dialog.summary.text()
    rows = [dialog.model.row(r) for r in range(dialog.model.rowCount())]
    on_leaf = [r for r in rows if r[1] == f"lvl_3/node_{leaf}"]
    assert on_leaf and {r[3] for r in on_leaf if r[0] in items} == {f"lvl_{level}"}
    row = rows.index(on_leaf[0])
    dialog.view.activated.emit(dialog.model.index(row, 0))
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == f"lvl_3/node_{leaf}",
                    timeout=8000)
    page = win.node_page
    qtbot.waitUntil(lambda: page.tabs.isTabVisible(page._strays_tab) and page.strays.model.rowCount() > 0,
                    timeout=8000)
    assert page.strays.model.rowCount() == len(on_leaf)
    assert "do not reach it with search_exp 1" in page.strays.label.text()
    _shots(dialog, "self_reachability")
    page.tabs.setCurrentIndex(page._strays_tab)
    _shots(win, "leaf_page_strays")


def _shots(widget, name: str) -> None:
    """Screenshots for the report when asked (ECPFS_SHOTS=folder)."""
    import os

    folder = os.environ.get("ECPFS_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        widget.grab().save(str(Path(folder) / f"{name}.png"))


def test_menu_is_off_until_an_index_opens(qtbot) -> None:
    win = create_main_window(None)
    qtbot.addWidget(win)
    assert isinstance(win, MainWindow)
    assert not win.diagnostics.workload_action.isEnabled()
    assert not win.diagnostics.reachability_action.isEnabled()
    win.close()


def test_diagnostics_results_colour_the_index_map(qtbot, opened) -> None:
    """Self-reachability run before the map opens, a workload after: both become colour-by choices."""
    win, _, (leaf, _items, _level) = opened
    win.diagnostics.reachability_action.trigger()
    reach = win.diagnostics.reachability
    reach.run_button.click()
    qtbot.waitUntil(lambda: reach.report is not None, timeout=30000)
    panel = open_index_map(qtbot, win)
    assert "strays" in panel.offered() and "self-reachability strays" in panel.overlay_names()
    strays = panel.overlays()["strays"].values[3]
    band = panel.index_map.band(3)
    assert band.node_ids[int(strays.argmax())] == leaf  # the moved leaf strays most
    win.diagnostics.workload_action.trigger()
    work = win.diagnostics.workload
    work.count.setValue(100)
    work.run_button.click()
    qtbot.waitUntil(lambda: "workload" in panel.offered(), timeout=30000)
    assert panel.current() == "workload" and "workload visits" in panel.legend.text()
    visits = panel.overlays()["workload"].values[3]
    assert int(visits.sum()) == int(work.workload.leaves_per_query.sum())  # every leaf scanned counted once
    _shots(panel, "map_workload_visits")
    panel.colour_by("strays")
    assert panel.current() == "strays"
    _shots(panel, "map_strays")
