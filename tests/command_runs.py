"""Running the ecpfs-viewer command in tests: in this process (exit code and captured output), or
code in a process of its own with an address-space and a time limit, so a regression on a hostile
store fails the test instead of taking the machine down (forked from a process that has imported
the command line already, see forked_python; a fresh interpreter where what it imports is tested)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import forked_python
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


_IMPORTS = "import resource, sys\n"  # the prelude's imports, which the code run may use
_PRELUDE = _IMPORTS + """limit = {limit} << 20
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
                nobody: Any = None, fresh: bool = False) -> subprocess.CompletedProcess[str]:
    """Run python code (after the memory-limit prelude) with args; fails the test past SECONDS.

    Forked (forked_python) unless `fresh`: a new interpreter, for a test of what the code imports.
    With `nobody` (the nobody_python fixture) the code runs as uid 65534, with the interpreter and
    checkout that user can read (this one may live under /root)."""
    extra = {"MALLOC_ARENA_MAX": "2", **(env or {})}  # arenas reserve address space
    if nobody is None and not fresh:
        return _forked(code, *args, env=extra, seconds=SECONDS, memory_mb=MEMORY_MB)
    try:
        if nobody is not None:
            script = _PRELUDE.format(limit=MEMORY_MB) + code
            return nobody.run(["-c", script, *args], capture_output=True, timeout=SECONDS, env=extra)
        script = _PRELUDE.format(limit=MEMORY_MB) + _ON_PATH.format(repo=str(REPO)) + code
        return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                              timeout=SECONDS, env={**os.environ, **extra})
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"did not end within {SECONDS} s: {args}\n{exc.stdout!r}\n{exc.stderr!r}")


def _forked(code: str, *args: str, env: dict[str, str], seconds: float,
            memory_mb: int | None) -> subprocess.CompletedProcess[str]:
    """code (after the prelude's imports) with args in a forked process (forked_python), env added to
    this process's; fails the test past `seconds`."""
    try:
        return forked_python.run_python(_IMPORTS + code, *args, env={**os.environ, "MALLOC_ARENA_MAX": "2", **env},
                                        timeout=seconds, memory_mb=memory_mb)
    except forked_python.Timeout as exc:
        pytest.fail(f"did not end within {seconds} s: {args}\n{exc.stdout!r}\n{exc.stderr!r}")


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
    return run_limited(_LATER_PROCESS, *argv, env=None if cache is None else {"ECPFS_VIEWER_CACHE": str(cache)},
                       fresh=True)


def run_cli(*args: str, env: dict[str, str] | None = None, nobody: Any = None) -> subprocess.CompletedProcess[str]:
    """`ecpfs-viewer ARGS` within the limits (see run_limited)."""
    return run_limited(_CLI, *args, env=env, nobody=nobody)


_PEAK = "peak RSS KB: "
_MEASURED = f"""
import atexit, os, resource
def _print_peak():
    # VmHWM: this process's own peak (ru_maxrss also counts the parent's when it started the process)
    try:
        with open("/proc/self/status") as status:
            kb = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print("\\n{_PEAK}%d" % kb, file=sys.stderr, flush=True)
atexit.register(_print_peak)
_leave = os._exit  # leave_process skips atexit (a remote store's threads may still run)
def _measured_exit(code):
    _print_peak()
    _leave(code)
os._exit = _measured_exit
"""


def run_measured(*args: str, env: dict[str, str], seconds: float,
                 memory_mb: int | None) -> tuple[subprocess.CompletedProcess[str], int]:
    """`ecpfs-viewer ARGS` in a process of its own (env added to this one's) and its peak resident
    memory in KiB, which the output leaves out; fails the test past `seconds`."""
    result = _forked(_MEASURED + _CLI, *args, env=env, seconds=seconds, memory_mb=memory_mb)
    head, marker, peak = result.stderr.rpartition(_PEAK)
    assert marker, result.stderr
    result.stderr = head.rstrip("\n")
    return result, int(peak)


def run_cli_measured(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], int]:
    """run_cli, and the peak resident memory of its process in MB (which the output leaves out)."""
    result, kb = run_measured(*args, env={"QT_QPA_PLATFORM": "offscreen", **(env or {})}, seconds=SECONDS,
                              memory_mb=MEMORY_MB)
    return result, kb >> 10


def run_window_measured(*args: str, env: dict[str, str] | None = None,
                        seconds: float = 60) -> tuple[subprocess.CompletedProcess[str], int]:
    """`ecpfs-viewer ARGS` (the window, offscreen; no address-space limit, which Qt's reservations
    would exceed) and the peak resident memory of its process in MB; fails the test past `seconds`."""
    result, kb = run_measured(*args, env={"QT_QPA_PLATFORM": "offscreen", **(env or {})}, seconds=seconds,
                              memory_mb=None)
    return result, kb >> 10


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
