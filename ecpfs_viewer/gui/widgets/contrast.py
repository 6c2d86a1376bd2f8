"""WCAG contrast between two colours: how the tests (and views picking a colour) judge legibility."""

from __future__ import annotations

from PySide6.QtGui import QColor

READABLE = 4.5  # WCAG AA for body text
VISIBLE = 3.0  # WCAG AA for large text, icons and the parts of controls


def _luminance(color: QColor) -> float:
    def channel(value: float) -> float:
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(color.redF()) + 0.7152 * channel(color.greenF()) + 0.0722 * channel(color.blueF())


def contrast_ratio(first: QColor, second: QColor) -> float:
    """From 1 (the same) to 21 (black on white); alpha is ignored (callers blend first)."""
    a, b = _luminance(QColor(first)), _luminance(QColor(second))
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)
