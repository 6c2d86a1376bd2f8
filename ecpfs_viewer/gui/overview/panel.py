"""The index overview: the summary and validation report of an index, or the statistics of a level.

Shown for the root of an ecpfs index (``show_index``, :class:`IndexPage`) and for each ``lvl_N``
(``show_level``, :class:`LevelPage`). This container holds what both pages share: the banner for
unsupported layouts and failures, the status line, and the switch between the pages. Every
link on a page (findings, largest and smallest nodes, profile bars) emits
``node_requested(path)`` so the window can select that node.

A page waiting on a remote server says which server, has a Cancel, and gives up when nothing
has answered for twice the store's timeout (each request ends by its timeout already); what
could not be read on the way (no answer, a server that stopped answering) is one banner with a
Retry, never a page of errors: asking again is all it takes, as nothing of a failure is kept.

A layout problem (legacy, newer or unstamped index) is shown once, in this panel's banner with
the severity validation gives it; the findings tables list everything else. The last validation
report of the store is kept, so a level page lists what validation found in that level.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QStackedWidget, QVBoxLayout, QWidget

from ecpfs_viewer.gui.overview.index_page import IndexPage
from ecpfs_viewer.gui.overview.level_page import LevelPage
from ecpfs_viewer.gui.widgets.display import MessageBanner
from ecpfs_viewer.model.ecpfs import Generation, IndexSummary, Severity
from ecpfs_viewer.model.ecpfs.paths import level_path
from ecpfs_viewer.model.validation import ValidationReport
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

#: a page gives up once nothing arrived for this many of the store's timeouts: each request ends by
#: its timeout already, so this is the backstop for a page that still waits after that
PAGE_PATIENCE = 2.0
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
        self.banner.retry_button.clicked.connect(self.retry)
        status_row = QHBoxLayout()
        self.status = QLabel()
        self.status.setWordWrap(True)
        status_row.addWidget(self.status, 1)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop waiting for the server; Retry asks again")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.hide()
        status_row.addWidget(self.cancel_button)
        outer.addLayout(status_row)
        # while a page waits on a remote server: give up when nothing answered for its timeout
        self._watch = QTimer(self)
        self._watch.setInterval(250)
        self._watch.timeout.connect(self._check_waiting)
        self._shown: tuple[Hierarchy, int | None] | None = None  # what Retry shows again (level None: the root)
        self._waiting = ""  # what the page waits for, for the messages
        self._progress: tuple[int, float] = (0, 0.0)  # requests answered or failed, and when that last changed
        self.stack = QStackedWidget()
        outer.addWidget(self.stack, 1)
        self.index_page = IndexPage()
        self.index_page.summary_ready.connect(self._on_summary)
        self.index_page.report_ready.connect(self._on_report)
        self._report: ValidationReport | None = None
        self._report_for: Hierarchy | None = None
        self.level_page = LevelPage()
        self.level_page.view_ready.connect(lambda view: self._on_summary(view.summary))
        self.level_page.view_ready.connect(self._on_level_view)
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
        self._stop_waiting()
        self._shown = None

    def show_index(self, hierarchy: Hierarchy) -> None:
        """Summarise the index in the background; validate it unless it was validated before
        (F5 on the root forgets that report: see forget_report)."""
        self.clear()
        self._shown = (hierarchy, None)
        self.stack.setCurrentWidget(self.index_page)
        self._start_waiting(hierarchy, "the index summary")
        self.index_page.show_index(hierarchy, self.last_report(hierarchy))

    def show_level(self, hierarchy: Hierarchy, level: int) -> None:
        """Node statistics of lvl_{level}, from metadata, in the background."""
        self.clear()
        self._shown = (hierarchy, level)
        self.stack.setCurrentWidget(self.level_page)
        self._start_waiting(hierarchy, f"the metadata of {level_path(level)}")
        report = self._report if self._report_for is hierarchy else None
        self.level_page.show_level(hierarchy, level, report)

    # -- waiting on a server: what for, Cancel, a bound, Retry ----------------------------------
    def _start_waiting(self, hierarchy: Hierarchy, what: str) -> None:
        self._waiting = what
        server = hierarchy.store.waits_on()
        if server is None:
            self.status.setText(f"Reading {what} …")
            return
        self.status.setText(f"Reading {what} … (waiting for {server[0]})")
        self.cancel_button.show()
        self._progress = (self._answers(hierarchy), time.monotonic())
        self._watch.start()

    def _stop_waiting(self) -> None:
        self._watch.stop()
        self.cancel_button.hide()

    @staticmethod
    def _answers(hierarchy: Hierarchy) -> int:
        stats = hierarchy.store.stats()
        return stats.requests + stats.unanswered

    def _check_waiting(self) -> None:
        """While the page is busy: give up once nothing answered (or failed) for PAGE_PATIENCE timeouts."""
        if self._shown is None or not self.busy:
            self._stop_waiting()
            return
        hierarchy = self._shown[0]
        server = hierarchy.store.waits_on()
        if server is None:
            return
        seen, since = self._progress
        now_seen = self._answers(hierarchy)
        if now_seen != seen:
            self._progress = (now_seen, time.monotonic())
        elif time.monotonic() - since >= PAGE_PATIENCE * server[1]:  # the store's own bound came and went
            self._give_up(f"The server at {server[0]} is not answering: nothing arrived within "
                          f"{PAGE_PATIENCE * server[1]:g} s while reading {self._waiting}.")

    def cancel(self) -> None:
        """Stop waiting for the page's reads (the user's Cancel); Retry asks again."""
        self._give_up(f"Cancelled while reading {self._waiting}.", Severity.INFO)

    def _give_up(self, message: str, severity: Severity = Severity.ERROR) -> None:
        shown = self._shown
        self.index_page.clear()
        self.level_page.clear()
        self._stop_waiting()
        self._shown = shown
        self.status.setText("")
        self.banner.show_retry(message, severity)

    def retry(self) -> None:
        """Ask the server again for what the page shows: nothing of a failure was kept."""
        if self._shown is None:
            return
        hierarchy, level = self._shown
        hierarchy.retry()
        if level is None:
            self.forget_report()
            self.show_index(hierarchy)
            self.index_page.validate(hierarchy)
        else:
            self.show_level(hierarchy, level)

    def _unanswered_banner(self, hierarchy: Hierarchy, detail: str) -> bool:
        """One banner for reads that failed on the way; False when nothing failed so."""
        server = hierarchy.store.waits_on()
        if server is None:
            return False
        if hierarchy.store.server_not_answering():
            self.banner.show_retry(f"The server at {server[0]} is not answering. {detail}")
        else:
            self.banner.show_retry(detail)
        return True

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

    def _on_level_view(self, view: object) -> None:
        stats = getattr(view, "stats", None)
        if self._shown is None or stats is None or stats.complete:
            return
        self._unanswered_banner(self._shown[0], f"Some of {stats.path} could not be read (the server did not "
                                                f"answer): the figures {stats.lacking()}.")

    def _on_summary(self, summary: IndexSummary) -> None:
        if not self.busy:
            self._stop_waiting()
        self.status.setText("")
        if summary.unread is not None and self._shown is not None and \
                self._unanswered_banner(self._shown[0], f"The index header {summary.unread}."):
            return
        finding = summary.layout.finding
        if finding is None:
            self.banner.clear()
        else:
            message = layout_message(summary) or f"{finding.path or '/'}: {finding.message}"
            self.banner.show_severity(message, finding.severity)

    def _on_report(self, hierarchy: Hierarchy, report: ValidationReport) -> None:
        self._stop_waiting()
        if report.headline:
            unread = report.summary.unread if report.summary is not None else None
            detail = f"The index header {unread}." if unread else report.headline[0].upper() + report.headline[1:] + "."
            self._unanswered_banner(hierarchy, detail)
            self.report_ready.emit(report)  # the tree is marked, but the report is not kept: F5 asks again
            return
        self._report, self._report_for = report, hierarchy
        self.report_ready.emit(report)

    def _on_failed(self, message: str) -> None:
        self._stop_waiting()
        self.status.setText("")
        unanswered = any(words in message for words in ("could not be read", "not answering", "no answer"))
        if unanswered and self._shown is not None and self._unanswered_banner(self._shown[0], message):
            return
        self.banner.show_message(message, error=True)
