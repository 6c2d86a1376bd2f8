"""Running the ecpfs-viewer command in tests: in this process (exit code and captured output), or
code in a subprocess with an address-space and a time limit, so a regression on a hostile store
fails the test instead of taking the machine down."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from locations import REPO

from ecpfs_viewer.cli import main

MEMORY_MB = 1024  # address space of each run: the "peak RSS under ~1 GB"
SECONDS = 30  # every local command ends within this


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`ecpfs-viewer ARGV` in this process: its exit code, stdout and stderr."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


_PRELUDE = """
import resource, sys
limit = {limit} << 20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
"""
_ON_PATH = "sys.path.insert(0, {repo!r})\n"

_CLI = """
import runpy
sys.argv = ["ecpfs-viewer", *sys.argv[1:]]
try:
    runpy.run_module("ecpfs_viewer", run_name="__main__")
except SystemExit as exc:
    sys.exit(exc.code)
"""


def run_limited(code: str, *args: str, env: dict[str, str] | None = None,
                nobody: Any = None) -> subprocess.CompletedProcess[str]:
    """Run python code (after the memory-limit prelude) with args; fails the test past SECONDS.

    With `nobody` (the nobody_python fixture) the code runs as uid 65534, with the interpreter and
    checkout that user can read (this one may live under /root)."""
    extra = {"MALLOC_ARENA_MAX": "2", **(env or {})}  # arenas reserve address space
    try:
        if nobody is not None:
            script = _PRELUDE.format(limit=MEMORY_MB) + code
            return nobody.run(["-c", script, *args], capture_output=True, timeout=SECONDS, env=extra)
        script = _PRELUDE.format(limit=MEMORY_MB) + _ON_PATH.format(repo=str(REPO)) + code
        return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                              timeout=SECONDS, env={**os.environ, **extra})
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"did not end within {SECONDS} s: {args}\n{exc.stdout!r}\n{exc.stderr!r}")


#: the CLI in a fresh process; prints its exit code and whether zarr was imported, after its output
_LATER_PROCESS = """
import sys
from ecpfs_viewer.cli import main
code = main(sys.argv[1:])
print(f"exit={code} zarr={'zarr' in sys.modules}")
"""


def run_later_process(*argv: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`ecpfs-viewer ARGV` in a fresh process (with `cache` as its cache folder when given), its
    output followed by `exit=N zarr=True|False` (whether it needed zarr to answer)."""
    return run_limited(_LATER_PROCESS, *argv, env=None if cache is None else {"ECPFS_VIEWER_CACHE": str(cache)})


def run_cli(*args: str, env: dict[str, str] | None = None, nobody: Any = None) -> subprocess.CompletedProcess[str]:
    """`ecpfs-viewer ARGS` within the limits (see run_limited)."""
    return run_limited(_CLI, *args, env=env, nobody=nobody)


_PEAK = "peak RSS MB: "
_MEASURED = f"""
import atexit, os, resource
def _print_peak():
    # VmHWM: this process's own peak (ru_maxrss also counts the parent's when it started the process)
    try:
        with open("/proc/self/status") as status:
            kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print("\\n{_PEAK}%d" % (kb >> 10), file=sys.stderr, flush=True)
atexit.register(_print_peak)
_leave = os._exit  # leave_process skips atexit (a remote store's threads may still run)
def _measured_exit(code):
    _print_peak()
    _leave(code)
os._exit = _measured_exit
"""


def run_cli_measured(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], int]:
    """run_cli, and the peak resident memory of its process in MB (which the output leaves out)."""
    result = run_limited(_MEASURED + _CLI, *args, env={"QT_QPA_PLATFORM": "offscreen", **(env or {})})
    head, marker, peak = result.stderr.rpartition(_PEAK)
    assert marker, result.stderr
    result.stderr = head.rstrip("\n")
    return result, int(peak)


def run_window_measured(*args: str, env: dict[str, str] | None = None,
                        seconds: float = 60) -> tuple[subprocess.CompletedProcess[str], int]:
    """`ecpfs-viewer ARGS` (the window, offscreen; no address-space limit, which Qt's reservations
    would exceed) and the peak resident memory of its process in MB; fails the test past `seconds`."""
    script = "import sys\n" + _ON_PATH.format(repo=str(REPO)) + _MEASURED + _CLI
    try:
        result = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                                timeout=seconds, env={**os.environ, "QT_QPA_PLATFORM": "offscreen", **(env or {})})
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"did not end within {seconds} s: {args}\n{exc.stdout!r}\n{exc.stderr!r}")
    head, marker, peak = result.stderr.rpartition(_PEAK)
    assert marker, result.stderr
    result.stderr = head.rstrip("\n")
    return result, int(peak)


def run_cli_cleanly(*args: str, nobody: Any = None) -> subprocess.CompletedProcess[str]:
    """run_cli, failing the test on a traceback in the output."""
    result = run_cli(*args, env={"QT_QPA_PLATFORM": "offscreen"}, nobody=nobody)
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    return result


def assert_clean(result: subprocess.CompletedProcess[str], *expected: str) -> str:
    """No traceback, no MemoryError; every expected text in the output; returns the output."""
    output = result.stdout + result.stderr
    assert "Traceback" not in output and "MemoryError" not in output, output
    for text in expected:
        assert text in output, output
    return output
