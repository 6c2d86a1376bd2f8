#!/usr/bin/env python3
"""Start a dask.distributed cluster on this machine with one command: a `dask scheduler` and N `dask worker`s.

    python scripts/dask_cluster.py [--workers 2] [--threads 1] [--host 127.0.0.1] [--port 8786]

prints the scheduler's address (give it to ``ecpfs-viewer recall|compare|tune --scheduler``) once
every worker has joined, and stops them all on Ctrl+C. Needs the ``scale`` extra (dask and
dask.distributed) in this Python. On other machines, join the same scheduler with
``dask worker tcp://HOST:PORT`` (the processes this script starts are exactly those). The tests
start their loopback clusters with :func:`running_cluster`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

#: how long the workers may take to join on a busy machine
START_SECONDS = 120


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process's own session (a worker's nanny and the worker under it), SIGKILL if it lingers."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


@contextlib.contextmanager
def running_cluster(workers: int = 2, threads: int = 1, host: str = "127.0.0.1", port: int | None = None,
                    logs: Path | None = None, env: Mapping[str, str] | None = None,
                    local_directory: Path | None = None) -> Iterator[str]:
    """A scheduler and ``workers`` workers (each under a nanny, which restarts it if it dies) until the
    block ends; its address, once every worker has joined. Output goes to ``logs/NAME.log`` (else to
    nowhere); ``env`` is the processes' environment (default: this one's)."""
    import distributed  # the scale extra

    port = free_port(host) if port is None else port
    everywhere = host in ("0.0.0.0", "")  # the scheduler listens on every interface; workers here use loopback
    address = f"tcp://{'127.0.0.1' if everywhere else host}:{port}"
    processes: list[subprocess.Popen[bytes]] = []

    def start(name: str, *args: str) -> None:
        out = open(logs / f"{name}.log", "wb") if logs is not None else subprocess.DEVNULL  # noqa: SIM115
        try:
            processes.append(subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=out,
                                              stderr=subprocess.STDOUT, env=dict(env) if env is not None else None,
                                              start_new_session=True))
        finally:
            if out is not subprocess.DEVNULL:
                out.close()  # type: ignore[union-attr]

    try:
        start("scheduler", "scheduler", "--host", host, "--port", str(port), "--no-dashboard")
        where = ["--local-directory", str(local_directory)] if local_directory is not None else []
        where += [] if everywhere else ["--host", host]
        for i in range(workers):
            start(f"worker{i}", "worker", address, "--nthreads", str(threads), "--no-dashboard", "--name",
                  f"worker-{i}", *where)
        with distributed.Client(address, timeout="60s", set_as_default=False) as client:
            if workers:  # with none (a scheduler alone, for a test of the wait), the connection is the check
                client.wait_for_workers(workers, timeout=START_SECONDS)
        yield address
    finally:
        for process in reversed(processes):
            _stop(process)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument("--threads", type=int, default=1, help="threads per worker (default 1)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1; 0.0.0.0 lets other machines' workers join)")
    parser.add_argument("--port", type=int, default=8786, help="the scheduler's port (default 8786)")
    args = parser.parse_args(argv)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    with running_cluster(args.workers, args.threads, args.host, args.port) as address:
        print(f"dask scheduler at {address} with {args.workers} workers; Ctrl+C stops them\n"
              f"  ecpfs-viewer recall INDEX --scheduler {address}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stopped.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
