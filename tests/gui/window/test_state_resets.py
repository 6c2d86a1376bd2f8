"""Issue 37, items 1 and 7: no label, filter or count outlives the store or the inputs it described.

Each test drives the window (or the dialog) the way the issue's user did and checks the text on
screen against the state: the tree filter of another index, the misses' title, the share of items
reaching their leaf, the findings legend, a failed build, a failed URL, the Search panel's prompt.
"""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.build.dialog import BuildDialog
from ecpfs_viewer.gui.tree.tree_item import LoadState
from ecpfs_viewer.gui.window.main_window import WINDOW_TITLE, MainWindow
from ecpfs_viewer.model.diagnostics.index_map import findings_overlay
from ecpfs_viewer.model.diagnostics.index_map_layout import layout_index
from ecpfs_viewer.model.ecpfs.opened_index import open_index
from ecpfs_viewer.model.formatting import format_percent
from ecpfs_viewer.model.search import IndexReader


@pytest.fixture
def window(qtbot, show):
    def make(location=None) -> MainWindow:
        win = show(create_main_window(str(location) if location is not None else None), 1280, 800)
        if location is not None:
            idle(qtbot, win)
        return win

    return make


def idle(qtbot, win: MainWindow) -> None:
    qtbot.waitUntil(lambda: not win.is_busy(), timeout=10_000)


def expand(qtbot, win: MainWindow, path: str) -> None:
    win.tree_panel.tree.expand(win.tree_panel.view_index(win.tree_model.index_for_path(path)))
    qtbot.waitUntil(lambda: win.tree_model.item(win.tree_model.index_for_path(path)).state is LoadState.LISTED,
                    timeout=5000)
    idle(qtbot, win)


def test_every_panel_registers_its_reset_in_one_place(window):
    win = window()
    assert {"tree", "metadata", "plot", "overview", "node page", "selection", "diagnostics"} <= set(win.resets.names)


def test_a_filter_typed_for_one_index_is_dropped_when_another_opens(qtbot, window, two_clusters_path,
                                                                    two_clusters_copy):
    """Item 1: with `node_1?` typed, the next index showed "0 matches" and an empty tree."""
    win = window(two_clusters_path)
    qtbot.keyClicks(win.tree_panel.filter_edit, "node_1?")
    idle(qtbot, win)
    assert win.tree_panel.filter_status.isVisibleTo(win) and "0 matches" in win.tree_panel.filter_status.text()
    with qtbot.waitSignal(win.resets.reset_done, timeout=5000):
        win.open_location(str(two_clusters_copy))
    idle(qtbot, win)
    assert win.tree_panel.filter_edit.text() == ""
    assert not win.tree_panel.filter_status.isVisibleTo(win) and win.tree_panel.filter_status.text() == ""
    assert win.tree_panel.tree.model() is win.tree_model
    root = win.tree_model.index_for_path("")
    assert win.tree_model.rowCount(root) == 6 and win.tree_panel.tree.isExpanded(root)


def test_clearing_a_filter_keeps_what_was_expanded(qtbot, window, two_clusters_path):
    """Item 1: clearing a filter that hid every row collapsed the whole tree to the root."""
    win = window(two_clusters_path)
    for path in ("lvl_1", "lvl_2", "lvl_2/node_2"):
        expand(qtbot, win, path)
    before = win.tree_panel.expanded_paths()
    assert before == ["", "lvl_1", "lvl_2", "lvl_2/node_2"]
    qtbot.keyClicks(win.tree_panel.filter_edit, "node_1?")  # hides every row
    idle(qtbot, win)
    win.tree_panel.filter_edit.clear()
    assert win.tree_panel.expanded_paths() == before


def test_a_row_chosen_while_filtering_stays_in_view_when_the_filter_is_cleared(qtbot, window, two_clusters_path):
    win = window(two_clusters_path)
    expand(qtbot, win, "lvl_2")
    expand(qtbot, win, "lvl_2/node_3")
    win.tree_panel.tree.collapseAll()
    qtbot.keyClicks(win.tree_panel.filter_edit, "embeddings")
    idle(qtbot, win)
    win.reveal_path("lvl_2/node_3/embeddings")
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == "lvl_2/node_3/embeddings",
                    timeout=5000)
    win.tree_panel.filter_edit.clear()
    assert {"", "lvl_2", "lvl_2/node_3"} <= set(win.tree_panel.expanded_paths())
    assert win.current_item().path == "lvl_2/node_3/embeddings"


def test_a_failed_url_leaves_no_title_and_no_filter_of_the_store_before(qtbot, window, two_clusters_path):
    """Item 7: a failed URL kept the previous filter's status and put the failed URL in the title."""
    win = window(two_clusters_path)
    qtbot.keyClicks(win.tree_panel.filter_edit, "node_2")
    idle(qtbot, win)
    with qtbot.waitSignal(win.open_failed, timeout=15_000):
        win.open_location("http://127.0.0.1:9/nothing-here.zarr")
    assert win.windowTitle() == WINDOW_TITLE
    assert win.tree_panel.filter_edit.text() == "" and not win.tree_panel.filter_status.isVisibleTo(win)
    assert "Could not open http://127.0.0.1:9/nothing-here.zarr" in win.banner.text.text()


def test_the_misses_title_follows_the_comparison_switch(qtbot, window, two_clusters_path):
    """Item 7: "tick 'Compare with exact search'" was shown while it was ticked."""
    win = window(two_clusters_path)
    win.search.show_panel()
    panel = win.search.panel
    panel.form.compare_check.setChecked(False)
    panel.form.item_edit.setText("3")
    with qtbot.waitSignal(panel.finished, timeout=20_000):
        qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)
    assert "tick 'Compare with exact search'" in panel.misses_label.text()
    panel.form.compare_check.setChecked(True)
    assert "tick" not in panel.misses_label.text() and "run again" in panel.misses_label.text()
    with qtbot.waitSignal(panel.finished, timeout=20_000):
        qtbot.mouseClick(panel.run_button, Qt.MouseButton.LeftButton)
    idle(qtbot, win)
    assert panel.misses_label.text().startswith("True neighbours missed: ")


def test_the_search_prompt_follows_the_query_source(qtbot, window, two_clusters_path):
    """Item 7: "Type an item id" was shown with Saved query chosen."""
    win = window(two_clusters_path)
    win.search.show_panel()
    panel = win.search.panel
    assert panel.status_text().startswith("Type an item id")
    panel.form.set_kind("saved")
    assert "saved query" in panel.status_text() and "item id" not in panel.status_text()
    panel.form.set_kind("array")
    assert panel.status_text().startswith("Name an array")


def test_a_share_is_never_rounded_to_all_or_none():
    """Item 7: "100.00% reach their own leaf" under "1 of 200,000 items do not"."""
    assert format_percent(199_999 / 200_000) == "> 99.99%"
    assert format_percent(1 / 200_000) == "< 0.01%"
    assert format_percent(1.0) == "100.00%" and format_percent(0.0) == "0.00%"
    assert format_percent(0.5, 1) == "50.0%"


def test_the_findings_legend_names_severities_not_counts(two_clusters_path):
    """Item 7: "2 error, 1 warning, 0 none" read as counts of findings."""
    overlay = findings_overlay(layout_index(IndexReader(open_index(str(two_clusters_path)).hierarchy)), [])
    assert not any(ch.isdigit() for ch in overlay.legend), overlay.legend
    assert "error" in overlay.legend and "none" in overlay.legend


def test_a_build_failure_goes_when_the_inputs_change(qtbot, tmp_path):
    """Item 7: a build failure stayed after the input was changed."""
    vectors = tmp_path / "vectors.npy"
    np.save(vectors, np.random.default_rng(7).standard_normal((300, 8)).astype(np.float32))
    dialog = BuildDialog(None, input_path=str(vectors))
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.form.levels_spin.setValue(2)
    dialog.form.target_spin.setValue(10)
    output = tmp_path / "late.zarr"
    dialog.form.output_edit.setText(str(output))
    qtbot.waitUntil(dialog.build_button.isEnabled, timeout=10_000)
    output.mkdir()  # appears between the check and the build: the build fails
    (output / "notes.txt").write_text("not an index")
    dialog.build_button.click()
    qtbot.waitUntil(lambda: dialog.message.isVisibleTo(dialog) and not dialog.building, timeout=10_000)
    assert dialog.message.text().startswith("Build failed")
    dialog.form.output_edit.setText(str(tmp_path / "other.zarr"))
    assert not dialog.message.isVisibleTo(dialog)
