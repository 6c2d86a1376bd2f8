"""Real servers on loopback for the fsspec stores: FTP (pyftpdlib), SFTP (asyncssh) and WebDAV
(wsgidav on cheroot), each serving a folder read-only and counting what it is asked, so a test can
tell what a client read at the server. Also a kerchunk-style reference file pointing into one
local file. Never mocks: every byte goes over a socket to a server process thread."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

USER, PASSWORD = "reader", "pw-not-a-secret"


@dataclass
class Served:
    """A running server: the URL of the served folder, the storage options to reach it, and a
    tally of the file reads (RETR, SFTP open for reading, GET) it answered."""

    url: str
    options: dict[str, str]
    reads: list[str] = field(default_factory=list)
    port: int = 0

    def at(self, name: str) -> str:
        """The URL of a folder below the served one."""
        return self.url + name if self.url.endswith("://") else f"{self.url}/{name}"

    def option_args(self) -> list[str]:
        return [arg for key, value in self.options.items() for arg in ("--storage-option", f"{key}={value}")]


@contextlib.contextmanager
def ftp_server(folder: Path) -> Iterator[Served]:
    """pyftpdlib serving folder read-only to USER/PASSWORD."""
    pytest.importorskip("pyftpdlib", reason="pyftpdlib is in the test dependency group")
    from pyftpdlib.authorizers import DummyAuthorizer
    from pyftpdlib.handlers import FTPHandler
    from pyftpdlib.servers import ThreadedFTPServer

    quiet = logging.getLogger("pyftpdlib")
    quiet.setLevel(logging.WARNING)
    quiet.propagate = False
    if not quiet.handlers:
        quiet.addHandler(logging.NullHandler())
    served = Served("", {"username": USER, "password": PASSWORD})

    class Handler(FTPHandler):
        def ftp_RETR(self, file: str) -> object:
            # counted as the command arrives, before a byte is sent: counted once sent (on_file_sent),
            # a client could have its bytes and move on before the server's thread counted them
            served.reads.append(file)
            return super().ftp_RETR(file)

    authorizer = DummyAuthorizer()
    authorizer.add_user(USER, PASSWORD, str(folder), perm="elr")  # list and read only
    Handler.authorizer = authorizer
    server = ThreadedFTPServer(("127.0.0.1", 0), Handler)
    served.port = server.address[1]
    served.url = f"ftp://127.0.0.1:{served.port}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"timeout": 0.2}, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.close_all()
        thread.join(10)


@contextlib.contextmanager
def sftp_server(folder: Path) -> Iterator[Served]:
    """An asyncssh SFTP server (password login, chrooted to folder) on its own event loop thread."""
    asyncssh = pytest.importorskip("asyncssh", reason="asyncssh is in the test dependency group")
    served = Served("", {"username": USER, "password": PASSWORD, "known_hosts": "null"})
    connections: list[Any] = []

    class Server(asyncssh.SSHServer):  # type: ignore[misc]
        def connection_made(self, conn: Any) -> None:
            connections.append(conn)

        def begin_auth(self, username: str) -> bool:
            return True

        def password_auth_supported(self) -> bool:
            return True

        def validate_password(self, username: str, password: str) -> bool:
            return username == USER and password == PASSWORD

    class ReadOnlySFTP(asyncssh.SFTPServer):  # type: ignore[misc]
        def __init__(self, channel: Any) -> None:
            super().__init__(channel, chroot=str(folder).encode())

        def open(self, path: bytes, pflags: int, attrs: Any) -> Any:
            if pflags & ~asyncssh.FXF_READ:
                raise asyncssh.SFTPPermissionDenied("read-only server")
            served.reads.append(path.decode())
            return super().open(path, pflags, attrs)

    loop = asyncio.new_event_loop()
    ready = threading.Event()
    box: dict[str, Any] = {}

    def run() -> None:
        asyncio.set_event_loop(loop)
        key = asyncssh.generate_private_key("ssh-ed25519")
        box["server"] = loop.run_until_complete(asyncssh.listen(
            "127.0.0.1", 0, server_host_keys=[key], server_factory=Server, sftp_factory=ReadOnlySFTP))
        ready.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert ready.wait(30), "the SFTP server did not start"
    served.port = box["server"].sockets[0].getsockname()[1]
    served.url = f"sftp://127.0.0.1:{served.port}"  # paths below the chroot: / is folder
    try:
        yield served
    finally:
        async def stop() -> None:
            # the clients' connections too: fsspec keeps its sshfs instances (and their connections)
            # open, and a listener's wait_closed waits for every connection (Python 3.12.1+), so
            # the join below waited its whole 10 s after each test
            box["server"].close()
            for conn in connections:
                conn.close()
            await box["server"].wait_closed()
            loop.stop()

        asyncio.run_coroutine_threadsafe(stop(), loop)
        thread.join(10)
        assert not thread.is_alive(), "the SFTP server did not stop within 10 s"


@contextlib.contextmanager
def webdav_server(folder: Path) -> Iterator[Served]:
    """wsgidav on cheroot serving folder read-only (basic auth)."""
    pytest.importorskip("wsgidav", reason="wsgidav is in the test dependency group")
    pytest.importorskip("cheroot", reason="cheroot is in the test dependency group")
    from cheroot import wsgi
    from wsgidav.wsgidav_app import WsgiDAVApp

    logging.getLogger("wsgidav").setLevel(logging.WARNING)
    served = Served("", {"auth": json.dumps([USER, PASSWORD])})
    app = WsgiDAVApp({
        "provider_mapping": {"/": {"root": str(folder), "readonly": True}},
        "http_authenticator": {"domain_controller": None, "accept_basic": True, "accept_digest": False,
                               "default_to_digest": False},
        "simple_dc": {"user_mapping": {"*": {USER: {"password": PASSWORD}}}},
        "verbose": 0, "logging": {"enable": False}, "property_manager": None, "lock_storage": False,
    })

    def counting(environ: dict[str, Any], start_response: Any) -> Any:
        if environ["REQUEST_METHOD"] == "GET":
            served.reads.append(environ["PATH_INFO"])
        return app(environ, start_response)

    server = wsgi.Server(("127.0.0.1", 0), counting, numthreads=8)
    server.prepare()
    served.port = server.bind_addr[1]
    served.url = "webdav://"  # webdav4 reads paths below base_url (a storage option)
    served.options["base_url"] = f"http://127.0.0.1:{served.port}"
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        yield served
    finally:
        server.stop()
        thread.join(10)


def reference_file(index: Path, target: Path) -> Path:
    """A kerchunk-style reference JSON (version 1) for the store at index: the small documents
    inline, every other file as [target, offset, length] into one blob at `target` that holds all
    their bytes end to end. Returns the JSON's path (beside the blob)."""
    refs: dict[str, Any] = {}
    offset = 0
    with open(target, "wb") as blob:
        for path in sorted(p for p in index.rglob("*") if p.is_file()):
            key = path.relative_to(index).as_posix()
            data = path.read_bytes()
            if path.name == "zarr.json":
                refs[key] = data.decode()
                continue
            blob.write(data)
            refs[key] = [str(target), offset, len(data)]
            offset += len(data)
    out = target.with_suffix(".json")
    out.write_text(json.dumps({"version": 1, "refs": refs}))
    return out
