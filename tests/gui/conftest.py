"""Fixtures shared by the GUI tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from PySide6.QtWidgets import QWidget


@pytest.fixture
def show(qtbot) -> Callable[[QWidget, int, int], QWidget]:
    """show(widget, width, height): the widget registered with qtbot (closed after the test),
    sized and on screen."""

    def shown(widget: QWidget, width: int, height: int) -> QWidget:
        qtbot.addWidget(widget)
        widget.resize(width, height)
        widget.show()
        qtbot.waitExposed(widget)
        return widget

    return shown
