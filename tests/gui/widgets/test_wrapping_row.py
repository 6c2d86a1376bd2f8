"""A row of controls goes onto a line a group where the window is too narrow, and back onto one line
where it is wide again; every button keeps its whole text either way."""

from __future__ import annotations

from PySide6.QtWidgets import QPushButton, QVBoxLayout, QWidget

from ecpfs_viewer.gui.widgets.fields import hbox
from ecpfs_viewer.gui.widgets.wrapping_row import WrappingRow


def test_the_row_wraps_where_narrow_and_unwraps_where_wide(qtbot, show) -> None:
    buttons = [QPushButton(text) for text in ("Representatives", "Select box", "Lasso", "Show all", "Export PNG …")]
    row = WrappingRow(hbox(*buttons[:2], stretch=None), hbox(*buttons[2:], stretch=None))
    window = QWidget()
    layout = QVBoxLayout(window)
    layout.addWidget(row)
    layout.addStretch(1)
    one_line = sum(b.sizeHint().width() for b in buttons)
    show(window, one_line + 200, 200)
    qtbot.waitUntil(lambda: not row.wrapped)
    assert len({b.y() for b in buttons}) == 1  # one line
    window.resize(max(b.sizeHint().width() for b in buttons) * 3 + 40, 200)
    qtbot.waitUntil(lambda: row.wrapped and buttons[2].mapTo(row, buttons[2].rect().topLeft()).y() > 0)
    assert all(b.width() >= b.sizeHint().width() and b.isVisible() for b in buttons)  # every text whole
    second = buttons[2].mapTo(row, buttons[2].rect().topLeft()).y()
    assert second >= buttons[0].height() and row.height() >= second + buttons[2].height()  # the room for it
    window.resize(one_line + 200, 200)
    qtbot.waitUntil(lambda: not row.wrapped and len({b.mapTo(row, b.rect().topLeft()).y() for b in buttons}) == 1)
