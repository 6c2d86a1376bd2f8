"""Small pieces of forms every feature builds alike: an integer field, widgets side by side, a .npy
to choose, a command to copy."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLineEdit, QPushButton, QSpinBox, QWidget


def spin_box(low: int, high: int, value: int, tip: str, prefix: str = "") -> QSpinBox:
    """An integer field with its range, start value, tooltip and a prefix naming it ('k 10')."""
    spin = QSpinBox()
    spin.setRange(low, high)
    spin.setValue(value)
    spin.setToolTip(tip)
    spin.setPrefix(prefix)
    spin.setAccelerated(True)
    return spin


def hbox(*widgets: QWidget, stretch: int | None = 0) -> QWidget:
    """Widgets side by side; the one at ``stretch`` takes the spare width (None: nobody, they keep left)."""
    box = QWidget()
    layout = QHBoxLayout(box)
    layout.setContentsMargins(0, 0, 0, 0)
    for i, widget in enumerate(widgets):
        layout.addWidget(widget, 1 if i == stretch else 0)
    if stretch is None:
        layout.addStretch(1)
    return box


def command_line(copy_tip: str, copied: Callable[[], None]) -> tuple[QLineEdit, QPushButton]:
    """A read-only line for a shell command and its Copy button (clipboard, then ``copied()``)."""
    edit = QLineEdit()
    edit.setReadOnly(True)
    button = QPushButton("Copy")
    button.setToolTip(copy_tip)

    def copy() -> None:
        if edit.text():
            QGuiApplication.clipboard().setText(edit.text())
            copied()

    button.clicked.connect(copy)
    return edit, button


def search_exps_field(values: str, tip: str, run: Callable[[], None], widest: str) -> QLineEdit:
    """The line of search_exp values a sweep runs over (Return runs it), at least as wide as
    ``widest`` shows: squeezed in a narrow row it showed only the end of its values."""
    edit = QLineEdit(values)
    edit.setToolTip(tip)
    edit.returnPressed.connect(run)
    edit.setMinimumWidth(edit.fontMetrics().horizontalAdvance(widest) + 12)
    return edit


def npy_field(title: str, placeholder: str = "queries.npy", chosen: Callable[[], None] = lambda: None,
              text: str = "") -> tuple[QLineEdit, QPushButton]:
    """A line for the path of a .npy and its Browse… button (the open dialog starts at the line's
    path; ``chosen()`` follows a choice)."""
    edit = QLineEdit(text)
    edit.setPlaceholderText(placeholder)
    button = QPushButton("Browse…")

    def browse() -> None:
        path, _ = QFileDialog.getOpenFileName(button.window(), title, edit.text(), "NumPy array (*.npy)")
        if path:
            edit.setText(path)
            chosen()

    button.clicked.connect(browse)
    return edit, button
