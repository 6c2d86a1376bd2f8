"""The forked runner the command-line tests use (forked_python) behaves as `python -c` would: exit
status, streams, environment, working folder, atexit, limits, and a child that outlives its time."""

from __future__ import annotations

import os
from pathlib import Path

import forked_python
import pytest


def run(code: str, *args: str, **kwargs: object):
    kwargs.setdefault("env", {"PATH": os.environ.get("PATH", "")})
    kwargs.setdefault("timeout", 30)
    return forked_python.run_python(code, *args, **kwargs)  # type: ignore[arg-type]


def test_status_streams_and_arguments_are_those_of_python_c() -> None:
    done = run("import sys\nprint(sys.argv[1:])\nprint('to err', file=sys.stderr)\nsys.exit(3)", "a", "b")
    assert (done.returncode, done.stdout, done.stderr) == (3, "['a', 'b']\n", "to err\n")
    assert run("raise SystemExit('said why')").stderr == "said why\n"
    assert run("raise SystemExit('said why')").returncode == 1
    assert run("pass").returncode == 0


def test_an_exception_is_a_traceback_of_the_code_and_status_1() -> None:
    done = run("x = 1\n1 / 0")
    assert done.returncode == 1
    assert done.stderr.startswith("Traceback") and 'File "<string>", line 2' in done.stderr
    assert "1 / 0" in done.stderr and "forked_python" not in done.stderr


def test_environment_and_folder_are_the_runs_own(tmp_path: Path) -> None:
    code = ("import os, tempfile\n"
            "print(os.environ.get('ONLY'), os.environ.get('HOME'), os.getcwd(), tempfile.gettempdir())")
    done = run(code, env={"ONLY": "here", "TMPDIR": str(tmp_path)}, cwd=tmp_path)
    assert done.stdout.split() == ["here", "None", str(tmp_path), str(tmp_path)]


def test_atexit_runs_and_os_exit_keeps_its_status() -> None:
    assert run("import atexit\natexit.register(print, 'bye')").stdout == "bye\n"
    done = run("import atexit, os\natexit.register(print, 'skipped')\nprint('x', flush=True)\nos._exit(7)")
    assert (done.returncode, done.stdout) == (7, "x\n")


def test_the_address_space_limit_holds_in_the_child_only() -> None:
    done = run("import numpy\nnumpy.empty(1 << 28)", memory_mb=1024)  # 2 GiB, never touched
    assert done.returncode == 1 and "MemoryError" in done.stderr
    assert run("import numpy\nnumpy.empty(1 << 28)").returncode == 0


def test_a_child_past_its_time_is_killed_with_what_it_wrote() -> None:
    with pytest.raises(forked_python.Timeout) as caught:
        run("import time\nprint('started', flush=True)\ntime.sleep(60)", timeout=1)
    assert caught.value.stdout == "started\n"


def test_the_command_line_is_imported_once_not_per_run() -> None:
    done = run("import sys\nprint('zarr' in sys.modules, 'ecpfs_viewer.cli' in sys.modules)")
    assert done.stdout.split() == ["True", "True"]
