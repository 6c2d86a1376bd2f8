"""Small display widgets shared by the panels: a message banner, label/value facts, findings, node lists.

Each renders model results it is given (no store access); clicks on a finding or a node emit
its path so the window can select it.
"""

from __future__ import annotations

import html
import math
import re
from typing import Any

from PySide6.QtCore import Qt, QTextBoundaryFinder, Signal
from PySide6.QtGui import QFontMetricsF, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    QStyle,
    QTableWidget,
    QTableWidgetItem,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.gui.widgets.icons import standard_icon
from ecpfs_viewer.gui.widgets.rows_table import fit_table
from ecpfs_viewer.model.ecpfs import Finding, NodeSize, Severity
from ecpfs_viewer.model.ecpfs.finding_codes import finding_code
from ecpfs_viewer.model.ecpfs.finding_filter import FindingFilter
from ecpfs_viewer.model.formatting import format_value

_SEVERITY_ICONS = {Severity.ERROR: "SP_MessageBoxCritical", Severity.WARNING: "SP_MessageBoxWarning",
                   Severity.INFO: "SP_MessageBoxInformation"}
PATH_ROLE = Qt.ItemDataRole.UserRole
#: Pixels kept below a facts label's text, so that underscores and descenders are never clipped.
DESCENDER_ROOM = 2


class MessageBanner(QFrame):
    """A framed icon + text line for errors and notices, in the palette's colours."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.setBackgroundRole(QPalette.ColorRole.AlternateBase)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        self._icon = QLabel()
        self._icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(self._icon)
        layout.addWidget(self.text, 1)
        #: shown by show_retry: asks again what could not be read (the owner connects it)
        self.retry_button = QPushButton("Retry")
        self.retry_button.hide()
        layout.addWidget(self.retry_button, 0, Qt.AlignmentFlag.AlignTop)
        self.severity: Severity | None = None
        self.hide()

    def show_retry(self, message: str, severity: Severity = Severity.ERROR) -> None:
        """Show message with a Retry button (a read that failed on the way can succeed next time)."""
        self.show_severity(message, severity)
        self.retry_button.show()

    def show_message(self, message: str, *, error: bool = True) -> None:
        self.show_severity(message, Severity.ERROR if error else Severity.INFO)

    def show_severity(self, message: str, severity: Severity) -> None:
        """Show message with the icon of its severity (bold for an error)."""
        self.retry_button.hide()
        self.severity = severity
        self._icon.setPixmap(standard_icon(_SEVERITY_ICONS[severity]).pixmap(24, 24))
        font = self.text.font()
        font.setBold(severity is Severity.ERROR)
        self.text.setFont(font)
        self.text.setText(message)
        self.show()

    def clear(self) -> None:
        self.text.clear()
        self.severity = None
        self.retry_button.hide()
        self.hide()



def fact_value(value: object, absent: str = "—") -> str:
    """A value as the facts views show it: grouped digits, ``absent`` when there is none."""
    return format_value(value, absent, grouped=True)


def widest_unbreakable(label: QLabel, text: str) -> int:
    """Pixels of the widest piece of plain ``text`` a wrapping label cannot break (between two of
    Qt's line-break opportunities), rounded up: the label's width below which it is cut."""
    metrics = QFontMetricsF(label.font())
    finder = QTextBoundaryFinder(QTextBoundaryFinder.BoundaryType.Line, text)
    widest, start = 0.0, 0
    while (end := finder.toNextBoundary()) != -1:
        widest = max(widest, metrics.horizontalAdvance(text[start:end].rstrip()))
        start = end
    return math.ceil(widest)


def fact_label(text: str, rich: bool = False, bold: bool = False) -> QLabel:
    """A wrapping, selectable label of a facts grid that is never cut: at least as wide as its
    widest unbreakable word, with a pixel below the lowest glyph (an underscore sits on a label's
    last pixel row, and a layout squeezed by one pixel, as at QT_SCALE_FACTOR=1.5, drops it)."""
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.RichText if rich else Qt.TextFormat.PlainText)
    if bold:
        font = label.font()
        font.setBold(True)
        label.setFont(font)
    label.setWordWrap(True)
    label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
    label.setContentsMargins(0, 0, 0, DESCENDER_ROOM)
    label.setMinimumWidth(widest_unbreakable(label, _plain(text) if rich else text))
    return label


class FactsView(QWidget):
    """Label/value pairs in a grid; values wrap and are selectable, and each label can explain its
    term in a tooltip. ``rich`` values are rich text whose links emit ``link_activated(href)``;
    ``label_stretch`` is the labels' share of spare width against the values' 3 (0: only what they need)."""

    link_activated = Signal(str)

    def __init__(self, parent: QWidget | None = None, rich: bool = False, label_stretch: int = 2) -> None:
        super().__init__(parent)
        self._rich = rich
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(4, 4, 4, 4)
        self.grid.setHorizontalSpacing(16)
        self.grid.setVerticalSpacing(2)
        self.grid.setColumnStretch(0, label_stretch)
        self.grid.setColumnStretch(1, 3)

    def set_rows(self, rows: list[tuple[str, str]], tips: dict[str, str] | None = None) -> None:
        """Show these (label, value) rows instead of the current ones; ``tips`` maps a label to what
        its term means (shown on hover over the row)."""
        while self.grid.count():
            item = self.grid.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        for i, (label, value) in enumerate(rows):
            key = fact_label(label, bold=True)  # a narrow pane wraps labels too
            text = fact_label(value, rich=self._rich)
            if self._rich:
                text.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
                text.linkActivated.connect(self.link_activated)
            else:
                text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            tip = (tips or {}).get(label.strip())
            if tip:
                key.setToolTip(tip)
                text.setToolTip(tip)
            self.grid.addWidget(key, i, 0)
            self.grid.addWidget(text, i, 1)
            self.grid.setRowStretch(i, 0)
        self.grid.setRowStretch(len(rows), 1)

    def labels(self) -> list[tuple[QLabel, QLabel]]:
        """The (label, value) widgets of every row, in order."""
        pairs = []
        for row in range(self.grid.rowCount()):
            key, value = self.grid.itemAtPosition(row, 0), self.grid.itemAtPosition(row, 1)
            key_label = key.widget() if key is not None else None
            value_label = value.widget() if value is not None else None
            if isinstance(key_label, QLabel) and isinstance(value_label, QLabel):
                pairs.append((key_label, value_label))
        return pairs

    def text(self) -> str:
        """All rows as 'label: value' lines (what the user reads)."""
        read = _plain if self._rich else str
        return "\n".join(f"{key.text()}: {read(value.text())}" for key, value in self.labels())


def _plain(text: str) -> str:
    """Rich text as read: tags removed, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", text.replace("<br>", "\n")))


#: the column of the message in :class:`FindingsList` (after Path and Code)
MESSAGE_COLUMN = 2


class FindingsList(QTableWidget):
    """Findings with a severity icon, the path (as wide as the longest), the stable code (its title
    as tooltip; docs/finding-codes.md) and the whole message (wrapped, in the width left); a click
    requests the path."""

    path_clicked = Signal(str)
    #: the rows were replaced (a filter bar re-applies itself)
    rows_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, 3, parent)
        self._filter = FindingFilter()
        self.setHorizontalHeaderLabels(["Path", "Code", "Finding"])
        self.verticalHeader().hide()
        self.setShowGrid(False)
        self.setWordWrap(True)
        self.setAlternatingRowColors(True)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        header = self.horizontalHeader()
        fit_table(self, stretch=MESSAGE_COLUMN)
        header.sectionResized.connect(lambda *_: self.resizeRowsToContents())
        self.itemClicked.connect(self._on_clicked)
        self.itemActivated.connect(self._on_clicked)

    def set_findings(self, findings: list[Finding], empty_text: str = "No problems found.") -> None:
        """One row per finding, or one row saying ``empty_text`` when there are none."""
        self.clearContents()
        self.setRowCount(0)
        for finding in findings:
            message = finding.message + (f"  [sampled: {finding.sampled}]" if finding.sampled else "")
            row = finding_code(finding.code)
            self._add_row(
                standard_icon(_SEVERITY_ICONS[finding.severity]),
                finding.path or "/",
                message,
                finding.path,
                f"{finding.severity.value} {finding.code}: {message}\nClick to select the node.",
                (finding.code, f"{row.title}: {row.explanation}"),
            )
        if not findings:
            self._add_row(standard_icon("SP_DialogApplyButton"), "", empty_text, None, "")
        self._apply_filter()
        fit_table(self, stretch=MESSAGE_COLUMN)
        self.resizeRowsToContents()
        self.rows_changed.emit()

    def set_filter(self, finding_filter: FindingFilter) -> None:
        """Show only the findings ``finding_filter`` matches; the rows are kept, only hidden."""
        self._filter = finding_filter
        self._apply_filter()

    def _apply_filter(self) -> None:
        for row in range(self.rowCount()):
            code = self._text(row, 1)
            shown = not code or self._filter.matches(self._text(row, 0), code, self._text(row, MESSAGE_COLUMN))
            self.setRowHidden(row, not shown)

    def filter_counts(self) -> tuple[int, int]:
        """(findings shown, findings listed); the row saying there are none counts as neither."""
        coded = [r for r in range(self.rowCount()) if self._text(r, 1)]
        return sum(not self.isRowHidden(r) for r in coded), len(coded)

    def _add_row(self, icon: Any, path_text: str, message: str, path: str | None, tip: str,
                 code: tuple[str, str] = ("", "")) -> None:
        row = self.rowCount()
        self.insertRow(row)
        where = QTableWidgetItem(icon, path_text)
        which = QTableWidgetItem(code[0])
        what = QTableWidgetItem(message)
        for item in (where, which, what):
            item.setData(PATH_ROLE, path)
            item.setToolTip(tip)
            item.setTextAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        which.setToolTip(code[1])
        self.setItem(row, 0, where)
        self.setItem(row, 1, which)
        self.setItem(row, MESSAGE_COLUMN, what)

    def _text(self, row: int, column: int) -> str:
        item = self.item(row, column)
        return item.text() if item is not None else ""

    def row_texts(self) -> list[tuple[str, str]]:
        """(path, message) of every row as shown (rows a filter hides left out)."""
        return [(self._text(r, 0), self._text(r, MESSAGE_COLUMN)) for r in range(self.rowCount())
                if not self.isRowHidden(r)]

    def row_codes(self) -> list[str]:
        """The code of every row as shown ('' on the row that says there are none)."""
        return [self._text(r, 1) for r in range(self.rowCount()) if not self.isRowHidden(r)]

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

    def set_nodes(self, nodes: list[NodeSize]) -> None:
        """One row per node: its name and row count."""
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


def facts_scroll(facts: FactsView) -> QScrollArea:
    """facts in a frameless scrolling area: values wrap to the width shown, each row gets the height
    of its wrapped lines, and a pane narrower than a value's longest word scrolls rather than cut it."""
    return _frameless_scroll(facts, Qt.ScrollBarPolicy.ScrollBarAsNeeded)


def scrolling_side(widget: QWidget, min_width: int) -> QScrollArea:
    """widget in a frameless area that scrolls up and down where it is lower than its contents (its
    texts never drawn over each other), at least min_width wide beside its scroll bar."""
    scroll = _frameless_scroll(widget, Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    scroll.setMinimumWidth(min_width + scroll.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent))
    return scroll


def _frameless_scroll(widget: QWidget, horizontal: Qt.ScrollBarPolicy) -> QScrollArea:
    """widget in a frameless scrolling area that gives it the area's width (and its height, or more)."""
    scroll = QScrollArea()
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    scroll.setHorizontalScrollBarPolicy(horizontal)
    scroll.setWidget(widget)
    return scroll


def group_box(title: str, widget: QWidget) -> QGroupBox:
    """``widget`` in a titled frame with the overview's margins."""
    box = QGroupBox(title)
    layout = QVBoxLayout(box)
    layout.setContentsMargins(6, 6, 6, 6)
    layout.addWidget(widget)
    return box


def tab_page(header: QWidget, body: QWidget) -> QWidget:
    """A tab's page: a header line above a body that takes the rest of the height."""
    page = QWidget()
    layout = QVBoxLayout(page)
    layout.setContentsMargins(0, 4, 0, 0)
    layout.addWidget(header)
    layout.addWidget(body, 1)
    return page


def panes(orientation: Qt.Orientation, *parts: tuple[QWidget, int]) -> QSplitter:
    """A splitter of (widget, stretch) parts that the user resizes but never collapses to nothing."""
    splitter = QSplitter(orientation)
    for index, (widget, stretch) in enumerate(parts):
        splitter.addWidget(widget)
        splitter.setStretchFactor(index, stretch)
    splitter.setChildrenCollapsible(False)
    return splitter
