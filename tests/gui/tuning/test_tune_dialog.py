"""Build > Tune… as a user meets it: fill the form, run a tiny grid, read the plot, table and
recommendation, export, copy, open a kept variant in the window; cancel leaves nothing."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMenu
from tune_data import CLUSTER, cluster_rows

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.tuning.tune_dialog import CANCELLED, TuneDialog
from ecpfs_viewer.model.tuning.tune import TuneReport


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "tmp"
    work.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(work))
    monkeypatch.setenv("TMPDIR", str(work))  # chosen by the user: not a RAM filesystem
    return work


def fill(dialog: TuneDialog, rows: Path, queries: Path, targets: str, keep: Path | None = None) -> None:
    form = dialog.form
    form.input_edit.setText(str(rows))
    form.levels_edit.setText("1")
    form.targets_edit.setText(targets)
    form.source_combo.setCurrentIndex(form.source_combo.findData("file"))
    form.queries_edit.setText(str(queries))
    form.exps_edit.setText("1, 2, 4")
    if keep is not None:
        form.keep_check.setChecked(True)
        form.keep_edit.setText(str(keep))


def run(qtbot, dialog: TuneDialog) -> None:
    qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.run_button.isEnabled(), timeout=120_000)


def test_tune_dialog_runs_a_grid_and_recommends_the_known_best(qtbot, tmp_path: Path, own_tmp: Path) -> None:
    rows, queries = cluster_rows(tmp_path)
    keep = tmp_path / "kept"
    dialog = TuneDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    fill(dialog, rows, queries, f"{CLUSTER}, {8 * CLUSTER}", keep)
    run(qtbot, dialog)
    assert isinstance(dialog.report, TuneReport), dialog.status.text()
    assert dialog.step_label.text().startswith("Done: 2 variants in")
    assert dialog.overall_bar.value() == 1000
    assert "Recommended: L1 t50 at search_exp 1" in dialog.recommendation.text()
    assert dialog.command_edit.text().endswith(f"--levels 1 --target-cluster-items {CLUSTER} --metric L2 "
                                               "--rep-selection offset")
    assert set(dialog.plot.curves) == {"L1 t50", "L1 t400"} and dialog.plot.frontier is not None
    texts = dialog.points_model.texts()
    assert len(texts) == 6 and texts[0][:3] == ["L1 t50", "1", "1"] and texts[0][-1] == "yes"
    assert dialog.points_model.is_highlighted(0)
    # another cost axis: the table's cost columns follow, the recommendation stays (one leaf each)
    dialog.axis_combo.setCurrentIndex(dialog.axis_combo.findData("leaves_scanned"))
    assert dialog.report.cost_axis == "leaves_scanned"
    assert dialog.points_model.texts()[0][3] == "1"
    # the table sorts on a header click
    dialog.points_view.horizontalHeader().sectionClicked.emit(2)
    qtbot.mouseClick(dialog.copy_button, Qt.MouseButton.LeftButton)
    assert QGuiApplication.clipboard().text() == dialog.command_edit.text()
    csv_path = dialog.export_csv(str(tmp_path / "tune.csv"))
    json_path = dialog.export_json(str(tmp_path / "tune.json"))
    assert csv_path and Path(csv_path).read_text().splitlines()[0].startswith("variant,levels,target_cluster_items")
    assert json_path and json.loads(Path(json_path).read_text())["recommendation"]["variant"] == 0
    assert sorted(p.name for p in keep.iterdir()) == ["l1_t400.zarr", "l1_t50.zarr"]
    assert dialog.variants_model.texts()[0][-1] == str(keep / "l1_t50.zarr")
    opened: list[str] = []
    dialog.open_requested.connect(opened.append)
    dialog.variants_view.selectRow(0)
    assert dialog.open_button.isEnabled()
    qtbot.mouseClick(dialog.open_button, Qt.MouseButton.LeftButton)
    assert opened == [str(keep / "l1_t50.zarr")]
    assert list(own_tmp.iterdir()) == []
    # Simulate Drift… opens the drift simulation of this input with the recommended setting
    drift = dialog.open_drift_simulation()
    assert drift.isVisible() and drift.rows.text() == str(rows)
    assert (drift.levels.value(), drift.target.value(), drift.search_exp.value()) == (1, CLUSTER, 1)
    drift.close()


def test_cancel_in_the_dialog_leaves_nothing(qtbot, tmp_path: Path, own_tmp: Path) -> None:
    rows, queries = cluster_rows(tmp_path, clusters=200)
    keep = tmp_path / "kept"
    dialog = TuneDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    fill(dialog, rows, queries, "10, 20, 50, 100, 200, 400", keep)
    qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.overall_bar.value() > 50, timeout=60_000)
    qtbot.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.run_button.isEnabled(), timeout=60_000)
    assert dialog.step_label.text() == CANCELLED and dialog.report is None
    assert not keep.exists() and list(own_tmp.iterdir()) == []


def test_a_bad_form_says_which_field(qtbot, tmp_path: Path) -> None:
    dialog = TuneDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.form.input_edit.setText(str(tmp_path / "x.npy"))
    dialog.form.levels_edit.setText("1, two")
    qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    assert dialog.status.text().startswith("Levels: whole numbers") and dialog.run_button.isEnabled()
    dialog.form.levels_edit.setText("1")
    run(qtbot, dialog)
    assert dialog.status.text().endswith("x.npy: file not found") and dialog.step_label.text() == "Not started."


def test_build_menu_tune_opens_the_dialog_and_a_kept_variant_opens_in_the_window(qtbot, tmp_path: Path,
                                                                                 own_tmp: Path) -> None:
    rows, queries = cluster_rows(tmp_path, clusters=6)
    win = create_main_window(None)
    qtbot.addWidget(win)
    win.show()
    build_menu = next(m for m in win.menuBar().findChildren(QMenu) if m.title() == "&Build")
    assert [a.text() for a in build_menu.actions()] == ["&Build Index from .npy…", "&Add Vectors…", "&Tune…",
                                                        "Simulate &Drift…"]
    win.commands.tune_action.trigger()
    dialog = win.findChild(TuneDialog)
    assert dialog is not None and dialog.isVisible()
    fill(dialog, rows, queries, "25", tmp_path / "kept")
    run(qtbot, dialog)
    dialog.variants_view.activated.emit(dialog.variants_model.index(0, 0))
    qtbot.waitUntil(lambda: win.session.current is not None, timeout=30_000)
    assert os.path.samefile(win.session.current.location, tmp_path / "kept" / "l1_t25.zarr")
    win.close()


def test_a_bad_scheduler_says_so(qtbot, tmp_path: Path) -> None:
    dialog = TuneDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    dialog.form.input_edit.setText(str(tmp_path / "x.npy"))
    dialog.form.scheduler_edit.setText("cluster-please")
    qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    assert dialog.status.text().startswith("Scheduler: an address like tcp://HOST:PORT") and not dialog.busy
    dialog.form.scheduler_edit.setText("tcp://127.0.0.1:1")
    dialog.form.keep_check.setChecked(True)
    dialog.form.keep_edit.setText(str(tmp_path / "kept"))
    qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    assert dialog.status.text().startswith("Scheduler: variants built on a cluster are not kept") and not dialog.busy


@pytest.mark.long  # starts a scheduler and two workers
def test_the_dialog_tunes_on_a_dask_cluster_and_remembers_it(qtbot, tmp_path: Path, own_tmp: Path) -> None:
    pytest.importorskip("distributed", reason="dask.distributed is part of the scale extra")
    from dask_cluster import dask_cluster

    rows, queries = cluster_rows(tmp_path, clusters=6)
    with dask_cluster(tmp_path / "dask") as cluster:
        dialog = TuneDialog()
        qtbot.addWidget(dialog)
        dialog.show()
        fill(dialog, rows, queries, f"{CLUSTER}, {2 * CLUSTER}")
        dialog.form.scheduler_edit.setText(cluster.address)
        run(qtbot, dialog)
        assert isinstance(dialog.report, TuneReport), dialog.status.text()
        assert [v.name for v in dialog.report.variants] == ["L1 t50", "L1 t100"]
        assert "Recommended: L1 t50 at search_exp 1" in dialog.recommendation.text()
        assert cluster.work_folders() == [] and list(own_tmp.iterdir()) == []
    again = TuneDialog()
    qtbot.addWidget(again)
    assert again.form.scheduler_edit.text() == cluster.address


def test_the_grid_adapts_to_the_input_listing_every_left_out_variant_with_an_include_anyway(
        qtbot, tmp_path: Path, own_tmp: Path) -> None:
    """Issue 37 §6: the size guard leaves out, before Run, every variant too large for the input, all
    named at once with their sizes; Run builds the rest; "Include them anyway" is said explicitly;
    Cancel is live only while a tune runs and never closes the dialog."""
    rows, queries = cluster_rows(tmp_path)
    dialog = TuneDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    assert not dialog.cancel_button.isEnabled()
    fill(dialog, rows, queries, f"{CLUSTER}")
    dialog.form.levels_edit.setText("1, 150, 200")
    qtbot.waitUntil(lambda: dialog.guard.isVisible(), timeout=30_000)
    text = dialog.guard.label.text()
    assert text.startswith("2 variants of 3 left out, unusually large for this input")
    assert "L150 t50: about 299.0 MiB, 76,543 files and folders" in text
    assert "L200 t50: about 400.9 MiB, 102,643 files and folders" in text
    assert dialog.guard.include_check.text() == "Include them anyway" and not dialog.guard.include_check.isChecked()
    dialog.cancel_button.click()  # disabled: nothing happens, the dialog stays
    assert dialog.isVisible()
    qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    assert dialog.step_label.text() == "Starting 1 variant…" and dialog.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: dialog.run_button.isEnabled(), timeout=120_000)
    assert isinstance(dialog.report, TuneReport), dialog.status.text()
    assert [v.name for v in dialog.report.variants] == ["L1 t50"]
    assert [s.name for s in dialog.report.left_out] == ["L150 t50", "L200 t50"]
    assert not dialog.cancel_button.isEnabled() and dialog.isVisible()
    # a grid whose variants all fit: nothing listed
    dialog.form.levels_edit.setText("1")
    qtbot.waitUntil(lambda: dialog.guard.to_build != [], timeout=30_000)
    assert not dialog.guard.isVisible()
    # ticking "anyway" sends the whole grid (the run itself is the model's, tested there)
    dialog.form.levels_edit.setText("1, 200")
    qtbot.waitUntil(lambda: dialog.guard.isVisible(), timeout=30_000)
    dialog.guard.include_check.setChecked(True)
    assert dialog.guard.include()
    dialog.form.levels_edit.setText("1, 150")  # another grid: "anyway" was said of other variants
    assert not dialog.guard.include_check.isChecked()
    qtbot.keyClick(dialog, Qt.Key.Key_Escape)
    assert not dialog.isVisible()
