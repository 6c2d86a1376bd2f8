"""The command line on fsspec stores served by real servers on loopback (FTP, SFTP, WebDAV), a
simplecache:: chain over one of them and a kerchunk-style reference:// file: browse, check and
search work as on a folder, with --storage-option giving the client what it needs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import cloud_emulators
import fsspec_servers
import pytest
import remote_fixtures
from command_runs import assert_clean, run, run_cli
from index_factory import build_clustered_index, hierarchy
from locations import REPO

from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

pytest.importorskip("fsspec", reason="fsspec is part of the fsspec extra")
SERVERS = {"ftp": fsspec_servers.ftp_server, "sftp": fsspec_servers.sftp_server,
           "webdav": fsspec_servers.webdav_server}


@pytest.fixture(scope="module")
def served_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding a small two-level index, idx.zarr."""
    folder = tmp_path_factory.mktemp("fsspec_served")
    build_clustered_index(folder, items=400, dim=8, clusters=6)
    (folder / "data.npy").unlink()
    return folder


@pytest.fixture(params=sorted(SERVERS))
def served(request: pytest.FixtureRequest, served_folder: Path) -> Iterator[fsspec_servers.Served]:
    with SERVERS[request.param](served_folder) as server:
        yield server


def _options(server: fsspec_servers.Served, **more: str) -> RemoteOptions:
    return RemoteOptions(timeout_s=20, storage_options=(*server.options.items(), *more.items()))


def test_browse_check_and_search_on_each_server(capsys: pytest.CaptureFixture[str], served: fsspec_servers.Served,
                                                served_folder: Path) -> None:
    url = served.at("idx.zarr")
    remote = Hierarchy(open_store(url, remote=_options(served)))
    assert remote_fixtures.tree_kinds(remote) == remote_fixtures.tree_kinds(hierarchy(served_folder / "idx.zarr"))
    assert remote.store.stats().requests > 0  # counted like any remote store

    code, out, err = run(capsys, "check", url, *served.option_args())
    assert code == 0 and "OK - 0 error(s), 0 warning(s)" in out, out + err
    code, out, err = run(capsys, "search", url, "--item", "3", "--k", "5", "--json", *served.option_args())
    local_code, local_out, _ = run(capsys, "search", str(served_folder / "idx.zarr"), "--item", "3", "--k", "5",
                                   "--json")
    assert code == local_code == 0, err
    assert json.loads(out)["items"] == json.loads(local_out)["items"] != []


def test_a_wrong_password_is_access_denied_and_names_no_secret(capsys: pytest.CaptureFixture[str],
                                                               served_folder: Path) -> None:
    with fsspec_servers.ftp_server(served_folder) as server:
        code, _, err = run(capsys, "check", server.at("idx.zarr"),
                           "--storage-option", f"username={fsspec_servers.USER}",
                           "--storage-option", "password=wrong-horse")
    assert code == 2 and "access denied" in err and "wrong-horse" not in err, err


def test_simplecache_chain_second_open_reads_nothing_remote(capsys: pytest.CaptureFixture[str], served_folder: Path,
                                                            tmp_path: Path) -> None:
    """The second check of a simplecache:: chain over FTP, in a cache folder the user names, takes
    every file from that folder: the server is asked for no file again."""
    with fsspec_servers.ftp_server(served_folder) as server:
        url = f"simplecache::{server.at('idx.zarr')}"
        args = [f"ftp.{arg}" if not arg.startswith("--") else arg for arg in server.option_args()]
        args += ["--storage-option", f"simplecache.cache_storage={tmp_path / 'cache'}"]
        code, out, err = run(capsys, "check", url, *args)
        assert code == 0 and "OK - 0 error(s)" in out, out + err
        first = len(server.reads)
        assert first > 0
        code, out, err = run(capsys, "check", url, *args)
        assert code == 0 and "OK - 0 error(s)" in out, out + err
        assert len(server.reads) == first, server.reads[first:]


def test_reference_file_into_one_local_blob(capsys: pytest.CaptureFixture[str], served_folder: Path,
                                            tmp_path: Path) -> None:
    """A kerchunk-style reference JSON whose chunks point into one local file opens, browses,
    checks and searches like the folder it was made from."""
    refs = fsspec_servers.reference_file(served_folder / "idx.zarr", tmp_path / "blob.bin")
    options = ["--storage-option", f"fo={refs}", "--storage-option", "remote_protocol=file"]
    remote = Hierarchy(open_store("reference://", remote=RemoteOptions(
        storage_options=(("fo", str(refs)), ("remote_protocol", "file")))))
    assert remote_fixtures.tree_kinds(remote) == remote_fixtures.tree_kinds(hierarchy(served_folder / "idx.zarr"))
    code, out, err = run(capsys, "check", "reference://", *options)
    assert code == 0 and "OK - 0 error(s), 0 warning(s)" in out, out + err
    code, out, err = run(capsys, "search", "reference://", "--item", "3", "--k", "5", *options)
    assert code == 0, err


def test_check_against_an_ftp_server_started_as_a_user_would(served_folder: Path) -> None:
    """`python -m pyftpdlib` in a process of its own, then `ecpfs-viewer check ftp://127.0.0.1:PORT/idx.zarr`."""
    pytest.importorskip("pyftpdlib")
    port = cloud_emulators.free_port()
    server = subprocess.Popen([sys.executable, "-m", "pyftpdlib", "-i", "127.0.0.1", "-p", str(port),
                               "-d", str(served_folder)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        _wait_for_port(port, server)
        result = run_cli("check", f"ftp://127.0.0.1:{port}/idx.zarr")
        output = assert_clean(result, "OK - 0 error(s), 0 warning(s)")
        assert result.returncode == 0, output
    finally:
        server.terminate()
        server.wait(10)


def _wait_for_port(port: int, process: subprocess.Popen[str]) -> None:
    import socket

    while process.poll() is None:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    pytest.fail(f"the FTP server ended: {process.stderr.read() if process.stderr else ''}")
