"""Numbers (and strings) as a table: absolute indexes as headers, ids beside rows, links, copy as TSV.

The model formats only the cells Qt asks for (the visible ones). A subset too large to read at
once (:class:`~ecpfs_viewer.model.views.table_data.TableWindow`) is read a block of rows at a time in
the background as the user scrolls; cells not read yet show an ellipsis. The rows of an embeddings
array get their ids beside them (item ids of a leaf, child nodes of an internal node), and node ids
are links: a click emits ``link_activated('lvl_3/node_812')``.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QAction, QFont, QGuiApplication, QKeySequence, QPalette
from PySide6.QtWidgets import QAbstractItemView, QLabel, QTableView, QVBoxLayout, QWidget

from ecpfs_viewer.gui.data.plot_views.base import ALSO, BEST, PlotView
from ecpfs_viewer.gui.runtime.workers import BackgroundRunner
from ecpfs_viewer.model.ecpfs.paths import node_path
from ecpfs_viewer.model.views.plot_data import PlotData
from ecpfs_viewer.model.views.table_data import RowIds, TableWindow, link_level

_ROOT = QModelIndex()
#: A lazily read table asks for blocks of about this many cells.
BLOCK_CELLS = 65_536
#: Blocks kept in memory (the oldest are dropped and read again when scrolled back to).
MAX_BLOCKS = 64
#: Subsets of at most this many values open as a table first (a handful of numbers reads best as text).
SMALL_TABLE = 16
PENDING = "…"
LINK_ROLE = Qt.ItemDataRole.UserRole + 1
Reader = Callable[[int, int], tuple[np.ndarray, RowIds | None]]


def format_cell(value: Any, exact: bool = False) -> str:
    """A cell as shown (6 significant digits for floats) or copied (exact: digits to read it back)."""
    if isinstance(value, np.floating | float):
        if exact:
            return f"{float(value):.9g}" if np.asarray(value).dtype.itemsize <= 4 else repr(float(value))
        return f"{float(value):.6g}"
    if isinstance(value, bytes):
        return repr(value)
    return str(value)


SIZE_COLUMNS_BY_ROWS = 32  # rows measured when columns are fitted to their contents


class ArrayTableModel(QAbstractTableModel):
    """A read-only table over a 1-D or 2-D array, in memory or read a block of rows at a time."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._data: np.ndarray | None = np.empty((0, 0), dtype=object)
        self._offsets: tuple[int, int] = (0, 0)
        self._steps: tuple[int, int] = (1, 1)
        self._shape: tuple[int, int] = (0, 0)
        self._ids: RowIds | None = None  # in memory: one per row; lazy: name and link level only
        self._link_level: int | None = None  # the values themselves name nodes at this level
        self._reader: Reader | None = None
        self._block_rows = 1
        self._blocks: OrderedDict[int, tuple[np.ndarray, RowIds | None]] = OrderedDict()
        self._pending: set[int] = set()
        self._failed: dict[int, str] = {}
        self._waiters: list[tuple[int, int, Callable[[], None]]] = []
        self._runner = BackgroundRunner(self)
        self.link_color = QPalette().color(QPalette.ColorRole.Link)

    # -- content -------------------------------------------------------------------------------
    def set_array(self, data: Any, offsets: tuple[int, ...] = (), *, ids: RowIds | None = None,
                  link: int | None = None, steps: tuple[int, ...] = ()) -> None:
        """Show an array (None: nothing); header numbers start at the subset's offsets."""
        self.beginResetModel()
        self._forget()
        array = np.asarray(np.empty((0, 0), dtype=object) if data is None else data)
        array = array.reshape(-1, 1) if array.ndim <= 1 else array.reshape(array.shape[0], math.prod(array.shape[1:]))
        self._data, self._shape = array, (int(array.shape[0]), int(array.shape[1]))
        self._set_axes(offsets, steps)
        self._ids = ids if ids is not None and ids.values.size == self._shape[0] else None
        self._link_level = link
        self.endResetModel()

    def set_window(self, window: TableWindow, reader: Reader, *, ids: RowIds | None = None,
                   link: int | None = None) -> None:
        """Show a selection read lazily: reader(start, stop) returns table rows [start, stop)."""
        self.beginResetModel()
        self._forget()
        self._data, self._reader = None, reader
        self._shape = (window.rows, window.cols)
        self._set_axes(window.offsets, window.steps)
        self._ids, self._link_level = ids, link
        self._block_rows = max(1, min(4096, BLOCK_CELLS // max(1, window.cols)))
        self.endResetModel()

    def _set_axes(self, offsets: tuple[int, ...], steps: tuple[int, ...]) -> None:
        padded, stepped = (*offsets, 0, 0), (*steps, 1, 1)
        self._offsets = (int(padded[0]), int(padded[1]))
        self._steps = (int(stepped[0]) or 1, int(stepped[1]) or 1)

    def _forget(self) -> None:
        self._runner.invalidate()
        self._reader = None
        self._blocks.clear()
        self._pending.clear()
        self._failed.clear()
        self._waiters.clear()

    @property
    def lazy(self) -> bool:
        return self._reader is not None

    @property
    def id_column(self) -> bool:
        return self._ids is not None

    @property
    def busy(self) -> bool:
        return bool(self._pending)

    @property
    def max_copy_rows(self) -> int:
        """Rows one copy can take from a lazy table (what the block cache holds at once)."""
        return (MAX_BLOCKS // 2) * self._block_rows if self.lazy else self._shape[0]

    def blocks_read(self) -> list[int]:
        """Blocks of a lazy table in memory, by number (rows number * block rows onwards)."""
        return sorted(self._blocks)

    # -- values --------------------------------------------------------------------------------
    def value(self, row: int, column: int) -> Any:
        """The raw value of a cell of the array (column counts array columns), or None while unread."""
        if self._data is not None:
            return self._data[row, column]
        block = self._block(row)
        return None if block is None else block[0][row % self._block_rows, column]

    def row_id(self, row: int) -> int | None:
        """The id beside a row (None when there is no id column or the block is unread)."""
        if self._ids is None:
            return None
        if self._data is not None:
            return int(self._ids.values[row])
        block = self._block(row)
        ids = block[1] if block is not None else None
        at = row % self._block_rows
        return int(ids.values[at]) if ids is not None and at < ids.values.size else None

    def link_at(self, index: QModelIndex | QPersistentModelIndex) -> str | None:
        """The node a cell names ('lvl_3/node_812'), or None."""
        return self.data(index, LINK_ROLE) if index.isValid() else None

    def _block(self, row: int) -> tuple[np.ndarray, RowIds | None] | None:
        number = row // self._block_rows
        found = self._blocks.get(number)
        if found is not None:
            self._blocks.move_to_end(number)
            return found
        self._request(number)
        return None

    def _request(self, number: int) -> None:
        if number in self._pending or number in self._failed or self._reader is None:
            return
        self._pending.add(number)
        start = number * self._block_rows
        self._runner.run(self._reader, start, start + self._block_rows, supersede=False,
                         on_result=partial(self._on_block, number), on_error=partial(self._on_block_failed, number))

    def _on_block_failed(self, number: int, message: str) -> None:
        self._pending.discard(number)
        self._failed[number] = message  # not asked again (a refresh of the pane reads anew)
        first = number * self._block_rows
        last = min(self._shape[0], first + self._block_rows) - 1
        if last >= first:
            self.dataChanged.emit(self.index(first, 0), self.index(last, self.columnCount() - 1))

    def _on_block(self, number: int, got: tuple[np.ndarray, RowIds | None]) -> None:
        self._pending.discard(number)
        self._blocks[number] = got
        while len(self._blocks) > MAX_BLOCKS:
            self._blocks.popitem(last=False)
        first = number * self._block_rows
        last = min(self._shape[0], first + self._block_rows) - 1
        if last >= first:
            self.dataChanged.emit(self.index(first, 0), self.index(last, self.columnCount() - 1))
        for waiter in list(self._waiters):
            if self.rows_loaded(waiter[0], waiter[1]):
                self._waiters.remove(waiter)
                waiter[2]()

    def rows_loaded(self, first: int, last: int) -> bool:
        """Every row of first..last (inclusive) is in memory (always, for an in-memory array)."""
        if self._data is not None:
            return True
        numbers = range(first // self._block_rows, last // self._block_rows + 1)
        return all(n in self._blocks for n in numbers)

    def when_loaded(self, first: int, last: int, then: Callable[[], None]) -> None:
        """Call then() once rows first..last are in memory (now, when they are)."""
        if self.rows_loaded(first, last):
            then()
            return
        self._waiters.append((first, last, then))
        for number in range(first // self._block_rows, last // self._block_rows + 1):
            if number not in self._blocks:
                self._request(number)

    # -- Qt model ------------------------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else self._shape[0]

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else self._shape[1] + (1 if self._ids is not None else 0)

    def cell_text(self, row: int, column: int, exact: bool = False) -> str | None:
        """A cell as text (column counts table columns, the id column first); None while unread."""
        if self._ids is not None:
            if column == 0:
                found = self.row_id(row)
                return None if found is None else str(found)
            column -= 1
        found = self.value(row, column)
        return None if found is None and self.lazy else format_cell(found, exact)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row, column = index.row(), index.column()
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            text = self.cell_text(row, column)
            if text is None:
                failed = self._failed.get(row // self._block_rows)
                if failed is not None:
                    return f"unreadable: {failed}" if role == Qt.ItemDataRole.ToolTipRole else "unreadable"
                return PENDING
            link = self.data(index, LINK_ROLE) if role == Qt.ItemDataRole.ToolTipRole else None
            return f"{text}: click to open {link}" if link else text
        if role == LINK_ROLE:
            return self._link(row, column)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role in (Qt.ItemDataRole.ForegroundRole, Qt.ItemDataRole.FontRole) and self._link(row, column):
            if role == Qt.ItemDataRole.ForegroundRole:
                return self.link_color
            font = QFont()
            font.setUnderline(True)
            return font
        return None

    def _link(self, row: int, column: int) -> str | None:
        if self._ids is not None and column == 0:
            level, value = self._ids.link_level, self.row_id(row)
        elif self._link_level is not None:
            level = self._link_level
            raw = self.value(row, column - (1 if self._ids is not None else 0))
            value = None if raw is None else int(raw)
        else:
            return None
        return None if level is None or value is None else node_path(level, value)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        if orientation == Qt.Orientation.Vertical:
            return str(self._offsets[0] + section * self._steps[0])
        if self._ids is not None:
            if section == 0:
                return self._ids.name
            section -= 1
        return str(self._offsets[1] + section * self._steps[1])


class TableView(PlotView):
    """Any 1-D or 2-D subset, one cell per value; the first view for id arrays and small arrays."""

    title = "Table"
    link_activated = Signal(str)  # a node id was clicked: the node's path

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.hierarchy_reader: Callable[[TableWindow], Reader] | None = None
        self.model = ArrayTableModel(self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)
        self.table.setAlternatingRowColors(True)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 6)
        self.table.horizontalHeader().setStretchLastSection(True)
        # fit columns to the first rows: measuring Qt's default 1,000 rows asks the model for
        # 64,000 cells of a 64-wide table, seconds of Python on the GUI thread
        self.table.horizontalHeader().setResizeContentsPrecision(SIZE_COLUMNS_BY_ROWS)
        self.table.clicked.connect(self._clicked)
        self.copy_action = QAction("Copy as TSV", self.table)
        self.copy_action.setShortcut(QKeySequence.StandardKey.Copy)
        self.copy_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.copy_action.triggered.connect(lambda _checked=False: self.copy_selection())
        self.table.addAction(self.copy_action)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        self.note = QLabel()
        self.note.setWordWrap(True)
        self.note.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.note)

    def priority(self, data: PlotData) -> int:
        if data.window is not None or (data.values is None and data.ndim >= 1):
            return BEST
        if data.values is None or data.ndim not in (1, 2):
            return 0
        name = data.subset.path.rsplit("/", 1)[-1]
        if "embeddings" in name:
            return ALSO  # the heatmap stays the first view of vectors
        if (data.values.dtype.kind in "iu" and name.endswith("ids")) or data.values.size <= SMALL_TABLE:
            return BEST + 1
        return ALSO

    def draw(self, data: PlotData) -> None:
        link = link_level(data.subset.path)
        if data.window is not None and self.hierarchy_reader is not None:
            self.model.set_window(data.window, self.hierarchy_reader(data.window), ids=data.row_ids, link=link)
            self.note.setText(f"{data.window.rows:,} rows: read a block at a time as you scroll")
            self.note.show()
        else:
            self.model.set_array(data.subset.data, data.subset.offsets, ids=data.row_ids, link=link,
                                 steps=data.subset.steps)
            self.note.hide()
        if self.model.columnCount() <= 64:  # wider tables keep the default width (no measuring)
            self.table.resizeColumnsToContents()

    def clear(self) -> None:
        super().clear()
        self.model.set_array(None)
        self.note.hide()

    def copy_selection(self, then: Callable[[str], None] | None = None) -> None:
        """Copy the selected cells as tab-separated text (rows by lines, unselected cells empty);
        rows of a lazy table not read yet are read first. then(text) is called once copied."""
        indexes = self.table.selectionModel().selectedIndexes()
        if not indexes:
            return
        rows = sorted({i.row() for i in indexes})
        if self.model.lazy:  # blocks beyond the cache would be dropped before the copy is complete
            rows = [r for r in rows if r < rows[0] + self.model.max_copy_rows]
        columns = sorted({i.column() for i in indexes})
        chosen = {(i.row(), i.column()) for i in indexes}

        def copy() -> None:
            lines = []
            for row in rows:
                cells = [(self.model.cell_text(row, c, exact=True) or "") if (row, c) in chosen else ""
                         for c in columns]
                lines.append("\t".join(cells))
            text = "\n".join(lines)
            QGuiApplication.clipboard().setText(text)
            if then is not None:
                then(text)

        self.model.when_loaded(rows[0], rows[-1], copy)

    def _clicked(self, index: QModelIndex) -> None:
        link = self.model.link_at(index)
        if link:
            self.link_activated.emit(link)
