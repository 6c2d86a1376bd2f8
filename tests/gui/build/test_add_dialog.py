"""Build ▸ Add Vectors…: the checks are shown before Add can be pressed (a wrong dimension is a problem
and Add stays off), the open index is offered by a button and never taken by itself, the add runs in
the background and ends with the id range, and the window's menu opens the dialog."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zarr

from ecpfs_viewer.gui.build.add_dialog import AddVectorsDialog
from ecpfs_viewer.model.build.builder import BuildParams, build_index


@pytest.fixture
def index(tmp_path: Path) -> Path:
    rng = np.random.default_rng(4)
    np.save(tmp_path / "data.npy", rng.standard_normal((300, 6)).astype(np.float32))
    build_index(tmp_path / "data.npy", tmp_path / "idx", BuildParams(levels=2, target_cluster_items=20))
    np.save(tmp_path / "rows.npy", rng.standard_normal((25, 6)).astype(np.float32))
    np.save(tmp_path / "wide.npy", rng.standard_normal((5, 9)).astype(np.float32))
    return tmp_path / "idx"


def test_checks_are_shown_before_adding_and_the_add_ends_with_the_id_range(qtbot, index: Path) -> None:  # type: ignore[no-untyped-def]
    dialog = AddVectorsDialog(open_index=str(index))
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.index.text() == "" and not dialog.run_button.isEnabled()  # the open index is not taken
    dialog.use_open.click()
    assert dialog.index.text() == str(index)
    dialog.rows.setText(str(index.parent / "wide.npy"))
    qtbot.waitUntil(lambda: "Problem:" in dialog.checks.text(), timeout=10_000)
    assert "dimension 9, the index has 6" in dialog.checks.text() and not dialog.run_button.isEnabled()

    dialog.rows.setText(str(index.parent / "rows.npy"))
    qtbot.waitUntil(dialog.run_button.isEnabled, timeout=10_000)
    assert "They will get item ids 300..324." in dialog.checks.text()
    assert "Rows: 25 × 6 float32" in dialog.checks.text()
    with qtbot.waitSignal(dialog.added, timeout=30_000) as added:
        dialog.run_button.click()
    assert added.args == [str(index)]
    assert "item ids 300..324" in dialog.summary.text()
    assert int(zarr.open_array(index, path="info/total_items", mode="r")[()]) == 325
    qtbot.waitUntil(lambda: "They will get item ids 325..349." in dialog.checks.text(), timeout=10_000)


def test_a_url_or_no_index_is_a_problem_shown_in_the_dialog(qtbot, index: Path) -> None:  # type: ignore[no-untyped-def]
    dialog = AddVectorsDialog(open_index=None)
    qtbot.addWidget(dialog)
    assert not dialog.use_open.isEnabled()
    dialog.index.setText("https://example.invalid/idx")
    dialog.rows.setText(str(index.parent / "rows.npy"))
    qtbot.waitUntil(lambda: "Problem:" in dialog.checks.text(), timeout=10_000)
    assert "local index folders only" in dialog.checks.text() and not dialog.run_button.isEnabled()


def test_the_build_menu_opens_add_vectors(qtbot, index: Path) -> None:  # type: ignore[no-untyped-def]
    from ecpfs_viewer.gui.window.main_window import MainWindow

    window = MainWindow()
    qtbot.addWidget(window)
    from PySide6.QtWidgets import QMenu

    build_menu = next(m for m in window.menuBar().findChildren(QMenu) if m.title() == "&Build")
    assert "&Add Vectors…" in [a.text() for a in build_menu.actions()]
    window.commands.add_vectors_action.trigger()
    dialog = window.findChild(AddVectorsDialog)
    assert dialog is not None and dialog.isVisible()
    dialog.close()
