"""The index overview: the summary and validation report of an index, or the statistics of a level.

Shown for the root of an ecpfs index (``show_index``, :class:`IndexPage`) and for each ``lvl_N``
(``show_level``, :class:`LevelPage`). This container holds what both pages share: the banner for
unsupported layouts and failures, the status line, and the switch between the pages. Every
link on a page (findings, largest and smallest nodes, profile bars) emits
``node_requested(path)`` so the window can select that node.

A layout problem (legacy, newer or unstamped index) is shown once, in this panel's banner with
the severity validation gives it; the findings tables list everything else. The last validation
report of the store is kept, so a level page lists what validation found in that level.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QStackedWidget, QVBoxLayout, QWidget

from ecpfs_viewer.gui.index_page import IndexPage
from ecpfs_viewer.gui.level_page import LevelPage
from ecpfs_viewer.gui.widgets import MessageBanner
from ecpfs_viewer.model.ecpfs import Generation, IndexSummary
from ecpfs_viewer.model.hierarchy import Hierarchy
from ecpfs_viewer.model.validation import ValidationReport

_IDLE_TEXT = "Select the root of an ecpfs index or one of its lvl_N groups."


def layout_message(summary: IndexSummary) -> str | None:
    """What the banner says about an index layout this viewer cannot fully use (None when supported)."""
    layout = summary.layout
    if layout.supported:
        return None
    if layout.generation is Generation.NEWER:
        return f"Unsupported index: {layout.reason}."
    if layout.is_legacy:
        return (
            f"Legacy index: {layout.reason}. Upstream ecpfs cannot load it; "
            "the store stays browsable as plain Zarr."
        )
    return f"{layout.reason}. The store stays browsable as plain Zarr."


class IndexOverviewPanel(QWidget):
    """Summary and validation of an index (root), or statistics of one level (lvl_N)."""

    node_requested = Signal(str)
    #: A validation report arrived (the window marks the tree rows it names).
    report_ready = Signal(object)
    #: What an action of a page read (description, Measured), for the status bar.
    action_measured = Signal(str, object)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(6, 6, 6, 6)
        self.banner = MessageBanner()
        outer.addWidget(self.banner)
        self.status = QLabel()
        self.status.setWordWrap(True)
        outer.addWidget(self.status)
        self.stack = QStackedWidget()
        outer.addWidget(self.stack, 1)
        self.index_page = IndexPage()
        self.index_page.summary_ready.connect(self._on_summary)
        self.index_page.report_ready.connect(self._on_report)
        self._report: ValidationReport | None = None
        self._report_for: Hierarchy | None = None
        self.level_page = LevelPage()
        self.level_page.view_ready.connect(lambda view: self._on_summary(view.summary))
        for page in (self.index_page, self.level_page):
            page.node_requested.connect(self.node_requested)
            page.failed.connect(self._on_failed)
            page.action_measured.connect(self.action_measured)
            self.stack.addWidget(page)
        self.clear()

    def clear(self) -> None:
        """Forget what is shown and drop every pending result."""
        self.index_page.clear()
        self.level_page.clear()
        self.banner.clear()
        self.status.setText(_IDLE_TEXT)

    def show_index(self, hierarchy: Hierarchy) -> None:
        """Summarise the index in the background; validate it unless it was validated before
        (F5 on the root forgets that report: see forget_report)."""
        self.clear()
        self.stack.setCurrentWidget(self.index_page)
        self.status.setText("Reading the index summary …")
        self.index_page.show_index(hierarchy, self.last_report(hierarchy))

    def show_level(self, hierarchy: Hierarchy, level: int) -> None:
        """Node statistics of lvl_{level}, from metadata, in the background."""
        self.clear()
        self.stack.setCurrentWidget(self.level_page)
        self.status.setText(f"Reading the metadata of lvl_{level} …")
        report = self._report if self._report_for is hierarchy else None
        self.level_page.show_level(hierarchy, level, report)

    def validate(self, hierarchy: Hierarchy) -> None:
        """Validate the index in the background unless its report is kept or on its way (at open:
        the tree is marked even if the user never looks at the root)."""
        if self.last_report(hierarchy) is None:
            self.index_page.validate(hierarchy)

    def last_report(self, hierarchy: Hierarchy) -> ValidationReport | None:
        """The last validation report of this store (None before validation finished)."""
        return self._report if self._report_for is hierarchy else None

    def forget_report(self) -> None:
        """Drop the kept report and any validation under way (the store was closed or refreshed)."""
        self._report = self._report_for = None
        self.index_page.stop_validation()

    def summary_text(self) -> str:
        """The facts shown on the current page, as plain text (for tests and copying)."""
        page = self.index_page if self.stack.currentWidget() is self.index_page else self.level_page
        return page.summary_text()

    @property
    def busy(self) -> bool:
        return self.index_page.busy or self.level_page.busy

    def _on_summary(self, summary: IndexSummary) -> None:
        self.status.setText("")
        finding = summary.layout.finding
        if finding is None:
            self.banner.clear()
        else:
            message = layout_message(summary) or f"{finding.path or '/'}: {finding.message}"
            self.banner.show_severity(message, finding.severity)

    def _on_report(self, hierarchy: Hierarchy, report: ValidationReport) -> None:
        self._report, self._report_for = report, hierarchy
        self.report_ready.emit(report)

    def _on_failed(self, message: str) -> None:
        self.status.setText("")
        self.banner.show_message(message, error=True)
