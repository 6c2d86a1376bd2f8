"""A real dask.distributed cluster on loopback for the tests: `dask scheduler` and `dask worker` processes
started by scripts/dask_cluster.py (the command the README gives users), and a worker plugin that kills one.

The workers' temporary folder is a folder of the test (``tmp``), so a test sees what they leave behind.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from script_modules import load_script

try:
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # the scale extra is not installed: the tests that need it skip
    WorkerPlugin = object  # type: ignore[assignment,misc]

TESTS = Path(__file__).parent


@dataclass
class DaskCluster:
    address: str
    tmp: Path  # the workers' TMPDIR

    def client(self) -> Any:
        import distributed

        return distributed.Client(self.address, timeout="30s", set_as_default=False)

    def work_folders(self) -> list[str]:
        """The tune work folders in the workers' temporary folder."""
        return sorted(p.name for p in self.tmp.iterdir() if p.name.startswith(".ecpfs-tune-"))


@contextlib.contextmanager
def dask_cluster(folder: Path, workers: int = 2) -> Iterator[DaskCluster]:
    """A scheduler and ``workers`` single-threaded workers on loopback; logs in ``folder/logs``."""
    tmp, logs, space = folder / "worker-tmp", folder / "logs", folder / "worker-space"
    for path in (tmp, logs, space):
        path.mkdir(parents=True, exist_ok=True)
    # the workers import this package (and tests/, for the plugins the tests send them) as the tests do
    paths = [str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p), "TMPDIR": str(tmp)}
    with load_script("dask_cluster").running_cluster(workers, logs=logs, env=env, local_directory=space) as address:
        yield DaskCluster(address, tmp)


class DieOnce(WorkerPlugin):
    """A worker plugin: the first worker to start a task whose key holds ``part`` dies on the spot
    (``os._exit``), once per ``marker`` file; the scheduler must then run the task elsewhere."""

    name = "ecpfs-die-once"

    def __init__(self, part: str, marker: str) -> None:
        self.part, self.marker = part, marker

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        if finish != "executing" or self.part not in str(key):
            return
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os._exit(1)
