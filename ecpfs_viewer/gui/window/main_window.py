"""The browser window: start page, lazy tree, and the overview / metadata / data panels.

The window only lays things out and wires them together: the opened index lives in
:class:`IndexSession`, the tree and its filter in :class:`TreePanel`, the commands in
:class:`WindowActions`, the Search panel in :class:`SearchFeature`; where the panels sit (tabs or
windows) in :class:`PanelPlaces`, the window's sizes in :class:`WindowLayout`, and what every panel
forgets when the index goes in :class:`StoreResets`. Every panel does its I/O through
:class:`BackgroundRunner`, and the status bar shows what the last action read.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QLabel,
    QMainWindow,
    QProgressBar,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.data.plot_pane import PlotPane
from ecpfs_viewer.gui.metadata.panel import MetadataPanel
from ecpfs_viewer.gui.overview.node_page import NodePage
from ecpfs_viewer.gui.overview.panel import IndexOverviewPanel
from ecpfs_viewer.gui.runtime.action_cost import Measured
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner, wait_for_workers
from ecpfs_viewer.gui.search.wiring import SearchFeature
from ecpfs_viewer.gui.tree.panel import TreePanel
from ecpfs_viewer.gui.tree.tree_item import TreeItem
from ecpfs_viewer.gui.tree.validation_marks import VALIDATION_LAYER, validation_marks
from ecpfs_viewer.gui.tuning.compare_view import CompareView
from ecpfs_viewer.gui.widgets.display import MessageBanner, panes
from ecpfs_viewer.gui.widgets.panel_places import PanelPlaces
from ecpfs_viewer.gui.window.actions import WindowActions, WindowSlots
from ecpfs_viewer.gui.window.clipboard import NodeClipboard
from ecpfs_viewer.gui.window.diagnostics_menu import DiagnosticsMenu
from ecpfs_viewer.gui.window.drops import StoreDrops
from ecpfs_viewer.gui.window.embedding_map_wiring import EmbeddingMapFeature
from ecpfs_viewer.gui.window.index_map_wiring import IndexMapFeature
from ecpfs_viewer.gui.window.secondary_windows import SecondaryWindows
from ecpfs_viewer.gui.window.select_request import SelectRequest
from ecpfs_viewer.gui.window.selection_tabs import SelectionTabs, targets
from ecpfs_viewer.gui.window.session import IndexSession, OpenedIndex, display_label
from ecpfs_viewer.gui.window.start_page import StartPage
from ecpfs_viewer.gui.window.state_resets import StoreResets
from ecpfs_viewer.gui.window.window_layout import WindowLayout
from ecpfs_viewer.model.build.builder import BuildProgress
from ecpfs_viewer.model.ecpfs.derived_listing import listing_note
from ecpfs_viewer.model.ecpfs.nodes import node_ref_of
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.validation import ValidationReport
from ecpfs_viewer.model.zarrtree.nodes import NodeKind

WINDOW_TITLE = "ecpfs-viewer"


class MainWindow(QMainWindow):
    """Start page when nothing is open; otherwise the tree on the left and panels on the right."""

    TAB_OVERVIEW, TAB_METADATA, TAB_DATA = range(3)
    store_opened = Signal(str)  # the location, once its tree is shown
    open_failed = Signal(str, str)  # the location and why it could not be opened
    store_dropped = Signal()  # an opened index was let go (closed, or replaced by another)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(WINDOW_TITLE)
        self.setMinimumSize(800, 500)
        self.session = IndexSession(self)
        self._early: str | None = None  # a node whose pages reveal_path showed before the tree listed it
        self.select_request: SelectRequest | None = None  # --select, when the window was started with it
        self.secondary = SecondaryWindows(self, self.session, lambda: self.refresh_all())
        self.last_action = ""
        self._shown_started = 0.0  # when the action whose cost the status bar shows began

        self.banner = MessageBanner()
        self.start_page = StartPage()
        self._build_browser()
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
        slots = WindowSlots(close_store=self.close_store, refresh=self.refresh_all, build=self.open_build_dialog,
                            demo=self.open_demo, compare=self.open_comparison, tune=self.open_tune_dialog,
                            add_vectors=self.open_add_vectors_dialog, simulate_drift=self.open_drift_simulation)
        clipboard = NodeClipboard(self.current_item, lambda: self.session.hierarchy, self.statusBar().showMessage)
        self.commands = WindowActions(self, self.session, self.tree_panel, clipboard, slots)
        self.commands.connect_start_page(self.start_page, slots)
        self.places = PanelPlaces(self, self.tabs, 3, self.commands.view_menu)  # panels: tabs, or windows
        self.search = SearchFeature(  # the Search panel and menu, Go to Item
            self, self.places, tree_model=self.tree_model, plot=self.plot, reveal=self.reveal_path,
            current_item=self.current_item, show_data=lambda: self.tabs.setCurrentIndex(self.TAB_DATA),
            say=self.statusBar().showMessage)
        self.index_map = IndexMapFeature(  # the Index map panel: opened from the index overview
            self, tree_model=self.tree_model, reader_of=self.search.session.reader, reveal=self.reveal_path,
            node_page=self.node_page, level_page=self.overview.level_page, places=self.places)
        self.diagnostics = DiagnosticsMenu(self, self.search.session.reader, self.reveal_path, self.node_page,
                                           self.places)
        self.index_map.follow(self.overview, self.search.panel.recall_view, self.tree_panel, self.diagnostics)
        self.embedding_map = EmbeddingMapFeature(  # View > Panels > Embedding map
            self, places=self.places, reader_of=self.search.session.reader, reveal=self.reveal_path,
            index_map=self.index_map, search=self.search.panel, diagnostics=self.diagnostics)
        self.embedding_map.follow(self.tree_panel)
        self.resets = StoreResets(self)  # the one place a dropped index is forgotten
        self._register_resets()
        self._connect_session()
        self._show_recent(self.session.recent())
        self.drops = StoreDrops(self, self.session.open_location, self.open_build_dialog)
        self.layout_memory = WindowLayout(self, self.splitter, self.metadata.splitter)
        self.places.reset_hooks.append(self.layout_memory.reset)
        self.layout_memory.restore()
        self.show_start_page()

    # -- construction -------------------------------------------------------------------------
    def _build_browser(self) -> None:
        self.tree_panel = TreePanel()
        panel = self.tree_panel
        self.tree_model = panel.tree_model
        panel.item_chosen.connect(self._show_item)
        panel.refresh_requested.connect(self.refresh_item)
        self.tree_model.listing_finished.connect(
            lambda path, result: self.report_action(f"Listed /{path} ({result.value:,} children)", result))
        self.tree_model.listing_failed.connect(lambda _path, message: self.statusBar().showMessage(message, 10000))

        self.metadata = MetadataPanel()
        self.metadata.action_measured.connect(self.report_action)
        self.metadata.chunk_preview_requested.connect(self._preview_chunk)
        self.overview = IndexOverviewPanel()
        self.overview.node_requested.connect(self.reveal_path)
        self.overview.action_measured.connect(self.report_action)
        self.overview.report_ready.connect(self._mark_validation)
        self.overview.index_page.build_requested.connect(self.open_build_dialog)  # a legacy index's rebuild
        self.plot = PlotPane()
        self.plot.node_requested.connect(self.reveal_path)
        self.plot.exported.connect(lambda path: self.statusBar().showMessage(f"Saved {path}", 15000))
        # the node page shares the Overview tab with the index and level pages
        self.node_page = NodePage()
        self.node_page.node_requested.connect(self.reveal_path)
        self.overview_stack = QStackedWidget()
        self.overview_stack.addWidget(self.overview)
        self.overview_stack.addWidget(self.node_page)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.overview_stack, "Overview")
        self.tabs.addTab(self.metadata, "Metadata")
        self.tabs.addTab(self.plot, "Data")
        self.tabs.setTabEnabled(self.TAB_OVERVIEW, False)  # until an index opens
        self.tabs.setCurrentIndex(self.TAB_METADATA)

        self.selection = SelectionTabs(self.tabs, self.overview_stack, self.overview, self.node_page, self.plot)
        self.splitter = panes(Qt.Orientation.Horizontal, (self.tree_panel, 0), (self.tabs, 1))
        self.browser = self.splitter

    def _connect_session(self) -> None:
        session = self.session
        session.opening.connect(self._on_opening)
        session.opened.connect(self._on_opened)
        session.failed.connect(self._on_open_failed)
        session.dropping.connect(self.resets.store_changed)
        session.dropped.connect(self.store_dropped)
        session.recent_changed.connect(self._show_recent)
        session.demo_progress.connect(self._on_demo_progress)
        session.demo_finished.connect(self._on_demo_finished)

    # -- state --------------------------------------------------------------------------------
    def current_item(self) -> TreeItem | None:
        return self.tree_panel.current_item()

    def reveal_path(self, path: str) -> None:
        """Select a node, listing its ancestors first when needed (e.g. a link in the overview).

        A node of an index that the tree has not listed yet shows its pages at once: they read the
        node, not the tree (a leaf's page is on screen before its 40,000-node level is listed)."""
        wanted, opened, hierarchy = path.strip("/"), self.session.current, self.session.hierarchy
        ref = node_ref_of(wanted)
        self._early = None
        is_index = opened is not None and opened.layout is not None and opened.layout.is_index
        if (hierarchy is not None and is_index and ref is not None and not ref.is_root and ref.path == wanted
                and not self.tree_model.is_loaded(wanted)):
            self._early = wanted
            self.metadata.show_node(hierarchy, wanted)
            self.selection.show(hierarchy, targets(wanted, is_array=False, is_index=True, broken=False))
        self.tree_panel.reveal_path(path)

    def is_busy(self) -> bool:
        """True while anything the window started is still running (for tests and benchmarks)."""
        return (self.session.busy or self.tree_model.is_busy() or self.metadata.is_busy() or self.plot.busy
                or self.node_page.busy or self.search.busy or self.diagnostics.busy or self.index_map.busy
                or self.embedding_map.busy)

    def show_start_page(self) -> None:
        self.stack.setCurrentWidget(self.start_page)
        self.setWindowTitle(WINDOW_TITLE)

    # -- opening and closing --------------------------------------------------------------------
    def open_location(self, location: str, remote: RemoteOptions | None = None) -> None:
        """Open a folder, zip or URL in the background; failures show in the window's banner."""
        self.session.open_location(location, remote)

    def _on_opening(self, location: str) -> None:
        self.banner.clear()
        self.stack.setCurrentWidget(self.browser)
        self.setWindowTitle(f"{display_label(location)} — {WINDOW_TITLE}")
        self.tree_model.show_placeholder(f"Opening {display_label(location)} …")
        self.statusBar().showMessage(f"Opening {location} …")

    def _on_opened(self, opened: OpenedIndex, cost: Measured) -> None:
        is_index = bool(opened.layout is not None and opened.layout.is_index)
        self.tabs.setTabEnabled(self.TAB_OVERVIEW, is_index)
        self.diagnostics.set_enabled(is_index)
        self.tree_model.set_hierarchy(opened.hierarchy, display_label(opened.location))
        if is_index:
            self.overview.validate(opened.hierarchy)  # whatever is selected first: its report marks the tree
        self.report_action(f"Opened {opened.location}", cost)
        self.tree_panel.show_root()
        note = listing_note(opened.hierarchy)
        if note:  # a static web server: the tree was derived from the index, not listed
            self.banner.show_message(f"{display_label(opened.location)}: {note}", error=False)
        self.store_opened.emit(opened.location)

    def _on_open_failed(self, location: str, message: str) -> None:
        self.tree_model.show_failure(display_label(location), message)
        self.metadata.clear()
        self.setWindowTitle(WINDOW_TITLE)  # nothing is open: the title names no store
        self.banner.show_message(f"Could not open {location}\n{message}")
        self.statusBar().showMessage(f"Could not open {location}", 10000)
        self.open_failed.emit(location, message)

    def _register_resets(self) -> None:
        """What every view forgets when the session drops its index, before its store closes."""
        register = self.resets.register
        register("tree", self.tree_panel.pending.clear, self.tree_model.clear, self.tree_panel.clear_filter)
        register("metadata", self.metadata.clear)
        register("plot", self.plot.clear)
        register("overview", self.overview.clear, self.overview.forget_report,
                 lambda: self.tabs.setTabEnabled(self.TAB_OVERVIEW, False))
        register("node page", self.node_page.clear)
        register("selection", self.selection.forget)
        register("early page", lambda: setattr(self, "_early", None))
        register("diagnostics", self.diagnostics.forget)
        register("embedding map", self.embedding_map.clear)

    def close_store(self) -> None:
        self.session.drop()
        self.banner.clear()
        self.cost_label.clear()
        self.show_start_page()

    def open_demo(self) -> None:
        """Build the demo index on first use (in the background, with progress), then open it."""
        self.progress.setRange(0, 0)
        self.progress.show()
        self.statusBar().showMessage("Preparing the demo index …")
        self.session.open_demo()

    def _on_demo_progress(self, progress: BuildProgress) -> None:
        self.progress.setRange(0, max(progress.total, 0))
        self.progress.setValue(progress.done)
        self.progress.setFormat(f"{progress.phase} %p%")
        if progress.message:
            self.statusBar().showMessage(f"Demo index: {progress.message}")

    def _on_demo_finished(self, failure: str) -> None:
        self.progress.hide()
        if failure:
            self.banner.show_message(f"Could not build the demo index\n{failure}")

    def open_build_dialog(self, input_path: str | None = None) -> None:
        self.secondary.open_build(input_path)

    def open_add_vectors_dialog(self) -> None:
        self.secondary.open_add()

    def open_comparison(self, location: str, remote: RemoteOptions | None = None) -> None:
        self.secondary.open_comparison(location, remote)

    @property
    def comparisons(self) -> list[CompareView]:
        """The comparison windows open now."""
        return self.secondary.comparisons

    def open_drift_simulation(self) -> None:
        self.secondary.open_drift_simulation()

    def open_tune_dialog(self) -> None:
        self.secondary.open_tune()

    def _show_recent(self, locations: list[str]) -> None:
        self.start_page.set_recent(locations)
        self.commands.show_recent(locations)

    def refresh_item(self, item: TreeItem) -> None:
        """Re-list one subtree (it may have grown) and show the selection again."""
        if not item.path:
            self.overview.forget_report()  # the whole store is read again: so is its validation
        self.tree_panel.refresh(item)

    def refresh_all(self) -> None:
        """F5: re-read the whole store, keeping what was expanded and selected."""
        if self.session.hierarchy is None:
            self.session.reopen()
            return
        root = self.tree_model.item(self.tree_model.index_for_path(""))
        if self.tree_model.is_loaded(""):
            self.refresh_item(root)

    # -- showing the selected node --------------------------------------------------------------
    def _show_item(self, item: TreeItem) -> None:
        hierarchy = self.session.hierarchy
        assert hierarchy is not None
        early, self._early = self._early, None
        if item.path == early and not item.error:  # reveal_path showed its pages already
            return
        self.metadata.show_node(hierarchy, item.path)
        opened = self.session.current
        self.selection.show(hierarchy, targets(item.path, is_array=item.kind is NodeKind.ARRAY and not item.error,
                                               is_index=bool(opened is not None and opened.layout.is_index),
                                               broken=bool(item.error)))

    def _preview_chunk(self, path: str, text: str) -> None:
        if self.session.hierarchy is None:
            return
        self.plot.show_selection(self.session.hierarchy, path, text)
        self.tabs.setCurrentIndex(self.TAB_DATA)

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

    def save_layout(self) -> None:
        self.layout_memory.save()

    def closeEvent(self, event: QCloseEvent) -> None:
        """Remember the layout, cancel pending work, wait a bounded time for the workers.

        A task still running then (a stalled server, a computation that ignores its cancel flag)
        is abandoned: closing never waits on it (app.run_gui leaves the process without it)."""
        self.save_layout()
        self.places.close_windows()  # a panel's own window would keep the application running
        self.secondary.close_all()
        self.session.stop()
        for runner in self.findChildren(BackgroundRunner):
            runner.invalidate()  # every task of this window: asked to stop, its result dropped
        wait_for_workers()
        super().closeEvent(event)
