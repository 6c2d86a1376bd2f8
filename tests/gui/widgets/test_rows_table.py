"""Result tables fit their columns to every row's text, not only the first rows Qt measures; the free
text takes the rest of the width, elided with a tooltip; a header click sorts."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QFont, QFontMetrics, QFontMetricsF
from PySide6.QtWidgets import QHeaderView, QStyle, QStyleOptionViewItem, QTableView

from ecpfs_viewer.gui.widgets.rows_table import RowsModel, fit_columns, fit_table, rows_view

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


def text_room(view: QTableView, row: int, column: int) -> float:
    """The width the style leaves a cell's text (what it elides against) when the view paints it."""
    index = view.model().index(row, column)
    option = QStyleOptionViewItem()
    option.rect = view.visualRect(index).adjusted(0, 0, -1 if view.showGrid() else 0, 0)  # less the grid line
    option.font = view.font()
    option.text = index.data()
    option.features |= QStyleOptionViewItem.ViewItemFeature.HasDisplay
    style = view.style()
    text_margin = style.pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1  # as viewItemDrawText
    return style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, option, view).width() - 2 * text_margin


def test_fitted_cells_show_their_whole_text_at_a_fractional_font_size(qtbot) -> None:
    # text laid out at a fractional width (QT_SCALE_FACTOR=1.5 does it too) was one pixel short: "2,3…"
    model, view = shown_table(qtbot)
    font = QFont(view.font())
    font.setPointSizeF(9.7)
    view.setFont(font)
    model.set_rows([(2345 + i, 1000 * i, f"lvl_2/node_{100 + i}", "missed") for i in range(30)])
    fit_table(view, stretch=3)
    metrics = QFontMetricsF(font)
    for row in range(30):
        for column in range(3):
            text = model.texts()[row][column]
            assert text_room(view, row, column) >= metrics.horizontalAdvance(text), (row, column, text)


def test_the_free_text_column_takes_the_rest_and_elides_with_a_tooltip(qtbot) -> None:
    model, view = shown_table(qtbot)
    long_text = "item 337 is in lvl_2/node_10 under lvl_1/node_4 (rank 2 of 8 under index_root) " * 3
    model.set_rows([(4, 7, "lvl_3/node_4", long_text)])
    fit_table(view, stretch=3)
    header = view.horizontalHeader()
    assert header.sectionResizeMode(3) is QHeaderView.ResizeMode.Stretch
    assert header.length() <= view.viewport().width()  # no sideways scrolling for one long text
    assert not view.horizontalScrollBar().isVisible()
    assert text_room(view, 0, 3) < view.fontMetrics().horizontalAdvance(long_text)  # so it is elided
    assert model.index(0, 3).data(Qt.ItemDataRole.ToolTipRole) == long_text


def test_an_optional_column_without_text_is_hidden(qtbot) -> None:
    model, view = shown_table(qtbot)
    model.set_rows([(4, 7, "lvl_3/node_4", "")])
    fit_table(view, stretch=3, optional=[3])
    assert view.isColumnHidden(3)
    model.set_rows([(4, 7, "lvl_3/node_4", "missing")])
    fit_table(view, stretch=3, optional=[3])
    assert not view.isColumnHidden(3)


def click_header(qtbot, view: QTableView, column: int) -> None:
    header = view.horizontalHeader()
    x = header.sectionViewportPosition(column) + header.sectionSize(column) // 2
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, header.height() // 2))


def test_a_header_click_sorts_numbers_by_value_and_names_naturally(qtbot) -> None:
    model, view = shown_table(qtbot)
    activated: list[tuple] = []
    view.activated.connect(lambda index: activated.append(model.row(index.row())))
    model.set_rows([(4, 100, "lvl_3/node_10", "b"), (4, 9, "lvl_3/node_9", "a"), (4, 25, "lvl_3/node_100", None)],
                   highlight=[1])
    assert [r[1] for r in model.texts()] == ["100", "9", "25"]  # the order given, until the user sorts
    click_header(qtbot, view, 1)
    assert [r[1] for r in model.texts()] == ["9", "25", "100"]  # numerically, not "100" < "25" < "9"
    assert model.is_highlighted(0)  # the highlight moved with its row
    click_header(qtbot, view, 1)
    assert [r[1] for r in model.texts()] == ["100", "25", "9"]
    click_header(qtbot, view, 2)
    assert [r[2] for r in model.texts()] == ["lvl_3/node_9", "lvl_3/node_10", "lvl_3/node_100"]
    click_header(qtbot, view, 3)
    click_header(qtbot, view, 3)
    assert [r[3] for r in model.texts()] == ["b", "a", "—"]  # descending; an empty cell stays last
    model.set_rows([(4, 1, "lvl_3/node_2", "z"), (4, 2, "lvl_3/node_1", "y")])
    assert [r[3] for r in model.texts()] == ["z", "y"]  # new rows come sorted as the header says
    view.setCurrentIndex(model.index(1, 0))
    qtbot.keyClick(view, Qt.Key.Key_Return)
    assert activated == [(4, 2, "lvl_3/node_1", "y")]  # the row activated is the row shown
