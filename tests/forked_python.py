"""Python code in a child process forked from one that has already imported the command line and
its libraries: a run costs its own work, not the 0.4 s of importing zarr and numpy again.

Each test worker starts one fork server (:mod:`multiprocessing`'s ``forkserver``, its preload the
modules below) the first time it is asked. The child is still a process of its own: its own
address-space limit, environment, working folder, standard streams and exit code, its atexit
functions run at the end as a fresh interpreter's would. What a forked child cannot show is what
a fresh one imports: a test about that (``zarr`` left unimported, a start-up cost) runs
``sys.executable`` itself.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import io
import linecache
import multiprocessing
import multiprocessing.forkserver
import os
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

import pytest

#: what every command imports (the CLI, the model under it, zarr and numpy); loaded once per worker
PRELOAD = ["numpy", "zarr", "ecpfs_viewer.cli", "ecpfs_viewer.cli.commands", "ecpfs_viewer.cli.read",
           "ecpfs_viewer.cli.search", "ecpfs_viewer.model.search", "ecpfs_viewer.model.validation",
           "ecpfs_viewer.model.ecpfs.layout"]
_exit = os._exit  # the code run may replace os._exit (a test measuring its exits)
#: glibc reads it once, when the allocator starts: the server's children inherit the setting
_SERVER_ENV = {"MALLOC_ARENA_MAX": "2"}


class Timeout(Exception):
    """The child did not end within its time; it was killed. Carries what it had written."""

    def __init__(self, seconds: float, stdout: str, stderr: str) -> None:
        super().__init__(f"did not end within {seconds} s")
        self.stdout, self.stderr = stdout, stderr


@functools.cache
def _context() -> multiprocessing.context.BaseContext:
    """The fork server, started once per test worker (the environment it starts with is set for that
    moment only; later runs would change it in a process whose other threads may read it)."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in _SERVER_ENV.items():
            patch.setenv(name, value)
        multiprocessing.forkserver.ensure_running()
    return context


def _exit_status(exc: SystemExit) -> int:
    """The status Python gives a SystemExit that ends the program (printing what is not a number)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def _child(code: str, args: list[str], env: dict[str, str], cwd: str, out: str, err: str,
           memory_mb: int | None) -> None:
    """In the forked child: the limits, streams and environment of a fresh `python -c code args`."""
    import resource

    if memory_mb is not None:
        limit = memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    for target, path in ((1, out), (2, err)):
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(descriptor, target)
        os.close(descriptor)
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                  errors="backslashreplace", line_buffering=True)
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None  # TMPDIR as this run's environment says
    os.chdir(cwd)
    sys.argv = ["-c", *args]
    linecache.cache["<string>"] = (len(code), None, code.splitlines(True), "<string>")  # the server's -c was there
    status = 0
    try:
        exec(compile(code, "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    except SystemExit as exc:
        status = _exit_status(exc)
    except BaseException as exc:  # as the interpreter would: the traceback from the code on, status 1
        traceback.print_exception(exc.with_traceback(exc.__traceback__.tb_next if exc.__traceback__ else None))
        status = 1
    with contextlib.suppress(BaseException):
        threading._shutdown()  # type: ignore[attr-defined]  # waits for non-daemon threads, as at exit
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    _exit(status)


def run_python(code: str, *args: str, env: dict[str, str], timeout: float, memory_mb: int | None = None,
               cwd: str | Path | None = None) -> subprocess.CompletedProcess[str]:
    """`python -c code args` with env (the whole environment), in a forked child; raises Timeout past
    timeout seconds (the child killed)."""
    context = _context()
    with tempfile.TemporaryDirectory(prefix="forked-") as folder:
        out, err = os.path.join(folder, "stdout"), os.path.join(folder, "stderr")
        child = context.Process(target=_child, args=(code, list(args), dict(env), str(cwd or os.getcwd()),
                                                     out, err, memory_mb))
        child.start()
        child.join(timeout)
        status = child.exitcode
        if status is None:
            child.kill()
            child.join()
        child.close()

        def read(path: str) -> str:
            with contextlib.suppress(FileNotFoundError):  # as text=True reads a pipe: universal newlines
                return Path(path).read_bytes().decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
            return ""

        stdout, stderr = read(out), read(err)
    if status is None:
        raise Timeout(timeout, stdout, stderr)
    return subprocess.CompletedProcess(["python", "-c", code, *args], status, stdout, stderr)
