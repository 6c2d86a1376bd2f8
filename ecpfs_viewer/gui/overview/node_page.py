"""The page of one node of an ecpfs index: where it sits, what it is, what it holds, how it spreads.

Shown in the Overview tab when ``lvl_N/node_M`` (or ``index_root``) is selected. A breadcrumb of
links leads up to the index; the facts say level, id, leaf or internal, rows against the level's
median, the representative (row of the parent, item id) and chunk use. Below: the children (with
their sizes; a double-click opens one) or the leaf's item ids, each missing or broken one shown in
place with its finding; the spread of the rows around the representative; and a PCA projection.
Everything is read in the background (:mod:`ecpfs_viewer.model.views.node_info`); results for a node the
user already left are dropped and its running work is cancelled.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QModelIndex, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.overview.node_listing import ListingModel, SizeBarDelegate
from ecpfs_viewer.gui.overview.node_text import crumb_html, fact_rows, link, plain_text
from ecpfs_viewer.gui.overview.projection_view import ProjectionView
from ecpfs_viewer.gui.overview.stray_items import StrayItems
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.colormaps import plain_numbers, plot_colors, style_plot
from ecpfs_viewer.gui.widgets.display import FactsView, FindingsList, facts_scroll, tab_page
from ecpfs_viewer.gui.widgets.rows_table import fit_table, sortable
from ecpfs_viewer.model.ecpfs.nodes import Breadcrumb, NodeRef, breadcrumb
from ecpfs_viewer.model.tasks import Progress, ProgressCallback
from ecpfs_viewer.model.views.node_info import (
    Children,
    LeafItems,
    NodeInfo,
    Spread,
    children_of,
    leaf_items,
    node_info,
    node_spread,
)
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

if TYPE_CHECKING:
    from ecpfs_viewer.model.diagnostics.reachability import ReachabilityReport


@dataclass(frozen=True)
class NodePageData:
    """Everything the page shows before the spread: facts, breadcrumb, children or items."""

    info: NodeInfo
    crumbs: Breadcrumb
    children: Children | None
    items: LeafItems | None
    problem: str = ""  # why children or items could not be listed


def load_node_page(h: Hierarchy, ref: NodeRef, *, progress: ProgressCallback,
                   cancel: threading.Event) -> NodePageData:
    """Read a node's page (in a worker; the first node of a level decodes the level above's ids).

    From the node's own documents and those of its children: the statistics of its whole level
    (seconds on a level of 40,000 nodes) come after, by :func:`load_level_facts`."""
    info = node_info(h, ref, progress=progress, cancel=cancel, whole_level=False)
    crumbs = breadcrumb(h, ref, cancel=cancel)
    children = items = None
    problem = ""
    try:
        if info.exists and info.is_leaf:
            items = leaf_items(h, ref, whole_level=False)
        elif info.exists and info.is_leaf is False:
            children = children_of(h, ref, whole_level=False)
    except Exception as exc:  # the facts still show; the list says why it is empty
        problem = str(exc)
    return NodePageData(info, crumbs, children, items, problem)


def load_level_facts(h: Hierarchy, ref: NodeRef) -> NodeInfo:
    """The node's facts against its whole level (its median size, the level's findings about it)."""
    return node_info(h, ref)


def load_spread(h: Hierarchy, ref: NodeRef, *, progress: ProgressCallback, cancel: threading.Event) -> Spread:
    return node_spread(h, ref, progress=progress, cancel=cancel)


class NodePage(QWidget):
    """Everything about one node; links and double-clicks emit ``node_requested(path)``."""

    node_requested = Signal(str)
    loaded = Signal()  # the facts and children/items of the node asked for are on screen
    spread_shown = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runner = BackgroundRunner(self)
        self._spread_runner = BackgroundRunner(self)
        self._level_runner = BackgroundRunner(self)
        self._hierarchy: Hierarchy | None = None
        self._ref: NodeRef | None = None
        self._data: NodePageData | None = None
        self._spread: Spread | None = None
        self._build_ui()
        self.clear()

    # -- construction --------------------------------------------------------------------------
    #: more (label, plain text) fact rows for a node path, from diagnostics the window holds
    extra_facts: Callable[[str], list[tuple[str, str]]] | None = None

    def _build_ui(self) -> None:
        self.crumbs = QLabel()
        self.crumbs.setTextFormat(Qt.TextFormat.RichText)
        self.crumbs.linkActivated.connect(self._link)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(200)
        top = QHBoxLayout()
        top.addWidget(self.crumbs, 1)
        top.addWidget(self.progress)
        self.facts = FactsView(rich=True, label_stretch=0)
        self.facts.link_activated.connect(self._link)
        self.findings = FindingsList()
        self.findings.path_clicked.connect(self._link)

        self.listing_model = ListingModel(self)
        self.listing = QTableView()
        self.listing.setModel(self.listing_model)
        self.listing.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.listing.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.listing.setAlternatingRowColors(True)
        self.listing.verticalHeader().hide()
        self.listing.verticalHeader().setDefaultSectionSize(self.listing.fontMetrics().height() + 6)
        self.listing.horizontalHeader().setStretchLastSection(True)
        self.listing.setItemDelegateForColumn(3, SizeBarDelegate(self.listing))
        sortable(self.listing)
        self.listing.doubleClicked.connect(self._open_row)
        self.listing.activated.connect(self._open_row)
        self.listing_label = QLabel()
        self.listing_label.setWordWrap(True)
        listing_page = tab_page(self.listing_label, self.listing)

        self.spread_label = QLabel()
        self.spread_label.setWordWrap(True)
        self.spread_label.setTextFormat(Qt.TextFormat.RichText)
        self.spread_label.linkActivated.connect(self._link)
        self.spread_plot_widget = pg.PlotWidget(enableMenu=False)  # no context menu, none built
        self.spread_plot: pg.PlotItem = self.spread_plot_widget.getPlotItem()
        plain_numbers(self.spread_plot, ("bottom",))  # distances to the representative are fractions
        self.spread_plot.setLabel("left", "rows")
        self.spread_curve = pg.PlotDataItem(stepMode="center", fillLevel=0)
        self.spread_plot.addItem(self.spread_curve)
        spread_page = tab_page(self.spread_label, self.spread_plot_widget)

        self.projection = ProjectionView()
        self.projection.node_requested.connect(self._link)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(listing_page, "Children")
        self.tabs.addTab(spread_page, "Spread")
        self.tabs.addTab(self.projection, "Projection")
        self.strays = StrayItems()
        self.strays.node_requested.connect(self._link)
        self._strays_tab = self.tabs.addTab(self.strays, "Strays")
        self.tabs.setTabVisible(self._strays_tab, False)
        self.tabs.currentChanged.connect(self._tab_changed)

        upper = QSplitter(Qt.Orientation.Horizontal)
        upper.addWidget(facts_scroll(self.facts))
        upper.addWidget(self.findings)
        upper.setSizes([520, 360])
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(upper)
        split.addWidget(self.tabs)
        split.setSizes([200, 520])
        self.splitter = split
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(split, 1)
        self._apply_palette()

    # -- public API ----------------------------------------------------------------------------
    def show_node(self, hierarchy: Hierarchy, ref: NodeRef) -> None:
        """Show a node (reads in the background; the node shown before is cancelled)."""
        self.clear()
        self._hierarchy, self._ref = hierarchy, ref
        self.crumbs.setText(f"<b>{html.escape(ref.label)}</b>")
        self.progress.setRange(0, 0)
        self.progress.show()
        self.listing_label.setText(f"Reading {ref.path}…")
        self._runner.run(load_node_page, hierarchy, ref, on_result=self._on_loaded, on_error=self._on_failed,
                         on_progress=self._on_progress, heavy=True)

    def clear(self) -> None:
        """Nothing shown: drop pending results and cancel running reads."""
        self._runner.invalidate()
        self._spread_runner.invalidate()
        self._level_runner.invalidate()
        self.projection.clear()
        self._hierarchy, self._ref, self._data, self._spread = None, None, None, None
        self.crumbs.setText("")
        self.progress.hide()
        self.facts.set_rows([])
        self.findings.clear()
        self.listing_model.set_children(None)
        self.listing_label.setText("")
        self.spread_label.setText("")
        self.spread_curve.setData([0.0, 1.0], [0.0])

    @property
    def data(self) -> NodePageData | None:
        return self._data

    @property
    def shown(self) -> tuple[Hierarchy, NodeRef] | None:
        """The index and node on the page (loaded or loading), None when it is clear."""
        return None if self._hierarchy is None or self._ref is None else (self._hierarchy, self._ref)

    @property
    def spread(self) -> Spread | None:
        return self._spread

    @property
    def busy(self) -> bool:
        return self._runner.busy or self._spread_runner.busy or self._level_runner.busy or self.projection.busy

    def facts_text(self) -> str:
        """The facts as 'label: value' lines, as read."""
        return self.facts.text()

    def crumb_text(self) -> str:
        return plain_text(self.crumbs.text())

    def open_crumb(self, path: str) -> None:
        """Follow a breadcrumb link, as a click on it would."""
        self._link(path)

    def open_listing_row(self, row: int) -> None:
        """Open the child of a listing row, as a double-click would."""
        self._open_row(self.listing_model.index(row, 1))

    def set_reachability(self, report: ReachabilityReport | None) -> None:
        """The open index's self-reachability report (None: forget it); a leaf's page lists its strays."""
        self.strays.set_report(report)
        if self._data is not None:
            self._show_strays()

    def _show_strays(self) -> None:
        info = None if self._data is None else self._data.info
        is_leaf = info is not None and info.exists and bool(info.is_leaf)
        self.tabs.setTabVisible(self._strays_tab, is_leaf)
        self.strays.show_leaf(info.ref.node_id if is_leaf and info is not None else None)

    # -- results -------------------------------------------------------------------------------
    def _on_progress(self, value: Progress) -> None:
        self.progress.setRange(0, max(value.total, 1))
        self.progress.setValue(value.done)

    def _on_failed(self, message: str) -> None:
        self.progress.hide()
        self.listing_label.setText(f"Cannot read {self._ref.path if self._ref else 'the node'}: {message}")
        self.loaded.emit()

    def _on_loaded(self, data: NodePageData) -> None:
        self.progress.hide()
        self._data = data
        info = data.info
        self.crumbs.setText(crumb_html(data.crumbs))
        self._show_facts(data)
        self._show_listing(data)
        assert self._hierarchy is not None
        if info.exists and not info.ref.is_root and info.level_median is None:
            self._level_runner.run(load_level_facts, self._hierarchy, info.ref, on_result=self._on_level_facts,
                                   on_error=lambda _error: None)
        self.projection.set_node(self._hierarchy, info.ref, bool(info.is_leaf))
        self._show_strays()
        if info.exists and info.embeddings != "readable":
            self.spread_label.setText(f"No spread: the embeddings are {info.embeddings} (see the findings).")
        elif info.exists and not info.ref.is_root:
            self._start_spread()
        else:
            self.spread_label.setText("The index root has no representative to measure from."
                                      if info.ref.is_root else "This node does not exist.")
        if self.tabs.currentWidget() is self.projection and info.exists:
            self.projection.start()
        self.loaded.emit()

    def refresh_extra_facts(self) -> None:
        """Show the facts again with what ``extra_facts`` says now (a diagnostic arrived)."""
        if self._data is not None:
            self._show_facts(self._data)

    def _show_facts(self, data: NodePageData) -> None:
        extra = self.extra_facts(data.info.ref.path) if self.extra_facts is not None else []
        self.facts.set_rows(fact_rows(data.info) + [(label, html.escape(text)) for label, text in extra])
        findings = list(data.info.findings)
        if data.children is not None:
            findings += list(data.children.findings)
        if data.items is not None:
            findings += list(data.items.findings)
        self.findings.set_findings(list(dict.fromkeys(findings)), "No problems found for this node.")  # each once

    def _on_level_facts(self, info: NodeInfo) -> None:
        """The whole level's statistics arrived: the size against its median, its findings."""
        if self._data is None or info.ref != self._data.info.ref:
            return
        self._data = replace(self._data, info=info)
        self._show_facts(self._data)

    def _show_listing(self, data: NodePageData) -> None:
        if data.items is not None:
            items = data.items
            self.tabs.setTabText(0, "Items")
            self.listing_model.set_items(items)
            span = f"ids {items.id_range[0]:,} … {items.id_range[1]:,}" if items.id_range else "no ids"
            bad = f"; {items.problem_count:,} wrong (shown in place)" if items.problem_count else ""
            self.listing_label.setText(f"{items.count:,} items, {span}{bad}.")
        else:
            self.tabs.setTabText(0, "Children")
            self.listing_model.set_children(data.children)
            if data.children is not None:
                missing = data.children.missing
                note = f"; {missing:,} missing or broken (shown in place)" if missing else ""
                self.listing_label.setText(f"{len(data.children.rows):,} children{note}. "
                                           "Double-click a child to open it.")
            else:
                self.listing_label.setText(data.problem or "Nothing to list.")
        finding = self.listing_model.columnCount() - 1
        fit_table(self.listing, stretch=finding, optional=[finding])
        if data.children is not None:
            self.listing.setColumnWidth(3, 160)

    def _start_spread(self) -> None:
        assert self._hierarchy is not None and self._ref is not None
        self.spread_label.setText("Measuring the distance of each row to the representative…")
        self._spread_runner.run(load_spread, self._hierarchy, self._ref, on_result=self._on_spread,
                                on_error=self._on_spread_failed, on_progress=lambda _v: None)

    def _on_spread(self, spread: Spread) -> None:
        self._spread = spread
        parent, row = spread.representative
        centre = "index_root/embeddings" if parent.is_root else f"{parent.path}/embeddings"
        far = ", ".join(f"row {r}" + (f" (id {i:,})" if i is not None else "") for r, i in spread.farthest[:3])
        self.spread_label.setText(
            f"{html.escape(spread.measure)} of {spread.count:,} rows to the representative (row {row} of "
            f"{link(centre)}): min {spread.minimum:.4g} · median {spread.median:.4g} · max {spread.maximum:.4g}"
            + (f"<br>Farthest: {html.escape(far)}" if far else ""))
        self.spread_plot.setLabel("bottom", spread.measure)
        self.spread_curve.setData(spread.edges, spread.counts)
        self.spread_plot.enableAutoRange()
        self.spread_shown.emit()

    def _on_spread_failed(self, message: str) -> None:
        self.spread_label.setText(f"No spread: {html.escape(message)}")
        self.spread_shown.emit()

    # -- helpers -------------------------------------------------------------------------------
    def _link(self, path: str) -> None:
        self.node_requested.emit(path.strip("/"))  # '/' stands for the root (an empty href is no link)

    def _open_row(self, index: QModelIndex) -> None:
        path = self.listing_model.path_at(index.row()) if index.isValid() else None
        if path:
            self.node_requested.emit(path)

    def _tab_changed(self, _index: int) -> None:
        if self.tabs.currentWidget() is self.projection and self._data is not None and self._data.info.exists:
            self.projection.start()

    def _apply_palette(self) -> None:
        background, _, accent = plot_colors(self.palette())
        self.spread_plot_widget.setBackground(background)
        style_plot(self.spread_plot, self.palette())
        fill = pg.mkColor(accent)
        fill.setAlpha(110)
        self.spread_curve.setPen(pg.mkPen(accent, width=1))
        self.spread_curve.setBrush(pg.mkBrush(fill))

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_palette()
        super().changeEvent(event)
