"""Every command on every hostile store: exit 0, 1 or 2, one message, no traceback, bounded work.

The stores are those of tests/model/test_hostile_files.py and test_hostile_metadata.py (built by
tests/hostile_builders.py). Each store gets one process of its own (forked_python; 1 GiB address space, as there) that
runs info, check, build, search, recall and locate in turn through `ecpfs_viewer.cli.main`,
measuring each one's CPU time (work done, which another process loading the cores does not
stretch; a command that hangs without working is caught by the subprocess's own limit);
permission cases run as `nobody` when the tests run as root. Remote stores that stall, cut or
trickle are at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import forked_python
import numpy as np
import pytest
import remote_fixtures
from command_runs import run_cli_measured
from hostile_builders import BROKEN_COPIES, NODE, OTHER_STORES
from locations import REPO

MEMORY_MB = 1024
CPU_SECONDS = 30  # each command's work at most (on a two-cluster store, whatever it declares)
WALL_SECONDS = 120  # each command's share of the subprocess's limit: a guard against hangs only

# runs each command line of argv[1] (JSON) in this process and prints one JSON line per command
_DRIVER = """
import contextlib, io, json, resource, sys, time, traceback
limit = 1024 << 20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
if sys.argv[2]:
    sys.path.insert(0, sys.argv[2])
from ecpfs_viewer.cli import main
for args in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    started, cpu_started = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exc:  # argparse
            code = exc.code
        except BaseException:
            code, _ = None, err.write(traceback.format_exc())
    print(json.dumps({"args": args, "code": code, "seconds": time.perf_counter() - started,
                      "cpu_seconds": time.process_time() - cpu_started,
                      "stdout": out.getvalue(), "stderr": err.getvalue()}), flush=True)
"""


def commands(store: str, out: Path) -> list[list[str]]:
    """Each subcommand once on store (build: the store as input, which is no .npy)."""
    return [["info", store], ["check", store], ["build", store, str(out), "--levels", "2",
                                                  "--target-cluster-items", "2"],
            ["search", store, "--item", "0"], ["recall", store, "--sample", "4"], ["locate", store, "1"]]


def run_commands(lines: list[list[str]], env: dict[str, str] | None = None,
                 nobody: Any = None) -> list[dict[str, Any]]:
    """Run the command lines in one limited subprocess; fails the test when one hangs.

    With `nobody` (the nobody_python fixture) they run as uid 65534, with the interpreter and
    checkout that user can read (this one may live under /root)."""
    extra = {"MALLOC_ARENA_MAX": "2", **(env or {})}
    try:
        if nobody is not None:
            done = nobody.run(["-c", _DRIVER, json.dumps(lines), ""], capture_output=True,
                              timeout=WALL_SECONDS * len(lines), env=extra)
        else:
            done = forked_python.run_python(_DRIVER, json.dumps(lines), str(REPO), timeout=WALL_SECONDS * len(lines),
                                            env={**os.environ, **extra})
    except (subprocess.TimeoutExpired, forked_python.Timeout) as exc:
        pytest.fail(f"a command did not end: after {exc.stdout!r}\n{exc.stderr!r}")
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(results) == len(lines), done.stdout + done.stderr
    return results


def assert_each_ends_with_one_message(results: list[dict[str, Any]]) -> None:
    for r in results:
        where = f"{r['args']}: {r['stderr'] or r['stdout'][-2000:]}"
        assert r["code"] in (0, 1, 2), where
        assert "Traceback" not in r["stdout"] + r["stderr"] and "MemoryError" not in r["stderr"], where
        assert len(r["stderr"].strip().splitlines()) <= 1, where  # one message, or none (a report)
        assert r["code"] == 0 or (r["stderr"] + r["stdout"]).strip(), where  # a failure says why
        assert r["cpu_seconds"] < CPU_SECONDS, where


@pytest.mark.parametrize("name", list(BROKEN_COPIES))
def test_every_command_on_a_broken_copy(name: str, two_clusters_copy: Path, tmp_path: Path) -> None:
    BROKEN_COPIES[name](two_clusters_copy)
    env = {"ECPFS_VIEWER_MAX_METADATA_MB": "2"} if "over-cap" in name else None
    results = run_commands(commands(str(two_clusters_copy), tmp_path / "out.zarr"), env=env)
    assert_each_ends_with_one_message(results)
    if name == "root-metadata-over-cap":  # check reports it instead of "OK"
        assert results[1]["code"] == 1 and "/: unreadable metadata: zarr.json: cannot read" in results[1]["stdout"]


@pytest.mark.parametrize("name", list(OTHER_STORES))
def test_every_command_on_a_hostile_file(name: str, two_clusters_path: Path, tmp_path: Path) -> None:
    store = OTHER_STORES[name](two_clusters_path, tmp_path)
    assert_each_ends_with_one_message(run_commands(commands(str(store), tmp_path / "out.zarr")))


@pytest.mark.parametrize("locked", ["lvl_2", "lvl_2/node_3", "info", "lvl_2/node_1", f"{NODE}/c/0/0", ""])
def test_every_command_with_permission_denied(world_readable_copy: Path, locked: str,
                                              request: pytest.FixtureRequest) -> None:
    (world_readable_copy / locked).chmod(0)
    nobody = request.getfixturevalue("nobody_python") if os.geteuid() == 0 else None
    writable = world_readable_copy.parent / "out"
    writable.mkdir()
    writable.chmod(0o777)
    results = run_commands(commands(str(world_readable_copy), writable / "out.zarr"), nobody=nobody)
    assert_each_ends_with_one_message(results)
    if locked == "info":
        assert "info/ cannot be read (permission denied)" in results[0]["stdout"]


def test_build_on_hostile_inputs(tmp_path: Path) -> None:
    """A FIFO, /dev/zero, a folder, a header promising 10^12 rows, NaN values, an unreadable output."""
    os.mkfifo(tmp_path / "fifo.npy")
    (tmp_path / "zero.npy").symlink_to("/dev/zero")
    with open(tmp_path / "huge.npy", "wb") as file:
        np.lib.format.write_array_header_1_0(file, {"descr": "<f4", "fortran_order": False, "shape": (10**12, 8)})
        file.write(b"\0" * 1024)
    np.save(tmp_path / "nan.npy", np.array([[np.nan, 1.0]] * 10, dtype=np.float32))
    np.save(tmp_path / "good.npy", np.random.default_rng(0).random((40, 4), dtype=np.float32))
    (tmp_path / "blocked").mkdir()
    lines = [["build", str(tmp_path / name), str(tmp_path / f"{name}.zarr"), "--levels", "2",
              "--target-cluster-items", "4"] for name in ("fifo.npy", "zero.npy", "huge.npy", "nan.npy", "blocked")]
    lines.append(["build", str(tmp_path / "good.npy"), str(tmp_path / "zero.npy"), "--levels", "2",
                  "--target-cluster-items", "4"])  # the output is a device link: refused
    results = run_commands(lines)
    assert_each_ends_with_one_message(results)
    # cannot be opened as a file (2): the FIFO, the device, the folder, the device as output; bad data (1)
    assert [r["code"] for r in results] == [2, 2, 1, 1, 2, 2]
    assert "not a regular file" in results[0]["stderr"]


def test_search_and_recall_on_hostile_query_files(tmp_path: Path, two_clusters_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.npy")
    np.save(tmp_path / "nan.npy", np.array([[np.nan, 0.1]], dtype=np.float32))
    np.save(tmp_path / "inf.npy", np.array([np.inf, 0.1], dtype=np.float32))
    index = str(two_clusters_path)
    lines = [["search", index, "--query-file", str(tmp_path)], ["search", index, "--query-file",
                                                                 str(tmp_path / "fifo.npy")]]
    lines += [["search", index, "--query-file", str(tmp_path / name)] for name in ("nan.npy", "inf.npy")]
    lines += [["recall", index, "--queries", str(tmp_path / name)] for name in ("fifo.npy", "nan.npy")]
    results = run_commands(lines)
    assert_each_ends_with_one_message(results)
    assert [r["code"] for r in results] == [2, 2, 1, 1, 2, 1]  # 2: no file to open; 1: bad values in it
    assert f"{tmp_path}: is a folder, not a .npy file" in results[0]["stderr"]
    assert "not a regular file" in results[1]["stderr"]
    assert all("NaN or Inf" in r["stderr"] for r in results[2:4] + results[5:])


# -- remote stores that stall, cut or trickle ------------------------------------------------------------------
TIMEOUT = "2"  # seconds per request in these tests; a command may take about one timeout more


@pytest.mark.waits  # stalled, trickling and cut servers: each command runs to its deadline
@pytest.mark.parametrize("mode", remote_fixtures.HOSTILE_MODES)
@pytest.mark.parametrize("part", ["everything", "leaves"])
def test_every_command_on_a_hostile_server(two_clusters_path: Path, tmp_path: Path, mode: str, part: str) -> None:
    pytest.importorskip("obstore", reason="obstore is part of the remote extra")

    def hostile(path: str) -> bool:
        return part == "everything" or path.startswith("two_clusters.zarr/lvl_2/")

    def lines(url: str) -> list[list[str]]:
        return [[*line, "--timeout", TIMEOUT] for line in commands(f"{url}/two_clusters.zarr", tmp_path / "o")
                if line[0] != "build"]

    with remote_fixtures.serve_static(two_clusters_path.parent) as (url, _tally):
        healthy = run_commands(lines(url))  # what each command takes on this machine, at its load now
    with remote_fixtures.serve_hostile(two_clusters_path.parent, mode, hostile) as (url, _tally):
        results = run_commands(lines(url))
    assert_each_ends_with_one_message(results)
    for r, base in zip(results, healthy, strict=True):
        # not one timeout per object: about one timeout more than the same command on a healthy server
        assert r["seconds"] < base["seconds"] + 2 * float(TIMEOUT) + 3, (r, base["seconds"])
        assert "panicked" not in r["stderr"]
    if part == "everything":
        assert [r["code"] for r in results[:2]] == [2, 2]  # info and check: cannot open
        expected = "no answer within 2 s" if mode != "cut" else "closed before the whole object arrived"
        assert expected in results[0]["stderr"]


@pytest.mark.parametrize("command", ["info", "check", "search"])
def test_a_stalled_server_as_the_program_leaves_cleanly(command: str) -> None:
    """As a program (console script): ends at its request timeout, one message, no pyo3 panic at exit."""
    pytest.importorskip("obstore", reason="obstore is part of the remote extra")
    extra = ["--item", "0"] if command == "search" else []

    with remote_fixtures.serve_stalled() as (url, _connections):  # never answers: only the timeout ends it
        done = subprocess.run([sys.executable, "-m", "ecpfs_viewer", command, f"{url}/x.zarr", "--timeout", TIMEOUT,
                               *extra], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode in (1, 2), done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "no answer within 2 s" in done.stderr, done.stderr


# -- failures are never facts: metadata that is not JSON "could not be read", never "missing" --
_NOT_JSON = {
    "web page": b"<!DOCTYPE html>\n<html><body>Sign in to the network to continue</body></html>\n",
    "garbage": bytes(range(256)) * 4,
}


def _every_document_replaced(source: Path, target: Path, body: bytes) -> Path:
    shutil.copytree(source, target)
    for document in target.rglob("zarr.json"):
        document.write_bytes(body)
    return target


def _assert_could_not_be_read(result: subprocess.CompletedProcess[str], peak_mb: int, command: str) -> None:
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "could not be read" in result.stdout, output
    for wrong in ("missing", "absent", "not a valid ecpfs index", "NOT AN ECPFS INDEX", "OK", "Traceback",
                  "Warning", "JSONDecodeError", "UnicodeDecodeError"):
        assert wrong not in output, (command, wrong, output)
    assert peak_mb < 300


@pytest.mark.parametrize("command", ["info", "check"])
def test_a_captive_portal_answering_every_document_with_a_web_page(two_clusters_path: Path, tmp_path: Path,
                                                                   command: str) -> None:
    """An HTTP host answering each zarr.json with a 200 HTML page: the index could not be read."""
    served = _every_document_replaced(two_clusters_path, tmp_path / "site" / "index.zarr", _NOT_JSON["web page"])
    with remote_fixtures.serve_static(served.parent) as (url, _):
        result, peak_mb = run_cli_measured(command, f"{url}/index.zarr",
                                           env={"ECPFS_VIEWER_CACHE": str(tmp_path / "cache")})
    _assert_could_not_be_read(result, peak_mb, command)
    assert "zarr.json: not valid JSON but a web page" in result.stdout


@pytest.mark.parametrize("body", list(_NOT_JSON))
@pytest.mark.parametrize("command", ["info", "check"])
def test_a_local_folder_whose_documents_are_not_json(two_clusters_path: Path, tmp_path: Path, command: str,
                                                     body: str) -> None:
    store = _every_document_replaced(two_clusters_path, tmp_path / "index.zarr", _NOT_JSON[body])
    result, peak_mb = run_cli_measured(command, str(store), env={"ECPFS_VIEWER_CACHE": str(tmp_path / "cache")})
    _assert_could_not_be_read(result, peak_mb, command)
    assert "info/format_version could not be read (info/format_version/zarr.json: not valid JSON" in result.stdout
