"""Small display widgets shared by the panels: a message banner, label/value facts, findings, node lists.

Each renders model results it is given (no store access); clicks on a finding or a node emit
its path so the window can select it.
"""

from __future__ import annotations

import html
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPalette
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
from ecpfs_viewer.model.formatting import format_value

_SEVERITY_ICONS = {Severity.ERROR: "SP_MessageBoxCritical", Severity.WARNING: "SP_MessageBoxWarning",
                   Severity.INFO: "SP_MessageBoxInformation"}
PATH_ROLE = Qt.ItemDataRole.UserRole


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


class FactsView(QWidget):
    """Label/value pairs in a grid; values wrap and are selectable."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(4, 4, 4, 4)
        self.grid.setHorizontalSpacing(16)
        self.grid.setVerticalSpacing(3)
        self.grid.setColumnStretch(0, 2)
        self.grid.setColumnStretch(1, 3)

    def set_rows(self, rows: list[tuple[str, str]]) -> None:
        """Show these (label, value) rows instead of the current ones."""
        while self.grid.count():
            item = self.grid.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        for i, (label, value) in enumerate(rows):
            key = QLabel(f"<b>{html.escape(label)}</b>")
            key.setWordWrap(True)  # a narrow pane wraps labels too, rather than scrolling sideways
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
            key_label = key.widget() if key is not None else None
            value_label = value.widget() if value is not None else None
            if isinstance(key_label, QLabel) and isinstance(value_label, QLabel):
                lines.append(f"{_plain(key_label.text())}: {value_label.text()}")
        return "\n".join(lines)


def _plain(text: str) -> str:
    return html.unescape(text.replace("<b>", "").replace("</b>", ""))


class FindingsList(QTableWidget):
    """Findings with a severity icon, the path (as wide as the longest) and the whole message
    (wrapped, in the width left); a click requests the path."""

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
        fit_table(self, stretch=1)
        header.sectionResized.connect(lambda *_: self.resizeRowsToContents())
        self.itemClicked.connect(self._on_clicked)
        self.itemActivated.connect(self._on_clicked)

    def set_findings(self, findings: list[Finding], empty_text: str = "No problems found.") -> None:
        """One row per finding, or one row saying ``empty_text`` when there are none."""
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
        fit_table(self, stretch=1)
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
        def text(row: int, column: int) -> str:
            item = self.item(row, column)
            return item.text() if item is not None else ""

        return [(text(r, 0), text(r, 1)) for r in range(self.rowCount())]

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
    """facts in a frameless area that scrolls vertically only: values wrap to the width shown."""
    scroll = QScrollArea()
    scroll.setWidgetResizable(True)
    scroll.setFrameShape(QFrame.Shape.NoFrame)
    scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    scroll.setWidget(facts)
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
