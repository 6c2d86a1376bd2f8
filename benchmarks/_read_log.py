"""Run a command line of this checkout and note every file it opens below some folders: what
bench_scale.py's floors read. Strace-free bookkeeping: ``os.open`` and ``io.open`` (the local
store's raw reads, numpy's and the cache folder's) are wrapped before the command starts, and each
path is appended to the log as it is opened, so a command that leaves through ``os._exit`` loses none.
Python processes the command starts log theirs too (``_read_log_site/sitecustomize.py``, on their
PYTHONPATH): a helper process reading part of an index reads for the action.

    python benchmarks/_read_log.py LOG FOLDER[:FOLDER...] -m ecpfs_viewer ARGS...
    python benchmarks/_read_log.py LOG FOLDER[:FOLDER...] SCRIPT.py ARGS...

The logged run is never the timed one (the wrappers cost a little per file).
"""

from __future__ import annotations

import builtins
import io
import os
import runpy
import sys
import threading
from typing import Any


def install(log: str, folders: list[str]) -> None:
    """Wrap os.open and io.open so that every path opened below one of folders is logged once."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    roots = tuple(os.path.realpath(folder) + os.sep for folder in folders)
    seen: set[str] = set()
    lock = threading.Lock()
    raw_open, raw_io_open = os.open, io.open

    def note(path: Any) -> None:
        if isinstance(path, int):
            return
        try:
            text = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return
        if text.startswith(roots):
            with lock:
                if text not in seen:
                    seen.add(text)
                    os.write(fd, (text + "\n").encode("utf-8", "surrogateescape"))

    def logged_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        opened = raw_open(path, flags, *args, **kwargs)
        if not flags & (os.O_WRONLY | os.O_RDWR):
            note(path)
        return opened

    def logged_io_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        opened = raw_io_open(file, mode, *args, **kwargs)
        if not any(c in mode for c in "wax+"):
            note(file)
        return opened

    os.open = logged_open  # type: ignore[assignment]
    io.open = builtins.open = logged_io_open  # type: ignore[assignment]


def main() -> None:
    log, folders, *command = sys.argv[1:]
    install(log, [f for f in folders.split(os.pathsep) if f])
    site = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_read_log_site")
    os.environ.update(ECPFS_READ_LOG=log, ECPFS_READ_LOG_FOLDERS=folders,
                      PYTHONPATH=os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")])))
    if command[0] == "-m":
        sys.argv = [command[1], *command[2:]]
        runpy.run_module(command[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = command
        sys.path.insert(0, os.path.dirname(os.path.abspath(command[0])))
        runpy.run_path(command[0], run_name="__main__")


if __name__ == "__main__":
    main()
