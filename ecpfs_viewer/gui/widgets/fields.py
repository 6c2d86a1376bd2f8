"""Small pieces of forms every feature builds alike: an integer field, widgets side by side."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QSpinBox, QWidget


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
