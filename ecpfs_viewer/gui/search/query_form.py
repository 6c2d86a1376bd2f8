"""The query half of the Search panel: where the query vector comes from, and the search knobs."""

from __future__ import annotations

from PySide6.QtCore import QRegularExpression, Signal
from PySide6.QtGui import QRegularExpressionValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QLineEdit,
    QPushButton,
    QStackedWidget,
    QWidget,
)

from ecpfs_viewer.gui.widgets.fields import hbox, npy_field, spin_box
from ecpfs_viewer.model.search import QueryError, SearchParams
from ecpfs_viewer.model.search.explore import QuerySpec

#: (combo text, QuerySpec kind), in combo order.
SOURCES = (("Stored item", "item"), ("Row of a .npy file", "file"), ("Saved query", "saved"),
           ("Row of an array", "array"))
_MAX_INT = 2**31 - 1


def parse_ids(text: str) -> frozenset[int]:
    """'3, 17 20' -> {3, 17, 20}; QueryError naming the first bad entry."""
    found = set()
    for part in text.replace(",", " ").split():
        try:
            found.add(int(part))
        except ValueError:
            raise QueryError(f"exclude: {part!r} is not an item id") from None
    return frozenset(found)


class QueryForm(QWidget):
    """Query source, k, search_exp, max_increments, exclude list and the exact comparison switch."""

    run_requested = Signal()  # Enter in a field
    saved_wanted = Signal()  # the saved-query source was chosen: its ids are needed

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.source_combo = QComboBox()
        for text, kind in SOURCES:
            self.source_combo.addItem(text, kind)
        self.source_combo.setToolTip("Where the query vector comes from")
        self.item_edit = QLineEdit()
        self.item_edit.setPlaceholderText("item id, e.g. 42")
        self.item_edit.setValidator(QRegularExpressionValidator(QRegularExpression(r"-?\d{0,19}"), self.item_edit))
        self.item_edit.returnPressed.connect(self.run_requested)
        self.file_edit, browse = npy_field("Queries (.npy)")
        self.file_edit.returnPressed.connect(self.run_requested)
        self.file_row = spin_box(0, _MAX_INT, 0, "Row of the .npy file to search with")
        self.saved_combo = QComboBox()
        self.saved_combo.setToolTip("Queries stored in the index under queries/")
        self.array_edit = QLineEdit()
        self.array_edit.setPlaceholderText("lvl_2/node_0/embeddings")
        self.array_edit.returnPressed.connect(self.run_requested)
        self.array_row = spin_box(0, _MAX_INT, 0, "Row of the array to search with")
        self.use_row_button = QPushButton("Use heatmap row")
        self.use_row_button.setToolTip("Click a heatmap row in the Data tab first")
        self.use_row_button.setEnabled(False)
        self.use_row_button.clicked.connect(self._use_offered_row)
        self._offered: tuple[str, int] | None = None

        self.source_stack = QStackedWidget()
        self.source_stack.addWidget(self.item_edit)
        self.source_stack.addWidget(hbox(self.file_edit, browse, self.file_row))
        self.source_stack.addWidget(self.saved_combo)
        self.source_stack.addWidget(hbox(self.array_edit, self.array_row, self.use_row_button))
        self.source_combo.currentIndexChanged.connect(self._source_changed)

        self.k_spin = spin_box(1, 100_000, 10, "k: how many items to return", "k ")
        self.exp_spin = spin_box(0, 1_000_000, 4, "search_exp: leaves to visit before the stop test (0: every leaf)",
                                "search_exp ")
        self.inc_spin = spin_box(-1, 1000, -1, "max_increments: times search_exp may double while fewer than k "
                                             "items were found (-1: no limit)", "max_increments ")
        self.inc_spin.setSpecialValueText("no limit")
        self.exclude_edit = QLineEdit()
        self.exclude_edit.setPlaceholderText("item ids never to return, e.g. 3, 17")
        self.exclude_edit.returnPressed.connect(self.run_requested)
        self.compare_check = QCheckBox("Compare with exact search")
        self.compare_check.setToolTip("Also find the exact k nearest neighbours (reads every leaf once) "
                                      "and say why each missed one was missed")
        self.compare_check.setChecked(True)

        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        form.addRow("Query", hbox(self.source_combo, self.source_stack, stretch=1))
        knobs = hbox(self.k_spin, self.exp_spin, self.inc_spin, stretch=None)
        form.addRow("Search", knobs)
        form.addRow("Exclude", hbox(self.exclude_edit, self.compare_check, stretch=0))

    # -- the source -----------------------------------------------------------------------------
    @property
    def kind(self) -> str:
        return str(self.source_combo.currentData())

    def set_kind(self, kind: str) -> None:
        self.source_combo.setCurrentIndex(self.source_combo.findData(kind))

    def _source_changed(self, index: int) -> None:
        self.source_stack.setCurrentIndex(index)
        if self.kind == "saved" and self.saved_combo.count() == 0:
            self.saved_wanted.emit()

    def set_saved_ids(self, ids: list[str]) -> None:
        self.saved_combo.clear()
        self.saved_combo.addItems(ids)
        self.saved_combo.setPlaceholderText("" if ids else "no saved queries in this index")

    def offer_row(self, path: str, row: int) -> None:
        """Remember the heatmap row the user picked, for 'Use heatmap row'."""
        self._offered = (path, row)
        self.use_row_button.setEnabled(True)
        self.use_row_button.setToolTip(f"Search with row {row} of {path}")

    def use_row(self, path: str, row: int) -> None:
        """Make a row of a stored array the query."""
        self.set_kind("array")
        self.array_edit.setText(path)
        self.array_row.setValue(row)

    def _use_offered_row(self) -> None:
        if self._offered is not None:
            self.use_row(*self._offered)

    def reset_store(self) -> None:
        """A new store: the queries that named the old one (item ids, an array path, its saved queries
        and heatmap row) are dropped; a .npy file and the search settings are the user's own, kept."""
        self.saved_combo.clear()
        for edit in (self.item_edit, self.array_edit, self.exclude_edit):
            edit.clear()
        self.array_row.setValue(0)
        self._offered = None
        self.use_row_button.setEnabled(False)
        self.use_row_button.setToolTip("Click a heatmap row in the Data tab first")

    # -- what to run ------------------------------------------------------------------------------
    def query_spec(self) -> QuerySpec:
        """The query the fields describe; QueryError saying which field is missing."""
        kind = self.kind
        if kind == "item":
            text = self.item_edit.text().strip()
            if not text or text == "-":
                raise QueryError("type an item id")
            return QuerySpec("item", item_id=int(text))
        if kind == "file":
            if not self.file_edit.text().strip():
                raise QueryError("choose a .npy file of queries")
            return QuerySpec("file", file=self.file_edit.text().strip(), row=self.file_row.value())
        if kind == "saved":
            if not self.saved_combo.currentText():
                raise QueryError("this index has no saved queries" if self.saved_combo.count() == 0
                                 else "choose a saved query")
            return QuerySpec("saved", saved_id=self.saved_combo.currentText())
        if not self.array_edit.text().strip():
            raise QueryError("give the path of a 2-D array in the store, or use a heatmap row")
        return QuerySpec("array", path=self.array_edit.text().strip().strip("/"), row=self.array_row.value())

    def params(self) -> SearchParams:
        return SearchParams(self.k_spin.value(), self.exp_spin.value(), self.inc_spin.value(),
                            parse_ids(self.exclude_edit.text()))
