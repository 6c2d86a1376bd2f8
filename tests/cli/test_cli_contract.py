"""The command line's contract (README "Exit status"), for every subcommand, as a user meets it.

0 done, 1 the answer is no (errors, not an index, absent, unusable data), 2 cannot start (usage,
cannot open), 130 interrupted; one `ecpfs-viewer: error:` line on stderr; with --json a JSON
error object on stdout. Real stores and real processes throughout.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from command_runs import run  # tests/ is on sys.path (conftest)
from locations import REPO  # tests/ is on sys.path (conftest)

PREFIX = "ecpfs-viewer: error: "


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(PREFIX), err
    return lines[0][len(PREFIX):]


def _as_from_a_terminal() -> None:
    """Ctrl+C as a terminal delivers it: a suite run in the background (`cmd &` in a script) starts
    its children with SIGINT ignored, and a program that inherits that keeps ignoring it (as
    Python does, and as nohup relies on)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _program_env() -> dict[str, str]:
    """The environment of `ecpfs-viewer` run as a program from this worktree."""
    paths = [str(REPO), *[p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


#: every subcommand given a store that does not exist
def _cannot_open_lines(missing: str, out: str) -> dict[str, list[str]]:
    return {
        "info": ["info", missing], "check": ["check", missing], "search": ["search", missing, "--item", "0"],
        "recall": ["recall", missing, "--sample", "2"], "locate": ["locate", missing, "1"],
        "workload": ["workload", missing, "--sample", "2"], "build": ["build", missing + ".npy", out],
    }


@pytest.mark.parametrize("command", ["info", "check", "search", "recall", "locate", "workload", "build"])
def test_cannot_open_is_exit_2_with_one_line(command: str, tmp_path: Path, capsys) -> None:
    missing = str(tmp_path / "nowhere.zarr")
    code, out, err = run(capsys, *_cannot_open_lines(missing, str(tmp_path / "out.zarr"))[command])
    assert code == 2
    assert "nowhere.zarr" in _one_error_line(err)
    assert out == ""
    assert not (tmp_path / "out.zarr").exists()


@pytest.mark.parametrize("command", ["info", "check", "search", "recall", "locate", "workload"])
def test_cannot_open_with_json_prints_a_json_error_on_stdout(command: str, tmp_path: Path, capsys) -> None:
    missing = str(tmp_path / "nowhere.zarr")
    code, out, err = run(capsys, *_cannot_open_lines(missing, "")[command], "--json")
    assert code == 2
    message = _one_error_line(err)
    assert json.loads(out) == {"schema_version": 1,
                               "error": {"kind": "cannot_open", "message": message, "exit_code": 2}}


@pytest.mark.parametrize("line", [
    ["info"], ["check", "--max-node-reads"], ["search", "INDEX", "--k", "many"], ["recall", "INDEX", "--bogus"],
    ["locate", "INDEX", "not-a-number"], ["build", "only-input.npy"], ["completion", "fish"],
])
def test_usage_errors_are_exit_2_with_one_line(line: list[str], two_clusters_path: Path, capsys) -> None:
    line = [str(two_clusters_path) if part == "INDEX" else part for part in line]
    code, out, err = run(capsys, *line)
    assert code == 2 and out == ""
    assert _one_error_line(err).endswith(f"(see `ecpfs-viewer {line[0]} --help`)")


@pytest.mark.parametrize("line", [
    ["search", "INDEX", "--item", "1", "--k", "0"], ["recall", "INDEX", "--search-exp", "x"],
    ["check", "INDEX", "--timeout", "0"], ["build", "GOOD", "OUT", "--levels", "0", "--target-cluster-items", "2"],
])
def test_bad_option_values_are_usage_errors(line: list[str], two_clusters_path: Path, tmp_path: Path,
                                            capsys) -> None:
    np.save(tmp_path / "good.npy", np.zeros((8, 2), np.float32))
    where = {"INDEX": str(two_clusters_path), "GOOD": str(tmp_path / "good.npy"), "OUT": str(tmp_path / "o.zarr")}
    code, out, err = run(capsys, *[where.get(part, part) for part in line])
    assert code == 2 and out == ""
    _one_error_line(err)


def test_usage_error_with_json_prints_a_json_error(two_clusters_path: Path, capsys) -> None:
    code, out, err = run(capsys, "search", str(two_clusters_path), "--item", "0", "--k", "0", "--json")
    assert code == 2
    assert json.loads(out)["error"] == {"kind": "usage", "message": _one_error_line(err), "exit_code": 2}


def test_answer_no_is_exit_1(two_clusters_copy: Path, two_clusters_path: Path, tmp_path: Path, capsys) -> None:
    """check finds errors, locate/search on an absent item, build on data it cannot use, info off an index."""
    import shutil

    shutil.rmtree(two_clusters_copy / "rep_item_ids")
    code, out, err = run(capsys, "check", str(two_clusters_copy))
    assert code == 1 and "ERRORS" in out and err == ""
    code, out, err = run(capsys, "locate", str(two_clusters_path), "42", "--json")
    assert code == 1
    assert json.loads(out)["error"] == {"kind": "failed", "message": "item 42 is not in this index", "exit_code": 1}
    code, _, err = run(capsys, "search", str(two_clusters_path), "--item", "99")
    assert code == 1 and "item 99 is not in any leaf" in _one_error_line(err)
    np.save(tmp_path / "nan.npy", np.array([[np.nan, 0.0]] * 8, np.float32))
    code, _, err = run(capsys, "build", str(tmp_path / "nan.npy"), str(tmp_path / "o.zarr"), "--levels", "1",
                        "--target-cluster-items", "2")
    assert code == 1 and "NaN" in _one_error_line(err)
    plain = tmp_path / "plain.zarr"
    import zarr

    zarr.create_group(plain)
    code, out, _ = run(capsys, "info", str(plain))
    assert code == 1 and out


def test_ctrl_c_during_a_check_is_exit_130(tmp_path: Path, two_clusters_path: Path) -> None:
    """SIGINT reaches the program while it waits on a store that never answers."""
    from remote_fixtures import serve_stalled

    with serve_stalled() as (url, connections):
        proc = subprocess.Popen([sys.executable, "-m", "ecpfs_viewer", "check", f"{url}/x.zarr", "--timeout", "60"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_program_env(),
                                preexec_fn=_as_from_a_terminal)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None:
                # wait for the import to finish: the program then holds a connection open to the server
                if connections.total:
                    break
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 130, err
    assert _one_error_line(err) == "interrupted" and out == ""


def test_mistyped_command_says_did_you_mean(capsys) -> None:
    code, out, err = run(capsys, "chek", "x")
    assert code == 2 and out == ""
    assert _one_error_line(err) == "unknown command 'chek': did you mean `check`? (see `ecpfs-viewer --help`)"


def test_gui_without_a_display_says_so_and_exits_2(two_clusters_path: Path) -> None:
    env = {k: v for k, v in _program_env().items() if k not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    done = subprocess.run([sys.executable, "-m", "ecpfs_viewer", str(two_clusters_path)], capture_output=True,
                          text=True, timeout=60, env=env)
    assert done.returncode == 2, done.stderr  # not Qt's abort (134)
    assert _one_error_line(done.stderr).startswith("no display to open the window on")


def test_a_screenshot_without_a_display_is_drawn_offscreen(two_clusters_path: Path, tmp_path: Path) -> None:
    """`--screenshot` needs no screen (`dev.py run --demo --screenshot` on a headless machine)."""
    env = {k: v for k, v in _program_env().items() if k not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    picture = tmp_path / "window.png"
    done = subprocess.run([sys.executable, "-m", "ecpfs_viewer", str(two_clusters_path), "--screenshot", str(picture)],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_interrupted_build_is_exit_130(tmp_path: Path) -> None:
    """Ctrl+C during a build: 130 and nothing left, like every other command."""
    np.save(tmp_path / "many.npy", np.random.default_rng(3).standard_normal((20000, 16)).astype(np.float32))
    proc = subprocess.Popen([sys.executable, "-m", "ecpfs_viewer", "build", str(tmp_path / "many.npy"),
                             str(tmp_path / "many.zarr"), "--levels", "2", "--target-cluster-items", "20",
                             "--quiet", "--force"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_program_env(), cwd=tmp_path, preexec_fn=_as_from_a_terminal)
    try:
        deadline = time.monotonic() + 60
        while not any(".building-" in p.name for p in tmp_path.iterdir()):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert _one_error_line(err).startswith("build stopped by SIGINT")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["many.npy"]


# ------------------------------------------------------------------------------------ progress


def _run_with_stderr_on_a_terminal(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    """Run `ecpfs-viewer ARGV` with stderr on a pseudo-terminal (stdout a pipe); exit code, stdout, terminal text."""
    import pty
    import select

    master, slave = pty.openpty()
    env = {**_program_env(), "TERM": "xterm-256color", "COLUMNS": "120"}
    proc = subprocess.Popen([sys.executable, "-m", "ecpfs_viewer", *argv], stdout=subprocess.PIPE, stderr=slave,
                            stdin=subprocess.DEVNULL, env=env, cwd=cwd)
    os.close(slave)
    seen = bytearray()
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the process closed the terminal's last descriptor
                break
            if not chunk:
                break
            seen += chunk
        out = proc.stdout.read().decode() if proc.stdout else ""
        code = proc.wait(timeout=60)
    finally:
        proc.kill()
        os.close(master)
    return code, out, seen.decode("utf-8", "replace")


def _long_commands(index: str, npy: str, out: str) -> dict[str, list[str]]:
    return {
        "check": ["check", index],
        "recall": ["recall", index, "--sample", "4", "--k", "2", "--search-exp", "1,2"],
        "search --explain": ["search", index, "--item", "0", "--k", "3", "--explain"],
        "build": ["build", npy, out, "--levels", "2", "--target-cluster-items", "2"],
    }


@pytest.mark.parametrize("command", ["check", "recall", "search --explain", "build"])
def test_long_commands_draw_a_progress_bar_with_an_eta_on_a_terminal(command: str, two_clusters_path: Path,
                                                                      tmp_path: Path) -> None:
    np.save(tmp_path / "good.npy", np.random.default_rng(0).random((40, 4), dtype=np.float32))
    line = _long_commands(str(two_clusters_path), str(tmp_path / "good.npy"), str(tmp_path / "out.zarr"))[command]
    code, out, terminal = _run_with_stderr_on_a_terminal(line, tmp_path)
    assert code == 0, terminal
    assert "━" in terminal and "ETA" in terminal, terminal  # rich's bar, and the time remaining
    assert "━" not in out and "ETA" not in out  # the report on stdout stays clean


@pytest.mark.parametrize("command", ["check", "recall", "search --explain", "build"])
def test_no_progress_bar_when_piped_or_quiet(command: str, two_clusters_path: Path, tmp_path: Path) -> None:
    np.save(tmp_path / "good.npy", np.random.default_rng(0).random((40, 4), dtype=np.float32))
    lines = _long_commands(str(two_clusters_path), str(tmp_path / "good.npy"), str(tmp_path / "out.zarr"))
    piped = subprocess.run([sys.executable, "-m", "ecpfs_viewer", *lines[command]], capture_output=True, text=True,
                           timeout=120, env=_program_env(), cwd=tmp_path)
    assert piped.returncode == 0 and piped.stderr == "", piped.stderr
    quiet = [*lines[command], "--quiet"]
    if command == "build":
        quiet[2] = str(tmp_path / "quiet.zarr")
    code, _, terminal = _run_with_stderr_on_a_terminal(quiet, tmp_path)
    assert code == 0 and terminal == "", terminal


# ------------------------------------------------------------------------------------ completion


def test_bash_completion_script_is_valid_and_names_every_subcommand(capsys, tmp_path: Path) -> None:
    from ecpfs_viewer.cli import SUBCOMMANDS

    code, script, err = run(capsys, "completion", "bash")
    assert code == 0 and err == ""
    (tmp_path / "ecpfs-viewer.bash").write_text(script)
    syntax = subprocess.run(["bash", "-n", str(tmp_path / "ecpfs-viewer.bash")], capture_output=True, text=True)
    assert syntax.returncode == 0, syntax.stderr
    for name in SUBCOMMANDS:
        assert name in script
    # bash itself completes from it: the subcommands after `ecpfs-viewer `, and check's options
    probe = f"""source {tmp_path / 'ecpfs-viewer.bash'}
COMP_WORDS=(ecpfs-viewer ch); COMP_CWORD=1; COMP_LINE="ecpfs-viewer ch"; COMP_POINT=${{#COMP_LINE}}
_shtab_ecpfs_viewer; echo "${{COMPREPLY[@]}}"
COMP_WORDS=(ecpfs-viewer check --ma); COMP_CWORD=2; COMP_LINE="ecpfs-viewer check --ma"; COMP_POINT=${{#COMP_LINE}}
_shtab_ecpfs_viewer; echo "${{COMPREPLY[@]}}"
"""
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert done.stdout.splitlines() == ["check", "--max-node-reads --max-in-flight"] or (
        done.stdout.splitlines()[0] == "check" and set(done.stdout.splitlines()[1].split()) ==
        {"--max-node-reads", "--max-in-flight"}), done.stdout + done.stderr


def test_zsh_completion_script(capsys, tmp_path: Path) -> None:
    import shutil

    code, script, _ = run(capsys, "completion", "zsh")
    assert code == 0 and script.startswith("#compdef ecpfs-viewer")
    for name in ("info", "check", "build", "search", "recall", "locate", "--max-node-reads", "--search-exp"):
        assert name in script
    zsh = shutil.which("zsh")
    if zsh is not None:  # where zsh is installed (apt install zsh): it parses the script, and compinit takes it up
        (tmp_path / "_ecpfs-viewer").write_text(script)
        done = subprocess.run([zsh, "-n", str(tmp_path / "_ecpfs-viewer")], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        setup = (f"fpath=({tmp_path} $fpath); autoload -U compinit; compinit -u -d {tmp_path / 'zcompdump'}; "
                 "print -r -- $_comps[ecpfs-viewer]")
        done = subprocess.run([zsh, "-f", "-c", setup], capture_output=True, text=True, timeout=30, cwd=tmp_path)
        assert done.stdout.strip() == "_ecpfs-viewer", done.stdout + done.stderr


@pytest.mark.parametrize("argv", [["search", "{index}", "--item", "5", "--json"], ["info", "{index}", "--json"],
                                  ["check", "{index}", "--json"], ["locate", "{index}", "5", "--json"]])
def test_a_reader_that_leaves_early_ends_the_command_quietly(argv: list[str], two_clusters_path: Path,
                                                              tmp_path: Path) -> None:
    """`ecpfs-viewer search … --json | head -1`: the pipe closes under the writer; no traceback."""
    line = [part.format(index=two_clusters_path) for part in argv]
    reader, writer = os.pipe()
    os.close(reader)  # nobody reads: the first write fails with EPIPE
    done = subprocess.run([sys.executable, "-m", "ecpfs_viewer", *line], stdout=writer, stderr=subprocess.PIPE,
                          text=True, timeout=120, env=_program_env(), cwd=tmp_path)
    os.close(writer)
    assert "Traceback" not in done.stderr and "Broken pipe" not in done.stderr, done.stderr
    assert done.returncode != 0  # the answer did not reach anyone
