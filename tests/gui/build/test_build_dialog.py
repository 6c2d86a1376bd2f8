"""The Build dialog as a user meets it: preview numbers, errors beside fields, build, cancel, failure."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import zarr
from PySide6.QtCore import QPoint, QRect

from ecpfs_viewer.gui.build import dialog as build_dialog
from ecpfs_viewer.gui.build.dialog import BuildDialog
from ecpfs_viewer.model.build.builder import build_index as real_build_index
from ecpfs_viewer.model.build.builder import preview_build
from ecpfs_viewer.model.formatting import format_bytes


@pytest.fixture
def vectors(tmp_path: Path) -> Path:
    """1000 x 16 float32 vectors with a fixed seed."""
    path = tmp_path / "vectors.npy"
    np.save(path, np.random.default_rng(7).standard_normal((1000, 16)).astype(np.float32))
    return path


def open_dialog(qtbot, input_path: Path | None = None) -> BuildDialog:
    dialog = BuildDialog(None, input_path=str(input_path) if input_path else None)
    qtbot.addWidget(dialog)
    dialog.show()
    return dialog


def wait_checked(qtbot, dialog: BuildDialog) -> None:
    """Wait until the status line stops saying "Checking…": the check of the form as it is now, and of
    the input's values, arrived."""
    qtbot.waitUntil(lambda: not dialog.preview.status_label.text().startswith(
        (build_dialog.CHECKING, build_dialog.SCANNING)), timeout=5000)


def visible_errors(dialog: BuildDialog) -> dict[str, str]:
    return {name: label.text() for name, label in dialog.form.field_errors.items() if label.isVisibleTo(dialog)}


def set_params(dialog: BuildDialog, levels: int, target: int) -> None:
    dialog.form.levels_spin.setValue(levels)
    dialog.form.target_spin.setValue(target)


def ready_dialog(qtbot, source: Path, output: Path, levels: int = 2, target: int = 10) -> BuildDialog:
    """A dialog filled in and checked: the input, the parameters and an output in a folder that exists."""
    output.parent.mkdir(exist_ok=True)
    dialog = open_dialog(qtbot, source)
    set_params(dialog, levels, target)
    dialog.form.output_edit.setText(str(output))
    wait_checked(qtbot, dialog)
    return dialog


def phase_titles(dialog: BuildDialog) -> list[str]:
    return [title for title, _text, _done in dialog.progress.phase_rows()]


def test_preview_shows_the_numbers_of_a_known_file(qtbot, vectors):
    dialog = open_dialog(qtbot, vectors)
    set_params(dialog, levels=2, target=10)
    wait_checked(qtbot, dialog)
    v = {key: label.text() for key, label in dialog.preview.values.items()}
    assert v["rows"] == "1,000"
    assert v["dim"] == "16"
    assert v["dtype"] == "float32 → float32"
    assert v["representatives"] == "100"  # ceil(1000 / 10)
    assert v["fan_out"] == "10"  # ceil(100 ** (1/2))
    assert v["nodes"] == "10 · 100"  # min(10^1, 100), min(10^2, 100)
    # 512 KiB / (16 * 4 bytes) and 8 MiB / (16 * 4 bytes)
    assert v["chunk_rows"] == "8,192 (nodes) · 131,072 (reps)"
    preview = preview_build(vectors, dialog.params(), dialog.form.output())
    on_disk, apparent = format_bytes(preview.estimated_bytes), format_bytes(preview.estimated_apparent_bytes)
    assert v["size"] == (f"about {on_disk} on disk: {preview.estimated_files:,} files and folders, "
                         f"{apparent} of it data")
    assert visible_errors(dialog) == {}
    assert dialog.form.output_edit.text() == str(vectors.parent / "vectors.zarr")  # derived from the input
    assert dialog.build_button.isEnabled()

    dialog.form.dtype_combo.setCurrentIndex(dialog.form.dtype_combo.findData("uint8"))
    wait_checked(qtbot, dialog)
    assert dialog.preview.values["dtype"].text() == "float32 → uint8"
    assert dialog.preview.values["chunk_rows"].text() == "32,768 (nodes) · 524,288 (reps)"
    assert "loses precision" in dialog.preview.warnings_label.text()


def test_shape_and_normalized_warnings(qtbot, vectors):
    dialog = open_dialog(qtbot, vectors)
    set_params(dialog, levels=7, target=10)  # R 100, fan-out ceil(100 ** (1/7)) = 2
    dialog.form.normalized_check.setChecked(True)  # standard normal rows have norms near 4
    wait_checked(qtbot, dialog)
    warnings = dialog.preview.warnings_label.text()
    assert dialog.preview.warnings_label.isVisibleTo(dialog)
    assert "fan-out is 2" in warnings
    assert "all depth and no breadth" in warnings
    assert "not unit length" in warnings
    assert dialog.build_button.isEnabled()  # warnings do not block a build


def test_errors_are_shown_beside_their_fields_and_block_the_build(qtbot, tmp_path, vectors):
    dialog = open_dialog(qtbot, tmp_path / "missing.npy")
    set_params(dialog, levels=0, target=0)
    wait_checked(qtbot, dialog)
    errors = visible_errors(dialog)
    assert errors["input"] == "file not found"
    assert "levels must be at least 1" in errors["levels"]
    assert "target_cluster_items must be at least 1" in errors["target"]
    assert not dialog.build_button.isEnabled()

    (tmp_path / "taken.zarr").mkdir()
    dialog.form.input_edit.setText(str(vectors))
    dialog.form.output_edit.setText(str(tmp_path / "taken.zarr"))
    set_params(dialog, levels=2, target=5000)
    wait_checked(qtbot, dialog)
    errors = visible_errors(dialog)
    assert set(errors) == {"output", "target"}
    assert errors["output"].startswith("already exists")
    assert "larger than the number of rows (1000)" in errors["target"]
    assert not dialog.build_button.isEnabled()

    dialog.form.advanced_button.setChecked(False)
    dialog.form.node_chunk_spin.setValue(0)
    dialog.form.output_edit.setText(str(tmp_path / "fresh.zarr"))
    dialog.form.target_spin.setValue(10)
    wait_checked(qtbot, dialog)
    assert set(visible_errors(dialog)) == {"node_chunk"}
    assert dialog.form.advanced.isVisibleTo(dialog)  # the Advanced section opens to show its error

    dialog.form.node_chunk_spin.setValue(512)
    wait_checked(qtbot, dialog)
    assert visible_errors(dialog) == {}
    assert dialog.build_button.isEnabled()
    assert dialog.preview.status_label.text() == "Ready to build."


def test_build_through_the_dialog_emits_a_readable_index(qtbot, tmp_path, vectors):
    dialog = open_dialog(qtbot, vectors)
    set_params(dialog, levels=2, target=10)
    output = tmp_path / "built.zarr"
    dialog.form.output_edit.setText(str(output))
    wait_checked(qtbot, dialog)
    with qtbot.waitSignal(dialog.index_built, timeout=20000) as signal:
        qtbot.mouseClick(dialog.build_button, build_dialog.Qt.MouseButton.LeftButton)
    assert signal.args == [str(output)]
    assert dialog.result() == BuildDialog.DialogCode.Accepted
    group = zarr.open_group(str(output), mode="r")
    assert int(group["info/total_items"][()]) == 1000
    assert int(group["info/levels"][()]) == 2
    assert group["rep_embeddings"].shape == (100, 16)
    leaf_rows = sum(group[f"lvl_2/{name}/item_ids"].shape[0] for name in group["lvl_2"].group_keys())
    assert leaf_rows == 1000
    rows = dialog.progress.phase_rows()
    titles = phase_titles(dialog)
    assert titles[0] == "Reading and checking rows" and titles[-1] == "Writing leaf nodes"
    assert all(done == 1000 for _title, _text, done in rows)  # every phase shown complete
    on_disk = sum(p.lstat().st_blocks * 512 for p in [output, *output.rglob("*")])  # as du counts
    estimate = preview_build(vectors, dialog.params(), tmp_path / "same_disk.zarr").estimated_bytes
    assert 0.75 * estimate <= on_disk <= 1.25 * estimate  # what the dialog said, within a quarter

    # the next dialog remembers the parameters and the output folder
    again = open_dialog(qtbot, vectors)
    assert (again.form.levels_spin.value(), again.form.target_spin.value()) == (2, 10)
    assert again.form.output_edit.text() == str(tmp_path / "vectors.zarr")
    wait_checked(qtbot, again)
    assert again.preview.values["representatives"].text() == "100"


def test_cancel_mid_build_stops_and_leaves_nothing(qtbot, tmp_path, vectors, monkeypatch):
    reached_writing = threading.Event()

    def build_that_pauses(*args, progress, cancel, **kwargs):
        def hook(p):
            if p.phase == "writing":
                reached_writing.set()  # before the GUI can hear of it
            progress(p)
            if p.phase == "writing":
                cancel.wait(10)  # hold the build here until the user cancels

        return real_build_index(*args, progress=hook, cancel=cancel, **kwargs)

    monkeypatch.setattr(build_dialog, "build_index", build_that_pauses)
    output = tmp_path / "out" / "cancelled.zarr"
    dialog = ready_dialog(qtbot, vectors, output)
    dialog.build_button.click()
    qtbot.waitUntil(lambda: "Writing leaf nodes" in phase_titles(dialog), timeout=10000)
    assert reached_writing.is_set()
    assert dialog.building and not dialog.build_button.isEnabled()
    assert not dialog.form.isEnabled()
    assert dialog.progress.speed_label.text().startswith("Elapsed")

    qtbot.mouseClick(dialog.cancel_button, build_dialog.Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not dialog.building, timeout=10000)
    assert dialog.message.text() == "Cancelled, nothing written."
    assert dialog.isVisible()  # cancelling the build does not close the dialog
    assert list(output.parent.iterdir()) == []  # no index, no hidden temporary folder
    assert dialog.form.isEnabled()


def test_nan_in_the_input_is_said_before_build_is_pressed(qtbot, tmp_path, vectors):
    """Issue 37 §12: the values are read in a worker as soon as the input is chosen; the bad row is
    named under the input and Build stays disabled; another input clears it."""
    data = np.ones((200, 8), dtype=np.float32)
    data[37, 3] = np.nan
    source = tmp_path / "bad.npy"
    np.save(source, data)
    dialog = open_dialog(qtbot, source)
    set_params(dialog, levels=2, target=10)
    qtbot.waitUntil(lambda: "input" in visible_errors(dialog), timeout=10000)
    assert visible_errors(dialog)["input"] == "row 37 contains NaN"
    assert not dialog.build_button.isEnabled()
    assert dialog.preview.status_label.text() == "Fix the field marked in red to build."
    dialog.form.input_edit.setText(str(vectors))
    qtbot.waitUntil(lambda: dialog.build_button.isEnabled(), timeout=10000)
    assert visible_errors(dialog) == {}
    assert not (tmp_path / "bad.zarr").exists()


def test_closing_during_a_build_cancels_it(qtbot, tmp_path, vectors, monkeypatch):
    started = threading.Event()

    def slow_build(*args, progress, cancel, **kwargs):
        def hook(p):
            progress(p)
            started.set()
            cancel.wait(10)

        return real_build_index(*args, progress=hook, cancel=cancel, **kwargs)

    monkeypatch.setattr(build_dialog, "build_index", slow_build)
    dialog = open_dialog(qtbot, vectors)
    set_params(dialog, levels=2, target=10)
    output = tmp_path / "closed.zarr"
    dialog.form.output_edit.setText(str(output))
    wait_checked(qtbot, dialog)
    dialog.build_button.click()
    qtbot.waitUntil(started.is_set, timeout=10000)
    dialog.reject()  # Escape or the window's close button
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=10000)
    assert not dialog.building
    assert not output.exists()
    assert not any(p.name.startswith(".closed.zarr") for p in tmp_path.iterdir())


def test_each_model_problem_is_shown_beside_its_field(qtbot, tmp_path, vectors):
    """The dialog shows the builder's own problems (field + message) under the fields they name."""
    (tmp_path / "taken.zarr").mkdir()
    dialog = open_dialog(qtbot, vectors)
    dialog.form.output_edit.setText(str(tmp_path / "taken.zarr"))
    set_params(dialog, levels=0, target=10)
    dialog.form.rep_chunk_spin.setValue(0)
    wait_checked(qtbot, dialog)
    params = dialog.params()
    problems = preview_build(vectors, params, tmp_path / "taken.zarr").problems
    assert {p.field for p in problems} == {"output", "levels", "rep_chunk"}
    assert visible_errors(dialog) == {p.field: p.message for p in problems}  # the same words, in their place
    assert dialog.preview.status_label.text() == "Fix the 3 fields marked in red to build."
    assert not dialog.build_button.isEnabled()

    dialog.form.output_edit.setText("relative/out.zarr")  # the dialog's own rule: a GUI has no working folder
    wait_checked(qtbot, dialog)
    assert visible_errors(dialog)["output"] == "give the full path of the index folder to create"


def test_build_error_at_build_time_is_shown(qtbot, tmp_path, vectors, monkeypatch):
    """A problem the builder finds only when it starts (here: the output appeared meanwhile) is reported."""
    dialog = open_dialog(qtbot, vectors)
    set_params(dialog, levels=2, target=10)
    output = tmp_path / "late.zarr"
    dialog.form.output_edit.setText(str(output))
    wait_checked(qtbot, dialog)
    assert dialog.build_button.isEnabled()
    output.mkdir()
    (output / "thesis.txt").write_text("not an index")
    dialog.build_button.click()
    qtbot.waitUntil(lambda: dialog.message.isVisibleTo(dialog) and not dialog.building, timeout=10000)
    assert dialog.message.text() == f"Build failed: {output}: already exists: choose a new name, or replace it"
    wait_checked(qtbot, dialog)  # the form is checked again and now marks the field
    assert visible_errors(dialog) == {"output": "already exists: choose a new name, or replace it"}
    assert (output / "thesis.txt").exists()


def test_replace_refuses_a_folder_that_is_not_an_index(qtbot, tmp_path, vectors):
    """Issue 34: "Replace an existing index" replaces an index only; a folder of notes is refused beside
    the output field, with what was found, and the Build button stays off."""
    output = tmp_path / "grouped"
    (output / "notes").mkdir(parents=True)
    (output / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    (output / "notes" / "keep.txt").write_text("mine")
    dialog = ready_dialog(qtbot, vectors, output)
    dialog.form.overwrite_check.setChecked(True)
    wait_checked(qtbot, dialog)
    assert visible_errors(dialog) == {
        "output": "holds notes/keep.txt, which is not part of an ecpfs index; not replaced"}
    assert not dialog.build_button.isEnabled()
    assert (output / "notes" / "keep.txt").read_text() == "mine"


def test_built_index_opens_in_the_main_window(qtbot, tmp_path, vectors):
    from ecpfs_viewer.gui.app import create_main_window

    window = create_main_window()
    qtbot.addWidget(window)
    window.show()
    window.open_build_dialog(str(vectors))  # what a drop of a .npy or File > Build does
    dialog = window.findChild(BuildDialog)
    assert dialog is not None and dialog.form.input_edit.text() == str(vectors)
    set_params(dialog, levels=2, target=10)
    output = tmp_path / "opened.zarr"
    dialog.form.output_edit.setText(str(output))
    wait_checked(qtbot, dialog)
    dialog.build_button.click()
    qtbot.waitUntil(lambda: window.session.location is not None and window.session.hierarchy is not None, timeout=20000)
    assert Path(window.session.location) == output
    qtbot.waitUntil(lambda: window.findChild(BuildDialog) is None, timeout=5000)  # closed and deleted
    window.close()


# ------------------------------------------------------------------------------------------------
# papercuts: a writable default output, a form that does not jump, cancel, large builds


@contextmanager
def unwritable_folder(folder: Path) -> Iterator[None]:
    """Make ``folder`` unwritable for this user for real: mode 555, or for root the immutable flag
    (root ignores modes, but os.access and mkdir both honour ``chattr +i``)."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)]).returncode != 0:
        pytest.skip("no way to make a folder unwritable for root here (chattr +i unsupported)")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)


def test_default_output_is_writable_when_the_input_folder_is_not(qtbot, tmp_path, vectors, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    shared = tmp_path / "shared"
    shared.mkdir()
    source = shared / "vectors.npy"
    shutil.copy(vectors, source)
    with unwritable_folder(shared):
        assert not os.access(shared, os.W_OK)
        dialog = open_dialog(qtbot, source)
        wait_checked(qtbot, dialog)
        assert dialog.form.output_edit.text() == str(home / "vectors.zarr")  # not beside the input
        assert str(shared) in dialog.form.output_edit.toolTip()
        assert visible_errors(dialog) == {}
        assert dialog.build_button.isEnabled()

        # typing a path in the read-only folder is refused by the check, beside the field
        dialog.form.output_edit.setText(str(shared / "here.zarr"))
        wait_checked(qtbot, dialog)
        assert visible_errors(dialog) == {"output": f"output folder {shared} cannot be written"}
    # a writable input folder keeps the output beside the input
    dialog = open_dialog(qtbot, vectors)
    assert dialog.form.output_edit.text() == str(vectors.parent / "vectors.zarr")


def _places(dialog: BuildDialog) -> dict[str, QRect]:
    """Where the fields and buttons are, in dialog coordinates."""
    widgets = {"input": dialog.form.input_edit, "output": dialog.form.output_edit, "levels": dialog.form.levels_spin,
               "target": dialog.form.target_spin, "metric": dialog.form.metric_combo,
               "build": dialog.build_button, "cancel": dialog.cancel_button}
    return {name: QRect(w.mapTo(dialog, QPoint(0, 0)), w.size()) for name, w in widgets.items()}


def test_hints_appear_and_go_without_moving_fields_or_buttons(qtbot, tmp_path, vectors):
    dialog = open_dialog(qtbot, vectors)
    dialog.resize(960, dialog.height())  # its design width (the offscreen screen, 800 wide, opens it narrower)
    set_params(dialog, levels=2, target=10)
    wait_checked(qtbot, dialog)
    assert visible_errors(dialog) == {} and not dialog.preview.warnings_label.isVisibleTo(dialog)
    calm = _places(dialog)
    size = dialog.size()

    dialog.form.input_edit.setText(str(tmp_path / "missing.npy"))  # an error under the first field
    dialog.form.output_edit.setText(str(tmp_path / "out.zarr"))
    set_params(dialog, levels=0, target=0)  # and under two more
    wait_checked(qtbot, dialog)
    assert set(visible_errors(dialog)) == {"input", "levels", "target"}
    assert _places(dialog) == calm and dialog.size() == size

    dialog.form.input_edit.setText(str(vectors))
    set_params(dialog, levels=7, target=10)  # no errors, three warnings
    dialog.form.normalized_check.setChecked(True)
    wait_checked(qtbot, dialog)
    assert visible_errors(dialog) == {}
    assert dialog.preview.warnings_label.text().count("⚠") == 3
    assert _places(dialog) == calm and dialog.size() == size

    dialog.form.normalized_check.setChecked(False)
    set_params(dialog, levels=2, target=10)
    wait_checked(qtbot, dialog)
    assert not dialog.preview.warnings_label.isVisibleTo(dialog)
    assert _places(dialog) == calm and dialog.size() == size


def test_large_build_is_said_before_build_is_pressed(qtbot, tmp_path, monkeypatch):
    """16 levels of one-item clusters over 3,000 rows: nearly 1 GiB of near-empty nodes for 750 KiB of
    input. Said beside the preview as soon as the parameters are set; Build waits for "Build it anyway"."""
    source = tmp_path / "rows.npy"
    np.save(source, np.random.default_rng(1).standard_normal((3000, 64)).astype(np.float32))
    started: list[str] = []

    def build_cancelled_at_once(*args, cancel, **kwargs):  # the user presses Cancel as soon as it starts
        started.append(str(args[1]))
        cancel.set()
        return real_build_index(*args, cancel=cancel, **kwargs)

    monkeypatch.setattr(build_dialog, "build_index", build_cancelled_at_once)
    output = tmp_path / "out" / "huge.zarr"
    dialog = ready_dialog(qtbot, source, output, levels=16, target=1)
    qtbot.waitUntil(lambda: dialog.preview.anyway_check.isVisibleTo(dialog), timeout=10000)
    reason = preview_build(source, dialog.params(), output).oversize  # about 970 MiB on ext4
    assert dialog.preview.oversize_label.text() == f"⚠ {reason}."
    assert "on disk in 248,291 files and folders" in reason and "times the 750.0 KiB of the input" in reason
    assert dialog.preview.status_label.text() == f"Unusually large: tick {build_dialog.BUILD_ANYWAY} to build it."
    assert not dialog.build_button.isEnabled()
    dialog.start_build()  # Return in the form: nothing starts
    assert started == [] and not dialog.building
    dialog.preview.anyway_check.setChecked(True)
    assert dialog.build_button.isEnabled()
    # a change of the parameters: the size is another one, "anyway" is asked again
    dialog.form.levels_spin.setValue(15)
    qtbot.waitUntil(lambda: dialog.preview.status_label.text().startswith("Unusually large"), timeout=10000)
    assert not dialog.preview.anyway_check.isChecked() and not dialog.build_button.isEnabled()
    dialog.preview.anyway_check.setChecked(True)
    dialog.build_button.click()
    qtbot.waitUntil(lambda: started != [] and not dialog.building, timeout=10000)
    assert started == [str(output)]
    assert dialog.message.text() == build_dialog.CANCELLED
    assert list(output.parent.iterdir()) == []


def test_starting_and_ending_a_build_moves_nothing(qtbot, tmp_path, vectors, monkeypatch):
    """Issue 37 §12: the progress and the message line keep their place when empty."""
    def build_cancelled_at_once(*args, cancel, **kwargs):
        cancel.set()
        return real_build_index(*args, cancel=cancel, **kwargs)

    monkeypatch.setattr(build_dialog, "build_index", build_cancelled_at_once)
    dialog = ready_dialog(qtbot, vectors, tmp_path / "out" / "v.zarr")
    qtbot.waitUntil(dialog.build_button.isEnabled, timeout=10000)
    calm, size = _places(dialog), dialog.size()
    buttons = dialog.build_button.mapTo(dialog, dialog.build_button.rect().topLeft())
    dialog.build_button.click()
    qtbot.waitUntil(lambda: not dialog.building and dialog.message.isVisibleTo(dialog), timeout=10000)
    assert dialog.message.text() == build_dialog.CANCELLED
    assert _places(dialog) == calm and dialog.size() == size
    assert dialog.build_button.mapTo(dialog, dialog.build_button.rect().topLeft()) == buttons


def test_after_cancel_the_inputs_are_kept(qtbot, tmp_path, vectors, monkeypatch):
    def build_then_cancel(*args, progress, cancel, **kwargs):
        def hook(p):
            progress(p)
            cancel.set()  # the user cancels during the first phase

        return real_build_index(*args, progress=hook, cancel=cancel, **kwargs)

    monkeypatch.setattr(build_dialog, "build_index", build_then_cancel)
    dialog = open_dialog(qtbot, vectors)
    set_params(dialog, levels=4, target=25)
    dialog.form.metric_combo.setCurrentIndex(dialog.form.metric_combo.findData("IP"))
    output = tmp_path / "kept.zarr"
    dialog.form.output_edit.setText(str(output))
    wait_checked(qtbot, dialog)
    before = (dialog.form.source(), dialog.form.output(), dialog.params())
    dialog.build_button.click()
    qtbot.waitUntil(lambda: dialog.message.text() == "Cancelled, nothing written.", timeout=10000)
    assert dialog.message.isVisibleTo(dialog) and not dialog.building
    assert dialog.progress.speed_label.text().endswith(" · cancelled")
    assert (dialog.form.source(), dialog.form.output(), dialog.params()) == before
    wait_checked(qtbot, dialog)
    assert dialog.build_button.isEnabled() and dialog.form.isEnabled()
    assert not output.exists()


# ------------------------------------------------------------------------------------------------
# remembered between openings; never an output folder the user cannot write


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder of this test's own (Documents and all), so no real one is ever proposed."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder / ".config"))
    return folder


def test_paths_and_fields_come_back_when_the_dialog_opens_again(qtbot, tmp_path, vectors):
    dialog = open_dialog(qtbot, vectors)
    dialog.form.levels_spin.setValue(2)
    dialog.form.target_spin.setValue(30)
    dialog.form.metric_combo.setCurrentIndex(dialog.form.metric_combo.findData("IP"))
    output = tmp_path / "out" / "mine.zarr"
    output.parent.mkdir()
    dialog.form.output_edit.setText(str(output))
    wait_checked(qtbot, dialog)
    dialog.cancel_button.click()  # closed without building: still remembered

    again = open_dialog(qtbot)
    assert again.form.source() == str(vectors) and again.form.output() == str(output)
    assert (again.params().levels, again.params().target_cluster_items, again.params().metric) == (2, 30, "IP")
    wait_checked(qtbot, again)
    assert visible_errors(again) == {} and again.build_button.isEnabled()

    output.mkdir()  # built meanwhile: the next dialog proposes a free name beside it, not that index
    third = open_dialog(qtbot)
    assert third.form.output() == str(output.parent / "vectors.zarr")
    (output.parent / "vectors.zarr").mkdir()
    third.form.input_edit.setText("")
    third.form.input_edit.setText(str(vectors))
    assert third.form.output() == str(output.parent / "vectors-2.zarr")


def test_an_unwritable_folder_is_never_proposed(qtbot, tmp_path, vectors, home):
    documents = home / "Documents"
    documents.mkdir()
    shared = tmp_path / "shared"
    shared.mkdir()
    source = shared / "vectors.npy"
    shutil.copy(vectors, source)
    with unwritable_folder(shared):
        dialog = open_dialog(qtbot, source)
        assert dialog.form.output() == str(documents / "vectors.zarr")
        note = dialog.form.output_note
        assert note.isVisibleTo(dialog)
        assert note.text() == f"The folder of the vectors ({shared}) cannot be written, so the index goes to " \
                              "your Documents folder."
        wait_checked(qtbot, dialog)
        assert visible_errors(dialog) == {} and dialog.build_button.isEnabled()
        dialog.form.output_edit.setText(str(documents / "chosen.zarr"))
        dialog.form.output_edit.textEdited.emit(str(documents / "chosen.zarr"))  # as typing does
        assert not note.isVisibleTo(dialog)
        dialog.reject()  # remembers Documents as the output folder

        with unwritable_folder(documents):  # the remembered folder is read-only now: home instead
            again = open_dialog(qtbot, source)
            assert again.form.output() == str(home / "vectors.zarr")
            assert again.form.output_note.text().startswith(f"The last output folder ({documents}) cannot be written")
            with unwritable_folder(home):
                none = open_dialog(qtbot, source)
                assert none.form.output() == ""  # nothing proposed rather than a folder that fails
                assert none.form.output_note.text().startswith("No folder to propose")
                assert none.form.output_note.isVisibleTo(none)
