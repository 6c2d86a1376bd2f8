"""The overview of one level (lvl_N): node statistics, largest and smallest nodes, size plots.

Statistics come from metadata in the background (shared with validation); the reference check
decodes the node_ids of the level above on request and lists the nodes of this level they name
that do not exist. The problems listed are what the last validation found in this level (before
one ran: the level's own metadata findings and oversized leaves). Nodes, findings and profile
bars are links that emit ``node_requested(path)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from threading import Event
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.runtime.action_cost import Measured, measured
from ecpfs_viewer.gui.runtime.settings import settings
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.display import FactsView, FindingsList, NodeList, fact_value, facts_scroll, group_box
from ecpfs_viewer.model.ecpfs import (
    Finding,
    IndexSummary,
    LevelStats,
    ReferencedChildren,
    cached_level_stats,
    referenced_children,
    shared_level_stats,
    summarize,
)
from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.paths import level_path, node_name
from ecpfs_viewer.model.formatting import count_noun
from ecpfs_viewer.model.histogram import log_histogram
from ecpfs_viewer.model.tasks import ProgressCallback
from ecpfs_viewer.model.validation import ValidationReport, oversized_leaves
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

HISTOGRAM_BINS = 40
_LOG_SIZES_KEY = "level/log_sizes"


def _set_label(line: pg.InfiniteLine, text: str) -> None:
    line.label.setFormat(text)
    line.label.setText(text)


def _percent(fraction: float) -> str:
    return "< 0.01%" if 0 < fraction < 1e-4 else f"{fraction:.2%}" if fraction < 0.1 else f"{fraction:.0%}"


def level_rows(stats: LevelStats, summary: IndexSummary, reused: bool = False) -> list[tuple[str, str]]:
    """The level's statistics as (label, text) rows (reused: computed before, e.g. by validation)."""
    count = f"{stats.node_count:,}"
    if stats.max_nodes is not None:
        count += f" of at most {stats.max_nodes:,}  (min(ns^{stats.level}, R))"
    if stats.unread_ids:  # listed, but their documents did not come: neither present nor missing
        count += f"; {len(stats.unread_ids):,} more could not be read"
    gaps = fact_value(stats.gap_count)
    if stats.gap_ids:
        shown = ", ".join(str(g) for g in stats.gap_ids[:12])
        gaps += f"  (ids {shown}{', …' if stats.gap_count > 12 else ''})"
    rows = [("Level", f"{stats.path}  ({'leaves' if stats.is_leaf else 'internal'})"
             if stats.is_leaf is not None else stats.path),
            ("Nodes", count), ("Gaps (ids with no node)", gaps)]
    if stats.node_count:
        rows.append(("Node size (rows)", f"min {stats.min_size:,} · median {stats.median_size:,.4g} · "
                                         f"mean {stats.mean_size:,.4g} · max {stats.max_size:,}"))
    rows.append(("Rows in this level", fact_value(stats.total_rows)))
    if stats.is_leaf and not stats.complete:  # a sum over the nodes read is no fact about the index
        rows.append(("Sum of leaf sizes", f"{stats.leaf_sum:,} over the nodes read  (incomplete: the figures "
                                          f"{stats.lacking()})"))
    elif stats.is_leaf:
        match = "matches" if stats.leaf_sum == summary.total_items else "differs from"
        total = fact_value(summary.total_items)
        rows.append(("Sum of leaf sizes", f"{stats.leaf_sum:,}  ({match} total items {total})"))
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
        rows.append(("Empty node groups", fact_value(len(stats.empty_nodes))))
    if stats.other_entries:
        rows.append(("Other entries", ", ".join(stats.other_entries[:10])))
    computed = ("an earlier process, kept in the cache folder (no leaf document has changed since)" if stats.kept
                else f"{stats.seconds * 1000:.0f} ms from metadata (no chunk decoded)")
    if reused and not stats.kept:  # kept: validation or an earlier visit took them from the cache folder too
        computed += "; reused (computed by validation or an earlier visit)"
    rows.append(("Computed in", computed))
    return rows


def metadata_findings(stats: LevelStats) -> list[Finding]:
    """What the level's statistics alone can tell before validation ran: their own findings and the
    leaves far larger than the rest of the level (validation warns about the same leaves)."""
    found = list(stats.findings)
    if stats.is_leaf:
        found += [Finding(fc.OVERSIZED_LEAF, leaf.path,
                          f"{leaf.rows:,} rows in {leaf.chunks:,} chunks of {leaf.chunk_rows:,}, far above the "
                          f"level's median of {leaf.median:g}; a search that visits it decodes every chunk")
                  for leaf in oversized_leaves(stats)]
    return found


#: The charts' height, kept at 1.5x on a 1280 x 800 screen (a logical 853 x 533) with the facts above.
PLOT_MIN_HEIGHT = 150
#: The facts and node lists: they scroll below this.
TOP_MIN_HEIGHT = 110


@dataclass(frozen=True)
class LevelView:
    """What the level page draws: the statistics plus the summary they are judged against."""

    summary: IndexSummary
    stats: LevelStats
    reused: bool = False  # the statistics were computed before (validation, an earlier visit)


def compute_level_view(h: Hierarchy, level: int) -> LevelView:
    """Summary and level statistics (metadata only, shared with validation), for the worker thread."""
    summary = summarize(h)
    reused = cached_level_stats(h, level) is not None
    return LevelView(summary, shared_level_stats(h, level, summary), reused)


def references_button_text(level: int) -> str:
    """What the reference check does, named after the levels it reads and checks."""
    above = "the root" if level == 1 else level_path(level - 1)
    return f"Check {above} references to {level_path(level)} nodes"


def _missing_children(h: Hierarchy, view: LevelView, *, progress: ProgressCallback,
                      cancel: Event) -> ReferencedChildren:
    """Referenced-but-missing children of a level (decodes the parents' node_ids), for the worker."""
    return referenced_children(
        h,
        view.stats.level,
        view.summary,
        view.stats,
        progress=progress,
        cancel=cancel,
    )


class LevelPage(QSplitter):
    """Statistics of one level: facts and node lists on top, problems, then histogram and profile."""

    node_requested = Signal(str)
    #: The statistics arrived (the container clears its status line and shows layout banners).
    view_ready = Signal(object)
    #: Reading the statistics failed, with the message to show.
    failed = Signal(str)
    #: What an action read (description, Measured), for the status bar.
    action_measured = Signal(str, object)

    #: more (label, text) fact rows for a level, from diagnostics the window holds (the miss map)
    extra_facts: Callable[[int], list[tuple[str, str]]] | None = None

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Vertical, parent)
        self._level_runner = BackgroundRunner(self)
        self._refs_runner = BackgroundRunner(self)
        self._hierarchy: Hierarchy | None = None
        self._profile_ids = np.zeros(0, dtype=np.int64)  # node id of each profile bar, largest first
        self._profile_level = ""
        self.view: LevelView | None = None
        self.report: ValidationReport | None = None

        top = QWidget()
        top_layout = QHBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        self.facts = FactsView()
        level_scroll = facts_scroll(self.facts)
        level_box = QWidget()
        level_layout = QVBoxLayout(level_box)
        level_layout.setContentsMargins(0, 0, 0, 0)
        level_layout.addWidget(level_scroll, 1)
        refs_row = QHBoxLayout()
        self.refs_button = QPushButton(references_button_text(1))
        self.refs_button.clicked.connect(self._find_missing_children)
        self.refs_label = QLabel()
        self.refs_label.setWordWrap(True)
        self.refs_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        refs_row.addWidget(self.refs_button)
        refs_row.addWidget(self.refs_label, 1)
        level_layout.addLayout(refs_row)
        top_layout.addWidget(group_box("Level", level_box), 3)
        self.largest = NodeList()
        self.smallest = NodeList()
        self.largest.path_clicked.connect(self.node_requested)
        self.smallest.path_clicked.connect(self.node_requested)
        top_layout.addWidget(group_box("Largest nodes", self.largest), 0)
        top_layout.addWidget(group_box("Smallest nodes", self.smallest), 0)
        self.findings = FindingsList()
        self.findings.path_clicked.connect(self.node_requested)
        self.addWidget(top)
        self.addWidget(group_box("Problems on this level", self.findings))
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
        self.log_check = QCheckBox("log size axis")
        self.log_check.setToolTip("Bins of equal width on a log axis: node sizes often span orders of magnitude")
        self.log_check.setChecked(bool(settings().value(_LOG_SIZES_KEY, False, type=bool)))
        self.log_check.toggled.connect(self._log_toggled)
        histogram_box = QWidget()
        histogram_layout = QVBoxLayout(histogram_box)
        histogram_layout.setContentsMargins(0, 0, 0, 0)
        histogram_layout.setSpacing(2)
        histogram_layout.addWidget(self.log_check, 0, Qt.AlignmentFlag.AlignLeft)
        histogram_layout.addWidget(self.histogram_view, 1)
        self.profile_view = pg.PlotWidget()
        self.profile_plot = self.profile_view.getPlotItem()
        self.profile_plot.setTitle("Sorted size profile")  # short: a long title is cut in a narrow window
        self.profile_view.setToolTip("Every node of the level by its rows, largest first: click a bar to open "
                                     "the node")
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
            view.setMinimumHeight(PLOT_MIN_HEIGHT)  # the charts keep their height; the lists above scroll
        plots_layout.addWidget(histogram_box)
        plots_layout.addWidget(self.profile_view)
        self.addWidget(plots)
        self.setStretchFactor(0, 3)
        self.setStretchFactor(1, 1)
        self.setStretchFactor(2, 4)
        self.setSizes([280, 90, 380])
        top.setMinimumHeight(TOP_MIN_HEIGHT)
        self._apply_palette()
        self.clear()

    def clear(self) -> None:
        """Forget what is shown and drop every pending result."""
        for runner in (self._level_runner, self._refs_runner):
            runner.invalidate()
        self._hierarchy = None
        self.view = None
        self.report = None
        self.facts.set_rows([])
        self.refs_label.clear()
        self.refs_button.setEnabled(False)
        self.findings.clear()
        self.largest.clear()
        self.smallest.clear()
        self._set_plots(None)

    def show_level(self, hierarchy: Hierarchy, level: int, report: ValidationReport | None = None) -> None:
        """Node statistics of lvl_{level}, from metadata, in the background; the problems listed are
        report's findings in this level (the last validation of this store), when given."""
        self.clear()
        self._hierarchy = hierarchy
        self.report = report
        above = "the root" if level == 1 else level_path(level - 1)
        self.refs_button.setText(references_button_text(level))
        self.refs_button.setToolTip(
            f"Decode the node_ids of {above} (the only step here that reads chunks) and list the "
            f"{level_path(level)} nodes they reference that do not exist")
        # Not a heavy job: validation computes every level's statistics first and shares them, so
        # this is usually a lookup, and it must not wait for a whole (remote) validation to finish.
        self._level_runner.run(measured, hierarchy.store, compute_level_view, hierarchy, level,
                               on_result=self._on_level, on_error=self.failed.emit)

    def summary_text(self) -> str:
        """The level's facts as plain 'label: value' lines."""
        return self.facts.text()

    @property
    def busy(self) -> bool:
        return self._level_runner.busy or self._refs_runner.busy

    def _on_level(self, result: Measured) -> None:
        view: LevelView = result.value
        self.view = view
        self.refs_button.setEnabled(True)
        stats = view.stats
        self._show_facts()
        self.largest.set_nodes(stats.largest(10))
        self.smallest.set_nodes(stats.smallest(10))
        self.findings.set_findings(self.problems(), self._no_problems_text())
        self._set_plots(stats)
        self.action_measured.emit(f"Statistics of {stats.path}", result)
        self.view_ready.emit(view)

    def _show_facts(self) -> None:
        if self.view is None:
            return
        extra = self.extra_facts(self.view.stats.level) if self.extra_facts is not None else []
        self.facts.set_rows(level_rows(self.view.stats, self.view.summary, self.view.reused) + extra)

    def refresh_extra_facts(self) -> None:
        """Show the facts again with what ``extra_facts`` says now (a diagnostic arrived)."""
        self._show_facts()

    def problems(self) -> list[Finding]:
        """What the table lists: the last validation's findings in this level, else what the
        level's metadata shows."""
        if self.view is None:
            return []
        if self.report is not None:
            return list(self.report.level_findings(self.view.stats.level))
        return metadata_findings(self.view.stats)

    def _no_problems_text(self) -> str:
        if self.report is not None:
            return "Validation found no problem in this level."
        return "No problems in this level's metadata (validate the index from its root for the full check)."

    def _find_missing_children(self) -> None:
        view = self.view
        if view is None or self._hierarchy is None:
            return
        self.refs_button.setEnabled(False)
        above = "the root" if view.stats.level == 1 else level_path(view.stats.level - 1)
        self.refs_label.setText(f"Decoding the node_ids of {above} …")
        self._refs_runner.run(
            _missing_children,
            self._hierarchy,
            view,
            on_result=self._on_refs,
            on_error=lambda message: self.refs_label.setText(f"Failed: {message}"),
            on_progress=lambda p: self.refs_label.setText(
                f"Decoding the node_ids of {above}: {p.done:,} of {p.total:,} nodes …"
            ),
            heavy=True,
        )

    def _on_refs(self, refs: ReferencedChildren) -> None:
        self.refs_button.setEnabled(True)
        read = "" if refs.complete else f" (read {refs.parents_read:,} of {refs.parents_total:,} parents)"
        if refs.missing_count:
            shown = ", ".join(node_name(i) for i in refs.missing_ids[:10])
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
        known = self.problems()
        self.findings.set_findings(known + [f for f in refs.findings if f not in known], self._no_problems_text())

    # -- plots -----------------------------------------------------------------------------------
    def _set_plots(self, stats: LevelStats | None) -> None:
        if stats is None or not stats.node_count:
            self.histogram_bars.setOpts(x0=[], x1=[], height=[])
            self.profile_bars.setData([], [])
            self.median_line.hide()
            self.chunk_line.hide()
            self._profile_ids = np.zeros(0, dtype=np.int64)
            return
        self._set_histogram(stats)
        order = np.argsort(-stats.sizes, kind="stable")
        sizes = stats.sizes[order]
        self.profile_bars.setData(np.arange(sizes.size + 1) - 0.5, sizes.astype(np.float64))
        self._profile_ids, self._profile_level = stats.node_ids[order], stats.path  # paths made when clicked
        if stats.chunk_rows and stats.chunk_rows <= 2 * int(sizes.max()):
            self.chunk_line.setValue(stats.chunk_rows)
            _set_label(self.chunk_line, f"chunk rows {stats.chunk_rows:,}")
            self.chunk_line.show()
        else:
            self.chunk_line.hide()
        for plot in (self.histogram_plot, self.profile_plot):
            plot.enableAutoRange()

    def _set_histogram(self, stats: LevelStats) -> None:
        """Node sizes on a linear axis, or on a log axis (bars placed at log10 of their edges,
        which the axis labels as sizes) with the empty nodes it cannot place named in the title."""
        log = self.log_check.isChecked()
        self.histogram_plot.getAxis("bottom").setLogMode(log)
        title = "Node sizes"
        if log:
            counts, edges, left_out = log_histogram(stats.sizes, HISTOGRAM_BINS)
            edges = np.log10(edges)
            if left_out:
                title += f" ({count_noun(left_out, 'empty node')} not on the log axis)"
        else:
            counts, edges = stats.histogram(HISTOGRAM_BINS)
        self.histogram_plot.setTitle(title, color=self.palette().color(QPalette.ColorRole.Text).name())
        self.histogram_bars.setOpts(x0=edges[:-1], x1=edges[1:], height=counts)
        median = stats.median_size
        if median is not None and (median > 0 or not log):
            self.median_line.setValue(np.log10(median) if log else median)
            _set_label(self.median_line, f"median {median:,.4g}")
            self.median_line.show()
        else:
            self.median_line.hide()
        self.histogram_plot.enableAutoRange()

    def _log_toggled(self, on: bool) -> None:
        store = settings()
        store.setValue(_LOG_SIZES_KEY, on)
        store.sync()
        if self.view is not None and self.view.stats.node_count:
            self._set_histogram(self.view.stats)

    def histogram_title(self) -> str:
        return str(self.histogram_plot.titleLabel.text)

    def bar_path(self, index: int) -> str | None:
        """The node drawn as bar `index` of the sorted profile (largest first)."""
        if not 0 <= index < self._profile_ids.size:
            return None
        return f"{self._profile_level}/{node_name(int(self._profile_ids[index]))}"

    def _on_profile_clicked(self, event: Any) -> None:
        vb = self.profile_plot.getViewBox()
        if not self._profile_ids.size or not vb.sceneBoundingRect().contains(event.scenePos()):
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
