"""Shared fixtures. Qt runs offscreen in every test; data lives in tests/data (see its README)."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

DATA = Path(__file__).parent / "data"
TWO_CLUSTERS = DATA / "two_clusters.zarr"
PEER_DATA = DATA / "peer-data"


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo index and other cached files go to a test folder, never the user's cache."""
    monkeypatch.setenv("ECPFS_VIEWER_CACHE", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture
def two_clusters_path() -> Path:
    """The upstream-built two_clusters index (read-only use: tests must not modify it)."""
    return TWO_CLUSTERS


@pytest.fixture
def two_clusters_copy(tmp_path: Path) -> Path:
    """A private, writable copy of two_clusters for tests that change or break the index."""
    target = tmp_path / "two_clusters.zarr"
    shutil.copytree(TWO_CLUSTERS, target)
    return target


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def http_data_url() -> Iterator[str]:
    """A loopback HTTP server on a free port serving tests/data (no Range support, like many servers)."""
    handler = functools.partial(_QuietHandler, directory=str(DATA))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fuzz-long", action="store_true", default=False,
                     help="run the long seeded fuzz of zarr.json documents (tests/model/test_fuzz.py)")
