"""The one progress bar of long jobs: any count fits it."""

from __future__ import annotations

from PySide6.QtWidgets import QProgressBar

from ecpfs_viewer.gui.widgets.progress import show_progress
from ecpfs_viewer.model.tasks import Counted


def test_a_count_past_a_32_bit_int_shows_its_share_and_its_real_numbers(qtbot):
    """Found by the 5,000-action monkey (issue 37): a job counting past 2**31 raised OverflowError
    in the GUI thread at every progress report."""
    bar = QProgressBar()
    qtbot.addWidget(bar)
    total = 18_446_744_073_709_551_616
    show_progress(bar, Counted(total // 4, total, "Reading"))
    assert bar.maximum() == 1_000_000 and bar.value() == 250_000
    assert bar.format() == f"Reading {total // 4:,}/{total:,}"
    show_progress(bar, Counted(3, 12, "Reading"))
    assert (bar.maximum(), bar.value()) == (12, 3)
