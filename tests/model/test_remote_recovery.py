"""Remote reads that recover: python's own http.server with every default, a server that asks for
fewer requests (503), one stalled object among answered ones, a server that stops answering.
A failure on the way is never taken for a fact about the index."""

from __future__ import annotations

import contextlib
import http.server
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import remote_fixtures

from ecpfs_viewer.model.errors import TransportError, transport_failure
from ecpfs_viewer.model.remote import (
    RemoteOptions,
    RemoteTimeoutError,
    ServerNotAnsweringError,
    open_remote,
)
from ecpfs_viewer.model.stores import OpenedStore

pytest.importorskip("obstore", reason="obstore is part of the remote extra")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def python_http_server(directory: Path) -> Iterator[str]:
    """`python3 -m http.server --bind 127.0.0.1 PORT --directory D`, as a user starts it: the
    standard library's server with its shipped defaults (a listen backlog of 5, HTTP/1.0)."""
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port),
                               "--directory", str(directory)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:  # wait until it listens (a condition, not a clock)
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            assert server.poll() is None and time.monotonic() < deadline, "http.server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(10)


def _opened(url: str, **options: float) -> OpenedStore:
    settings = RemoteOptions(**options)  # type: ignore[arg-type]
    return OpenedStore(open_remote(url, settings), label=url, kind="remote", max_in_flight=settings.max_in_flight)


@pytest.fixture(scope="module")
def many_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,000 small documents: enough that 128 connections at once overflow http.server's backlog."""
    folder = tmp_path_factory.mktemp("many")
    for i in range(2000):
        (folder / f"doc_{i}.json").write_text(f'{{"n": {i}}}')
    return folder


def test_python_http_server_with_defaults_answers_every_read(many_files: Path) -> None:
    """128 in flight (the default) against a 5-connection backlog: dropped connections are given up
    early and asked again with fewer in flight, so every read answers, well within the timeout."""
    with python_http_server(many_files) as url:
        store = _opened(url)
        started = time.perf_counter()
        found = store.read_many_or_errors([f"doc_{i}.json" for i in range(2000)])
        elapsed = time.perf_counter() - started
    failures = [f for f in found if isinstance(f, BaseException)]
    assert failures == []
    assert found[1234] == b'{"n": 1234}'
    assert elapsed < RemoteOptions().timeout_s  # no read waited out its timeout


class _BusyHandler(http.server.SimpleHTTPRequestHandler):
    """503 to the first request for each path, then the file: a server asking for fewer requests."""

    seen: set[str]
    lock: threading.Lock

    def log_message(self, format: str, *args: object) -> None:
        pass

    def send_head(self) -> object:
        with self.lock:
            first = self.path not in self.seen
            self.seen.add(self.path)
        if first:
            self.send_error(503, "busy")
            return None
        return super().send_head()


@contextlib.contextmanager
def serve_busy(directory: Path) -> Iterator[str]:
    handler = type("Busy", (_BusyHandler,), {"seen": set(), "lock": threading.Lock()})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: handler(*a, directory=str(directory)))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_503_cuts_the_requests_in_flight_and_is_retried(many_files: Path) -> None:
    with serve_busy(many_files) as url:
        store = _opened(url, max_in_flight=16)
        found = store.read_many_or_errors([f"doc_{i}.json" for i in range(40)])
    assert all(f == f'{{"n": {i}}}'.encode() for i, f in enumerate(found)), found
    bounded = store.zarr_store._store
    assert bounded.in_flight_limit() < 16  # halved on the 503s, not grown back past them yet


def test_one_stalled_object_fails_alone(two_clusters_path: Path) -> None:
    """The server answers others while one object stalls: that object times out, no other read fails."""
    stalled = "two_clusters.zarr/lvl_2/node_1/zarr.json"
    with remote_fixtures.serve_hostile(two_clusters_path.parent, "stall", lambda path: path == stalled) as (url, tally):
        store = _opened(f"{url}/two_clusters.zarr", timeout_s=2.0)
        first = store.read_many_or_errors(["lvl_2/node_1/zarr.json", "zarr.json", "info/levels/zarr.json"])
        asked = tally.total
        later = store.read_many_or_errors(["lvl_2/node_2/zarr.json", "lvl_2/node_1/zarr.json", "index_root/zarr.json"])
    assert isinstance(first[0], RemoteTimeoutError) and not isinstance(first[0], ServerNotAnsweringError), first[0]
    assert f"{url}/two_clusters.zarr/lvl_2/node_1/zarr.json" in str(first[0])
    assert isinstance(first[1], bytes) and isinstance(first[2], bytes)
    assert isinstance(later[0], bytes) and isinstance(later[2], bytes), later
    assert isinstance(later[1], RemoteTimeoutError) and not isinstance(later[1], ServerNotAnsweringError)
    assert tally.total > asked + 2  # the stalled object was asked again, its siblings too


def test_a_server_that_stops_answering_is_said_once_then_retried_on_request() -> None:
    with remote_fixtures.serve_stalled() as url:
        store = _opened(f"{url}/index.zarr", timeout_s=1.0)
        first = store.read_many_or_errors(["a/zarr.json", "b/zarr.json", "c/zarr.json"])
        started = time.perf_counter()
        later = store.read_many_or_errors(["d/zarr.json", "e/zarr.json"])
        at_once = time.perf_counter() - started
        store.zarr_store._store.retry()  # what F5, Retry and --retry do
        started = time.perf_counter()
        again = store.read_many_or_errors(["f/zarr.json"])[0]
        asked_again = time.perf_counter() - started
    assert all(isinstance(f, RemoteTimeoutError) for f in first)
    assert at_once < 0.5  # not requested
    assert all(isinstance(f, ServerNotAnsweringError) for f in later), later
    host = url.removeprefix("http://")
    assert f"the server at {host} is not answering" in str(later[0])
    assert isinstance(again, RemoteTimeoutError) and not isinstance(again, ServerNotAnsweringError), again
    assert asked_again >= 0.9  # it waited for an answer again
    assert all(isinstance(transport_failure(f), TransportError) for f in [*first, *later, again])
