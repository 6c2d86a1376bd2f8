"""Help in the window, offline (issue 37 §9): the packaged user guide rendered in a window, searchable,
with links between its sections; F1 opens the section of the page on screen; the overview's glossary
terms link there; Help > Documentation without a browser opens the guide instead of doing nothing."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QApplication, QMenu
from window_driver import open_window, select

from ecpfs_viewer.gui.widgets.user_guide import UserGuide, guide_markdown, slug
from ecpfs_viewer.gui.window.help_wiring import NO_BROWSER


def _guide() -> UserGuide | None:
    return next((w for w in QApplication.topLevelWidgets() if isinstance(w, UserGuide) and w.isVisible()), None)


def test_the_user_guide_opens_from_the_help_menu_finds_text_and_follows_its_links(qtbot) -> None:
    win = open_window(qtbot)
    help_menu = next(m for m in win.menuBar().findChildren(QMenu) if m.title() == "&Help")
    assert [a.text() for a in help_menu.actions() if a.text()][:2] == ["User &Guide", "Help on This &Page"]
    win.commands.guide_action.trigger()
    guide = _guide()
    assert guide is not None
    text = guide.browser.toPlainText()
    # a real guide: every part a user meets has its section
    for section in ("opening-an-index", "browsing-the-tree", "the-index-overview", "levels", "nodes", "data",
                    "metadata", "the-index-map", "search", "path", "recall", "comparing-two-indexes",
                    "building-an-index", "tuning", "command-line", "representative", "fan-out", "leaf",
                    "search_exp", "border"):
        assert section in guide.headings(), section
    assert "# " not in text.splitlines()[0]  # rendered, not shown as Markdown source
    # the contents' links go to their section
    guide.browser.anchorClicked.emit(QUrl("#tuning"))
    assert guide.current_section() == "tuning"
    guide.browser.anchorClicked.emit(QUrl("#opening-an-index"))
    assert guide.current_section() == "opening-an-index"
    # find: typed text is selected, Return goes to the next place, wrapping around
    qtbot.keyClicks(guide.find_edit, "recall@k")
    assert guide.browser.textCursor().selectedText() == "recall@k"
    first = guide.browser.textCursor().position()
    qtbot.keyClick(guide.find_edit, Qt.Key.Key_Return)
    assert guide.browser.textCursor().selectedText() == "recall@k" and guide.browser.textCursor().position() != first
    guide.find_edit.setText("no such words anywhere")
    assert guide.find_status.text() == "not found"
    # asked again: the same window, raised; Escape closes it
    win.commands.guide_action.trigger()
    assert _guide() is guide
    qtbot.waitUntil(guide.isActiveWindow, timeout=2000)
    qtbot.keyClick(guide.find_edit, Qt.Key.Key_Escape)
    assert not guide.isVisible()
    win.close()


def test_f1_opens_the_section_of_the_page_on_screen(qtbot, two_clusters_path: Path) -> None:
    win = open_window(qtbot)
    win.setFocus()
    qtbot.keyClick(win, Qt.Key.Key_F1)
    guide = _guide()
    assert guide is not None and guide.current_section() == "opening-an-index"
    guide.close()
    win.session.open_location(str(two_clusters_path))
    qtbot.waitUntil(lambda: win.session.current is not None and not win.is_busy(), timeout=10_000)
    for path, section in (("", "the-index-overview"), ("lvl_1", "levels"), ("lvl_1/node_0", "nodes")):
        select(qtbot, win, path)
        win.tabs.setFocus()
        win.activateWindow()
        qtbot.waitUntil(win.isActiveWindow, timeout=2000)
        qtbot.keyClick(win.tabs, Qt.Key.Key_F1)
        guide = _guide()
        assert guide is not None and guide.current_section() == section, path
        guide.close()
    win.tabs.setCurrentIndex(win.TAB_DATA)
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=2000)
    qtbot.keyClick(win.tabs, Qt.Key.Key_F1)
    assert _guide() is not None and _guide().current_section() == "data"
    _guide().close()
    # the keyboard focus in the tree: the tree's section
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow, timeout=2000)
    win.tree_panel.tree.setFocus()
    qtbot.keyClick(win.tree_panel.tree, Qt.Key.Key_F1)
    assert _guide() is not None and _guide().current_section() == "browsing-the-tree"
    _guide().close()
    win.close()


def test_the_overview_glossary_terms_link_to_the_guide(qtbot, two_clusters_path: Path) -> None:
    win = open_window(qtbot, two_clusters_path)
    select(qtbot, win, "")
    glossary = win.overview.index_page.glossary
    assert 'href="guide:fan-out"' in glossary.text() and 'href="guide:representative"' in glossary.text()
    glossary.linkActivated.emit("guide:fan-out")  # what a click on the term sends
    guide = _guide()
    assert guide is not None and guide.current_section() == "fan-out"
    guide.close()
    win.close()


def test_documentation_without_a_browser_opens_the_guide_and_says_why(qtbot) -> None:
    win = open_window(qtbot)
    # the offscreen platform has no way to start a browser, as a desktop without one
    assert not QDesktopServices.openUrl(QUrl("https://example.invalid/"))
    win.commands.docs_action.trigger()
    assert _guide() is not None
    assert win.statusBar().currentMessage() == NO_BROWSER
    _guide().close()
    win.close()


def test_the_guide_is_packaged_markdown() -> None:
    text = guide_markdown()
    assert text.startswith("# ecpfs-viewer user guide")
    assert slug("Building an index") == "building-an-index" and slug("search_exp") == "search_exp"


def test_the_border_array_says_what_it_is(qtbot, two_clusters_path: Path) -> None:
    """Issue 37 §12: a node's `border` array is shown with a word of what it is (tree tooltip, guide)."""
    win = open_window(qtbot, two_clusters_path)
    select(qtbot, win, "lvl_1/node_0/border")
    tree = win.tree_panel.tree
    tip = tree.model().data(tree.currentIndex(), Qt.ItemDataRole.ToolTipRole)
    assert "border: reserved by the ecpfs format and never filled" in tip
    select(qtbot, win, "lvl_1/node_0/node_ids")
    tip = tree.model().data(tree.currentIndex(), Qt.ItemDataRole.ToolTipRole)
    assert "node_ids: the ids of the node's children" in tip
    assert "never fills it" in guide_markdown().split("### border", 1)[1]
    win.close()


def test_escape_closes_every_secondary_window(qtbot) -> None:
    """Issue 37 §8: Build, Tune, Keyboard Shortcuts and the guide close on Escape, as Compare does
    (tested with it), pressed where the keyboard focus is."""
    from ecpfs_viewer.gui.build.dialog import BuildDialog
    from ecpfs_viewer.gui.tuning.tune_dialog import TuneDialog
    from ecpfs_viewer.gui.window.help_dialogs import ShortcutsDialog

    win = open_window(qtbot)
    opens = ((win.commands.build_action, BuildDialog), (win.commands.tune_action, TuneDialog),
             (win.commands.shortcuts_action, ShortcutsDialog), (win.commands.guide_action, UserGuide))
    for action, kind in opens:
        action.trigger()
        window = next(w for w in QApplication.topLevelWidgets() if isinstance(w, kind) and w.isVisible())
        window.activateWindow()
        qtbot.waitUntil(window.isActiveWindow, timeout=2000)
        focus = QApplication.focusWidget() or window
        qtbot.keyClick(focus, Qt.Key.Key_Escape)
        qtbot.waitUntil(lambda w=window: not w.isVisible(), timeout=3000)
    win.close()


def test_f1_in_build_add_tune_and_compare_opens_their_section(qtbot, two_clusters_path: Path) -> None:
    """F1 worked only in the main window: in Build, Add Vectors, Tune and Compare it opens their section,
    pressed where the keyboard focus is; the guide belongs to that window (a modal one does not block it)."""
    from ecpfs_viewer.gui.build.add_dialog import AddVectorsDialog
    from ecpfs_viewer.gui.build.dialog import BuildDialog
    from ecpfs_viewer.gui.tuning.compare_view import CompareView
    from ecpfs_viewer.gui.tuning.tune_dialog import TuneDialog

    win = open_window(qtbot)
    compare = CompareView(str(two_clusters_path), str(two_clusters_path), parent=win)
    qtbot.addWidget(compare)
    compare.show()
    opens = ((win.commands.build_action.trigger, BuildDialog, "building-an-index"),
             (win.commands.add_vectors_action.trigger, AddVectorsDialog, "adding-vectors"),
             (win.commands.tune_action.trigger, TuneDialog, "tuning"),
             (compare.show, CompareView, "comparing-two-indexes"))
    for show, kind, section in opens:
        show()
        window = next(w for w in QApplication.topLevelWidgets() if isinstance(w, kind) and w.isVisible())
        window.activateWindow()
        qtbot.waitUntil(window.isActiveWindow, timeout=2000)
        focus = QApplication.focusWidget() or window
        assert focus.window() is window
        qtbot.keyClick(focus, Qt.Key.Key_F1)
        guide = next((g for g in window.findChildren(UserGuide) if g.isVisible()), None)
        assert guide is not None, kind
        assert guide.current_section() == section
        guide.close()
        window.close()
    qtbot.waitUntil(lambda: not compare.busy, timeout=30_000)
    win.close()


def test_the_guide_explains_add_more_machines_and_the_findings_filter(qtbot) -> None:
    guide = UserGuide()
    qtbot.addWidget(guide)
    for section in ("adding-vectors", "more-than-one-machine", "the-findings-filter"):
        assert section in guide.headings(), section
    text = guide_markdown()
    adding = text.split("## Adding vectors", 1)[1].split("\n## ", 1)[0]
    for words in ("Build ▸ Add Vectors…", "ecpfs-viewer add", "lock", "--wait", "next_item_id", "gap"):
        assert words in adding, words
    machines = text.split("## More than one machine", 1)[1].split("\n## ", 1)[0]
    for words in ("--scheduler tcp://", "Scheduler", "of the Compare", "scripts/dask_cluster.py", "no workers joined"):
        assert words in machines, words
    assert "`-W005`" in text.split("## The findings filter", 1)[1].split("\n## ", 1)[0]
    for link in ("#adding-vectors", "#more-than-one-machine", "#the-findings-filter"):  # in the contents
        assert f"]({link})" in text.split("## ", 1)[0]
