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

import heapq
import html
import re
import threading
from dataclasses import dataclass
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, QRect, Qt, Signal
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QSplitter,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.overview.projection_view import ProjectionView
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.colormaps import plot_colors, style_plot
from ecpfs_viewer.gui.widgets.display import FindingsList, tab_page
from ecpfs_viewer.gui.widgets.rows_table import fit_columns
from ecpfs_viewer.model.ecpfs import Finding
from ecpfs_viewer.model.ecpfs.nodes import Breadcrumb, NodeRef, breadcrumb
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

_ROOT = QModelIndex()
PATH_ROLE = Qt.ItemDataRole.UserRole
BAR_ROLE = Qt.ItemDataRole.UserRole + 2  # fraction of the largest child, for the size bar


@dataclass(frozen=True)
class NodePageData:
    """Everything the page shows before the spread: facts, breadcrumb, children or items."""

    info: NodeInfo
    crumbs: Breadcrumb
    children: Children | None
    items: LeafItems | None
    problem: str = ""  # why children or items could not be listed


def load_node_page(h: Hierarchy, ref: NodeRef, *, progress: Any, cancel: threading.Event) -> NodePageData:
    """Read a node's page (in a worker; the first node of a level decodes the level above's ids)."""
    def report(done: int, total: int) -> None:
        progress((done, total))

    info = node_info(h, ref, progress=report, cancel=cancel)
    crumbs = breadcrumb(h, ref, cancel=cancel)
    children = items = None
    problem = ""
    try:
        if info.exists and info.is_leaf:
            items = leaf_items(h, ref)
        elif info.exists and info.is_leaf is False:
            children = children_of(h, ref)
    except Exception as exc:  # the facts still show; the list says why it is empty
        problem = str(exc)
    return NodePageData(info, crumbs, children, items, problem)


def load_spread(h: Hierarchy, ref: NodeRef, *, progress: Any, cancel: threading.Event) -> Spread:
    return node_spread(h, ref, progress=lambda done, total: progress((done, total)), cancel=cancel)


def link(path: str, text: str | None = None) -> str:
    return f'<a href="{html.escape(path)}">{html.escape(text or path)}</a>'


def fact_rows(info: NodeInfo) -> list[tuple[str, str]]:
    """(label, rich text) rows of the facts grid; paths are links."""
    rows: list[tuple[str, str]] = [("Node", html.escape(info.ref.path))]
    kind = "unknown" if info.is_leaf is None else "leaf (holds items)" if info.is_leaf else "internal (leads nodes)"
    rows.append(("Level", f"{info.ref.level}" + ("" if info.ref.is_root else f", node id {info.ref.node_id}")
                 + f" · {kind}"))
    if not info.exists:
        rows.append(("Exists", "no: see the findings"))
    if info.rows is not None:
        size = f"{info.rows:,} rows"
        if info.relative_size is not None and info.level_median:
            size += f" · {info.relative_size:.2f} x the level's median ({info.level_median:,.0f} rows, " \
                    f"{info.level_nodes:,} nodes)"
        rows.append(("Size", size))
    if info.dim is not None:
        rows.append(("Vectors", f"{info.dim} dimensions, {html.escape(info.dtype or '?')}"))
    rep = info.representative
    if rep is not None:
        parent = "index_root/embeddings" if rep.parent.is_root else f"{rep.parent.path}/embeddings"
        text = f"row {rep.row} of {link(parent)}"
        if rep.item_id is not None:
            text += f" · item id {rep.item_id:,} (rep_item_ids[{rep.rep_row:,}])"
        elif rep.note:
            text += f" · item id unknown: {html.escape(rep.note)}"
        rows.append(("Representative", text))
    if info.chunk_use is not None:
        use = info.chunk_use
        share = "" if use.fraction is None else f" ({use.fraction:.1%} used)" if use.fraction < 0.1 else \
            f" ({use.fraction:.0%} used)"
        rows.append(("Chunk use", f"{use.rows:,} rows in {use.chunks:,} chunk{'s' if use.chunks != 1 else ''} "
                                  f"of {use.chunk_rows:,} rows{share}"))
    return rows


def crumb_html(crumbs: Breadcrumb) -> str:
    """index > lvl_1/node_3 > lvl_2/node_50 > ..., each known node a link (the last one plain)."""
    parts = []
    for i, crumb in enumerate(crumbs.crumbs):
        last = i == len(crumbs.crumbs) - 1
        if crumb.ref is None:
            tip = html.escape(crumb.finding.message) if crumb.finding else "unknown"
            parts.append(f'<span title="{tip}">?</span>')
        elif last:
            parts.append(f"<b>{html.escape(crumb.label)}</b>")
        else:
            parts.append(link("/" if crumb.ref.is_root else crumb.ref.path, crumb.label))
    return " &gt; ".join(parts)


class SizeBarDelegate(QStyledItemDelegate):
    """Draws a horizontal bar of the fraction in BAR_ROLE (the child's size against the largest)."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
              ) -> None:
        super().paint(painter, option, index)
        fraction = index.data(BAR_ROLE)
        if fraction is None:
            return
        rect: QRect = option.rect.adjusted(3, 4, -3, -4)
        rect.setWidth(max(1, int(rect.width() * float(fraction))))
        painter.save()
        painter.fillRect(rect, option.palette.color(QPalette.ColorRole.Highlight))
        painter.restore()


class ListingModel(QAbstractTableModel):
    """Children (row, child, rows, size bar, finding) or leaf members (row, item id, finding)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._headers: list[str] = []
        self._children: Children | None = None
        self._items: LeafItems | None = None
        self._problems: dict[int, Finding] = {}
        self._largest = 1

    def set_children(self, children: Children | None) -> None:
        self.beginResetModel()
        self._children, self._items = children, None
        self._headers = ["Row", "Child node", "Rows", "Size", "Finding"]
        sizes = [r.rows for r in children.rows if r.rows is not None] if children else []
        self._largest = max(sizes, default=1) or 1
        self.endResetModel()

    def set_items(self, items: LeafItems | None) -> None:
        self.beginResetModel()
        self._children, self._items = None, items
        self._headers = ["Row", "Item id", "Finding"]
        self._problems = {p.row: p.finding for p in items.problems} if items else {}
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        if parent.isValid():
            return 0
        if self._children is not None:
            return len(self._children.rows)
        return self._items.count if self._items is not None else 0

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(self._headers)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self._headers[section]
        return None

    def path_at(self, row: int) -> str | None:
        """The child a row leads (None for leaf members)."""
        return self._children.rows[row].ref.path if self._children is not None else None

    def finding_at(self, row: int) -> Finding | None:
        if self._children is not None:
            return self._children.rows[row].finding
        return self._problems.get(row)

    def _text(self, row: int, column: int) -> str:
        """What a cell shows."""
        finding = self.finding_at(row)
        message = finding.message if finding else ""
        if self._children is not None:
            child = self._children.rows[row]
            return [str(child.row), child.ref.path, "—" if child.rows is None else f"{child.rows:,}", "",
                    message][column]
        if self._items is not None:
            return [str(row), str(int(self._items.ids[row])), message][column]
        return ""

    def longest_texts(self, column: int, count: int = 3) -> list[str]:
        """The longest texts of a column (for fit_columns), found without formatting every leaf member."""
        if self._children is not None:
            texts = (self._text(row, column) for row in range(len(self._children.rows)))
            return heapq.nlargest(count, texts, key=len)
        if self._items is None or self._items.count == 0:
            return []
        if column == 0:
            return [str(self._items.count - 1)]
        if column == 1:
            return [str(int(self._items.ids.max())), str(int(self._items.ids.min()))]
        return heapq.nlargest(count, (finding.message for finding in self._problems.values()), key=len)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, column = index.row(), index.column()
        finding = self.finding_at(row)
        if role == PATH_ROLE:
            return self.path_at(row)
        if role == Qt.ItemDataRole.DisplayRole:
            return self._text(row, column)
        if self._children is not None:
            child = self._children.rows[row]
            if role == BAR_ROLE and column == 3 and child.rows is not None:
                return child.rows / self._largest
            if role == Qt.ItemDataRole.ToolTipRole:
                return (finding.message + "\n" if finding else "") + f"Double-click to open {child.ref.path}"
        elif self._items is not None and role == Qt.ItemDataRole.ToolTipRole and finding:
            return finding.message
        if role == Qt.ItemDataRole.ForegroundRole and finding is not None:
            return pg.mkColor("#d62728")
        if role == Qt.ItemDataRole.TextAlignmentRole and column < 3 and (column != 1 or self._items is not None):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class NodePage(QWidget):
    """Everything about one node; links and double-clicks emit ``node_requested(path)``."""

    node_requested = Signal(str)
    loaded = Signal()  # the facts and children/items of the node asked for are on screen
    spread_shown = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._runner = BackgroundRunner(self)
        self._spread_runner = BackgroundRunner(self)
        self._hierarchy: Hierarchy | None = None
        self._ref: NodeRef | None = None
        self._data: NodePageData | None = None
        self._spread: Spread | None = None
        self._build_ui()
        self.clear()

    # -- construction --------------------------------------------------------------------------
    def _build_ui(self) -> None:
        self.crumbs = QLabel()
        self.crumbs.setTextFormat(Qt.TextFormat.RichText)
        self.crumbs.linkActivated.connect(self._link)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(200)
        top = QHBoxLayout()
        top.addWidget(self.crumbs, 1)
        top.addWidget(self.progress)
        self.facts = QWidget()
        self.facts_grid = QGridLayout(self.facts)
        self.facts_grid.setContentsMargins(4, 4, 4, 4)
        self.facts_grid.setHorizontalSpacing(16)
        self.facts_grid.setVerticalSpacing(3)
        self.facts_grid.setColumnStretch(1, 1)
        self._fact_labels: list[tuple[QLabel, QLabel]] = []
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
        self.listing.doubleClicked.connect(self._open_row)
        self.listing.activated.connect(self._open_row)
        self.listing_label = QLabel()
        self.listing_label.setWordWrap(True)
        listing_page = tab_page(self.listing_label, self.listing)

        self.spread_label = QLabel()
        self.spread_label.setWordWrap(True)
        self.spread_label.setTextFormat(Qt.TextFormat.RichText)
        self.spread_label.linkActivated.connect(self._link)
        self.spread_plot_widget = pg.PlotWidget()
        self.spread_plot: pg.PlotItem = self.spread_plot_widget.getPlotItem()
        self.spread_plot.setMenuEnabled(False)
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
        self.tabs.currentChanged.connect(self._tab_changed)

        upper = QSplitter(Qt.Orientation.Horizontal)
        upper.addWidget(self.facts)
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
        self.projection.clear()
        self._hierarchy, self._ref, self._data, self._spread = None, None, None, None
        self.crumbs.setText("")
        self.progress.hide()
        self._set_facts([])
        self.findings.clear()
        self.listing_model.set_children(None)
        self.listing_label.setText("")
        self.spread_label.setText("")
        self.spread_curve.setData([0.0, 1.0], [0.0])

    @property
    def ref(self) -> NodeRef | None:
        return self._ref

    @property
    def data(self) -> NodePageData | None:
        return self._data

    @property
    def spread(self) -> Spread | None:
        return self._spread

    @property
    def busy(self) -> bool:
        return self._runner.busy or self._spread_runner.busy or self.projection.busy

    def facts_text(self) -> str:
        """The facts as 'label: value' lines, as read."""
        return "\n".join(f"{_plain(key.text())}: {_plain(value.text())}" for key, value in self._fact_labels)

    def crumb_text(self) -> str:
        return _plain(self.crumbs.text())

    def open_crumb(self, path: str) -> None:
        """Follow a breadcrumb link, as a click on it would."""
        self._link(path)

    def open_listing_row(self, row: int) -> None:
        """Open the child of a listing row, as a double-click would."""
        self._open_row(self.listing_model.index(row, 1))

    # -- results -------------------------------------------------------------------------------
    def _on_progress(self, value: tuple[int, int]) -> None:
        self.progress.setRange(0, max(value[1], 1))
        self.progress.setValue(value[0])

    def _on_failed(self, message: str) -> None:
        self.progress.hide()
        self.listing_label.setText(f"Cannot read {self._ref.path if self._ref else 'the node'}: {message}")
        self.loaded.emit()

    def _on_loaded(self, data: NodePageData) -> None:
        self.progress.hide()
        self._data = data
        info = data.info
        self.crumbs.setText(crumb_html(data.crumbs))
        self._set_facts(fact_rows(info))
        findings = list(info.findings)
        if data.children is not None:
            findings += list(data.children.findings)
        if data.items is not None:
            findings += list(data.items.findings)
        self.findings.set_findings(findings, "No problems found for this node.")
        self._show_listing(data)
        assert self._hierarchy is not None
        self.projection.set_node(self._hierarchy, info.ref, bool(info.is_leaf))
        if info.exists and not info.ref.is_root:
            self._start_spread()
        else:
            self.spread_label.setText("The index root has no representative to measure from."
                                      if info.ref.is_root else "This node does not exist.")
        if self.tabs.currentWidget() is self.projection and info.exists:
            self.projection.start()
        self.loaded.emit()

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
        fit_columns(self.listing, range(min(3, self.listing_model.columnCount())))
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
    def _set_facts(self, rows: list[tuple[str, str]]) -> None:
        for old in self._fact_labels:
            for widget in old:
                self.facts_grid.removeWidget(widget)
                widget.deleteLater()
        self._fact_labels = []
        for i, (label, value) in enumerate(rows):
            key = QLabel(f"<b>{html.escape(label)}</b>")
            key.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
            text = QLabel(value)
            text.setTextFormat(Qt.TextFormat.RichText)
            text.setWordWrap(True)
            text.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
            text.linkActivated.connect(self._link)
            self._fact_labels.append((key, text))
            self.facts_grid.addWidget(key, i, 0)
            self.facts_grid.addWidget(text, i, 1)
            self.facts_grid.setRowStretch(i, 0)
        self.facts_grid.setRowStretch(len(rows), 1)

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

    def changeEvent(self, event: Any) -> None:
        from PySide6.QtCore import QEvent

        if event.type() == QEvent.Type.PaletteChange:
            self._apply_palette()
        super().changeEvent(event)


def _plain(text: str) -> str:
    """Rich text as read: tags removed, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", text.replace("<br>", "\n")))

