"""The browser window: start page, lazy tree, and the overview / metadata / data panels.

The window only wires things together: opening a store, the tree and every panel do their
I/O through :class:`BackgroundRunner`, and the status bar shows what the last action read.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QItemSelectionModel, QModelIndex, QPoint, QSize, Qt, QUrl, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDragEnterEvent,
    QDragMoveEvent,
    QDropEvent,
    QGuiApplication,
    QKeySequence,
)
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QProgressBar,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QToolButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.build.dialog import BuildDialog
from ecpfs_viewer.gui.data.plot_pane import PlotPane
from ecpfs_viewer.gui.metadata.panel import MetadataPanel
from ecpfs_viewer.gui.overview.node_page import NodePage
from ecpfs_viewer.gui.overview.panel import IndexOverviewPanel
from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.gui.runtime.action_cost import Measured
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.search.wiring import SearchFeature
from ecpfs_viewer.gui.tree.columns import TreeColumns
from ecpfs_viewer.gui.tree.filter_proxy import TreeFilterProxy, count_filter_matches
from ecpfs_viewer.gui.tree.item_model import HierarchyTreeModel, LoadState, TreeItem
from ecpfs_viewer.gui.tree.validation_marks import VALIDATION_LAYER, validation_marks
from ecpfs_viewer.gui.widgets.display import MessageBanner
from ecpfs_viewer.gui.widgets.icons import standard_icon
from ecpfs_viewer.gui.window.about_dialog import show_about
from ecpfs_viewer.gui.window.copy_paths import full_location, zarr_snippet
from ecpfs_viewer.gui.window.go_to import GoToPathDialog
from ecpfs_viewer.gui.window.help_dialogs import open_documentation, show_shortcuts
from ecpfs_viewer.gui.window.open_dialogs import OpenUrlDialog, ask_index_folder, ask_zip
from ecpfs_viewer.gui.window.start_page import StartPage
from ecpfs_viewer.model.build.builder import BuildProgress
from ecpfs_viewer.model.build.demo import ensure_demo_index
from ecpfs_viewer.model.ecpfs import IndexLayout, detect_index
from ecpfs_viewer.model.ecpfs.derived_listing import index_hierarchy, listing_note
from ecpfs_viewer.model.ecpfs.nodes import node_ref_of
from ecpfs_viewer.model.storage.opening import is_url, open_store
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.validation import ValidationReport
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import NodeKind

_LEVEL_RE = re.compile(r"^lvl_(\d+)$")
WINDOW_TITLE = "ecpfs-viewer"


@dataclass(frozen=True)
class OpenedIndex:
    """What the opening worker hands back: the hierarchy, and what kind of index it holds."""

    location: str
    hierarchy: Hierarchy
    layout: IndexLayout


def open_hierarchy(location: str, remote: RemoteOptions | None = None) -> OpenedIndex:
    """Open a store and probe its root and index layout (runs in a worker)."""
    hierarchy = index_hierarchy(open_store(location, remote=remote))
    hierarchy.root()
    return OpenedIndex(location, hierarchy, detect_index(hierarchy))


def display_label(location: str) -> str:
    """A short name for the tree's root row: the folder or file name, or the URL."""
    if is_url(location):
        return location.rstrip("/")
    return Path(location).expanduser().name or location


def location_from_drop(text: str) -> str:
    """A dropped URL or path as something open_store accepts."""
    text = text.strip().splitlines()[0].strip() if text.strip() else ""
    url = QUrl(text)
    if url.isLocalFile():
        return url.toLocalFile()
    return text


class MainWindow(QMainWindow):
    """Start page when nothing is open; otherwise the tree on the left and panels on the right."""

    TAB_OVERVIEW, TAB_METADATA, TAB_DATA = range(3)
    store_opened = Signal(str)  # the location, once its tree is shown
    open_failed = Signal(str, str)  # the location and why it could not be opened
    store_dropped = Signal()  # an opened index was let go (closed, or replaced by another)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(WINDOW_TITLE)
        self.setAcceptDrops(True)
        self.setMinimumSize(800, 500)
        self._hierarchy: Hierarchy | None = None
        self._location: str | None = None
        self._layout_info: IndexLayout | None = None
        self._pending_expand: set[str] = set()
        self._pending_select: str | None = None
        self._open_runner = BackgroundRunner(self)
        self._demo_runner = BackgroundRunner(self)
        self._build_dialog: QWidget | None = None
        self.last_action = ""
        self.remember_recent = True  # False for --screenshot runs: they are no user's recent stores
        self._shown_started = 0.0  # when the action whose cost the status bar shows began

        self.banner = MessageBanner()
        self.start_page = StartPage()
        self._build_browser()
        self._install_node_page()
        self.stack = QStackedWidget()
        self.stack.addWidget(self.start_page)
        self.stack.addWidget(self.browser)
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(4, 4, 4, 0)
        layout.addWidget(self.banner)
        layout.addWidget(self.stack, 1)
        self.setCentralWidget(central)

        self.cost_label = QLabel()
        self.cost_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.hide()
        self.statusBar().addWidget(self.cost_label, 1)
        self.statusBar().addPermanentWidget(self.progress)
        self._build_actions()
        self.search = SearchFeature(self)  # Search dock and menu, Go to Item (gui/search/wiring.py)
        self._connect_start_page()
        self.refresh_recent()
        self._restore_layout()
        self.show_start_page()

    # -- construction -------------------------------------------------------------------------
    def _build_browser(self) -> None:
        self.tree_model = HierarchyTreeModel(self)
        self.proxy = TreeFilterProxy(self)  # only between model and view while a filter is typed
        self.tree = QTreeView()
        self.tree.setModel(self.tree_model)
        self.tree.setUniformRowHeights(True)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._tree_menu)
        self.tree_columns = TreeColumns(self.tree, "65,536 x 64  float32")
        self.tree.selectionModel().currentChanged.connect(self._on_current_changed)
        self.tree_model.listing_finished.connect(self._on_listing_finished)
        self.tree_model.listing_failed.connect(self._on_listing_failed)
        self.tree_model.path_revealed.connect(self._on_path_revealed)

        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText("Filter: name, =exact, glob*")
        self.filter_edit.setToolTip("node_15 matches names containing it; =node_15 or \"node_15\" only that "
                                    "name; node_1? and *ids are globs. Only listed groups are searched.")
        self._filter_changing = False
        self.filter_status = QLabel()
        self.filter_status.setWordWrap(True)
        self.filter_status.hide()
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.textChanged.connect(self._on_filter_changed)
        expand = QToolButton()
        expand.setIcon(standard_icon("SP_ArrowDown"))
        expand.setToolTip("Expand everything loaded")
        expand.clicked.connect(self.expand_loaded)
        collapse = QToolButton()
        collapse.setIcon(standard_icon("SP_ArrowUp"))
        collapse.setToolTip("Collapse all")
        collapse.clicked.connect(self.tree.collapseAll)
        filter_row = QHBoxLayout()
        filter_row.setContentsMargins(0, 0, 0, 0)
        filter_row.addWidget(self.filter_edit, 1)
        filter_row.addWidget(expand)
        filter_row.addWidget(collapse)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(0, 0, 0, 0)
        left_layout.addLayout(filter_row)
        left_layout.addWidget(self.filter_status)
        left_layout.addWidget(self.tree, 1)
        left.setMinimumWidth(240)

        self.metadata = MetadataPanel()
        self.metadata.action_measured.connect(self.report_action)
        self.metadata.chunk_preview_requested.connect(self._preview_chunk)
        self.overview = IndexOverviewPanel()
        self.plot = PlotPane()
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.overview, "Overview")
        self.tabs.addTab(self.metadata, "Metadata")
        self.tabs.addTab(self.plot, "Data")
        # the Overview tab is disabled (until an index opens) once its page is the overview stack
        # (_install_node_page): disabling it here would disable the panel itself for good
        self.overview.node_requested.connect(self.reveal_path)
        self._connect_overview()

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(left)
        self.splitter.addWidget(self.tabs)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.setSizes([340, 940])
        self.browser = self.splitter

    def _install_node_page(self) -> None:
        """The node page shares the Overview tab with the index and level pages; the plot pane's
        node links and the page's own links select nodes in the tree."""
        self.node_page = NodePage()
        self.node_page.node_requested.connect(self.reveal_path)
        self.plot.node_requested.connect(self.reveal_path)
        self.overview_stack = QStackedWidget()
        self.tabs.removeTab(self.TAB_OVERVIEW)
        self.overview_stack.addWidget(self.overview)
        self.overview_stack.addWidget(self.node_page)
        self.tabs.insertTab(self.TAB_OVERVIEW, self.overview_stack, "Overview")
        self.tabs.setTabEnabled(self.TAB_OVERVIEW, False)
        self.tabs.setCurrentIndex(self.TAB_METADATA)

    def go_to_path(self) -> None:
        """Ctrl+L: ask for a path (completion from what is listed) and select it."""
        if self._hierarchy is None:
            return
        current = self.current_item()
        dialog = GoToPathDialog((i.path for i in self.tree_model.loaded_items()), self,
                                current.path if current is not None else "")
        if dialog.exec():
            self.reveal_path(dialog.path())

    def _action(self, text: str, slot: Callable[[], object], shortcut: str | None = None,
                icon: str | None = None) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))  # explicit keys: standard bindings differ per platform
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        if icon:
            action.setIcon(standard_icon(icon))
        action.triggered.connect(lambda _checked=False: slot())
        self.addAction(action)
        return action

    def _build_actions(self) -> None:
        self.open_folder_action = self._action("Open Index &Folder…", self.open_folder_dialog,
                                               "Ctrl+O", "SP_DirOpenIcon")
        self.open_zip_action = self._action("Open &Zip…", self.open_zip_dialog)
        self.open_url_action = self._action("Open &URL…", self.open_url_dialog, "Ctrl+U")
        self.build_action = self._action("&Build Index from .npy…", self.open_build_dialog, "Ctrl+B")
        self.demo_action = self._action("Open &Demo Index", self.open_demo)
        self.close_action = self._action("&Close", self.close_store, "Ctrl+W")
        self.quit_action = self._action("&Quit", self.close, "Ctrl+Q")
        self.refresh_action = self._action("&Refresh", self.refresh_all, "F5",
                                           "SP_BrowserReload")
        self.filter_action = self._action("&Filter Tree", self.focus_filter, "Ctrl+F")
        self.copy_path_action = self._action("Copy &Path", self.copy_current_path, "Ctrl+Shift+C")
        self.go_to_action = self._action("&Go to Path…", self.go_to_path, "Ctrl+L")
        self._build_copy_actions()
        self.expand_action = self._action("&Expand Loaded", self.expand_loaded)
        self.collapse_action = self._action("C&ollapse All", self.tree.collapseAll)
        self.about_action = self._action("&About ecpfs-viewer", self.show_about)

        menu = self.menuBar().addMenu("&File")
        for action in (self.open_folder_action, self.open_zip_action, self.open_url_action):
            menu.addAction(action)
        self.recent_menu = menu.addMenu("Open &Recent")
        menu.addSeparator()
        menu.addAction(self.build_action)
        menu.addAction(self.demo_action)
        menu.addSeparator()
        menu.addAction(self.close_action)
        menu.addAction(self.quit_action)
        view = self.menuBar().addMenu("&View")
        for action in (self.refresh_action, self.filter_action, self.go_to_action, self.copy_path_action,
                       self.copy_location_action, self.copy_snippet_action, self.expand_action, self.collapse_action):
            view.addAction(action)
        self._build_help_menu(self.menuBar().addMenu("&Help"))

    def _build_help_menu(self, menu: QMenu) -> None:
        """Shortcuts (read from this window's actions), the documentation, About."""
        self.shortcuts_action = self._action("&Keyboard Shortcuts", lambda: show_shortcuts(self), "F1")
        self.docs_action = self._action("&Documentation (README)", open_documentation)
        for action in (self.shortcuts_action, self.docs_action):
            menu.addAction(action)
        menu.addSeparator()
        menu.addAction(self.about_action)

    def _connect_start_page(self) -> None:
        page = self.start_page
        page.open_folder_requested.connect(self.open_folder_dialog)
        page.open_zip_requested.connect(self.open_zip_dialog)
        page.open_url_requested.connect(self.open_url_dialog)
        page.build_requested.connect(self.open_build_dialog)
        page.demo_requested.connect(self.open_demo)
        page.recent_requested.connect(self.open_location)
        page.clear_recent_requested.connect(self.clear_recent)

    # -- state --------------------------------------------------------------------------------
    @property
    def hierarchy(self) -> Hierarchy | None:
        return self._hierarchy

    @property
    def location(self) -> str | None:
        return self._location

    @property
    def index_layout(self) -> IndexLayout | None:
        return self._layout_info

    def is_busy(self) -> bool:
        """True while anything the window started is still running (for tests and benchmarks)."""
        return (self._open_runner.busy or self.tree_model.is_busy() or self.metadata.is_busy() or self.plot.busy
                or self.node_page.busy or self.search.busy)

    def show_start_page(self) -> None:
        self.stack.setCurrentWidget(self.start_page)
        self.setWindowTitle(WINDOW_TITLE)

    # -- opening ------------------------------------------------------------------------------
    def open_folder_dialog(self) -> None:
        path = ask_index_folder(self, self._dialog_start())
        if path:
            self.open_location(path)

    def open_zip_dialog(self) -> None:
        path = ask_zip(self, self._dialog_start())
        if path:
            self.open_location(path)

    def open_url_dialog(self) -> None:
        dialog = OpenUrlDialog(self)
        if dialog.exec():
            self.open_location(dialog.location(), dialog.remote_options())

    def _dialog_start(self) -> str:
        recent = [r for r in app_settings.recent_locations() if not is_url(r)]
        return str(Path(recent[0]).parent) if recent else str(Path.home())

    def open_location(self, location: str, remote: RemoteOptions | None = None) -> None:
        """Open a folder, zip or URL in the background; failures show in the window's banner."""
        location = location.strip()
        if not location:
            return
        self._drop_store()
        self.banner.clear()
        self._location = location
        self.stack.setCurrentWidget(self.browser)
        self.setWindowTitle(f"{display_label(location)} — {WINDOW_TITLE}")
        self.tree_model.show_placeholder(f"Opening {display_label(location)} …")
        self.statusBar().showMessage(f"Opening {location} …")
        self._open_runner.run(open_hierarchy, location, remote,
                              on_result=self._on_opened, on_error=lambda message: self._on_open_failed(location,
                                                                                                    message))

    def _on_opened(self, opened: OpenedIndex) -> None:
        self._hierarchy = opened.hierarchy
        self._layout_info = opened.layout
        is_index = bool(opened.layout is not None and opened.layout.is_index)
        self.tabs.setTabEnabled(self.TAB_OVERVIEW, is_index)
        self.tree_model.set_hierarchy(opened.hierarchy, display_label(opened.location))
        if is_index:
            self.overview.validate(opened.hierarchy)  # whatever is selected first: its report marks the tree
        cost = opened.hierarchy.store.stats()
        self.report_action(f"Opened {opened.location}", Measured(None, cost, self._open_runner.last_seconds))
        if self.remember_recent:
            app_settings.add_recent_location(opened.location)
            self.refresh_recent()
        root = self.tree_model.index_for_path("")
        self.tree_model.fetchMore(root)  # also when a typed filter hides the root row (the view cannot expand it)
        self._select_source_index(root)
        self.tree.expand(self.view_index(root))
        note = listing_note(opened.hierarchy)
        if note:  # a static web server: the tree was derived from the index, not listed
            self.banner.show_message(f"{display_label(opened.location)}: {note}", error=False)
        self.store_opened.emit(opened.location)

    def _on_open_failed(self, location: str, message: str) -> None:
        self._hierarchy = None
        self.tree_model.show_failure(display_label(location), message)
        self.metadata.clear()
        self.banner.show_message(f"Could not open {location}\n{message}")
        self.statusBar().showMessage(f"Could not open {location}", 10000)
        self.open_failed.emit(location, message)

    def _drop_store(self) -> None:
        self._open_runner.invalidate()
        self._pending_expand.clear()
        self._pending_select = None
        self.tree_model.clear()
        self.metadata.clear()
        self.plot.clear()
        self.overview.clear()
        self.node_page.clear()
        self.overview.forget_report()
        self.tabs.setTabEnabled(self.TAB_OVERVIEW, False)
        dropped, self._hierarchy = self._hierarchy, None
        self._layout_info = None
        self._location = None
        if dropped is not None:
            dropped.store.close()
            self.store_dropped.emit()

    def close_store(self) -> None:
        self._drop_store()
        self.banner.clear()
        self.filter_edit.clear()
        self.cost_label.clear()
        self.show_start_page()

    def open_demo(self) -> None:
        """Build the demo index on first use (in the background, with progress), then open it."""
        self.progress.setRange(0, 0)
        self.progress.show()
        self.statusBar().showMessage("Preparing the demo index …")
        self._demo_runner.run(ensure_demo_index, on_result=self._on_demo_ready, on_error=self._on_demo_failed,
                              on_progress=self._on_demo_progress)

    def _on_demo_progress(self, progress: BuildProgress) -> None:
        self.progress.setRange(0, max(progress.total, 0))
        self.progress.setValue(progress.done)
        self.progress.setFormat(f"{progress.phase} %p%")
        if progress.message:
            self.statusBar().showMessage(f"Demo index: {progress.message}")

    def _on_demo_ready(self, path: Path) -> None:
        self.progress.hide()
        self.open_location(str(path))

    def _on_demo_failed(self, message: str) -> None:
        self.progress.hide()
        self.banner.show_message(f"Could not build the demo index\n{message}")

    def open_build_dialog(self, input_path: str | None = None) -> None:
        dialog = BuildDialog(self, input_path=input_path)
        dialog.index_built.connect(self.open_location)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self._build_dialog = dialog
        dialog.show()

    def show_about(self) -> None:
        show_about(self)

    # -- recent -------------------------------------------------------------------------------
    def refresh_recent(self) -> None:
        locations = app_settings.recent_locations()
        self.start_page.set_recent(locations)
        self.recent_menu.clear()
        for location in locations:
            action = self.recent_menu.addAction(location)
            action.triggered.connect(lambda _checked=False, where=location: self.open_location(where))
        if locations:
            self.recent_menu.addSeparator()
        clear = self.recent_menu.addAction("Clear Recent")
        clear.setEnabled(bool(locations))
        clear.triggered.connect(self.clear_recent)

    def clear_recent(self) -> None:
        app_settings.clear_recent_locations()
        self.refresh_recent()

    # -- drag and drop ------------------------------------------------------------------------
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        mime = event.mimeData()
        if mime.hasUrls() or mime.hasText():
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        mime = event.mimeData()
        if mime.hasUrls() and mime.urls():
            url = mime.urls()[0]
            location = url.toLocalFile() if url.isLocalFile() else url.toString()
        elif mime.hasText():
            location = location_from_drop(mime.text())
        else:
            event.ignore()
            return
        event.acceptProposedAction()
        if location.lower().endswith(".npy") and not is_url(location):
            self.open_build_dialog(location)
        else:
            self.open_location(location)

    # -- tree ---------------------------------------------------------------------------------
    def view_index(self, source: QModelIndex) -> QModelIndex:
        """A tree-model index as an index of what the view shows (the filter proxy while filtering)."""
        return self.proxy.mapFromSource(source) if self.tree.model() is self.proxy else source

    def _to_source(self, index: QModelIndex) -> QModelIndex:
        return self.proxy.mapToSource(index) if self.tree.model() is self.proxy else index

    def _use_proxy(self, filtering: bool) -> None:
        """Put the filter proxy between model and view only while filtering: without a filter it would
        only add per-row work on every layout of a 4,000-node level."""
        if (self.tree.model() is self.proxy) == filtering:
            return
        expanded = self._expanded_paths()
        current = self.current_item()
        if filtering:
            self.proxy.setSourceModel(self.tree_model)
            self.tree.setModel(self.proxy)
        else:
            self.tree.setModel(self.tree_model)
            self.proxy.setSourceModel(None)  # type: ignore[arg-type]  # detaches it; the stubs omit None
        self.tree.selectionModel().currentChanged.connect(self._on_current_changed)
        for path in expanded:
            self.tree.expand(self.view_index(self.tree_model.index_for_path(path)))
        if current is not None:
            index = self.view_index(self.tree_model.index_for_path(current.path))
            if index.isValid():
                self.tree.selectionModel().setCurrentIndex(index, QItemSelectionModel.SelectionFlag.NoUpdate)

    def _expanded_paths(self) -> list[str]:
        model = self.tree_model
        return [i.path for i in model.loaded_items()
                if i.state is LoadState.LISTED and self.tree.isExpanded(self.view_index(model.index_for_path(i.path)))]

    def current_item(self) -> TreeItem | None:
        index = self.tree.currentIndex()
        if not index.isValid():
            return None
        item = self.tree_model.item(self._to_source(index))
        return None if item.placeholder else item

    def _select_source_index(self, source: QModelIndex) -> None:
        index = self.view_index(source)
        if not index.isValid():
            return
        self.tree.selectionModel().setCurrentIndex(
            index, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        )
        self.tree.scrollTo(index)

    def _on_path_revealed(self, source: QModelIndex) -> None:
        """Select the node a Go to or a link asked for; a filter that hides it is cleared first."""
        if source.isValid() and self.filter_edit.text() and not self.view_index(source).isValid():
            self.filter_edit.clear()
        self._select_source_index(source)

    def reveal_path(self, path: str) -> None:
        """Select a node, listing its ancestors first when needed (e.g. a link in the overview)."""
        self.tree_model.reveal(path)

    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        item = self.current_item()
        if item is None or self._hierarchy is None or self._filter_changing:
            return  # a filter keystroke moved or hid the current row: the panels keep what they show
        self._show_item(item)

    def _show_item(self, item: TreeItem) -> None:
        hierarchy = self._hierarchy
        assert hierarchy is not None
        path = item.path
        self.metadata.show_node(hierarchy, path)
        overview_shown = self._show_overview(hierarchy, path)
        if item.kind is NodeKind.ARRAY and not item.error:
            self.plot.show_array(hierarchy, path)
        else:
            self.plot.clear()
        if overview_shown:
            self.tabs.setCurrentIndex(self.TAB_OVERVIEW)
        elif self.tabs.currentIndex() == self.TAB_OVERVIEW or (
            self.tabs.currentIndex() == self.TAB_DATA and item.kind is not NodeKind.ARRAY
        ):
            self.tabs.setCurrentIndex(self.TAB_METADATA)

    def _show_overview(self, hierarchy: Hierarchy, path: str) -> bool:
        """Show the index overview for the root or an lvl_N group; False for other nodes."""
        if self._layout_info is None or not self._layout_info.is_index:
            return False
        ref = node_ref_of(path)
        broken = self.tree_model.item(self.tree_model.index_for_path(path)).error  # its message is on Metadata
        if ref is not None and path == ref.path and not broken:  # the node group itself, not an array in it
            self.node_page.show_node(hierarchy, ref)
            self.overview_stack.setCurrentWidget(self.node_page)
            return True
        self.overview_stack.setCurrentWidget(self.overview)
        if path == "":
            self.overview.show_index(hierarchy)
            return True
        match = _LEVEL_RE.match(path)
        if match:
            self.overview.show_level(hierarchy, int(match.group(1)))
            return True
        return False

    def _preview_chunk(self, path: str, text: str) -> None:
        if self._hierarchy is None:
            return
        self.plot.show_selection(self._hierarchy, path, text)
        self.tabs.setCurrentIndex(self.TAB_DATA)

    def _on_listing_finished(self, path: str, result: Measured) -> None:
        self.report_action(f"Listed /{path} ({result.value:,} children)", result)
        listed = self.tree_model.item(self.tree_model.index_for_path(path))
        names = [child.name for child in listed.children] + ([] if path else [listed.name])  # the root row too
        self.tree_columns.note_names(names, path.count("/") + 1 if path else 1)
        for wanted in sorted(self._pending_expand):
            if self.tree_model.is_loaded(wanted):
                self._pending_expand.discard(wanted)
                self.tree.expand(self.view_index(self.tree_model.index_for_path(wanted)))
        if self._pending_select is not None and self.tree_model.is_loaded(self._pending_select):
            target, self._pending_select = self._pending_select, None
            self._select_source_index(self.tree_model.index_for_path(target))
            item = self.current_item()
            if item is not None and item.path == target:
                self._show_item(item)  # same row index as before: show it again with fresh data
        if self.filter_edit.text():
            self._filter_changing = True
            try:
                self.expand_loaded()
            finally:
                self._filter_changing = False
            self._update_filter_status()

    def _on_listing_failed(self, path: str, message: str) -> None:
        self.statusBar().showMessage(message, 10000)

    def _on_filter_changed(self, text: str) -> None:
        self._filter_changing = True
        try:
            self.proxy.set_filter_text(text)
            self._use_proxy(bool(self.proxy.name_filter.mode))
            if text:
                self.expand_loaded()
        finally:
            self._filter_changing = False
        self._update_filter_status()

    def _update_filter_status(self) -> None:
        """How many loaded rows match, and which groups were not searched (never listed)."""
        name_filter = self.proxy.name_filter
        if not name_filter.mode:
            self.filter_status.clear()
            self.filter_status.hide()
            return
        self.filter_status.setText(count_filter_matches(self.tree_model, name_filter).text(name_filter))
        self.filter_status.show()

    def expand_loaded(self) -> None:
        """Expand every group already listed (never lists anything new)."""
        for item in self.tree_model.loaded_items():
            if item.state is LoadState.LISTED and item.children:
                index = self.view_index(self.tree_model.index_for_path(item.path))
                if index.isValid():
                    self.tree.expand(index)

    def focus_filter(self) -> None:
        self.filter_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.filter_edit.selectAll()

    def copy_current_path(self) -> None:
        item = self.current_item()
        if item is not None and self._hierarchy is not None:
            QGuiApplication.clipboard().setText("/" + item.path)
            self.statusBar().showMessage(f"Copied /{item.path}", 3000)

    # -- copying where a node is -----------------------------------------------------------------
    def _build_copy_actions(self) -> None:
        self.copy_location_action = self._action("Copy &Full Path or URL", self.copy_current_location,
                                                 "Ctrl+Alt+C")
        self.copy_snippet_action = self._action("Copy Python &Snippet (zarr)", self.copy_current_snippet)

    def _copy(self, text: str, said: str) -> None:
        QGuiApplication.clipboard().setText(text)
        self.statusBar().showMessage(said, 3000)

    def copy_current_location(self) -> None:
        """The selected node's file-system path or URL, for a terminal or another program."""
        item = self.current_item()
        if item is not None and self._hierarchy is not None:
            location = full_location(self._hierarchy.store, item.path)
            self._copy(location, f"Copied {location}")

    def copy_current_snippet(self) -> None:
        """Python that opens the selected array (or group) with zarr, read-only."""
        item = self.current_item()
        if item is not None and self._hierarchy is not None:
            self._copy(zarr_snippet(self._hierarchy.store, item.path, item.kind),
                       f"Copied Python that opens /{item.path} with zarr")

    def refresh_item(self, item: TreeItem) -> None:
        """Re-list one subtree (it may have grown) and show the selection again."""
        current = self.current_item()
        selected = current.path if current is not None else item.path
        prefix = item.path + "/" if item.path else ""
        expanded = [path for path in self._expanded_paths() if path == item.path or path.startswith(prefix)]
        self._pending_expand = set(expanded) | {item.path}
        self._pending_select = selected if (selected == item.path or selected.startswith(prefix)) else None
        if not item.path:
            self.overview.forget_report()  # the whole store is read again: so is its validation
        self.tree_model.refresh(self.tree_model.index_for_path(item.path))
        if self._pending_select == item.path:
            self._pending_select = None
            self._select_source_index(self.tree_model.index_for_path(item.path))
            self._show_item(item)

    def refresh_all(self) -> None:
        """F5: re-read the whole store, keeping what was expanded and selected."""
        if self._hierarchy is None:
            if self._location:
                self.open_location(self._location)
            return
        root = self.tree_model.item(self.tree_model.index_for_path(""))
        if self.tree_model.is_loaded(""):
            self.refresh_item(root)

    def _tree_menu(self, point: QPoint) -> None:
        index = self.tree.indexAt(point)
        item = self.tree_model.item(self._to_source(index)) if index.isValid() else None
        menu = QMenu(self)
        if item is not None and not item.placeholder and self._hierarchy is not None:
            self.tree.setCurrentIndex(index)
            menu.addAction(self.copy_path_action)
            menu.addAction(self.copy_location_action)
            menu.addAction(self.copy_snippet_action)
            refresh = menu.addAction(standard_icon("SP_BrowserReload"), "Refresh")
            refresh.triggered.connect(lambda _checked=False, it=item: self.refresh_item(it))
            menu.addSeparator()
        menu.addAction(self.expand_action)
        menu.addAction(self.collapse_action)
        menu.popup(self.tree.viewport().mapToGlobal(point))
        self._context_menu = menu

    # -- overview: costs and validation marks ---------------------------------------------------
    def _connect_overview(self) -> None:
        self.overview.action_measured.connect(self.report_action)
        self.overview.report_ready.connect(self._mark_validation)
        self.plot.exported.connect(lambda path: self.statusBar().showMessage(f"Saved {path}", 15000))

    def _mark_validation(self, report: ValidationReport) -> None:
        """Mark the rows validation names, and their ancestors, even before they are expanded."""
        self.tree_model.set_marks(VALIDATION_LAYER, validation_marks(report))

    # -- status -------------------------------------------------------------------------------
    def report_action(self, action: str, result: Measured) -> None:
        """Show what an action read (requests, bytes, time) in the status bar.

        An action that started before the one shown (a validation finishing after the user
        expanded a node) does not replace it: the bar shows the latest action the user started."""
        if result.started and result.started < self._shown_started:
            return
        self._shown_started = max(self._shown_started, result.started)
        self.last_action = result.describe(action)
        self.cost_label.setText(self.last_action)
        self.statusBar().clearMessage()

    # -- layout memory ------------------------------------------------------------------------
    def _restore_layout(self) -> None:
        if not app_settings.restore_widget_state("main_window", self):
            screen = self.screen()
            wanted = QSize(1280, 800)
            self.resize(wanted if screen is None else app_settings.fitted_size(wanted, screen.availableGeometry()))
        app_settings.clamp_to_screen(self)  # a geometry saved at another scale or on a larger screen
        app_settings.restore_widget_state("main_splitter", self.splitter)
        app_settings.restore_widget_state("metadata_splitter", self.metadata.splitter)

    def save_layout(self) -> None:
        app_settings.save_widget_state("main_window", self)
        app_settings.save_widget_state("main_splitter", self.splitter)
        app_settings.save_widget_state("metadata_splitter", self.metadata.splitter)

    def closeEvent(self, event: QCloseEvent) -> None:
        """Remember the layout, cancel pending work, wait a bounded time for the workers.

        A task still running then (a stalled server, a computation that ignores its cancel flag)
        is abandoned: closing never waits on it (app.run_gui leaves the process without it)."""
        from ecpfs_viewer.gui.runtime.workers import BackgroundRunner, wait_for_workers

        self.save_layout()
        self._demo_runner.invalidate()
        if self._build_dialog is not None:
            with contextlib.suppress(RuntimeError):  # already deleted by Qt (WA_DeleteOnClose)
                self._build_dialog.close()
            self._build_dialog = None
        self._drop_store()
        for runner in self.findChildren(BackgroundRunner):
            runner.invalidate()  # every task of this window: asked to stop, its result dropped
        wait_for_workers()
        super().closeEvent(event)
