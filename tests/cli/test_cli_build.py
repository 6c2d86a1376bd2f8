"""`ecpfs-viewer build` on a terminal: every bad input is one clear line and nothing written, exit 2
when the build cannot start (parameters, output, an input that cannot be opened) and 1 when the
input's data cannot be built; good input builds and prints the summary (search: test_cli_search.py)."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from ecpfs_viewer.cli import main
from tests.npy_headers import write_lying_npy

POINTS = np.array([(0, 0), (0.4, 0.4), (1, 1), (1.4, 1.4), (10, 10), (10.4, 10.4), (11, 11), (11.4, 11.4)],
                  dtype=np.float32)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    np.save(tmp_path / "good.npy", POINTS)
    return tmp_path


def _build(work: Path, src: str, *extra: str, out: str = "out.zarr") -> int:
    return main(["build", str(work / src) if not src.startswith("/") else src, str(work / out),
                 "--levels", "2", "--target-cluster-items", "2", *extra])


def _listing(work: Path) -> set[str]:
    return {p.name for p in work.iterdir()}


def test_build_prints_the_summary(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _build(work, "good.npy") == 0
    out = capsys.readouterr().out
    assert "Built" in out and "Total Items: 8" in out and "Levels: 2" in out


def _bad(work: Path, name: str, array: np.ndarray | bytes) -> str:
    p = work / name
    if isinstance(array, bytes):
        p.write_bytes(array)
    else:
        np.save(p, array, allow_pickle=True)
    return name


BAD_ARRAYS = {
    "1d": (np.zeros(8, np.float32), "2-D array"),
    "3d": (np.zeros((2, 4, 2), np.float32), "2-D array"),
    "empty": (np.zeros((0, 2), np.float32), "empty"),
    "object": (np.array([[1, "a"], [2, "b"]], dtype=object), "object"),
    "string": (np.array([["a", "b"], ["c", "d"]]), "string"),
    "complex": (np.ones((8, 2), np.complex64), "complex"),
    "int64": (np.ones((8, 2), np.int64), "unsupported element type"),
}


@pytest.mark.parametrize("case", sorted(BAD_ARRAYS))
def test_bad_arrays(work: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    array, message = BAD_ARRAYS[case]
    name = _bad(work, f"{case}.npy", array)
    before = _listing(work)
    assert _build(work, name) == 1
    err = capsys.readouterr().err
    assert message in err and name in err and err.count("\n") == 1
    assert _listing(work) == before


@pytest.mark.parametrize(("value", "word"), [(np.nan, "NaN"), (np.inf, "infinity"), (-np.inf, "infinity")])
def test_non_finite_values_name_the_first_bad_row(work: Path, capsys: pytest.CaptureFixture[str],
                                                  value: float, word: str) -> None:
    data = POINTS.copy()
    data[5, 1] = value
    data[7, 0] = value
    name = _bad(work, "nf.npy", data)
    assert _build(work, name) == 1
    assert f"row 5 contains {word}" in capsys.readouterr().err
    assert _listing(work) == {"good.npy", "nf.npy"}


def test_a_tree_upstream_cannot_build_is_one_line_exit_1_and_nothing_written(
        work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """IP scores: representative 1 is not nearest to itself, so lvl_1/node_1 is never made, yet row 10 is
    routed through it; upstream stops there (spec §3.5), and so does the build, before writing."""
    name = _bad(work, "monkey.npy", np.random.default_rng(1).random((40, 4), dtype=np.float32))
    before = _listing(work)
    assert main(["build", str(work / name), str(work / "out.zarr"), "--levels", "2",
                 "--target-cluster-items", "3", "--metric", "IP"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"error: {work / name}: cannot be built" in err
    assert "lvl_1/node_1" in err and "row 10" in err and "Nothing was written" in err and "Traceback" not in err
    assert _listing(work) == before


def test_truncated_and_non_numpy_and_missing_files(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = (work / "good.npy").read_bytes()
    _bad(work, "trunc.npy", raw[:-10])
    _bad(work, "text.npy", b"hello, this is not numpy\n")
    for name, message, code in (("trunc.npy", "truncated", 1), ("text.npy", "not a .npy file", 1),
                                ("missing.npy", "file not found", 2)):
        assert _build(work, name) == code, name
        assert message in capsys.readouterr().err
    assert not (work / "out.zarr").exists()


@pytest.mark.parametrize("shape", [(-1, 64), (-5, 64)])
def test_a_header_with_a_negative_shape_is_one_sentence(work: Path, capsys: pytest.CaptureFixture[str],
                                                         shape: tuple[int, int]) -> None:
    """Issue 34: the header check refuses it, naming the file (not "number of rows (-5)" later)."""
    path = write_lying_npy(work / "neg.npy", shape)
    assert _build(work, "neg.npy") == 1
    assert capsys.readouterr().err.splitlines() == [
        f"ecpfs-viewer: error: {path}: the header declares shape {shape}; a shape cannot be negative"]
    assert _listing(work) == {"good.npy", "neg.npy"}


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--levels", "0"], "levels must be at least 1"),
     (["--target-cluster-items", "0"], "--target-cluster-items must be at least 1"),
     (["--target-cluster-items", "9"], "larger than the number of rows (8)"),
     (["--node-chunk-kb", "0"], "at least 1"),
     (["--node-chunk-kb", "1", "--rep-chunk-mb", "1"], None)],
)
def test_bad_parameters(work: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str | None) -> None:
    rc = main(["build", str(work / "good.npy"), str(work / "out.zarr"), "--levels", "2",
               "--target-cluster-items", "2", *args])
    if message is None:
        assert rc == 0  # 1 KiB holds 128 rows of 2 float32: fine
        return
    assert rc == 2  # a usage error: the build never starts
    assert message in capsys.readouterr().err
    assert not (work / "out.zarr").exists()


def test_chunk_budget_too_small_for_one_row(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    np.save(work / "wide.npy", np.ones((4, 300), np.float32))  # 1200 bytes per row > 1 KiB
    rc = main(["build", str(work / "wide.npy"), str(work / "out.zarr"), "--levels", "1",
               "--target-cluster-items", "2", "--node-chunk-kb", "1"])
    assert rc == 2
    assert "node chunk budget too small" in capsys.readouterr().err
    assert not (work / "out.zarr").exists()


def test_every_problem_is_one_line_and_exit_2(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI prints the builder's own problems (the ones the Build dialog shows beside its fields);
    a value out of range (--levels 0) is refused sooner, while parsing (tests/cli/test_cli_options.py)."""
    from ecpfs_viewer.model.build.builder import BuildParams, check_build

    (work / "taken.zarr").mkdir()
    rc = main(["build", str(work / "good.npy"), str(work / "taken.zarr"), "--levels", "1",
               "--target-cluster-items", "9", "--quiet"])
    assert rc == 2
    _, problems = check_build(work / "good.npy", BuildParams(levels=1, target_cluster_items=9), work / "taken.zarr")
    assert [p.field for p in problems] == ["target", "output"]
    err = capsys.readouterr().err
    assert err.splitlines() == [f"ecpfs-viewer: error: {p}" for p in problems]
    assert f"{work / 'taken.zarr'}: already exists" in err
    assert _listing(work) == {"good.npy", "taken.zarr"}


def test_existing_output(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _build(work, "good.npy") == 0
    capsys.readouterr()
    mtime = (work / "out.zarr" / "zarr.json").stat().st_mtime_ns
    assert _build(work, "good.npy") == 2
    assert "already exists" in capsys.readouterr().err
    assert (work / "out.zarr" / "zarr.json").stat().st_mtime_ns == mtime
    assert _build(work, "good.npy", "--overwrite", "--quiet") == 0


def test_overwrite_refuses_a_folder_that_is_not_an_index(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 34: a plain Zarr group holding notes/keep.txt is not an index this app would replace."""
    grouped = work / "grouped"
    (grouped / "notes").mkdir(parents=True)
    (grouped / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    (grouped / "notes" / "keep.txt").write_text("mine")
    assert _build(work, "good.npy", "--overwrite", out="grouped") == 2
    assert capsys.readouterr().err.splitlines() == [
        f"ecpfs-viewer: error: {grouped}: holds notes/keep.txt, which is not part of an ecpfs index; not replaced"]
    assert (grouped / "notes" / "keep.txt").read_text() == "mine"
    assert _listing(work) == {"good.npy", "grouped"}


def test_unwritable_output_folder(request: pytest.FixtureRequest) -> None:
    """A real read-only folder. Root ignores permissions, so as root the build runs as 'nobody'."""
    base = Path(tempfile.mkdtemp(prefix="ecpfs-ro-"))  # under /tmp, reachable by 'nobody'
    ro = base / "ro"
    try:
        ro.mkdir()
        np.save(base / "good.npy", np.random.default_rng(0).normal(size=(20, 4)).astype(np.float32))
        base.chmod(0o755)
        (base / "good.npy").chmod(0o644)
        ro.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
        args = ["-m", "ecpfs_viewer", "build", str(base / "good.npy"), str(ro / "out.zarr"),
                "--levels", "1", "--target-cluster-items", "5", "--quiet"]
        if os.geteuid() == 0:
            done = request.getfixturevalue("nobody_python").run(args, capture_output=True, timeout=120, cwd=base)
        else:
            env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
            done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, env=env,
                                  cwd=base)
        assert done.returncode == 2, done.stderr
        assert "cannot be written" in done.stderr
        assert os.listdir(ro) == []
    finally:
        ro.chmod(stat.S_IRWXU)
        shutil.rmtree(base)


def test_output_folder_missing_or_a_file(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _build(work, "good.npy", out="nowhere/out.zarr") == 2
    assert f"output folder {work / 'nowhere'} does not exist" in capsys.readouterr().err
    (work / "afile").write_text("x")
    assert _build(work, "good.npy", out="afile/out.zarr") == 2
    assert "output folder" in capsys.readouterr().err


def test_unwritable_output_folder_reported(work: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # works as root too: make the temporary directory creation fail like EACCES would
    import ecpfs_viewer.model.build.builder as build_mod

    def deny(path, *a, **k):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(build_mod.os, "mkdir", deny)
    assert _build(work, "good.npy") == 2
    assert f"output folder {work} cannot be written (Permission denied)" in capsys.readouterr().err
    monkeypatch.undo()
    assert _listing(work) == {"good.npy"}


# ------------------------------------------------------------------------- size guard and signals


def _run_cli(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """A real `ecpfs-viewer build` process (stderr captured), as a user or a service manager starts it."""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    return subprocess.Popen([sys.executable, "-m", "ecpfs_viewer", "build", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)


def _building_folders(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if ".building-" in p.name)


def _wait_for_building_folder(folder: Path, proc: subprocess.Popen[str], seconds: float = 60) -> Path:
    """The build's hidden folder, as soon as it exists (the build then runs for a few seconds more)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = _building_folders(folder)
        if found:
            return found[0]
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    raise AssertionError("the build never created its temporary folder")


@pytest.fixture
def slow_input(tmp_path: Path) -> Path:
    """An input whose build writes about 1,000 leaves: a few seconds of work after the folder appears."""
    path = tmp_path / "many.npy"
    np.save(path, np.random.default_rng(3).standard_normal((20000, 16)).astype(np.float32))
    return path


@pytest.mark.timeout(120)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_stop_signal_during_a_build_removes_its_folder(tmp_path: Path, slow_input: Path, signum: int) -> None:
    proc = _run_cli(str(slow_input), str(tmp_path / "many.zarr"), "--levels", "2", "--target-cluster-items",
                    "20", "--quiet", "--force", cwd=tmp_path)
    try:
        _wait_for_building_folder(tmp_path, proc)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    name = signal.Signals(signum).name
    assert proc.returncode == 128 + signum, err
    assert f"build stopped by {name}; nothing was written" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["many.npy"]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_stop_signal_swallowed_inside_a_ctypes_callback_still_cancels_the_build() -> None:
    """threadpoolctl scans libraries in a ctypes callback; Python prints and drops a raise from there."""
    import ctypes
    import ctypes.util

    from ecpfs_viewer.cli.build import _stop_signals_interrupt

    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    compare_type = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)

    def compare(a: int | None, b: int | None) -> int:
        os.kill(os.getpid(), signal.SIGHUP)
        sum(range(1000))  # Python runs the handler here, inside the callback
        return 0

    values = (ctypes.c_int * 2)(2, 1)
    with _stop_signals_interrupt() as stop:
        libc.qsort(values, 2, ctypes.sizeof(ctypes.c_int), compare_type(compare))
    assert stop.signum == signal.SIGHUP
    assert stop.cancel.is_set()


@pytest.mark.timeout(120)
def test_next_build_removes_what_a_killed_build_left(tmp_path: Path, slow_input: Path) -> None:
    proc = _run_cli(str(slow_input), str(tmp_path / "many.zarr"), "--levels", "2", "--target-cluster-items",
                    "20", "--quiet", "--force", cwd=tmp_path)
    try:
        left = _wait_for_building_folder(tmp_path, proc)
        proc.kill()  # SIGKILL: no clean-up can run
        proc.wait(timeout=30)
    finally:
        proc.kill()
    assert left.is_dir() and not (tmp_path / "many.zarr").exists()

    np.save(tmp_path / "good.npy", POINTS)
    proc = _run_cli(str(tmp_path / "good.npy"), str(tmp_path / "small.zarr"), "--levels", "2",
                    "--target-cluster-items", "2", cwd=tmp_path)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert f"warning: removed 1 unfinished build folder left by killed builds ({left.name}), freeing" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good.npy", "many.npy", "small.zarr"]


def test_unusually_large_build_needs_force(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--levels 64 with one item per cluster on 3,000 rows: 8 GiB of near-empty nodes for 750 KiB of input."""
    np.save(work / "rows.npy", np.zeros((3000, 64), np.float32))
    args = ["build", str(work / "rows.npy"), str(work / "huge.zarr"), "--levels", "64", "--target-cluster-items", "1"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    # the folders among those entries take a block each on a disk (ext4, xfs), nothing in memory (tmpfs)
    size = "8.1 GiB" if os.stat(work).st_blocks else "3.7 GiB"
    assert f"the index would take about {size} on disk in 2,120,387 files and folders" in err
    assert "times the 750.0 KiB of the input" in err and "pass --force to build it anyway" in err
    assert _listing(work) == {"good.npy", "rows.npy"}
    # an ordinary build of the same file needs no --force
    assert main(["build", str(work / "rows.npy"), str(work / "fine.zarr"), "--levels", "2",
                 "--target-cluster-items", "100", "--quiet"]) == 0


def test_a_stop_signal_turned_into_another_error_by_a_lock_still_ends_as_the_signal(
        work: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A stop signal's raise that lands inside a lock's wait can come out of the build as another
    error (its clean-up released a lock it no longer held: "release unlocked lock", 1 CI run in
    many); the build is still stopped by the signal, said so, with the shell's status."""
    from ecpfs_viewer.cli import build as build_cli

    def build_index(*_args: object, **_kwargs: object) -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            sum(range(1000))  # the handler's raise lands here
        finally:
            raise RuntimeError("release unlocked lock")  # what threading's clean-up raised instead

    monkeypatch.setattr(build_cli, "build_index", build_index)
    np.save(work / "in.npy", POINTS)
    code = main(["build", str(work / "in.npy"), str(work / "out.zarr"), "--quiet", "--force"])
    assert code == 128 + signal.SIGTERM
    assert "build stopped by SIGTERM; nothing was written" in capsys.readouterr().err
