"""The index overview: the summary and validation report of an index, or the statistics of a level.

Shown for the root of an ecpfs index (``show_index``) and for each ``lvl_N`` (``show_level``).
Every number comes from ``model.ecpfs`` / ``model.validation`` run in the background; findings,
largest and smallest nodes, and bars of the size profile are links: clicking one emits
``node_requested(path)`` so the window can select that node.
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSplitter,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.icons import standard_icon
from ecpfs_viewer.gui.metadata_panel import MessageBanner
from ecpfs_viewer.gui.workers import BackgroundRunner
from ecpfs_viewer.model.ecpfs import (
    Finding,
    Generation,
    IndexSummary,
    LevelStats,
    ReferencedChildren,
    Severity,
    referenced_children,
    shared_level_stats,
    summarize,
)
from ecpfs_viewer.model.formatting import count_noun, format_age, format_value
from ecpfs_viewer.model.hierarchy import Hierarchy
from ecpfs_viewer.model.validation import CheckProgress, ValidationReport, validate

PROGRESS_INTERVAL_S = 0.1  # shortest time between two shown validation progress updates
_SEVERITY_ICONS = {Severity.ERROR: "SP_MessageBoxCritical", Severity.WARNING: "SP_MessageBoxWarning",
                   Severity.INFO: "SP_MessageBoxInformation"}
PATH_ROLE = Qt.ItemDataRole.UserRole


def _num(value: Any, absent: str = "—") -> str:
    return format_value(value, absent, grouped=True)



def summary_rows(summary: IndexSummary) -> list[tuple[str, str]]:
    """The index summary as (label, text) rows, in the order `ecp info` prints, then ours."""
    layout = summary.layout
    version = summary.format_version
    if version is None:
        version_text = "missing, treated as 1" if layout.generation is Generation.UNSTAMPED else "missing"
    else:
        version_text = str(version) + ("" if layout.supported else " (unsupported)")
    gap = summary.gap
    next_text = _num(summary.next_item_id)
    if gap is not None and gap > 0:
        next_text += f"  ({gap:,} ids reserved but never written: likely a crash during insert)"
    elif gap is not None and gap < 0:
        next_text += "  (below Total Items: likely corruption)"
    fan_out = _num(summary.fan_out)
    if summary.expected_fan_out is not None:
        same = summary.fan_out == summary.expected_fan_out
        fan_out += f"  (expected ceil(R^(1/L)) = {summary.expected_fan_out}{'' if same else ', differs'})"
    normalized = _num(summary.is_normalized) + ("" if summary.normalized_stored else " (absent, read as false)")
    rows = [
        ("Index", layout.generation.value),
        ("Format version", version_text),
        ("Levels", _num(summary.levels)),
        ("Metric", _num(summary.metric)),
        ("Normalized", normalized),
        ("Total items", _num(summary.total_items)),
        ("Next item id", next_text),
        ("Representatives (R)", _num(summary.representatives)
         + ("" if summary.has_rep_embeddings else "  (no rep_embeddings array)")),
        ("Fan-out (root rows)", fan_out),
        ("Dimension", _num(summary.dim)),
        ("Stored dtype", _num(summary.dtype)),
        ("Node chunk rows", _num(summary.node_chunk_rows)),
        ("Representative chunk rows", _num(summary.rep_chunk_rows)),
        ("Written by", _num(summary.writer, "unknown (no _zarrs attribute)")),
        ("Saved queries", _num(summary.saved_query_count)),
    ]
    for query in summary.saved_queries[:20]:
        age = "?" if query.age_seconds is None else format_age(query.age_seconds)
        rows.append((f"  query {query.query_id}", f"saved {age} ago; {_num(query.buffered_items, '0')} buffered items, "
                                                  f"{_num(query.heap_entries, '0')} heap entries, "
                                                  f"exclude {query.exclude_size:,}"))
    return rows


def _set_label(line: pg.InfiniteLine, text: str) -> None:
    line.label.setFormat(text)
    line.label.setText(text)


def _percent(fraction: float) -> str:
    return "< 0.01%" if 0 < fraction < 1e-4 else f"{fraction:.2%}" if fraction < 0.1 else f"{fraction:.0%}"


def level_rows(stats: LevelStats, summary: IndexSummary) -> list[tuple[str, str]]:
    """The level's statistics as (label, text) rows."""
    count = f"{stats.node_count:,}"
    if stats.max_nodes is not None:
        count += f" of at most {stats.max_nodes:,}  (min(ns^{stats.level}, R))"
    gaps = _num(stats.gap_count)
    if stats.gap_ids:
        shown = ", ".join(str(g) for g in stats.gap_ids[:12])
        gaps += f"  (ids {shown}{', …' if stats.gap_count > 12 else ''})"
    rows = [("Level", f"{stats.path}  ({'leaves' if stats.is_leaf else 'internal'})"
             if stats.is_leaf is not None else stats.path),
            ("Nodes", count), ("Gaps (ids with no node)", gaps)]
    if stats.node_count:
        rows.append(("Node size (rows)", f"min {stats.min_size:,} · median {stats.median_size:,.4g} · "
                                         f"mean {stats.mean_size:,.4g} · max {stats.max_size:,}"))
    rows.append(("Rows in this level", _num(stats.total_rows)))
    if stats.is_leaf:
        match = "matches" if stats.leaf_sum == summary.total_items else "differs from"
        rows.append(("Sum of leaf sizes", f"{stats.leaf_sum:,}  ({match} total items {_num(summary.total_items)})"))
    if stats.underfill is not None and stats.chunk_rows:
        rows.append(
            (
                "Chunk use",
                f"{_percent(stats.underfill)} of the {stats.chunk_rows:,}-row first chunk on average; "
                f"{stats.nodes_in_one_chunk:,} of {stats.node_count:,} nodes fit in one chunk "
                "(reading a node decodes whole chunks)",
            )
        )
    if stats.out_of_range_ids:
        rows.append(("Ids above the limit", ", ".join(str(i) for i in stats.out_of_range_ids[:12])))
    if stats.empty_nodes:
        rows.append(("Empty node groups", _num(len(stats.empty_nodes))))
    if stats.other_entries:
        rows.append(("Other entries", ", ".join(stats.other_entries[:10])))
    rows.append(("Computed in", f"{stats.seconds * 1000:.0f} ms from metadata (no chunk decoded)"))
    return rows


class _FactsView(QWidget):
    """Label/value pairs in a grid; values wrap and are selectable."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(4, 4, 4, 4)
        self.grid.setHorizontalSpacing(16)
        self.grid.setVerticalSpacing(3)
        self.grid.setColumnStretch(1, 1)

    def set_rows(self, rows: list[tuple[str, str]]) -> None:
        while self.grid.count():
            item = self.grid.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        for i, (label, value) in enumerate(rows):
            key = QLabel(f"<b>{html.escape(label)}</b>")
            key.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
            text = QLabel(value)
            text.setTextFormat(Qt.TextFormat.PlainText)
            text.setWordWrap(True)
            text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            text.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
            self.grid.addWidget(key, i, 0)
            self.grid.addWidget(text, i, 1)
            self.grid.setRowStretch(i, 0)
        self.grid.setRowStretch(len(rows), 1)

    def text(self) -> str:
        """All rows as 'label: value' lines (what the user reads)."""
        lines = []
        for row in range(self.grid.rowCount()):
            key, value = self.grid.itemAtPosition(row, 0), self.grid.itemAtPosition(row, 1)
            if key is not None and value is not None:
                lines.append(f"{_plain(key.widget().text())}: {value.widget().text()}")
        return "\n".join(lines)


def _plain(text: str) -> str:
    return html.unescape(text.replace("<b>", "").replace("</b>", ""))


class FindingsList(QTableWidget):
    """Findings with a severity icon, the path and the whole message (wrapped); a click requests the path."""

    path_clicked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, 2, parent)
        self.setHorizontalHeaderLabels(["Path", "Finding"])
        self.verticalHeader().hide()
        self.setShowGrid(False)
        self.setWordWrap(True)
        self.setAlternatingRowColors(True)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        header = self.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.resizeSection(0, 190)
        header.sectionResized.connect(lambda *_: self.resizeRowsToContents())
        self.itemClicked.connect(self._on_clicked)
        self.itemActivated.connect(self._on_clicked)

    def set_findings(self, findings: list[Finding], empty_text: str = "No problems found.") -> None:
        self.clearContents()
        self.setRowCount(0)
        for finding in findings:
            message = finding.message + (f"  [sampled: {finding.sampled}]" if finding.sampled else "")
            self._add_row(
                standard_icon(_SEVERITY_ICONS[finding.severity]),
                finding.path or "/",
                message,
                finding.path,
                f"{finding.severity.value}: {message}\nClick to select the node.",
            )
        if not findings:
            self._add_row(standard_icon("SP_DialogApplyButton"), "", empty_text, None, "")
        self.resizeRowsToContents()

    def _add_row(self, icon: Any, path_text: str, message: str, path: str | None, tip: str) -> None:
        row = self.rowCount()
        self.insertRow(row)
        where = QTableWidgetItem(icon, path_text)
        what = QTableWidgetItem(message)
        for item in (where, what):
            item.setData(PATH_ROLE, path)
            item.setToolTip(tip)
            item.setTextAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.setItem(row, 0, where)
        self.setItem(row, 1, what)

    def row_texts(self) -> list[tuple[str, str]]:
        """(path, message) of every row as shown."""
        return [(self.item(r, 0).text(), self.item(r, 1).text()) for r in range(self.rowCount())]

    def _on_clicked(self, item: QTableWidgetItem) -> None:
        path = item.data(PATH_ROLE)
        if path is not None:
            self.path_clicked.emit(path)

    def clear(self) -> None:
        self.clearContents()
        self.setRowCount(0)


class NodeList(QTreeWidget):
    """Nodes with their row counts; clicking one requests its path."""

    path_clicked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setHeaderLabels(["Node", "Rows"])
        self.setRootIsDecorated(False)
        self.setAlternatingRowColors(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        header = self.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.headerItem().setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        self.itemClicked.connect(lambda item, _c: self.path_clicked.emit(item.data(0, PATH_ROLE)))
        self._fit_columns()

    def set_nodes(self, nodes: list[Any]) -> None:
        self.clear()
        for node in nodes:
            item = QTreeWidgetItem([node.path.rsplit("/", 1)[-1], f"{node.rows:,}"])
            item.setData(0, PATH_ROLE, node.path)
            item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            item.setToolTip(0, f"{node.path}: {node.rows:,} rows. Click to select it.")
            item.setToolTip(1, item.toolTip(0))
            self.addTopLevelItem(item)
        self._fit_columns()

    def _fit_columns(self) -> None:
        """Size both columns to their text once (about ten rows, so cheap) and ask for that width."""
        spacing = self.fontMetrics().horizontalAdvance("  ")
        for column in (0, 1):
            self.resizeColumnToContents(column)
            self.setColumnWidth(column, self.columnWidth(column) + spacing)
        scrollbar = self.style().pixelMetric(self.style().PixelMetric.PM_ScrollBarExtent)
        self.setFixedWidth(self.header().length() + 2 * self.frameWidth() + scrollbar)


def _group(title: str, widget: QWidget) -> QGroupBox:
    box = QGroupBox(title)
    layout = QVBoxLayout(box)
    layout.setContentsMargins(6, 6, 6, 6)
    layout.addWidget(widget)
    return box


@dataclass(frozen=True)
class LevelView:
    """What the level page draws: the statistics plus the summary they are judged against."""

    summary: IndexSummary
    stats: LevelStats


def compute_level_view(h: Hierarchy, level: int) -> LevelView:
    """Summary and level statistics (metadata only, shared with validation), for the worker thread."""
    summary = summarize(h)
    return LevelView(summary, shared_level_stats(h, level, summary))


def _missing_children(h: Hierarchy, view: LevelView, *, progress: Any, cancel: Any) -> ReferencedChildren:
    """Referenced-but-missing children of a level (decodes the parents' node_ids), for the worker."""
    return referenced_children(
        h,
        view.stats.level,
        view.summary,
        view.stats,
        progress=lambda done, total: progress((done, total)),
        cancel=cancel,
    )


class IndexOverviewPanel(QWidget):
    """Summary and validation of an index (root), or statistics of one level (lvl_N)."""

    node_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._summary_runner = BackgroundRunner(self)
        self._check_runner = BackgroundRunner(self)
        self._level_runner = BackgroundRunner(self)
        self._refs_runner = BackgroundRunner(self)
        self._hierarchy: Hierarchy | None = None
        self._profile_paths: list[str] = []
        self.summary: IndexSummary | None = None
        self.report: ValidationReport | None = None
        self.level_view: LevelView | None = None
        self._last_progress = float("-inf")

        outer = QVBoxLayout(self)
        outer.setContentsMargins(6, 6, 6, 6)
        self.banner = MessageBanner()
        outer.addWidget(self.banner)
        self.status = QLabel()
        self.status.setWordWrap(True)
        outer.addWidget(self.status)
        self.stack = QStackedWidget()
        outer.addWidget(self.stack, 1)

        # Index page: summary on the left, validation report on the right.
        self.index_page = QSplitter(Qt.Orientation.Horizontal)
        self.facts = _FactsView()
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(self.facts)
        self.index_page.addWidget(_group("Index summary", scroll))
        report_box = QWidget()
        report_layout = QVBoxLayout(report_box)
        report_layout.setContentsMargins(0, 0, 0, 0)
        self.verdict = QLabel()
        self.verdict.setWordWrap(True)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.hide()
        self.findings = FindingsList()
        self.findings.path_clicked.connect(self.node_requested)
        self.checked = QLabel()
        self.checked.setWordWrap(True)
        self.checked.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        report_layout.addWidget(self.verdict)
        report_layout.addWidget(self.progress)
        report_layout.addWidget(self.findings, 1)
        report_layout.addWidget(self.checked)
        self.index_page.addWidget(_group("Validation", report_box))
        self.index_page.setStretchFactor(0, 4)
        self.index_page.setStretchFactor(1, 5)
        self.index_page.setSizes([540, 700])
        self.stack.addWidget(self.index_page)

        # Level page: facts and node lists on top, histogram and profile below.
        self.level_page = QSplitter(Qt.Orientation.Vertical)
        top = QWidget()
        top_layout = QHBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        self.level_facts = _FactsView()
        level_scroll = QScrollArea()
        level_scroll.setWidgetResizable(True)
        level_scroll.setFrameShape(QFrame.Shape.NoFrame)
        level_scroll.setWidget(self.level_facts)
        level_box = QWidget()
        level_layout = QVBoxLayout(level_box)
        level_layout.setContentsMargins(0, 0, 0, 0)
        level_layout.addWidget(level_scroll, 1)
        refs_row = QHBoxLayout()
        self.refs_button = QPushButton("Find missing children")
        self.refs_button.setToolTip(
            "Decode the node_ids of the level above (the only step here that reads "
            "chunks) and list referenced nodes that do not exist"
        )
        self.refs_button.clicked.connect(self._find_missing_children)
        self.refs_label = QLabel()
        self.refs_label.setWordWrap(True)
        self.refs_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        refs_row.addWidget(self.refs_button)
        refs_row.addWidget(self.refs_label, 1)
        level_layout.addLayout(refs_row)
        top_layout.addWidget(_group("Level", level_box), 3)
        self.largest = NodeList()
        self.smallest = NodeList()
        self.largest.path_clicked.connect(self.node_requested)
        self.smallest.path_clicked.connect(self.node_requested)
        top_layout.addWidget(_group("Largest nodes", self.largest), 0)
        top_layout.addWidget(_group("Smallest nodes", self.smallest), 0)
        self.level_findings = FindingsList()
        self.level_findings.path_clicked.connect(self.node_requested)
        self.level_page.addWidget(top)
        self.level_page.addWidget(_group("Problems on this level", self.level_findings))
        plots = QWidget()
        plots_layout = QHBoxLayout(plots)
        plots_layout.setContentsMargins(0, 0, 0, 0)
        self.histogram_view = pg.PlotWidget()
        self.histogram_plot = self.histogram_view.getPlotItem()
        self.histogram_plot.setTitle("Node sizes")
        self.histogram_plot.setLabel("bottom", "rows per node")
        self.histogram_plot.setLabel("left", "nodes")
        self.histogram_bars = pg.BarGraphItem(x0=[], x1=[], height=[], y0=0)
        self.histogram_plot.addItem(self.histogram_bars)
        self.median_line = pg.InfiniteLine(
            angle=90, movable=False, label="median", labelOpts={"position": 0.92, "anchors": [(0, 0), (0, 0)]}
        )
        self.histogram_plot.addItem(self.median_line)
        self.profile_view = pg.PlotWidget()
        self.profile_plot = self.profile_view.getPlotItem()
        self.profile_plot.setTitle("Sorted size profile (click a bar to open the node)")
        self.profile_plot.setLabel("bottom", "nodes, largest first")
        self.profile_plot.setLabel("left", "rows")
        # A filled step curve, not 4,000 bar rectangles: sub-pixel bars would be dropped when drawn.
        self.profile_bars = pg.PlotDataItem(stepMode="center", fillLevel=0)
        self.profile_plot.addItem(self.profile_bars)
        self.chunk_line = pg.InfiniteLine(
            angle=0, movable=False, label="chunk rows", labelOpts={"position": 0.85, "anchors": [(0.5, 1), (0.5, 1)]}
        )
        self.profile_plot.addItem(self.chunk_line)
        self.profile_view.scene().sigMouseClicked.connect(self._on_profile_clicked)
        for view in (self.histogram_view, self.profile_view):
            view.setMinimumHeight(180)
            plots_layout.addWidget(view)
        self.level_page.addWidget(plots)
        self.level_page.setStretchFactor(0, 3)
        self.level_page.setStretchFactor(1, 1)
        self.level_page.setStretchFactor(2, 4)
        self.level_page.setSizes([280, 90, 380])
        top.setMinimumHeight(200)
        self.stack.addWidget(self.level_page)
        self._apply_palette()
        self.clear()

    # -- public API ------------------------------------------------------------------------------
    def clear(self) -> None:
        """Forget what is shown and drop every pending result."""
        for runner in (self._summary_runner, self._check_runner, self._level_runner, self._refs_runner):
            runner.invalidate()
        self.summary = self.report = self.level_view = None
        self.banner.clear()
        self.status.setText("Select the root of an ecpfs index or one of its lvl_N groups.")
        self.facts.set_rows([])
        self.findings.clear()
        self.verdict.clear()
        self.checked.clear()
        self.progress.hide()
        self.level_facts.set_rows([])
        self.refs_label.clear()
        self.refs_button.setEnabled(False)
        self.level_findings.clear()
        self.largest.clear()
        self.smallest.clear()
        self._set_plots(None)

    def show_index(self, hierarchy: Hierarchy) -> None:
        """Summarise the index and validate it, both in the background."""
        self.clear()
        self.stack.setCurrentWidget(self.index_page)
        self.status.setText("Reading the index summary …")
        self.verdict.setText("Validating …")
        self.progress.setRange(0, 0)
        self.progress.show()
        self._last_progress = float("-inf")
        self._summary_runner.run(summarize, hierarchy, on_result=self._on_summary, on_error=self._on_failed)
        self._check_runner.run(
            validate,
            hierarchy,
            on_result=self._on_report,
            on_error=self._on_check_failed,
            on_progress=self._on_check_progress,
            heavy=True,
        )

    def show_level(self, hierarchy: Hierarchy, level: int) -> None:
        """Node statistics of lvl_{level}, from metadata, in the background."""
        self.clear()
        self._hierarchy = hierarchy
        self.stack.setCurrentWidget(self.level_page)
        self.status.setText(f"Reading the metadata of lvl_{level} …")
        # Not a heavy job: validation computes every level's statistics first and shares them, so
        # this is usually a lookup, and it must not wait for a whole (remote) validation to finish.
        self._level_runner.run(compute_level_view, hierarchy, level, on_result=self._on_level, on_error=self._on_failed)

    def summary_text(self) -> str:
        """The facts shown on the current page, as plain text (for tests and copying)."""
        page = self.facts if self.stack.currentWidget() is self.index_page else self.level_facts
        return page.text()

    @property
    def busy(self) -> bool:
        return any(r.busy for r in (self._summary_runner, self._check_runner, self._level_runner, self._refs_runner))

    # -- results ---------------------------------------------------------------------------------
    def _show_layout_banner(self, summary: IndexSummary) -> None:
        layout = summary.layout
        if layout.supported:
            self.banner.clear()
            return
        if layout.generation is Generation.NEWER:
            text = f"Unsupported index: {layout.reason}."
        elif layout.is_legacy:
            text = (
                f"Legacy index: {layout.reason}. Upstream ecpfs cannot load it; "
                "the store stays browsable as plain Zarr."
            )
        else:
            text = f"{layout.reason}. The store stays browsable as plain Zarr."
        self.banner.show_message(text, error=True)

    def _on_summary(self, summary: IndexSummary) -> None:
        self.summary = summary
        self._show_layout_banner(summary)
        self.facts.set_rows(summary_rows(summary))
        self.status.setText("")

    def _on_check_progress(self, progress: CheckProgress) -> None:
        now = time.monotonic()
        if now - self._last_progress < PROGRESS_INTERVAL_S and progress.done < progress.total:
            return  # at most ~10 repaints a second: a flood of progress updates stalls the event loop
        self._last_progress = now
        self.progress.setRange(0, max(progress.total, 1))
        self.progress.setValue(progress.done)
        self.progress.setFormat(f"{progress.message} (%v / %m)")

    def _on_report(self, report: ValidationReport) -> None:
        self.report = report
        self.progress.hide()
        errors, warnings = len(report.errors), len(report.warnings)
        found = f"{count_noun(warnings, 'warning')}."
        if report.findings:
            found += " Click a finding to open its node."
        if report.ok:
            self.verdict.setText(f"<b>No errors</b> · {found}")
        else:
            self.verdict.setText(f"<b>{count_noun(errors, 'error')}</b> · {found}")
        self.findings.set_findings(list(report.findings), "No errors or warnings.")
        if report.checked:
            self.checked.setText("Checked: " + "; ".join(report.checked) + ".")

    def _on_check_failed(self, message: str) -> None:
        self.progress.hide()
        self.verdict.setText(f"Validation failed: {message}")

    def _on_failed(self, message: str) -> None:
        self.status.setText("")
        self.banner.show_message(message, error=True)

    def _find_missing_children(self) -> None:
        view = self.level_view
        if view is None or self._hierarchy is None:
            return
        self.refs_button.setEnabled(False)
        above = "the root" if view.stats.level == 1 else f"lvl_{view.stats.level - 1}"
        self.refs_label.setText(f"Decoding the node_ids of {above} …")
        self._refs_runner.run(
            _missing_children,
            self._hierarchy,
            view,
            on_result=self._on_refs,
            on_error=lambda message: self.refs_label.setText(f"Failed: {message}"),
            on_progress=lambda p: self.refs_label.setText(
                f"Decoding the node_ids of {above}: {p[0]:,} of {p[1]:,} nodes …"
            ),
            heavy=True,
        )

    def _on_refs(self, refs: ReferencedChildren) -> None:
        self.refs_button.setEnabled(True)
        read = "" if refs.complete else f" (read {refs.parents_read:,} of {refs.parents_total:,} parents)"
        if refs.missing_count:
            shown = ", ".join(f"node_{i}" for i in refs.missing_ids[:10])
            text = (
                f"{refs.missing_count:,} of {refs.referenced:,} referenced children do not exist: {shown}"
                f"{', …' if refs.missing_count > 10 else ''}{read}. Search skips them."
            )
        else:
            text = f"All {refs.referenced:,} referenced children exist{read}."
        if refs.invalid_refs:
            n = len(refs.invalid_refs)
            text += f" {count_noun(n, 'reference')} {'points' if n == 1 else 'point'} past R."
        self.refs_label.setText(text)
        self.level_findings.set_findings(
            list(self.level_view.stats.findings) + list(refs.findings) if self.level_view else list(refs.findings),
            "No problems in this level's metadata.",
        )

    def _on_level(self, view: LevelView) -> None:
        self.level_view = view
        self.refs_button.setEnabled(True)
        stats = view.stats
        self._show_layout_banner(view.summary)
        self.status.setText("")
        self.level_facts.set_rows(level_rows(stats, view.summary))
        self.largest.set_nodes(stats.largest(10))
        self.smallest.set_nodes(stats.smallest(10))
        self.level_findings.set_findings(list(stats.findings), "No problems in this level's metadata.")
        self._set_plots(stats)

    # -- plots -----------------------------------------------------------------------------------
    def _set_plots(self, stats: LevelStats | None) -> None:
        if stats is None or not stats.node_count:
            self.histogram_bars.setOpts(x0=[], x1=[], height=[])
            self.profile_bars.setData([], [])
            self.median_line.hide()
            self.chunk_line.hide()
            self._profile_paths = []
            return
        counts, edges = stats.histogram()
        self.histogram_bars.setOpts(x0=edges[:-1], x1=edges[1:], height=counts)
        self.median_line.setValue(stats.median_size)
        _set_label(self.median_line, f"median {stats.median_size:,.4g}")
        self.median_line.show()
        order = np.argsort(-stats.sizes, kind="stable")
        sizes = stats.sizes[order]
        self.profile_bars.setData(np.arange(sizes.size + 1) - 0.5, sizes.astype(np.float64))
        self._profile_paths = [stats.node_path(int(i)) for i in stats.node_ids[order]]
        if stats.chunk_rows and stats.chunk_rows <= 2 * int(sizes.max()):
            self.chunk_line.setValue(stats.chunk_rows)
            _set_label(self.chunk_line, f"chunk rows {stats.chunk_rows:,}")
            self.chunk_line.show()
        else:
            self.chunk_line.hide()
        for plot in (self.histogram_plot, self.profile_plot):
            plot.enableAutoRange()

    def bar_path(self, index: int) -> str | None:
        """The node drawn as bar `index` of the sorted profile (largest first)."""
        return self._profile_paths[index] if 0 <= index < len(self._profile_paths) else None

    def _on_profile_clicked(self, event: Any) -> None:
        vb = self.profile_plot.getViewBox()
        if not self._profile_paths or not vb.sceneBoundingRect().contains(event.scenePos()):
            return
        x = vb.mapSceneToView(event.scenePos()).x()
        path = self.bar_path(round(x))
        if path is not None:
            self.node_requested.emit(path)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.PaletteChange:
            self._apply_palette()
        super().changeEvent(event)

    def _apply_palette(self) -> None:
        palette = self.palette()
        base = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        accent = palette.color(QPalette.ColorRole.Highlight)
        for view in (self.histogram_view, self.profile_view):
            view.setBackground(base)
            plot = view.getPlotItem()
            for name in ("left", "bottom"):
                axis = plot.getAxis(name)
                axis.setPen(pg.mkPen(text))
                axis.setTextPen(pg.mkPen(text))
            plot.titleLabel.setText(plot.titleLabel.text, color=text.name())
        brush = pg.mkBrush(accent)
        self.histogram_bars.setOpts(brush=brush, pen=pg.mkPen(base))
        self.profile_bars.setPen(pg.mkPen(accent))
        self.profile_bars.setBrush(brush)
        marker = pg.mkPen(text, style=Qt.PenStyle.DashLine)
        for line in (self.median_line, self.chunk_line):
            line.setPen(marker)
            line.label.setColor(text)
