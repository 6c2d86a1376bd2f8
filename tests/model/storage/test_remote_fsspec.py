"""fsspec stores behind the obstore path's guards: caps per object, byte ranges past the end
refused, counted requests, a deadline per request, storage options parsed and kept secret."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import fsspec_servers
import pytest
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

from ecpfs_viewer.model.limits import Limits, set_limits
from ecpfs_viewer.model.storage import schemes
from ecpfs_viewer.model.storage.counted_io import UnreadableFile
from ecpfs_viewer.model.storage.opening import StoreOpenError, open_store
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.storage.remote import RemoteError

fsspec = pytest.importorskip("fsspec", reason="fsspec is part of the fsspec extra")
KB = 1024


@pytest.fixture
def memory_url() -> Iterator[str]:
    """A store in fsspec's memory file system: a document, a chunk over the cap, one within it."""
    fs = fsspec.filesystem("memory")
    root = f"/t{uuid.uuid4().hex}"
    fs.pipe({f"{root}/zarr.json": b'{"zarr_format": 3, "node_type": "group", "attributes": {}}',
             f"{root}/big/zarr.json": b"{" + b" " * (3 * KB) + b"}",
             f"{root}/c/0": b"x" * (5 * KB), f"{root}/c/1": bytes(range(256)) * 8})
    yield f"memory://{root}"
    fs.rm(root, recursive=True)


@pytest.fixture
def small_caps() -> Iterator[Limits]:
    limits = Limits(max_metadata_bytes=2 * KB, max_chunk_bytes=4 * KB)
    set_limits(limits)
    yield limits
    set_limits(None)


def test_objects_past_their_cap_are_refused(memory_url: str, small_caps: Limits) -> None:
    store = open_store(memory_url)
    big_doc, big_chunk, chunk = store.read_many_or_errors(["big/zarr.json", "c/0", "c/1"])
    assert isinstance(big_doc, UnreadableFile) and f"{memory_url}/big/zarr.json" in str(big_doc)
    assert "for one metadata document; not read" in str(big_doc)
    assert isinstance(big_chunk, UnreadableFile) and "for one chunk; not read" in str(big_chunk)
    assert chunk == bytes(range(256)) * 8
    (from_offset,) = store.read_ranges([("c/0", OffsetByteRequest(512))])
    assert isinstance(from_offset, UnreadableFile) and "from byte 512" in str(from_offset)


def test_byte_ranges_past_the_end_are_refused_never_answered_short(memory_url: str) -> None:
    store = open_store(memory_url)
    size = 2 * KB
    found = store.read_ranges([("c/1", RangeByteRequest(10, 20)), ("c/1", OffsetByteRequest(size - 3)),
                               ("c/1", SuffixByteRequest(4)), ("c/1", OffsetByteRequest(size)),
                               ("c/1", RangeByteRequest(size - 2, size + 5)), ("c/1", OffsetByteRequest(size + 1)),
                               ("c/1", SuffixByteRequest(size + 1)), ("absent", None)])
    data = bytes(range(256)) * 8
    assert found[:4] == [data[10:20], data[-3:], data[-4:], b""]
    for refused in found[4:7]:
        assert isinstance(refused, UnreadableFile) and "could not be read" in str(refused), refused
    assert found[7] is None
    assert store.stats().requests == 6  # the opening and every answered read (a refusal raises, as for obstore)


def test_storage_options_parse_as_json_by_layer() -> None:
    from ecpfs_viewer.model.storage.fsspec_store import storage_options

    parsed = storage_options("simplecache::ftp://h/x", (("ftp.port", "2121"), ("ftp.username", "u"),
                                                        ("simplecache.cache_storage", "/c"), ("same_names", "true"),
                                                        ("auth", '["u", "p"]'), ("ftp.password", '"123"')))
    assert parsed == {"ftp": {"port": 2121, "username": "u", "password": "123"},
                      "simplecache": {"cache_storage": "/c"}, "same_names": True, "auth": ("u", "p")}


def test_secret_options_are_not_remembered_nor_part_of_the_identity() -> None:
    options = RemoteOptions(storage_options=(("username", "u"), ("password", "hunter2"), ("ftp.token", "t")))
    assert options.remembered().storage_options == (("username", "u"), ("password", ""), ("ftp.token", ""))
    assert "hunter2" not in options.identity() and "username=u" in options.identity()
    assert RemoteOptions(storage_options=[["a", "b"]]).storage_options == (("a", "b"),)  # type: ignore[arg-type]


def test_one_table_routes_every_scheme() -> None:
    assert schemes.opener_for("s3://b/x") == "obstore" and schemes.opener_for("https://h/x") == "obstore"
    assert schemes.opener_for("simplecache::s3://b/x") == "fsspec"
    assert schemes.opener_for("sftp://h/x") == "fsspec" and schemes.opener_for("nosuch://h/x") == "fsspec"
    assert schemes.is_url("reference://") and not schemes.is_url("/a/b") and not schemes.is_url("file:///a")
    assert schemes.chain_schemes("blockcache::ftp://h/x") == ["blockcache", "ftp"]
    assert schemes.is_cloud_url("gs://b/x") and not schemes.is_cloud_url("ftp://h/x")


def test_ftp_is_asked_one_request_at_a_time(tmp_path: Path) -> None:
    """ftplib shares one connection: the store never has two of its requests in flight."""
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    with fsspec_servers.ftp_server(tmp_path) as server:
        store = open_store(server.at("s"), remote=RemoteOptions(storage_options=tuple(server.options.items())))
        assert store.max_in_flight == 1
        assert store.read_many(["zarr.json"] * 6) == [(tmp_path / "s" / "zarr.json").read_bytes()] * 6


def test_a_stalled_read_fails_within_its_deadline_naming_the_object(tmp_path: Path) -> None:
    """A server that stops answering a transfer: the read becomes an error value naming the object
    (no hang, no empty answer), and the store opens and lists as before."""
    pytest.importorskip("pyftpdlib")
    from pyftpdlib.handlers import FTPHandler

    (tmp_path / "s" / "c").mkdir(parents=True)
    (tmp_path / "s" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    (tmp_path / "s" / "c" / "0").write_bytes(b"z" * 100)
    release = threading.Event()
    real_retr = FTPHandler.ftp_RETR

    def stalling_retr(self: FTPHandler, file: str) -> object:
        if file.endswith("/c/0"):
            release.wait(30)
        return real_retr(self, file)

    with fsspec_servers.ftp_server(tmp_path) as server:
        FTPHandler.ftp_RETR = stalling_retr  # type: ignore[method-assign]
        try:
            store = open_store(server.at("s"), remote=RemoteOptions(
                timeout_s=1.0, storage_options=tuple(server.options.items())))
            (found,) = store.read_many_or_errors(["c/0"])
        finally:
            FTPHandler.ftp_RETR = real_retr  # type: ignore[method-assign]
            release.set()
    assert isinstance(found, RemoteError) and f"{server.at('s')}/c/0" in str(found), found
    assert store.stats().unanswered >= 1


def test_a_refused_connection_is_a_store_open_error() -> None:
    with pytest.raises(StoreOpenError, match=r"ftp://127\.0\.0\.1:1/x\.zarr: the connection failed"):
        open_store("ftp://127.0.0.1:1/x.zarr", remote=RemoteOptions(timeout_s=5))
