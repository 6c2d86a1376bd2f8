"""What a user reads in the first hour: honest action costs, one message per problem, the level's
problems, tree marks before expanding, and a filter that says what it matched."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.gui.runtime.action_cost import Measured
from ecpfs_viewer.gui.tree.marks import MarkKind
from ecpfs_viewer.gui.tree.tree_item import LoadState
from ecpfs_viewer.gui.window.main_window import MainWindow
from ecpfs_viewer.model.storage.opening import IOStats


@pytest.fixture
def opened(qtbot, tmp_path: Path):
    """opened(location): a shown main window with that store open, the root validated (recent
    stores and layout go to this test's folder)."""
    app_settings.use_settings_dir(tmp_path / "settings")
    made: list[MainWindow] = []

    def open_window(location: Path) -> MainWindow:
        win = create_main_window(str(location))
        made.append(win)
        qtbot.addWidget(win)
        win.resize(1280, 800)
        win.show()
        settle(qtbot, win)
        return win

    yield open_window
    for win in made:
        win.close()


def settle(qtbot, win: MainWindow) -> None:
    qtbot.waitUntil(lambda: win.session.hierarchy is not None and not win.is_busy() and not win.overview.busy,
                    timeout=15000)


def go(qtbot, win: MainWindow, path: str) -> None:
    win.reveal_path(path)
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == path, timeout=5000)
    settle(qtbot, win)


def proxy_names(win: MainWindow, *rows: int) -> list[str]:
    """Names shown under the view row reached by following rows from the top."""
    model, parent = win.tree_panel.tree.model(), win.tree_panel.tree.rootIndex()
    for row in rows:
        parent = model.index(row, 0, parent)
    return [model.index(r, 0, parent).data() for r in range(model.rowCount(parent))]


# -- 1. each action's own cost ----------------------------------------------------------------------
def test_status_bar_says_cached_and_names_listings() -> None:
    assert Measured(None, IOStats(0, 0, 0), 0.0004).describe("Read metadata of /lvl_3") == \
        "Read metadata of /lvl_3: from cache (no request) in 0 ms"
    assert Measured(None, IOStats(1, 0, 1), 0.003).describe("Chunk statistics of /a") == \
        "Chunk statistics of /a: 1 directory listing in 3 ms"
    assert Measured(None, IOStats(4, 2150, 1), 0.012).describe("Listed /lvl_1") == \
        "Listed /lvl_1: 4 requests, 2.1 KiB read in 12 ms (1 directory listing among them)"


def test_an_action_finishing_late_does_not_hide_the_latest_one(qtbot, opened, two_clusters_path: Path) -> None:
    import time

    win = opened(two_clusters_path)
    now = time.perf_counter()
    win.report_action("Listed /lvl_1", Measured(2, IOStats(3, 900, 1), 0.01, started=now + 2))
    win.report_action("Validation", Measured(None, IOStats(60, 20000, 8), 0.4, started=now + 1))  # began earlier
    assert win.cost_label.text().startswith("Listed /lvl_1: 3 requests")
    win.report_action("Read metadata of /lvl_1", Measured(None, IOStats(), 0.0, started=now + 3))
    assert win.cost_label.text() == "Read metadata of /lvl_1: from cache (no request) in 0 ms"


def test_level_page_reports_its_own_reads(qtbot, opened, two_clusters_path: Path) -> None:
    win = opened(two_clusters_path)
    seen: list[str] = []
    win.overview.action_measured.connect(lambda action, result: seen.append(result.describe(action)))
    go(qtbot, win, "lvl_2")
    qtbot.waitUntil(lambda: any(s.startswith("Statistics of lvl_2: ") for s in seen), timeout=5000)
    line = next(s for s in seen if s.startswith("Statistics of lvl_2: "))
    assert "requests" in line  # the summary's scalars are read again: real requests, not "0 requests"
    assert win.cost_label.text() in seen or win.cost_label.text().startswith("Read metadata of /lvl_2")
    # validation computed lvl_2's statistics when the root was shown: the page says it reused them
    assert "; reused (computed by validation or an earlier visit)" in win.overview.summary_text()


# -- 2. one problem, one message, one severity ------------------------------------------------------
def test_legacy_layout_is_said_once(qtbot, opened, two_clusters_copy: Path) -> None:
    for name in ("info/format_version", "info/total_items", "info/next_item_id"):
        shutil.rmtree(two_clusters_copy / name)
    win = opened(two_clusters_copy)
    page = win.overview.index_page
    qtbot.waitUntil(lambda: page.report is not None, timeout=10000)
    layout = page.report.layout_finding
    assert layout is not None and layout.message in win.overview.banner.text.text()
    assert win.overview.banner.severity is layout.severity
    assert not win.banner.isVisible()  # the window's own banner does not repeat it
    # one verdict: the layout error is in the findings it counts, no "No errors or warnings" beside it
    assert [message for _path, message in page.findings.row_texts()].count(layout.message) == 1
    assert ("", "No errors or warnings.") not in page.findings.row_texts()
    assert page.verdict.text().startswith("<b>1 error</b>")


def test_legacy_index_says_how_to_rebuild_it_and_does_it(qtbot, opened, two_clusters_copy: Path) -> None:
    """The exact build command from the index's own vectors, and a button that writes them and opens
    the Build dialog on them; the command run as shown builds a valid index of the same items."""
    import numpy as np

    from ecpfs_viewer.gui.build.dialog import BuildDialog
    from ecpfs_viewer.model.build.builder import BuildParams, build_index
    from ecpfs_viewer.model.storage.opening import open_store
    from ecpfs_viewer.model.validation import validate
    from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

    for name in ("info/format_version", "info/total_items", "info/next_item_id"):
        shutil.rmtree(two_clusters_copy / name)
    win = opened(two_clusters_copy)
    box = win.overview.index_page.rebuild
    qtbot.waitUntil(box.isVisible, timeout=10000)
    folder = two_clusters_copy.resolve().parent
    vectors, output = folder / "two_clusters-vectors.npy", folder / "two_clusters-v1.zarr"
    assert box.command.text() == (f"ecpfs-viewer build {vectors} {output} --levels 2 --target-cluster-items 2 "
                                  "--metric L2")
    qtbot.mouseClick(box.copy_button, Qt.MouseButton.LeftButton)
    assert QApplication.clipboard().text() == box.command.text()
    qtbot.mouseClick(box.save_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: isinstance(win.secondary.build_dialog, BuildDialog)
                    and win.secondary.build_dialog.isVisible(), timeout=15000)
    assert win.secondary.build_dialog.form.source() == str(vectors)
    stored = np.load(vectors)
    reference = Hierarchy(open_store(two_clusters_copy))
    for leaf in range(4):  # row i of the file is item i's vector
        ids = reference.read_array(f"lvl_2/node_{leaf}/item_ids")
        np.testing.assert_array_equal(stored[ids], reference.read_array(f"lvl_2/node_{leaf}/embeddings"))
    win.secondary.build_dialog.close()
    build_index(vectors, output, BuildParams(levels=2, target_cluster_items=2, metric="L2"))  # the command's build
    assert validate(Hierarchy(open_store(output))).ok


# -- 3. the level page lists what validation found in it ---------------------------------------------
def test_level_page_lists_the_validation_findings_of_its_level(qtbot, opened, two_clusters_copy: Path) -> None:
    shutil.rmtree(two_clusters_copy / "lvl_2" / "node_1" / "item_ids")
    win = opened(two_clusters_copy)
    index_rows = win.overview.index_page.findings.row_texts()
    broken = [row for row in index_rows if row[0] == "lvl_2/node_1"]
    assert broken
    go(qtbot, win, "lvl_2")
    level_rows = win.overview.level_page.findings.row_texts()
    assert broken[0] in level_rows
    assert all(path.startswith("lvl_2") for path, _message in level_rows)


def test_level_page_without_a_report_lists_metadata_findings(qtbot, two_clusters_copy: Path) -> None:
    from ecpfs_viewer.gui.overview.panel import IndexOverviewPanel
    from ecpfs_viewer.model.storage.opening import open_store
    from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

    (two_clusters_copy / "lvl_2" / "node_3" / "zarr.json").write_text("{not json")
    panel = IndexOverviewPanel()
    qtbot.addWidget(panel)
    panel.show_level(Hierarchy(open_store(two_clusters_copy)), 2)
    qtbot.waitUntil(lambda: not panel.busy, timeout=10000)
    rows = panel.level_page.findings.row_texts()
    assert any(path == "lvl_2/node_3" for path, _message in rows), rows


# -- 4. the reference check is named after what it does ---------------------------------------------
def test_reference_check_names_the_levels_it_reads(qtbot, opened, two_clusters_path: Path) -> None:
    win = opened(two_clusters_path)
    go(qtbot, win, "lvl_2")
    button = win.overview.level_page.refs_button
    assert button.text() == "Check lvl_1 references to lvl_2 nodes"
    assert "node_ids of lvl_1" in button.toolTip()
    go(qtbot, win, "lvl_1")
    assert button.text() == "Check the root references to lvl_1 nodes"


# -- 5. broken nodes are marked before their level is expanded ---------------------------------------
def test_validation_marks_collapsed_ancestors(qtbot, opened, two_clusters_copy: Path) -> None:
    shutil.rmtree(two_clusters_copy / "lvl_2" / "node_1" / "item_ids")
    win = opened(two_clusters_copy)
    model = win.tree_model
    qtbot.waitUntil(lambda: bool(model.marks_at("lvl_2")), timeout=10000)
    assert model.item(model.index_for_path("lvl_2")).state is LoadState.UNLISTED  # never expanded
    assert model.marks_at("lvl_2")[0].kind is MarkKind.ERROR
    tip = model.index_for_path("lvl_2").data(3)  # ToolTipRole
    assert "below (worst: error)" in tip
    go(qtbot, win, "lvl_2/node_1")  # once listed, the node shows its own finding
    assert "no ids array" in model.index_for_path("lvl_2/node_1").data(3)


def test_coming_back_to_the_root_shows_its_report_without_validating_again(qtbot, opened,
                                                                           two_clusters_copy: Path) -> None:
    shutil.rmtree(two_clusters_copy / "lvl_2" / "node_1" / "item_ids")
    win = opened(two_clusters_copy)
    page = win.overview.index_page
    first = page.report
    assert first is not None and "error" in page.verdict.text()
    go(qtbot, win, "lvl_1")
    actions: list[str] = []  # what the status bar reports, action by action
    win.overview.action_measured.connect(lambda action, _result: actions.append(action))
    win.reveal_path("")
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == "", timeout=5000)
    assert page.report is first and page.progress.isHidden()  # shown at once, no "Validating …"
    assert "error" in page.verdict.text() and any(path == "lvl_2/node_1" for path, _ in page.findings.row_texts())
    settle(qtbot, win)
    assert actions == ["Index summary"]  # not validated again
    win.refresh_all()  # F5 reads the store again, and validates it again
    qtbot.waitUntil(lambda: page.report is not None and page.report is not first, timeout=10000)
    assert "error" in page.verdict.text() and "Validation" in actions


class GatedValidation:
    """Validation that waits for release() before it starts, as a remote index's takes seconds."""

    def __init__(self, monkeypatch) -> None:
        import threading

        from ecpfs_viewer.gui.overview import index_page
        from ecpfs_viewer.model.validation import validate

        self.released, self.calls = threading.Event(), []

        def gated(h, *, progress, cancel):
            self.calls.append(h)
            self.released.wait(10)
            return validate(h, progress=progress, cancel=cancel)

        monkeypatch.setattr(index_page, "validate", gated)


def open_broken(qtbot, tmp_path: Path, two_clusters_copy: Path, select: str | None = None) -> MainWindow:
    shutil.rmtree(two_clusters_copy / "lvl_2" / "node_1" / "item_ids")
    app_settings.use_settings_dir(tmp_path / "settings")
    win = create_main_window(str(two_clusters_copy), select=select)
    qtbot.addWidget(win)
    win.show()
    return win


def test_validation_goes_on_when_the_user_leaves_the_root_at_once(qtbot, tmp_path: Path, two_clusters_copy: Path,
                                                                  monkeypatch) -> None:
    gate = GatedValidation(monkeypatch)
    win = open_broken(qtbot, tmp_path, two_clusters_copy)
    qtbot.waitUntil(lambda: len(gate.calls) == 1, timeout=10000)
    win.reveal_path("lvl_2")  # the user moves on to a level's statistics before the report
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == "lvl_2", timeout=5000)
    gate.released.set()
    model = win.tree_model
    qtbot.waitUntil(lambda: bool(model.marks_at("lvl_2")), timeout=10000)  # the report still came
    assert model.marks_at("lvl_2")[0].kind is MarkKind.ERROR
    win.reveal_path("")
    qtbot.waitUntil(lambda: win.overview.index_page.report is not None, timeout=5000)
    assert "error" in win.overview.index_page.verdict.text()
    assert len(gate.calls) == 1  # validated once


def test_an_index_opened_at_a_level_is_validated_too(qtbot, tmp_path: Path, two_clusters_copy: Path,
                                                     monkeypatch) -> None:
    gate = GatedValidation(monkeypatch)
    win = open_broken(qtbot, tmp_path, two_clusters_copy, select="lvl_2")  # --select lvl_2
    qtbot.waitUntil(lambda: win.current_item() is not None and win.current_item().path == "lvl_2", timeout=10000)
    gate.released.set()
    model = win.tree_model
    qtbot.waitUntil(lambda: bool(model.marks_at("lvl_2")), timeout=10000)
    assert model.marks_at("lvl_2")[0].kind is MarkKind.ERROR and len(gate.calls) == 1


# -- 6. the filter --------------------------------------------------------------------------------
def test_filter_exact_glob_count_and_overview_kept(qtbot, opened, two_clusters_path: Path) -> None:
    win = opened(two_clusters_path)
    win.tree_panel.tree.expand(win.tree_panel.view_index(win.tree_model.index_for_path("lvl_2")))
    qtbot.waitUntil(lambda: win.tree_model.is_loaded("lvl_2/node_3"), timeout=5000)
    settle(qtbot, win)
    assert win.tabs.currentIndex() == win.TAB_OVERVIEW
    win.tree_panel.filter_edit.setText("node_1")
    assert win.tabs.currentIndex() == win.TAB_OVERVIEW  # typing does not switch the right pane
    assert win.overview.stack.currentWidget() is win.overview.index_page and not win.overview.busy
    assert win.tree_panel.filter_status.text().startswith("1 match (name contains)")
    assert "the contents of 7 groups not listed yet are not searched" in win.tree_panel.filter_status.text()
    win.tree_panel.filter_edit.setText("=NODE_1")
    assert proxy_names(win, 0) == ["lvl_2"] and proxy_names(win, 0, 0) == ["node_1"]
    assert win.tree_panel.filter_status.text().startswith("1 match (exact name)")
    win.tree_panel.filter_edit.setText('"node"')
    assert win.tree_panel.filter_status.text().startswith("0 matches (exact name)")
    win.tree_panel.filter_edit.setText("node_?")
    assert proxy_names(win, 0, 0) == ["node_0", "node_1", "node_2", "node_3"]
    assert win.tree_panel.filter_status.text().startswith("4 matches (glob)")
    win.tree_panel.filter_edit.clear()
    assert win.tree_panel.filter_status.isHidden()


# -- 7. layout ------------------------------------------------------------------------------------
def test_long_names_widen_the_name_column_and_keep_a_tooltip(qtbot, opened, two_clusters_copy: Path) -> None:
    long_name = "rep_item_ids_with_a_really_long_descriptive_name"
    (two_clusters_copy / "rep_item_ids").rename(two_clusters_copy / long_name)
    win = opened(two_clusters_copy)
    win.splitter.setSizes([700, 580])
    qtbot.waitUntil(lambda: win.tree_panel.tree.viewport().width() > 600, timeout=3000)
    needed = win.tree_panel.tree.fontMetrics().horizontalAdvance(long_name)
    qtbot.waitUntil(lambda: win.tree_panel.tree.columnWidth(0) > needed, timeout=3000)
    assert win.tree_panel.tree.columnWidth(1) >= win.tree_panel.tree_columns.detail_width - 1  # details still readable
    assert long_name in win.tree_model.index_for_path(long_name).data(3)
    win.splitter.setSizes([260, 1020])  # a narrow pane: the name is cut, the tooltip still names it
    qtbot.waitUntil(lambda: win.tree_panel.tree.columnWidth(0) < needed, timeout=3000)


def test_summary_values_wrap_instead_of_scrolling_sideways(qtbot, opened, two_clusters_path: Path) -> None:
    win = opened(two_clusters_path)
    win.resize(1000, 640)
    qtbot.waitUntil(lambda: win.width() == 1000, timeout=3000)
    from PySide6.QtWidgets import QScrollArea

    scroll = win.overview.index_page.facts.parentWidget().parentWidget()
    assert isinstance(scroll, QScrollArea)
    assert not scroll.horizontalScrollBar().isVisible()
    assert win.overview.index_page.facts.width() <= scroll.viewport().width()
    assert "Representative chunk rows: 1,048,576" in win.overview.summary_text()


def test_window_fits_the_available_screen() -> None:
    from PySide6.QtCore import QRect, QSize

    assert app_settings.fitted_size(QSize(1280, 800), QRect(0, 0, 1280, 680)) == QSize(1216, 646)
    assert app_settings.fitted_size(QSize(1280, 800), QRect(0, 0, 2560, 1400)) == QSize(1280, 800)


def test_a_restored_window_is_clamped_to_its_screen(qtbot) -> None:
    from PySide6.QtCore import QRect
    from PySide6.QtWidgets import QWidget

    widget = QWidget()
    qtbot.addWidget(widget)
    widget.resize(1900, 1200)
    widget.move(300, 200)
    app_settings.clamp_to_screen(widget, QRect(0, 0, 1280, 720))
    assert widget.width() <= 1280 and widget.height() <= 720
    assert widget.frameGeometry().right() <= 1279 and widget.frameGeometry().bottom() <= 719


# -- 11. screenshot runs are not recent stores ------------------------------------------------------
def test_screenshot_runs_are_not_added_to_recent(two_clusters_path: Path, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path / "config"),
               ECPFS_VIEWER_CACHE=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, "-m", "ecpfs_viewer", str(two_clusters_path), "--screenshot",
                           str(tmp_path / "shot.png")], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    read = subprocess.run([sys.executable, "-c", "from ecpfs_viewer.gui.runtime import settings as s; "
                           "print(repr(s.recent_locations()))"], env=env, capture_output=True, text=True, timeout=60)
    assert read.stdout.strip() == "[]", read.stdout + read.stderr


# -- 8. the folder dialog enters plain folders ------------------------------------------------------
def test_folder_dialog_enters_a_plain_folder_instead_of_opening_it(qtbot, two_clusters_copy: Path) -> None:
    """A plain folder chosen is entered, and the dialog says why in a line of its own (still open)."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from ecpfs_viewer.gui.window.open_dialogs import IndexFolderDialog, ask_index_folder

    plain = two_clusters_copy.parent  # holds an index, but is none
    seen: list[tuple[str, str, bool]] = []

    def choose(*folders: Path) -> None:
        dialog = QApplication.activeModalWidget()
        assert isinstance(dialog, IndexFolderDialog)
        for folder in folders:
            dialog.selectFile(str(folder))
            dialog.accept()
            seen.append((dialog.problem_text(), dialog.directory().absolutePath(), dialog.isVisible()))

    QTimer.singleShot(0, lambda: choose(plain, two_clusters_copy))
    assert ask_index_folder(None, "/") == str(two_clusters_copy)
    assert seen[0] == (f"{plain.name} holds no Zarr metadata (zarr.json, .zgroup, .zarray): choose a store inside it.",
                       str(plain), True)  # entered, said in the dialog, still open
    assert seen[1][2] is False  # a store: opened
    QTimer.singleShot(0, lambda: QApplication.activeModalWidget().reject())
    assert ask_index_folder(None, str(plain)) is None  # cancel


# -- 9. exports say where they went and what they hold -----------------------------------------------
def test_exports_say_where_and_label_rows_items_and_subset(qtbot, opened, two_clusters_path: Path,
                                                            tmp_path: Path) -> None:
    import csv

    import numpy as np
    from PySide6.QtGui import QImage

    from ecpfs_viewer.model.storage.opening import open_store
    from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

    win = opened(two_clusters_path)
    go(qtbot, win, "lvl_2/node_1/embeddings")
    qtbot.waitUntil(lambda: win.plot.current_data() is not None, timeout=5000)
    target = tmp_path / "rows.csv"
    win.plot.export_csv(str(target))
    assert win.statusBar().currentMessage() == f"Saved {target}"
    with open(target, newline="", encoding="utf-8") as handle:
        lines = list(csv.reader(handle))
    h = Hierarchy(open_store(two_clusters_path))
    ids = h.read_array("lvl_2/node_1/item_ids")
    values = h.read_array("lvl_2/node_1/embeddings")
    assert lines[0] == ["row", "item_id", "col_0", "col_1"]
    assert [int(line[1]) for line in lines[1:]] == ids.tolist()
    assert [int(line[0]) for line in lines[1:]] == list(range(len(ids)))
    np.testing.assert_array_equal(np.array([[float(v) for v in line[2:]] for line in lines[1:]], np.float32), values)

    picture = tmp_path / "view.png"
    win.plot.export_png(str(picture))
    assert win.statusBar().currentMessage() == f"Saved {picture}"
    image = QImage(str(picture))
    band = [image.pixelColor(x, y).lightness() for y in range(4, 16) for x in range(8, 200)]
    assert min(band) < 100  # dark title text on the white band above the plot


def test_csv_labels_of_a_strided_three_axis_subset(tmp_path: Path) -> None:
    import numpy as np

    from ecpfs_viewer.model.views.export import CsvLabels, write_csv

    write_csv(np.arange(8).reshape(2, 2, 2), tmp_path / "cube.csv", CsvLabels((4, 0, 1), (2, 1, 1)))
    assert (tmp_path / "cube.csv").read_text().splitlines() == [
        'row,"[0,1]","[0,2]","[1,1]","[1,2]"', "4,0,1,2,3", "6,4,5,6,7"]


# -- 10. copy where a node is, and how to open it ----------------------------------------------------
def test_copy_full_path_and_a_snippet_that_opens_the_array(qtbot, opened, two_clusters_path: Path) -> None:
    import numpy as np
    from PySide6.QtGui import QGuiApplication

    win = opened(two_clusters_path)
    go(qtbot, win, "lvl_2/node_1/embeddings")
    win.commands.copy_location_action.trigger()
    full = QGuiApplication.clipboard().text()
    assert Path(full) == two_clusters_path.resolve() / "lvl_2" / "node_1" / "embeddings" and Path(full).is_dir()
    win.commands.copy_snippet_action.trigger()
    namespace: dict[str, object] = {}
    exec(QGuiApplication.clipboard().text(), namespace)  # the copied snippet, run as a user would
    expected = win.session.hierarchy.read_array("lvl_2/node_1/embeddings")
    np.testing.assert_array_equal(namespace["data"], expected)


def test_snippet_for_a_node_inside_a_zip(two_clusters_path: Path, tmp_path: Path) -> None:
    import zipfile

    import numpy as np

    from ecpfs_viewer.gui.window.copy_paths import full_location, zarr_snippet
    from ecpfs_viewer.model.storage.opening import open_store
    from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
    from ecpfs_viewer.model.zarrtree.nodes import NodeKind

    archive = tmp_path / "index.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for file in two_clusters_path.rglob("*"):
            zf.write(file, "two_clusters.zarr/" + file.relative_to(two_clusters_path).as_posix())
    store = open_store(archive)
    assert full_location(store, "lvl_1/node_0/node_ids") == f"zip://two_clusters.zarr/lvl_1/node_0/node_ids::{archive}"
    namespace: dict[str, object] = {}
    exec(zarr_snippet(store, "lvl_1/node_0/node_ids", NodeKind.ARRAY), namespace)
    expected = Hierarchy(store).read_array("lvl_1/node_0/node_ids")
    np.testing.assert_array_equal(namespace["data"], expected)


# -- 12. help ---------------------------------------------------------------------------------------
def test_help_lists_the_shortcuts_and_opens_the_documentation(qtbot, opened, two_clusters_path: Path,
                                                               monkeypatch) -> None:
    from PySide6.QtGui import QDesktopServices
    from PySide6.QtWidgets import QApplication, QMenu

    from ecpfs_viewer.gui.window.help_dialogs import ShortcutsDialog

    win = opened(two_clusters_path)
    # by title among the menu bar's menus: QAction.menu() of PySide6 before 6.11.2 destroys the menu
    help_menu = next(m for m in win.menuBar().findChildren(QMenu) if m.title() == "&Help")
    assert [a.text() for a in help_menu.actions() if a.text()] == [
        "User &Guide", "Help on This &Page", "&Keyboard Shortcuts", "&Documentation (README)", "&About ecpfs-viewer"]
    win.commands.shortcuts_action.trigger()
    qtbot.waitUntil(lambda: any(isinstance(w, ShortcutsDialog) and w.isVisible()
                                for w in QApplication.topLevelWidgets()), timeout=3000)
    dialog = next(w for w in QApplication.topLevelWidgets() if isinstance(w, ShortcutsDialog))
    rows = dict(dialog.rows())
    assert rows["Open Index Folder"] == "Ctrl+O" and rows["Filter Tree"] == "Ctrl+F"
    assert rows["Copy Path"] == "Ctrl+Shift+C" and rows["Help on This Page"] == "F1"
    dialog.close()
    opened_urls: list[str] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened_urls.append(url.toString()) or True)
    win.commands.docs_action.trigger()
    assert opened_urls == ["https://github.com/ecpfs-viewer/ecpfs-viewer#readme"]
