"""A read-only table of plain rows (tuples of values) for result lists: hits, visited leaves, misses.

A model rather than a QTableWidget: thousands of rows (a recall run's misses) are set in one
reset instead of one item object per cell, so filling the table never stalls the window. The
model sorts itself (a header click), numbers as numbers and names in natural order, so that the
rows the activation handlers read are the rows the user sees. ``fit_table`` is how every table
of the window sizes its columns: each to its widest text, the free-text one taking the rest.
"""

from __future__ import annotations

import heapq
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QHBoxLayout,
    QHeaderView,
    QSplitter,
    QStyle,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from ecpfs_viewer.model.formatting import format_cell

_Index = QModelIndex | QPersistentModelIndex
#: Rows measured when columns are fitted to their contents (Qt's default, 1,000, is slow with a Python model).
RESIZE_PRECISION = 64


def sort_key(value: Any) -> tuple[Any, ...]:
    """How a cell sorts: numbers by value, text in natural order (node_2 before node_10), empty last."""
    if value is None or value == "":
        return (2,)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return (0, value) if not math.isnan(value) else (2,)
    return (1, [int(part) if part.isdigit() else part.casefold() for part in re.split(r"(\d+)", str(value))])


class SortingTableModel(QAbstractTableModel):
    """A table model that sorts itself on a header click, so a row's model index is the row shown
    (a double-click opens what the user sees); subclasses say how in ``_arrange``."""

    _sorted_by: tuple[int, Qt.SortOrder] = (-1, Qt.SortOrder.AscendingOrder)

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Order the rows by a column; column -1 is the order they were given in."""
        self.beginResetModel()
        self._arrange(column, order)
        self.endResetModel()

    def _arrange(self, column: int, order: Qt.SortOrder) -> None:
        raise NotImplementedError


class RowsModel(SortingTableModel):
    """Rows of values under fixed headers; rows may be highlighted and carry a tooltip, headers
    may explain their words (``header_tips``: header text -> tooltip). Cells are written by the one
    formatter (:func:`format_cell`): ``kinds`` says, per column, "id" (digits kept ungrouped),
    "bytes" or "percent"; other columns are counts (grouped), fractions or text."""

    def __init__(self, headers: Sequence[str], parent: QWidget | None = None,
                 header_tips: dict[str, str] | None = None, kinds: Sequence[str] = ()) -> None:
        super().__init__(parent)
        self._kinds = tuple(kinds)
        self._headers = list(headers)
        self._header_tips = dict(header_tips or {})
        self._rows: list[tuple[Any, ...]] = []
        self._texts: list[list[str]] = []
        self._highlight: list[bool] = []
        self._tooltips: list[str | None] = []
        self._given: list[int] = []  # each row's place in the rows as given

    def set_headers(self, headers: Sequence[str]) -> None:
        self._headers = list(headers)
        self.headerDataChanged.emit(Qt.Orientation.Horizontal, 0, len(self._headers) - 1)

    def set_rows(self, rows: Sequence[tuple[Any, ...]], highlight: Sequence[int] = (),
                 tooltips: Sequence[str | None] | None = None, texts: Sequence[Sequence[str]] | None = None) -> None:
        """Replace every row; ``highlight`` are row numbers (of ``rows``) shown bold on a tint. The
        rows keep the order the user sorted the table by. ``texts``: the cells as shown, when the
        caller formats them (the values still sort)."""
        self.beginResetModel()
        self._rows = list(rows)
        self._texts = ([list(t) for t in texts] if texts is not None
                       else [[format_cell(v, self.kind(c)) for c, v in enumerate(row)] for row in self._rows])
        marked = set(highlight)
        self._highlight = [i in marked for i in range(len(self._rows))]
        self._tooltips = list(tooltips) if tooltips is not None else [None] * len(self._rows)
        self._given = list(range(len(self._rows)))
        self._arrange(*self._sorted_by)
        self.endResetModel()

    def kind(self, column: int) -> str:
        """How a column is written: "id", "bytes", "percent" or "" (counts, fractions, text)."""
        return self._kinds[column] if column < len(self._kinds) else ""

    def _arrange(self, column: int, order: Qt.SortOrder) -> None:
        self._sorted_by = (column, order)
        by_column = 0 <= column < len(self._headers)
        keys = [(sort_key(row[column] if column < len(row) else None) if by_column else (0, given), given)
                for given, row in zip(self._given, self._rows, strict=True)]
        descending = order == Qt.SortOrder.DescendingOrder and by_column
        filled = [i for i, key in enumerate(keys) if key[0] != (2,)]
        empty = [i for i, key in enumerate(keys) if key[0] == (2,)]
        # ties keep the order given; empty cells stay last either way
        filled.sort(key=lambda i: (keys[i][0], -keys[i][1] if descending else keys[i][1]), reverse=descending)
        empty.sort(key=lambda i: keys[i][1])
        picked = filled + empty
        self._given = [self._given[i] for i in picked]
        self._rows = [self._rows[i] for i in picked]
        self._texts = [self._texts[i] for i in picked]
        self._highlight = [self._highlight[i] for i in picked]
        self._tooltips = [self._tooltips[i] for i in picked]

    def clear(self) -> None:
        self.set_rows([])

    def row(self, row: int) -> tuple[Any, ...]:
        return self._rows[row]

    def texts(self) -> list[list[str]]:
        """Every cell as shown (for tests and copying)."""
        return [list(t) for t in self._texts]

    def is_highlighted(self, row: int) -> bool:
        return self._highlight[row]

    @property
    def has_highlight(self) -> bool:
        return any(self._highlight)

    def longest_texts(self, column: int, count: int = 3) -> list[str]:
        """The count longest texts (in characters) of a column: the candidates for its width."""
        return heapq.nlargest(count, (row[column] for row in self._texts), key=len)

    def rowCount(self, parent: _Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._headers)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(self._headers):
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self._headers[section]
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._header_tips.get(self._headers[section])
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        row, column = index.row(), index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._texts[row][column]
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltips[row] or self._texts[row][column]
        if role == Qt.ItemDataRole.TextAlignmentRole and not isinstance(self._rows[row][column], str):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if self._highlight[row]:
            if role == Qt.ItemDataRole.FontRole:
                font = QFont()
                font.setBold(True)
                return font
            if role == Qt.ItemDataRole.BackgroundRole:
                return highlight_tint()
        return None


def highlight_tint(alpha: int = 60) -> QColor:
    """The palette's highlight colour, faint: marks rows the search went into."""
    colour = QColor(QApplication.palette().color(QPalette.ColorRole.Highlight))
    colour.setAlpha(alpha)
    return colour


def rows_view(model: RowsModel, on_activated: Callable[[int], None] | None = None) -> QTableView:
    """A compact, row-selecting, sortable view of a RowsModel; double-click or Enter calls on_activated(row)."""
    view = QTableView()
    view.setModel(model)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setAlternatingRowColors(True)
    view.verticalHeader().hide()
    view.verticalHeader().setDefaultSectionSize(view.fontMetrics().height() + 6)
    view.horizontalHeader().setStretchLastSection(True)
    view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
    view.setWordWrap(False)
    view.horizontalHeader().setResizeContentsPrecision(RESIZE_PRECISION)
    sortable(view)
    if on_activated is not None:
        view.activated.connect(lambda index: on_activated(index.row()))
    return view


def sortable(view: QTableView) -> None:
    """A header click sorts the view's model (which sorts itself); the rows start in the order given."""
    view.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
    view.horizontalHeader().setSortIndicatorShown(True)
    view.setSortingEnabled(True)


def text_width(metrics: QFontMetricsF, text: str) -> int:
    """Pixels a cell needs to show text whole: its fractional width rounded up (at a fractional
    QT_SCALE_FACTOR the view lays text out unrounded, and an integer width one pixel short elides it)."""
    return math.ceil(metrics.horizontalAdvance(text))


def cell_margin(view: QTableView) -> int:
    """The pixels of a cell that are not its text: the delegate's text margins on both sides, the
    pixel the style's text rectangle leaves, and the grid line."""
    return 2 * (view.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1) + 2


def fit_columns(view: QTableView, columns: Iterable[int] | None = None) -> None:
    """Size columns (all by default) to their widest text, over every row (:func:`fitted_widths`)."""
    header = view.horizontalHeader()
    for column, width in fitted_widths(view, columns).items():
        header.resizeSection(column, width)


def fitted_widths(view: QTableView, columns: Iterable[int] | None = None) -> dict[int, int]:
    """The width of each column (all by default) that shows its widest text and its header whole.

    Qt's resizeColumnsToContents asks the model for every role of every cell it measures (4,000
    Python calls for 64 rows of 8 columns, slower still while workers run). A model that can name
    its longest texts (``longest_texts(column)``, as RowsModel and the node listing do) is asked
    for those only, and they are measured here; another model is left to Qt.
    """
    model = view.model()
    header = view.horizontalHeader()
    wanted = range(model.columnCount()) if columns is None else columns
    longest_texts = getattr(model, "longest_texts", None)
    if longest_texts is None:  # Qt measures whole pixels: one more for a fractional scale's layout
        return {column: max(view.sizeHintForColumn(column) + 1, header.sectionSizeHint(column)) for column in wanted}
    font = QFont(view.font())
    font.setBold(bool(getattr(model, "has_highlight", False)))  # bold rows are the widest
    metrics = QFontMetricsF(font)
    margin = cell_margin(view)
    return {column: max(max((text_width(metrics, text) + margin for text in longest_texts(column)), default=0),
                        header.sectionSizeHint(column))
            for column in wanted}


def fit_table(view: QTableView, stretch: int | None = None, optional: Iterable[int] = ()) -> None:
    """Every column as wide as its widest text, except ``stretch`` (the free text: a finding, why a
    neighbour was missed), which takes the width left and is elided (its tooltip has the whole text).

    An ``optional`` column with no text in any row is hidden (a Finding column when nothing is wrong).
    Without a stretch column the last column fills the view; with it hidden, none does.
    """
    model = view.model()
    header = view.horizontalHeader()
    longest_texts = getattr(model, "longest_texts", None)
    for column in optional:
        empty = model.rowCount() > 0 and longest_texts is not None and not any(longest_texts(column, 1))
        view.setColumnHidden(column, empty)
    stretching = stretch is not None and not view.isColumnHidden(stretch)
    fit_columns(view, [c for c in range(model.columnCount()) if c != stretch or not stretching])
    header.setStretchLastSection(stretch is None)
    resize = QHeaderView.ResizeMode
    for column in range(model.columnCount()):
        header.setSectionResizeMode(column, resize.Stretch if stretching and column == stretch else resize.Interactive)
    view.setTextElideMode(Qt.TextElideMode.ElideRight)


def fit_table_pane(splitter: QSplitter, view: QTableView, rows: int, share: float = 1 / 3) -> None:
    """Give the splitter pane holding ``view`` (the first or last) the height of its rows, at most
    ``share`` of the splitter; the other pane gets the rest."""
    total = sum(splitter.sizes())
    if total <= 0:
        return
    wanted = view.horizontalHeader().height() + 4 + max(rows, 1) * view.verticalHeader().defaultSectionSize()
    pane = min(wanted, int(total * share))
    first = splitter.indexOf(view) == 0
    splitter.setSizes([pane, total - pane] if first else [total - pane, pane])


def titled(view: QWidget, *head: QWidget) -> QWidget:
    """A view under a header line (a title label first, taking the spare width, then e.g. a filter)."""
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    line = QHBoxLayout()
    for i, widget in enumerate(head):
        line.addWidget(widget, 1 if i == 0 else 0)
    layout.addLayout(line)
    layout.addWidget(view, 1)
    return box
