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
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import remote_fixtures
from cloud_emulators import free_port  # tests/ is on sys.path (conftest)

from ecpfs_viewer.model.ecpfs import level_stats, shared_level_stats, summarize
from ecpfs_viewer.model.ecpfs.derived_listing import index_hierarchy
from ecpfs_viewer.model.errors import TransportError, transport_failure
from ecpfs_viewer.model.storage.opening import OpenedStore, open_store
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.storage.remote import (
    RemoteBusyError,
    RemoteTimeoutError,
    ServerNotAnsweringError,
    open_remote,
)
from ecpfs_viewer.model.validation import validate

pytestmark = pytest.mark.waits  # stalled and refusing servers: most of each test is a request deadline running out

pytest.importorskip("obstore", reason="obstore is part of the remote extra")


@contextlib.contextmanager
def python_http_server(directory: Path) -> Iterator[str]:
    """`python3 -m http.server --bind 127.0.0.1 PORT --directory D`, as a user starts it: the
    standard library's server with its shipped defaults (a listen backlog of 5, HTTP/1.0)."""
    port = free_port()
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
    early and asked again with fewer in flight, so every read answers. The timeout covers all the
    attempts of a read, so a read that waited out a dropped connection's timeout would fail."""
    with python_http_server(many_files) as url:
        store = _opened(url)
        found = store.read_many_or_errors([f"doc_{i}.json" for i in range(2000)])
    failures = [f for f in found if isinstance(f, BaseException)]
    assert failures == []
    assert found[1234] == b'{"n": 1234}'


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
    with remote_fixtures.running(server) as url:
        yield url


def test_503_cuts_the_requests_in_flight_and_is_retried(many_files: Path) -> None:
    with serve_busy(many_files) as url:
        store = _opened(url, max_in_flight=16)
        found = store.read_many_or_errors([f"doc_{i}.json" for i in range(40)])
    assert all(f == f'{{"n": {i}}}'.encode() for i, f in enumerate(found)), found
    bounded = store.zarr_store._store
    assert bounded.in_flight_limit() < 16  # halved on the 503s, not grown back past them yet


class _AlwaysBusyHandler(http.server.SimpleHTTPRequestHandler):
    """503 for every path named busy_*, the file for the others."""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def send_head(self) -> object:
        if "/busy_" in self.path:
            self.send_error(503, "busy")
            return None
        return super().send_head()


def test_objects_answered_503_do_not_make_the_server_not_answering(many_files: Path) -> None:
    """A 503 is an answer (busy, not gone): two objects that stay busy through every retry fail
    alone as busy, and the next object is still asked for. The server was taken for 'not
    answering' (no request made for the rest of the timeout) when two 503s came in a row."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             lambda *a: _AlwaysBusyHandler(*a, directory=str(many_files)))
    server.daemon_threads = True
    with remote_fixtures.running(server) as url:
        store = _opened(url, max_in_flight=4, timeout_s=3)
        for name in ("busy_a.json", "busy_b.json"):  # one after the other: the second asked after the first failed
            [busy] = store.read_many_or_errors([name])
            assert isinstance(busy, RemoteBusyError), busy
        assert store.read_many_or_errors(["doc_7.json"]) == [b'{"n": 7}']


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
    """A burst that stalls together is not yet a dead server; a request made after that also
    unanswered is: later requests fail at once, naming the host, until a retry."""
    with remote_fixtures.serve_stalled() as (url, connections):
        store = _opened(f"{url}/index.zarr", timeout_s=1.0)
        first = store.read_many_or_errors(["a/zarr.json", "b/zarr.json", "c/zarr.json"])
        first += store.read_many_or_errors(["x/zarr.json"])  # made after the failure was known: unanswered too
        asked = connections.total
        later = store.read_many_or_errors(["d/zarr.json", "e/zarr.json"])
        asked_later = connections.total
        store.zarr_store._store.retry()  # what F5, Retry and --retry do
        again = store.read_many_or_errors(["f/zarr.json"])[0]
        asked_again = connections.total
    assert all(isinstance(f, RemoteTimeoutError) for f in first)
    assert asked_later == asked  # not requested: no connection reached the server
    assert all(isinstance(f, ServerNotAnsweringError) for f in later), later
    host = url.removeprefix("http://")
    assert f"the server at {host} is not answering" in str(later[0])
    assert isinstance(again, RemoteTimeoutError) and not isinstance(again, ServerNotAnsweringError), again
    assert asked_again > asked_later  # asked the server again, and waited for its answer again
    assert all(isinstance(transport_failure(f), TransportError) for f in [*first, *later, again])


# -- what reads that failed on the way become: "could not be read", never a fact; never cached --------
@contextlib.contextmanager
def switchable_stall(directory: Path, stalled: Callable[[str], bool]) -> Iterator[tuple[str, threading.Event]]:
    """The static server (no listings) stalling the paths `stalled` picks while the event is set."""
    on = threading.Event()
    on.set()
    with remote_fixtures.serve_hostile(directory, "stall", lambda path: on.is_set() and stalled(path)) as (url, _):
        yield url, on


def _has(texts: list[str], *words: str) -> list[str]:
    return [t for t in texts if any(w in t for w in words)]


def test_a_leaf_that_does_not_answer_is_could_not_be_read_not_missing(two_clusters_path: Path) -> None:
    def stalled(path: str) -> bool:
        return path.startswith("two_clusters.zarr/lvl_2/node_1/")

    with switchable_stall(two_clusters_path.parent, stalled) as (url, on):
        h = index_hierarchy(open_store(f"{url}/two_clusters.zarr", remote=RemoteOptions(timeout_s=3.0)))
        stats = level_stats(h, 2)
        report = validate(h)
        on.clear()  # the server answers again: nothing of the failure was kept
        again = validate(h)
        stats_again = shared_level_stats(h, 2)
    assert stats.unread_ids == {1} and not stats.complete
    assert 1 not in stats.gap_ids and stats.gap_count == 0 and stats.node_count == 3
    assert stats.lacking() == "lack 1 node that could not be read"
    messages = [f.describe() for f in report.findings]
    assert _has(messages, "could not be read"), messages
    assert not _has(messages, "missing", "sum to", "gap", "no embeddings", "without arrays"), messages
    assert report.headline is not None and report.headline.startswith("the server did not answer ")
    assert report.checked[0] == "metadata of 5 nodes on 2 levels; 1 node in lvl_2 could not be read"
    assert 0 < report.unanswered < report.requests
    assert again.ok and again.headline is None, [f.describe() for f in again.findings]
    assert stats_again.complete and stats_again.node_count == 4


def test_unanswered_info_levels_is_not_kept_as_not_an_index(two_clusters_path: Path) -> None:
    """F5 after a stall must not turn a healthy index into 'not a valid ecpfs index' from a cache."""
    with switchable_stall(two_clusters_path.parent, lambda path: path.startswith("two_clusters.zarr/info/")) \
            as (url, on):
        h = index_hierarchy(open_store(f"{url}/two_clusters.zarr", remote=RemoteOptions(timeout_s=3.0)))
        with pytest.raises(OSError, match="could not be read"):
            h.children("")
        on.clear()
        h.refresh()  # F5
        names = [n.name for n in h.children("")]
        summary = summarize(h)
    assert {"info", "lvl_1", "lvl_2"} <= set(names)
    assert summary.layout.is_index, summary.layout.reason


def test_time_waiting_for_a_place_in_flight_is_not_taken_from_a_request(two_clusters_path: Path) -> None:
    """One at a time, each answer 1.2 s late, timeout 1.5 s: the third request waits 2.4 s for its
    turn and still gets its whole timeout."""
    with remote_fixtures.serve_static(two_clusters_path.parent, delay=1.2) as (url, _tally):
        where = f"{url}/two_clusters.zarr"  # three callers at once, one place in flight
        store = OpenedStore(open_remote(where, RemoteOptions(timeout_s=1.5, max_in_flight=1)), label=where,
                            kind="remote", max_in_flight=3)
        found = store.read_many_or_errors(["zarr.json", "info/zarr.json", "lvl_1/zarr.json"])
    assert all(isinstance(f, bytes) for f in found), found
