"""Loopback servers for remote-store tests and the remote benchmark; nothing leaves 127.0.0.1.

- :func:`serve_static`: a static web server that answers 404 for a folder (no listings, like a
  CDN or a bucket website), optionally adding a fixed delay to every request; counts requests.
- :func:`serve_without_validators`: the static server, its answers without Last-Modified or ETag.
- :func:`serve_stalled`: accepts connections and never answers (timeouts).
- :func:`serve_hostile`: the static server, answering chosen paths badly: ``stall`` (reads the
  request, never answers), ``cut`` (headers with the full length, half the body, then closes),
  ``trickle`` (the body at one byte per second) or ``forbid`` (403 Forbidden, as a bucket whose
  policy denies those keys).

S3 (moto), GCS and Azure emulators are in cloud_emulators.py.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


class RequestTally:
    """Requests a loopback server answered, by method, and the paths asked for (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.paths: list[str] = []

    def add(self, method: str, path: str = "") -> None:
        with self._lock:
            self.counts[method] = self.counts.get(method, 0) + 1
            self.paths.append(path)

    @property
    def total(self) -> int:
        with self._lock:
            return sum(self.counts.values())


#: Ways an answer goes wrong on the way (the hostile-server tests run every command on each).
HOSTILE_MODES = ("stall", "cut", "trickle")
#: Answers that refuse: "forbid" is a 403 Forbidden.
REFUSING_MODES = ("forbid",)


class _StaticHandler(http.server.SimpleHTTPRequestHandler):
    delay = 0.0
    tally: RequestTally
    mode: str | None = None  # one of HOSTILE_MODES or REFUSING_MODES for the paths `hostile` picks
    hostile: Callable[[str], bool] = staticmethod(lambda path: True)
    stop: threading.Event  # set when the server shuts down: stalled and trickling handlers end
    byte_seconds = 1.0  # trickle: seconds per byte

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _misbehaves(self) -> str | None:
        return self.mode if self.mode and self.hostile(self.path.split("?")[0].lstrip("/")) else None

    def send_head(self) -> Any:
        self.tally.add(self.command, self.path.split("?")[0])
        if self.delay:
            time.sleep(self.delay)
        if self._misbehaves() == "stall":
            self.stop.wait()  # never answer (until the server shuts down)
            self.close_connection = True
            return None
        if self._misbehaves() == "forbid":
            self.send_error(403, "access denied")
            return None
        if os.path.isdir(self.translate_path(self.path)):
            self.send_error(404, "no directory listings here")
            return None
        return super().send_head()

    def copyfile(self, source: Any, outputfile: Any) -> None:
        mode = self._misbehaves()
        if mode is None:
            super().copyfile(source, outputfile)
            return
        data = source.read()
        self.close_connection = True
        try:
            if mode == "cut":  # the promised Content-Length is never reached
                outputfile.write(data[: len(data) // 2])
                outputfile.flush()
                return
            for offset in range(len(data)):  # trickle
                outputfile.write(data[offset:offset + 1])
                outputfile.flush()
                if self.stop.wait(self.byte_seconds):
                    return
        except OSError:  # the client gave up: that is the point
            return


class _Server(http.server.ThreadingHTTPServer):
    request_queue_size = 256  # clients keep 64+ requests in flight
    daemon_threads = True


@contextlib.contextmanager
def serve_static(directory: Path, delay: float = 0.0) -> Iterator[tuple[str, RequestTally]]:
    """Serve directory on a free loopback port with no folder listings; yields (base URL, tally)."""
    with _serve(directory, {"delay": delay}) as served:
        yield served


@contextlib.contextmanager
def serve_without_validators(directory: Path) -> Iterator[tuple[str, RequestTally]]:
    """serve_static, but no answer says when or how an object changed (no Last-Modified, no ETag)."""
    def send_header(self: _StaticHandler, keyword: str, value: str) -> None:
        if keyword.lower() not in ("last-modified", "etag"):
            http.server.SimpleHTTPRequestHandler.send_header(self, keyword, value)

    with _serve(directory, {"send_header": send_header}) as served:
        yield served


@contextlib.contextmanager
def serve_hostile(directory: Path, mode: str, hostile: Callable[[str], bool] = lambda path: True,
                  byte_seconds: float = 1.0) -> Iterator[tuple[str, RequestTally]]:
    """serve_static, but requests for the paths `hostile` picks (relative to directory) misbehave:
    "stall", "cut", "trickle" (one byte every byte_seconds) or "forbid" (403); yields (base URL, tally)."""
    if mode not in HOSTILE_MODES + REFUSING_MODES:
        raise ValueError(f"mode must be one of {HOSTILE_MODES + REFUSING_MODES}")
    with _serve(directory, {"mode": mode, "hostile": staticmethod(hostile), "byte_seconds": byte_seconds}) as served:
        yield served


@contextlib.contextmanager
def running(server: http.server.HTTPServer, before_shutdown: Callable[[], None] = lambda: None) -> Iterator[str]:
    """Serve from a thread while the block runs; yields the base URL, then shuts the server down
    (after before_shutdown, e.g. releasing handlers that stall)."""
    thread = threading.Thread(target=server.serve_forever, daemon=True, name="loopback-http")
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        before_shutdown()
        server.shutdown()
        server.server_close()
        thread.join(5)


@contextlib.contextmanager
def _serve(directory: Path, attributes: dict[str, Any]) -> Iterator[tuple[str, RequestTally]]:
    tally, stop = RequestTally(), threading.Event()
    handler = type("Handler", (_StaticHandler,), {**attributes, "tally": tally, "stop": stop})
    server = _Server(("127.0.0.1", 0), functools.partial(handler, directory=str(directory)))
    with running(server, before_shutdown=stop.set) as url:  # stalled handlers end first
        yield url, tally


@contextlib.contextmanager
def serve_stalled() -> Iterator[tuple[str, RequestTally]]:
    """A server that accepts connections and never answers; yields (base URL, tally of connections)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()
    tally = RequestTally()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            held.append(connection)  # read nothing, answer nothing
            tally.add("connect")

    thread = threading.Thread(target=accept, daemon=True, name="stalled-http")
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", tally
    finally:
        stop.set()
        thread.join(5)
        for connection in held:
            connection.close()
        listener.close()


def tree_kinds(h: Any, path: str = "") -> dict[str, str]:
    """Every node below path (a Hierarchy) and its kind, walking the whole tree."""
    found: dict[str, str] = {}
    for node in h.children(path):
        found[node.path] = node.kind.value
        if node.kind.is_container:
            found.update(tree_kinds(h, node.path))
    return found
