"""Build ▸ Simulate Drift…: the menu opens it, a run shows progress and then the curve, one row per
share inserted (fewest first), the rows where a rebuild is advised marked, the summary saying where a
rebuild is first advised; a bad list of percentages is said in the dialog, nothing run."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from drift_data import clustered

from ecpfs_viewer.gui.tuning.drift_sim_dialog import DriftSimDialog


def test_the_build_menu_runs_the_simulation_and_shows_the_curve(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from ecpfs_viewer.gui.window.main_window import MainWindow

    np.save(tmp_path / "rows.npy", clustered(800))
    window = MainWindow()
    qtbot.addWidget(window)
    from PySide6.QtWidgets import QMenu

    build_menu = next(m for m in window.menuBar().findChildren(QMenu) if m.title() == "&Build")
    assert "Simulate &Drift…" in [a.text() for a in build_menu.actions()]
    window.commands.simulate_drift_action.trigger()
    dialog = window.findChild(DriftSimDialog)
    assert dialog is not None and dialog.isVisible()
    dialog.built.setText("25, x")
    dialog.run_button.click()
    assert "comma-separated percentages" in dialog.summary.text() and dialog.simulation is None
    dialog.rows.setText(str(tmp_path / "rows.npy"))
    dialog.built.setText("25,100")
    dialog.levels.setValue(2)
    dialog.target.setValue(20)
    dialog.sample.setValue(50)
    dialog.run_button.click()
    qtbot.waitUntil(dialog.progress.isVisible, timeout=5000)
    qtbot.waitUntil(lambda: dialog.simulation is not None, timeout=60000)
    assert dialog.model.rowCount() == 2
    first, last = dialog.model.row(0), dialog.model.row(1)
    assert (first[0], first[-1], last[0], last[-1]) == (0.0, "no", 75.0, "yes")
    assert dialog.model.is_highlighted(1) and not dialog.model.is_highlighted(0)
    assert "A rebuild is first advised at 75% inserted" in dialog.summary.text()
    folder = os.environ.get("ECPFS_SHOTS")
    if folder:
        dialog.grab().save(str(Path(folder) / "drift_sim.png"))
    dialog.close()
