"""A static web server with a fixed delay per request, in a child process, for the remote benchmarks.

Like ``tests/remote_fixtures.serve_static`` it lists no folders (404 for a folder, like a CDN or a
bucket website) and adds ``delay`` seconds to every answer. It differs where a benchmark needs it:

- it runs in a child process, so its request handling does not share the interpreter lock with
  the code being measured (a real server does not);
- it is one asyncio loop with persistent HTTP/1.1 connections and a few microseconds of work per
  request, as web servers and CDNs are. Python's threaded ``http.server`` spends about 0.7 ms of
  one core per request; with 64 requests in flight the 64th then waits 45 ms for the 63 before
  it, which the benchmark would report as the viewer's time.

The child counts the requests it answered; :meth:`ChildServer.requests` asks it for the count and
:meth:`ChildServer.targets` for what they asked. :meth:`ChildServer.replay` asks the same with a bare
obstore client (GETs, no parsing, no cache): the request floor as measured on this machine, where the
server's and the client's own work share the CPUs with the code being measured.
Range headers are ignored (whole objects are sent), as by many static hosts; every object carries
the Last-Modified and ETag validators static hosts send (from the file's mtime and size).
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import threading
from collections.abc import Iterator
from email.utils import formatdate
from multiprocessing.connection import Connection
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Counter:
    def __init__(self) -> None:
        self.total = 0
        self.targets: list[str] = []  # the path of each request, in the order they came


async def _answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, root: Path, delay: float,
                  counter: _Counter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            method, target, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
            counter.total += 1
            counter.targets.append(target)
            if delay:
                await asyncio.sleep(delay)
            relative = unquote(urlsplit(target).path).lstrip("/")
            path = (root / relative).resolve()
            body: bytes | None = None
            if path.is_relative_to(root) and path.is_file():
                body = path.read_bytes()
                stamp = path.stat()
            if body is None:
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            else:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n"
                             b"Content-Length: %d\r\nLast-Modified: %s\r\nETag: \"%x-%x\"\r\n\r\n"
                             % (len(body), formatdate(stamp.st_mtime, usegmt=True).encode(), stamp.st_size,
                                stamp.st_mtime_ns))
                if method != "HEAD":
                    writer.write(body)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()


def _serve(directory: str, delay: float, pipe: Connection, niceness: int) -> None:
    if niceness:
        with contextlib.suppress(OSError):
            os.nice(niceness)
    root = Path(directory).resolve()
    counter = _Counter()
    loop = asyncio.new_event_loop()

    async def start() -> asyncio.Server:
        return await asyncio.start_server(lambda r, w: _answer(r, w, root, delay, counter), "127.0.0.1", 0,
                                          backlog=1024)

    server = loop.run_until_complete(start())
    port = server.sockets[0].getsockname()[1]
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    pipe.send(f"http://127.0.0.1:{port}")
    _answer_pipe(pipe, counter)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    os._exit(0)  # connections still open belong to the benchmark that is ending


def _answer_pipe(pipe: Connection, counter: _Counter) -> None:
    """Answer the parent's questions until it says stop (a snapshot read across threads is enough)."""
    while True:
        ask = pipe.recv()
        if ask == "count":
            pipe.send(counter.total)
        elif isinstance(ask, tuple) and ask[0] == "targets":
            pipe.send(counter.targets[ask[1]:])
        else:
            return


class ChildServer:
    """A running child server: its base URL and the number of requests it answered so far."""

    def __init__(self, base: str, pipe: Connection, s3: bool = False) -> None:
        self.base = base
        self._pipe = pipe
        self.s3 = s3

    def requests(self) -> int:
        self._pipe.send("count")
        count: int = self._pipe.recv()
        return count

    def targets(self, since: int = 0) -> list[str]:
        """The paths requests asked for, from the ``since``-th request on."""
        self._pipe.send(("targets", since))
        found: list[str] = self._pipe.recv()
        return found

    def replay(self, targets: list[str], in_flight: int) -> float:
        """Seconds a bare obstore client takes to GET every target, ``in_flight`` at a time (an
        answer that is an error, a 404 say, counts as answered)."""
        import time

        import obstore

        store, keys = self._bare_client(targets)

        async def everything() -> float:
            slots = asyncio.Semaphore(in_flight)

            async def one(key: str) -> None:
                async with slots:
                    with contextlib.suppress(Exception):
                        await (await obstore.get_async(store, key)).bytes_async()

            start = time.perf_counter()
            await asyncio.gather(*(one(key) for key in keys))
            return time.perf_counter() - start

        return asyncio.run(everything())

    def _bare_client(self, targets: list[str]) -> tuple[object, list[str]]:
        from obstore.store import HTTPStore, S3Store

        paths = [unquote(urlsplit(target).path).lstrip("/") for target in targets]
        if not self.s3:
            return HTTPStore.from_url(self.base, client_options={"allow_http": True}), paths
        store = S3Store(S3_BUCKET, endpoint=self.base, access_key_id=S3_ENVIRONMENT["AWS_ACCESS_KEY_ID"],
                        secret_access_key=S3_ENVIRONMENT["AWS_SECRET_ACCESS_KEY"],
                        region=S3_ENVIRONMENT["AWS_DEFAULT_REGION"], virtual_hosted_style_request=False,
                        client_options={"allow_http": True})
        return store, [p.removeprefix(f"{S3_BUCKET}/") for p in paths if p.startswith(f"{S3_BUCKET}/")]


@contextlib.contextmanager
def serve_static_child(directory: Path, delay: float, niceness: int = 0) -> Iterator[ChildServer]:
    """Serve directory (no folder listings, `delay` seconds per request) from a child process.

    The server stands in for another machine. Measuring throughput, it gets a full share of the
    cores (a real server is not slowed by the client); measuring the client's GUI, a niceness
    makes it yield the cores to the client instead of taking them from its GUI thread."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=_serve, args=(str(directory), delay, theirs, niceness), daemon=True)
    process.start()
    try:
        yield ChildServer(ours.recv(), ours)
    finally:
        with contextlib.suppress(OSError):
            ours.send("stop")
        process.join(10)
        if process.is_alive():
            process.terminate()
            process.join(5)


S3_BUCKET = "bench"
#: the dummy credentials moto's S3 server takes (set in the benchmark's environment with --s3)
S3_ENVIRONMENT = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


def _serve_s3(directory: str, delay: float, pipe: Connection, niceness: int) -> None:
    """moto's S3 server (threaded, a thread per request) holding directory under s3://bench/NAME."""
    import time

    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.s3.models import s3_backends
    from moto.server import DomainDispatcherApplication, create_backend_app
    from werkzeug.serving import make_server

    if niceness:
        with contextlib.suppress(OSError):
            os.nice(niceness)
    os.environ.update(S3_ENVIRONMENT)
    root = Path(directory).resolve()
    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    backend.create_bucket(S3_BUCKET, "us-east-1")
    for path in root.rglob("*"):
        if path.is_file():
            backend.put_object(S3_BUCKET, path.relative_to(root.parent).as_posix(), path.read_bytes())
    counter = _Counter()
    app = DomainDispatcherApplication(create_backend_app)

    def delayed(environ: dict, start_response: object) -> object:
        counter.total += 1
        counter.targets.append(str(environ.get("PATH_INFO", "")))
        if delay:
            time.sleep(delay)
        return app(environ, start_response)

    server = make_server("127.0.0.1", 0, delayed, threaded=True)
    server.socket.listen(1024)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    pipe.send(f"http://127.0.0.1:{server.server_port}")
    _answer_pipe(pipe, counter)
    os._exit(0)


@contextlib.contextmanager
def serve_s3_child(directory: Path, delay: float, niceness: int = 0) -> Iterator[ChildServer]:
    """moto's S3 server in a child process, holding every file below directory as s3://bench/...,
    `delay` seconds per request; its base is the endpoint. Loading the objects takes a while."""
    context = multiprocessing.get_context("spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=_serve_s3, args=(str(directory), delay, theirs, niceness), daemon=True)
    process.start()
    try:
        yield ChildServer(ours.recv(), ours, s3=True)
    finally:
        with contextlib.suppress(OSError):
            ours.send("stop")
        process.join(10)
        if process.is_alive():
            process.terminate()
            process.join(5)
