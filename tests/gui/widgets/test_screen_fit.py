"""Secondary windows fit the screen they open on (issue 37: Tune opened at 1,320 x 860 and Compare at
1,100 x 760 on a 1280 x 800 screen at 1.5x), a remembered geometry comes back clamped to the screen,
and the Build dialog shows no blank band where a build's progress goes when none runs."""

from __future__ import annotations

from pathlib import Path

from index_factory import build_clustered_index
from PySide6.QtCore import QRect
from PySide6.QtWidgets import QWidget

from ecpfs_viewer.gui.build.dialog import BuildDialog
from ecpfs_viewer.gui.build.progress import IDLE_TEXT
from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.gui.tuning.compare_view import CompareView
from ecpfs_viewer.gui.tuning.tune_dialog import TuneDialog
from ecpfs_viewer.gui.widgets.screen_fit import available_geometry


def _fits(qtbot, window: QWidget) -> QRect:
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    screen = available_geometry(window)
    assert screen.width() < 1320 or screen.height() < 860  # the offscreen screen is smaller than Tune's design
    frame = window.frameGeometry()
    assert screen.contains(frame), (frame, screen)
    return frame


def test_tune_compare_and_build_open_within_the_screen(qtbot, tmp_path: Path) -> None:
    """Compare names both indexes: a long path (here over 300 characters) is cut, not a wider window."""
    folder = tmp_path.joinpath(*["a-folder-with-a-long-name"] * 12)
    folder.mkdir(parents=True)
    index = build_clustered_index(folder, 300, 6, target_cluster_items=30)
    _fits(qtbot, TuneDialog())
    compare = CompareView(str(index), str(index))
    _fits(qtbot, compare)
    qtbot.waitUntil(lambda: not compare.busy, timeout=30_000)
    _fits(qtbot, BuildDialog())


def test_a_remembered_geometry_larger_than_the_screen_is_clamped(qtbot) -> None:
    first = TuneDialog()
    qtbot.addWidget(first)
    first.setGeometry(-200, -100, 3000, 2000)  # as if saved on a large screen, partly off it
    app_settings.save_widget_state("window/tune", first)
    first.close()
    again = TuneDialog()
    frame = _fits(qtbot, again)
    assert frame.width() <= available_geometry(again).width()


def test_a_tune_window_resized_by_the_user_opens_at_that_size(qtbot) -> None:
    first = TuneDialog()
    qtbot.addWidget(first)
    first.show()
    qtbot.waitExposed(first)
    first.resize(720, 640)
    first.hide()  # remembered as it is hidden
    again = TuneDialog()
    qtbot.addWidget(again)
    assert (again.width(), again.height()) == (720, 640)


def test_the_build_dialog_shows_its_progress_place_as_a_status_line(qtbot) -> None:
    dialog = BuildDialog()
    _fits(qtbot, dialog)
    box = dialog.progress
    assert box.isVisible() and box.speed_label.isVisible() and box.speed_label.text() == IDLE_TEXT
    assert not box.speed_label.isEnabled()  # greyed: a place kept for a build, not a missing part
    assert box.phase_rows() == []
