"""Fixtures shared by the GUI tests."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QWidget

from ecpfs_viewer.gui.overview.panel import IndexOverviewPanel
from ecpfs_viewer.gui.runtime.settings import use_settings_dir
from ecpfs_viewer.gui.runtime.theme import Theme, apply_theme
from ecpfs_viewer.gui.runtime.workers import wait_for_workers


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path) -> Iterator[None]:
    """Recent files, layout and remembered parameters go to this test's folder, never the user's;
    a theme a test chose (View > Theme) is undone, so the next test starts in the system palette."""
    use_settings_dir(tmp_path / "settings")
    yield
    if QCoreApplication.instance() is not None:
        apply_theme(Theme.SYSTEM)


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


@pytest.fixture(autouse=True)
def settle_qt_objects() -> Iterator[None]:
    """After each GUI test: let its workers finish, then collect its windows while no worker runs.
    Left to chance, the garbage collector destroys a window at a random moment of a later test,
    holding the GIL while Qt waits for a signal lock that a worker thread holds while it waits
    for the GIL: a deadlock (seen with PySide6 6.11)."""
    # Automatic collection is off while the test runs: it could run in a worker thread, and a Qt
    # object it frees is then destroyed later on the GUI thread at an arbitrary point (seen:
    # inside a paint), where that deadlock happens.
    gc.disable()
    try:
        yield  # set up before qtbot, so this runs after qtbot has closed the test's widgets
    finally:
        from ecpfs_viewer.gui.runtime.workers import thread_pool

        thread_pool().waitForDone(30_000)
        if QCoreApplication.instance() is not None:
            QCoreApplication.processEvents()
        gc.collect()
        # what survives is walked no more by the next test's collections (the app unfreezes all
        # when it closes an index, and the next teardown freezes again): otherwise every GUI
        # test's teardown walks every module's objects again
        gc.freeze()
        gc.enable()


@pytest.fixture
def overview_panel(qtbot):
    """The index/level overview panel shown at 1280 x 800; cleared, its workers waited for, after."""
    widget = IndexOverviewPanel()
    qtbot.addWidget(widget)
    widget.resize(1280, 800)
    widget.show()
    yield widget
    widget.clear()
    wait_for_workers()
