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


def test_the_bar_is_as_wide_as_its_text_beside_a_status_line_that_takes_all_the_room(qtbot):
    """The Index map's bar was squeezed by its wrapping status line until "levels laid out 2/3"
    broke over two clipped lines; it is as wide as its text, up to its maximum width."""
    from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

    row = QWidget()
    qtbot.addWidget(row)
    bar = QProgressBar()
    bar.setMaximumWidth(200)
    status = QLabel("A first picture: the tree as listed (203,540 nodes over 3 levels), each leaf one unit wide; "
                    "reading the leaves' sizes for widths in items …")
    status.setWordWrap(True)
    layout = QHBoxLayout(row)
    layout.addWidget(bar)
    layout.addWidget(status, 1)
    row.resize(640, 60)
    row.show()
    show_progress(bar, Counted(2, 3, "levels laid out"))
    qtbot.waitUntil(lambda: bar.width() >= bar.fontMetrics().horizontalAdvance(bar.text()) + 8)
    show_progress(bar, Counted(1, 10**12, "a report far longer than the bar may ever be"))
    qtbot.waitUntil(lambda: bar.width() == 200)
