"""Diagnostics ▸ Drift… as a user drives it: on an index grown from 20 % by inserts the run shows
progress, then the verdict "Rebuild advised" with its reasons and the build command; --against (the
Against field) with a fresh build of the same rows says no rebuild; Cancel during the fresh build
leaves no temporary folder."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from drift_data import grown_and_fresh

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.diagnostics.drift_view import DriftDialog


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return grown_and_fresh(tmp_path_factory.mktemp("drift-gui"))


@pytest.fixture
def window(qtbot, indexes):  # type: ignore[no-untyped-def]
    win = create_main_window(str(indexes[0]))
    qtbot.addWidget(win)
    win.resize(1280, 800)
    win.show()
    qtbot.waitUntil(lambda: not win.is_busy() and win.diagnostics.drift_action.isEnabled(), timeout=15000)
    yield win
    win.close()


@pytest.mark.long  # two reports, one with a fresh build: about 10 s on a loaded 2-core machine
def test_drift_dialog_shows_progress_and_the_verdict_with_reasons(qtbot, window, indexes) -> None:  # type: ignore[no-untyped-def]
    window.diagnostics.drift_action.trigger()
    dialog = window.diagnostics.drift
    assert isinstance(dialog, DriftDialog) and dialog.isVisible()
    dialog.run_button.click()
    qtbot.waitUntil(lambda: dialog.progress.isVisible(), timeout=5000)
    qtbot.waitUntil(lambda: dialog.report is not None, timeout=60000)
    assert not dialog.progress.isVisible() and dialog.run_button.isEnabled()
    assert dialog.summary.text().startswith("Rebuild advised (3 of 5 thresholds crossed)")
    assert "for the same" in dialog.verdict.text()  # recall compared at equal cost
    text = dialog.verdict.text()
    assert "Rebuild advised" in text and "leaves exceed 4× the target of 20 items" in text
    assert dialog.report.verdict.rebuild and all(r in text for r in dialog.report.verdict.reasons)
    assert dialog.command.text().startswith("ecpfs-viewer build ITEMS.npy grown-rebuilt.zarr --levels 2")
    assert "CROSSED" in dialog.details.toPlainText()
    _shots(dialog, "drift")

    dialog.against.setText(str(indexes[1]))
    dialog.thresholds["cost_ratio"].setValue(100)
    dialog.thresholds["over_4x_share"].setValue(1)
    dialog.thresholds["imbalance_ratio"].setValue(100)
    dialog.thresholds["recall_drop"].setValue(1)
    first = dialog.report
    dialog.run_button.click()
    qtbot.waitUntil(lambda: dialog.report is not first, timeout=60000)
    assert dialog.summary.text() == "No rebuild needed." and "No rebuild needed" in dialog.verdict.text()
    assert dialog.report.fresh == str(indexes[1])


def test_cancel_during_the_fresh_build_leaves_no_folder(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    dialog = window.diagnostics.open_drift()
    def ours() -> set[Path]:  # this process's drift folders (other processes make their own)
        return set(Path(tempfile.gettempdir()).glob(f".ecpfs-drift-{os.getpid()}-*"))

    before = ours()
    dialog.run_button.click()
    qtbot.waitUntil(lambda: "fresh build" in dialog.progress.format() or dialog.report is not None, timeout=30000)
    dialog.cancel_button.click()
    qtbot.waitUntil(lambda: dialog.run_button.isEnabled(), timeout=30000)
    assert dialog.report is None and dialog.summary.text() == "Cancelled."
    qtbot.waitUntil(lambda: ours() == before, timeout=30000)


def _shots(dialog, name: str) -> None:  # type: ignore[no-untyped-def]
    folder = os.environ.get("ECPFS_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        dialog.grab().save(str(Path(folder) / f"{name}.png"))
