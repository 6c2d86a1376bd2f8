"""Result tables fit their columns to every row's text, not only the first rows Qt measures."""

from __future__ import annotations

from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QTableView

from ecpfs_viewer.gui.widgets.rows_table import RowsModel, fit_columns, rows_view

HEADERS = ["search_exp", "item", "leaf", "why"]


def rows(n: int, long_at: int | None = None) -> list[tuple]:
    made = [(4, 100 + i, f"lvl_3/node_{i % 90}", "missed") for i in range(n)]
    if long_at is not None:
        made[long_at] = (4, 7, "lvl_3/node_4000000", "the query went into other leaves at level 2")
    return made


def shown_table(qtbot) -> tuple[RowsModel, QTableView]:
    model = RowsModel(HEADERS)
    view = rows_view(model)
    qtbot.addWidget(view)
    view.resize(900, 300)
    view.show()
    return model, view


def test_columns_fit_a_long_text_far_down_the_table(qtbot) -> None:
    model, view = shown_table(qtbot)
    model.set_rows(rows(2000, long_at=1500))  # past the rows Qt's own fitting measures
    fit_columns(view)
    metrics = view.fontMetrics()
    header = view.horizontalHeader()
    assert header.sectionSize(2) >= metrics.horizontalAdvance("lvl_3/node_4000000")
    assert header.sectionSize(1) >= metrics.horizontalAdvance("item")  # never narrower than its header


def test_columns_are_as_wide_as_qt_would_make_them(qtbot) -> None:
    model, view = shown_table(qtbot)
    model.set_rows(rows(50, long_at=3))
    fit_columns(view)
    ours = [view.horizontalHeader().sectionSize(c) for c in range(3)]
    view.resizeColumnsToContents()
    theirs = [view.horizontalHeader().sectionSize(c) for c in range(3)]
    assert all(abs(a - b) <= 2 for a, b in zip(ours, theirs, strict=True)), (ours, theirs)


def test_bold_highlighted_rows_are_measured_bold(qtbot) -> None:
    model, view = shown_table(qtbot)
    model.set_rows(rows(20, long_at=0), highlight=[0])
    fit_columns(view)
    bold = view.font()
    bold.setBold(True)
    assert view.horizontalHeader().sectionSize(2) >= QFontMetrics(bold).horizontalAdvance("lvl_3/node_4000000")
