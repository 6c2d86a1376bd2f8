"""The overview of an index root: its summary on the left, its validation report on the right.

Both come from the model in the background (``summarize``, ``validate``); a finding is a link
that emits ``node_requested(path)``. The verdict counts every finding in the table, the layout
one (legacy, newer, unstamped) included, so it never says "no errors" beside the banner that
says "rebuild required"; a legacy index on disk gets its rebuild command below the verdict.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QSplitter, QVBoxLayout, QWidget
from superqt.utils import qthrottled

from ecpfs_viewer.gui.overview.rebuild_box import RebuildBox
from ecpfs_viewer.gui.overview.terms import SUMMARY_TIPS, glossary_html
from ecpfs_viewer.gui.runtime.action_cost import Measured, measured
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.gui.widgets.display import FactsView, FindingsList, fact_value, facts_scroll, group_box
from ecpfs_viewer.gui.widgets.findings_filter import FindingsFilterBar
from ecpfs_viewer.gui.widgets.user_guide import open_guide
from ecpfs_viewer.model.ecpfs import Generation, IndexSummary, Severity, summarize
from ecpfs_viewer.model.formatting import count_noun, format_age
from ecpfs_viewer.model.validation import CheckProgress, ValidationReport, validate
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

PROGRESS_INTERVAL_MS = 100  # shortest time between two shown validation progress updates


def summary_rows(summary: IndexSummary) -> list[tuple[str, str]]:
    """The index summary as (label, text) rows, in the order `ecp info` prints, then ours."""
    layout = summary.layout
    version = summary.format_version
    if version is None:
        version_text = "missing, treated as 1" if layout.generation is Generation.UNSTAMPED else "missing"
    else:
        version_text = str(version) + ("" if layout.supported else " (unsupported)")
    gap = summary.gap
    next_text = fact_value(summary.next_item_id)
    if gap is not None and gap > 0:
        next_text += f"  ({gap:,} ids reserved but never written: likely a crash during insert)"
    elif gap is not None and gap < 0:
        next_text += "  (below Total Items: likely corruption)"
    fan_out = fact_value(summary.fan_out)
    if summary.expected_fan_out is not None:
        same = summary.fan_out == summary.expected_fan_out
        fan_out += f"  (expected ceil(R^(1/L)) = {summary.expected_fan_out}{'' if same else ', differs'})"
    normalized = fact_value(summary.is_normalized) + ("" if summary.normalized_stored else " (absent, read as false)")
    rows = [
        ("Index", layout.generation.value),
        ("Format version", version_text),
        ("Levels", fact_value(summary.levels)),
        ("Metric", fact_value(summary.metric)),
        ("Normalized", normalized),
        ("Total items", fact_value(summary.total_items)),
        ("Next item id", next_text),
        ("Representatives (R)", fact_value(summary.representatives)
         + ("" if summary.has_rep_embeddings else "  (no rep_embeddings array)")),
        ("Fan-out (root rows)", fan_out),
        ("Dimension", fact_value(summary.dim)),
        ("Stored dtype", fact_value(summary.dtype)),
        ("Node chunk rows", fact_value(summary.node_chunk_rows)),
        ("Representative chunk rows", fact_value(summary.rep_chunk_rows)),
        ("Written by", fact_value(summary.writer, "unknown (no _zarrs attribute)")),
        ("Saved queries", fact_value(summary.saved_query_count)),
    ]
    for query in summary.saved_queries[:20]:
        age = "?" if query.age_seconds is None else format_age(query.age_seconds)
        rows.append((f"  query {query.query_id}",
                     f"saved {age} ago; {fact_value(query.buffered_items, '0')} buffered items, "
                     f"{fact_value(query.heap_entries, '0')} heap entries, exclude {query.exclude_size:,}"))
    return rows


def verdict_text(report: ValidationReport) -> str:
    """The line above the findings: the errors and warnings listed in the table, the layout's among them."""
    listed = report.findings
    errors = sum(f.severity is Severity.ERROR for f in listed)
    warnings = sum(f.severity is Severity.WARNING for f in listed)
    found = f"{count_noun(warnings, 'warning')}."
    if listed:
        found += " Click a finding to open its node."
    if errors:
        return f"<b>{count_noun(errors, 'error')}</b> · {found}"
    return f"<b>No errors</b> · {found}"


class IndexPage(QSplitter):
    """Summary and validation of one index, each computed in the background."""

    node_requested = Signal(str)
    #: The summary arrived (the container shows a banner for unsupported layouts).
    summary_ready = Signal(object)
    #: Reading the summary failed, with the message to show.
    failed = Signal(str)
    #: Validation finished: the hierarchy it checked and its ValidationReport.
    report_ready = Signal(object, object)
    #: What an action read (description, Measured), for the status bar.
    action_measured = Signal(str, object)
    #: The vectors of a legacy index were written to this .npy: open the Build dialog on it.
    build_requested = Signal(str)
    #: "Show the index map" was clicked: the window opens the map of the whole tree.
    map_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self._summary_runner = BackgroundRunner(self)
        self._check_runner = BackgroundRunner(self)
        self.summary: IndexSummary | None = None
        self.report: ValidationReport | None = None
        self._hierarchy: Hierarchy | None = None  # the index shown
        self._validating: Hierarchy | None = None  # the index whose validation is under way
        # at most ~10 repaints a second: a flood of progress updates stalls the event loop
        self._show_check_progress = qthrottled(self._apply_check_progress, timeout=PROGRESS_INTERVAL_MS, parent=self)

        self.facts = FactsView()
        self.glossary = QLabel(glossary_html())  # what the summary's words mean
        self.glossary.setWordWrap(True)
        self.glossary.setTextFormat(Qt.TextFormat.RichText)
        self.glossary.linkActivated.connect(lambda link: open_guide(self.window(), link.removeprefix("guide:")))
        summary_box = QWidget()
        summary_layout = QVBoxLayout(summary_box)
        summary_layout.setContentsMargins(0, 0, 0, 0)
        self.map_button = QPushButton("Show the index map")
        self.map_button.setToolTip("The whole tree in one picture: every node as wide as the items beneath it, "
                                   "coloured by size, chunk fill, findings, boundary items or a recall sweep's misses")
        self.map_button.clicked.connect(self.map_requested)
        map_row = QHBoxLayout()
        map_row.addWidget(self.map_button)
        map_row.addStretch(1)
        summary_layout.addLayout(map_row)
        summary_layout.addWidget(facts_scroll(self.facts), 1)
        summary_layout.addWidget(self.glossary)
        self.addWidget(group_box("Index summary", summary_box))
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
        self.findings_filter = FindingsFilterBar(self.findings)
        self.checked = QLabel()
        self.checked.setWordWrap(True)
        self.checked.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.rebuild = RebuildBox()
        self.rebuild.build_requested.connect(self.build_requested)
        report_layout.addWidget(self.verdict)
        report_layout.addWidget(self.rebuild)
        report_layout.addWidget(self.progress)
        report_layout.addWidget(self.findings_filter)
        report_layout.addWidget(self.findings, 1)
        report_layout.addWidget(self.checked)
        self.addWidget(group_box("Validation", report_box))
        self.setStretchFactor(0, 1)
        self.setStretchFactor(1, 1)
        self.setSizes([600, 600])

    def clear(self) -> None:
        """Forget what is shown and drop the pending summary. A validation under way goes on: its
        report still marks the tree, and is shown when the user comes back to the root."""
        self._summary_runner.invalidate()
        self._show_check_progress.cancel()
        self._hierarchy = None
        self.summary = self.report = None
        self.facts.set_rows([])
        self.findings.clear()
        self.verdict.clear()
        self.rebuild.clear()
        self.checked.clear()
        self.progress.hide()

    def show_index(self, hierarchy: Hierarchy, report: ValidationReport | None = None) -> None:
        """Summarise the index in the background, and show ``report`` (this index's, kept from an
        earlier visit: a remote index's validation is thousands of requests) or its validation,
        started now unless it is under way."""
        self.clear()
        self._hierarchy = hierarchy
        self._summary_runner.run(measured, hierarchy.store, summarize, hierarchy, on_result=self._on_summary,
                                 on_error=self.failed.emit)
        if report is not None:
            self._show_report(report)
            return
        self.verdict.setText("Validating …")
        self.progress.setRange(0, 0)
        self.progress.show()
        self.validate(hierarchy)

    def validate(self, hierarchy: Hierarchy) -> None:
        """Validate the index in the background, unless that is under way already.

        A background job, not a heavy one: it runs while the user goes elsewhere, and their row
        counts, searches and projections must not wait the seconds it takes; it waits for them
        between its steps instead.
        """
        if self._validating is hierarchy:
            return
        self._validating = hierarchy
        self._check_runner.run(measured, hierarchy.store, validate, hierarchy, on_result=self._on_report,
                               on_error=self._on_check_failed, on_progress=self._on_check_progress,
                               background=True)

    def stop_validation(self) -> None:
        """Drop the validation under way (the store was closed or is read again)."""
        self._check_runner.invalidate()
        self._validating = None
        self._show_check_progress.cancel()

    def summary_text(self) -> str:
        """The summary as plain 'label: value' lines."""
        return self.facts.text()

    @property
    def busy(self) -> bool:
        return self._summary_runner.busy or self._check_runner.busy or self.rebuild.busy

    def _on_summary(self, result: Measured) -> None:
        summary: IndexSummary = result.value
        self.action_measured.emit("Index summary", result)
        self.summary = summary
        self.facts.set_rows(summary_rows(summary), SUMMARY_TIPS)
        self._offer_rebuild()
        self.summary_ready.emit(summary)

    def _on_check_progress(self, progress: CheckProgress) -> None:
        self._show_check_progress(progress)

    def _apply_check_progress(self, progress: CheckProgress) -> None:
        if self.report is not None or self._hierarchy is None or self._hierarchy is not self._validating:
            return  # a late update after the report, or the page shows something else
        self.progress.setRange(0, max(progress.total, 1))
        self.progress.setValue(progress.done)
        self.progress.setFormat(f"{progress.message} (%v / %m)")

    def _on_report(self, result: Measured) -> None:
        report: ValidationReport = result.value
        checked, self._validating = self._validating, None
        self.action_measured.emit("Validation", result)
        if checked is None:
            return
        self.report_ready.emit(checked, report)
        if self._hierarchy is checked:
            self._show_check_progress.cancel()
            self._show_report(report)

    def _show_report(self, report: ValidationReport) -> None:
        self.report = report
        self.progress.hide()
        self.verdict.setText(verdict_text(report))
        self.findings.set_findings(list(report.findings), "No errors or warnings.")
        self._offer_rebuild()
        if report.checked:
            self.checked.setText("Checked: " + "; ".join(report.checked) + ".")

    def _offer_rebuild(self) -> None:
        """The rebuild command of a legacy index on disk, once both its summary and report are in."""
        summary, report, hierarchy = self.summary, self.report, self._hierarchy
        if summary is not None and report is not None and hierarchy is not None and summary.layout.is_legacy:
            self.rebuild.offer(hierarchy, summary)

    def _on_check_failed(self, message: str) -> None:
        checked, self._validating = self._validating, None
        if checked is not None and self._hierarchy is checked:
            self._show_check_progress.cancel()
            self.progress.hide()
            self.verdict.setText(f"Validation failed: {message}")
