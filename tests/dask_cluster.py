"""A real dask.distributed cluster on loopback: one `dask scheduler` and `dask worker` processes.

The processes are the ones users start (``python -m dask scheduler`` / ``dask worker``), each in a
session of its own so that stopping one stops its nanny's worker too. The workers' temporary
folder is a folder of the test (``tmp``), so a test can see what they leave behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cloud_emulators import free_port

try:
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # the scale extra is not installed: the tests that need it skip
    WorkerPlugin = object  # type: ignore[assignment,misc]

TESTS = Path(__file__).parent
#: how long a cluster may take to start on a busy machine
START_SECONDS = 120


@dataclass
class DaskCluster:
    address: str
    tmp: Path  # the workers' TMPDIR
    logs: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def client(self) -> Any:
        import distributed

        return distributed.Client(self.address, timeout="30s", set_as_default=False)

    def work_folders(self) -> list[str]:
        """The tune work folders in the workers' temporary folder."""
        return sorted(p.name for p in self.tmp.iterdir() if p.name.startswith(".ecpfs-tune-"))


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)  # its own session: the nanny and its worker
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


@contextlib.contextmanager
def dask_cluster(folder: Path, workers: int = 2) -> Iterator[DaskCluster]:
    """A scheduler and ``workers`` single-threaded workers (each under a nanny, which restarts it if it dies)."""
    tmp, logs, space = folder / "worker-tmp", folder / "logs", folder / "worker-space"
    for path in (tmp, logs, space):
        path.mkdir(parents=True, exist_ok=True)
    # the workers import this package (and tests/, for plugins the tests send them) as the tests do
    paths = [str(TESTS.parent), str(TESTS), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p), "TMPDIR": str(tmp)}
    port = free_port()
    cluster = DaskCluster(f"tcp://127.0.0.1:{port}", tmp, logs)

    def start(name: str, *args: str) -> None:
        with open(logs / f"{name}.log", "wb") as log:
            cluster.processes.append(subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=log,
                                                      stderr=subprocess.STDOUT, env=env, start_new_session=True))

    try:
        start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard")
        for i in range(workers):
            start(f"worker{i}", "worker", cluster.address, "--nthreads", "1", "--host", "127.0.0.1",
                  "--no-dashboard", "--name", f"w{i}", "--local-directory", str(space))
        with cluster.client() as client:
            client.wait_for_workers(workers, timeout=START_SECONDS)
        yield cluster
    finally:
        for process in reversed(cluster.processes):
            _stop(process)


class DieOnce(WorkerPlugin):
    """A worker plugin: the first worker to start a task whose key begins with ``prefix`` dies on the spot
    (``os._exit``), once per ``marker`` file; the scheduler must then run the task elsewhere."""

    name = "ecpfs-die-once"

    def __init__(self, prefix: str, marker: str) -> None:
        self.prefix, self.marker = prefix, marker

    def setup(self, worker: Any) -> None:
        pass

    def teardown(self, worker: Any) -> None:
        pass

    def transition(self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any) -> None:
        if finish != "executing" or not str(key).startswith(self.prefix):
            return
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return
        os._exit(1)
