"""F1 and the Help menu's guide: which section of the user guide belongs to what is on screen.

F1 opens the guide at the section of the page the user is on: the panel holding the keyboard
focus (the tree, the search panel's tabs, the index map …), else the page the selection tabs show
(the index overview, a level, a node, Data, Metadata), else how to open an index. Help ▸
Documentation opens the README in a browser, and the guide in the window when no browser starts.
"""

from __future__ import annotations

from PySide6.QtWidgets import QApplication, QMainWindow, QWidget

from ecpfs_viewer.gui.data.plot_pane import PlotPane
from ecpfs_viewer.gui.diagnostics.index_map import IndexMapPanel
from ecpfs_viewer.gui.metadata.panel import MetadataPanel
from ecpfs_viewer.gui.overview.index_page import IndexPage
from ecpfs_viewer.gui.overview.level_page import LevelPage
from ecpfs_viewer.gui.overview.node_page import NodePage
from ecpfs_viewer.gui.search.panel import SearchPanel
from ecpfs_viewer.gui.search.path_view import SearchPathView
from ecpfs_viewer.gui.search.recall_view import RecallView
from ecpfs_viewer.gui.tree.panel import TreePanel
from ecpfs_viewer.gui.widgets.user_guide import UserGuide, open_guide
from ecpfs_viewer.gui.window.help_dialogs import open_documentation
from ecpfs_viewer.gui.window.selection_tabs import SelectionTabs

#: The guide's section of each panel, the innermost first (a recall view sits in the search panel).
PANEL_SECTIONS: tuple[tuple[type[QWidget], str], ...] = (
    (SearchPathView, "path"), (RecallView, "recall"), (SearchPanel, "search"), (IndexMapPanel, "the-index-map"),
    (TreePanel, "browsing-the-tree"), (NodePage, "nodes"), (LevelPage, "levels"),
    (IndexPage, "the-index-overview"), (PlotPane, "data"), (MetadataPanel, "metadata"),
)
NO_INDEX_SECTION = "opening-an-index"
NO_BROWSER = "No web browser could be started: the user guide opened instead (Help ▸ User Guide)."


def _section_of(widget: QWidget) -> str | None:
    for kind, section in PANEL_SECTIONS:
        if isinstance(widget, kind):
            return section
    return None


def page_section(window: QMainWindow) -> str:
    """The guide's section for what the user is on in ``window``."""
    focus = QApplication.focusWidget()
    while focus is not None and focus is not window:
        section = _section_of(focus)
        if section is not None:
            return section
        focus = focus.parentWidget()
    selection = window.findChild(SelectionTabs)
    if selection is None or selection.current is None:
        return NO_INDEX_SECTION
    page = selection.tabs.currentWidget()
    if page is None:
        return NO_INDEX_SECTION
    own = _section_of(page)
    if own is not None:
        return own
    for kind, section in PANEL_SECTIONS:  # the page shown in the tab's stack (a node, a level, the index)
        if any(child.isVisible() for child in page.findChildren(kind)):
            return section
    return NO_INDEX_SECTION


def open_page_help(window: QMainWindow) -> UserGuide:
    """F1: the guide at the section of the page on screen."""
    return open_guide(window, page_section(window))


def open_documentation_or_guide(window: QMainWindow) -> bool:
    """Help ▸ Documentation: the README in a browser; without one, the guide here and a word why."""
    if open_documentation():
        return True
    open_guide(window)
    window.statusBar().showMessage(NO_BROWSER, 10_000)
    return False
