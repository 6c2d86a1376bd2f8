"""The window's remote helpers are forked by one zygote that has imported zarr and obstore already
(model/storage/helper_zygote.py): each later helper is a fork, not a new interpreter; it runs with
the environment of the moment it was asked for; a zygote that died is replaced; a helper is killed
by its pidfd."""

from __future__ import annotations

import base64
import os
import subprocess
import time
from pathlib import Path

import pytest
from cloud_emulators import CloudServer

from ecpfs_viewer.model.storage import helper_zygote
from ecpfs_viewer.model.storage.opening import OpenedStore, StoreOpenError, open_store
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.storage.remote_helper import HelperStore

pytest.importorskip("obstore", reason="obstore is part of the remote extra")
pytestmark = pytest.mark.skipif(not helper_zygote.supported(), reason="the zygote needs Linux's pidfds")


def test_with_the_zygote_turned_off_each_helper_is_an_interpreter(static_http_url: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(helper_zygote.ZYGOTE_ENV, "0")
    store = open_store(f"{static_http_url}/two_clusters.zarr")
    assert store.read_many_or_errors(["zarr.json"])[0] is not None
    wrapped = store.zarr_store.wrapped
    assert isinstance(wrapped, HelperStore) and wrapped.client._helper is not None
    process = wrapped.client._helper.process
    assert isinstance(process, subprocess.Popen) and _parent_of(process.pid) == os.getpid()
    store.close()


@pytest.fixture(autouse=True)
def helper_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ECPFS_REMOTE_HELPER", "1")


def _parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _helper_of(store: OpenedStore) -> helper_zygote.ForkedHelper:
    wrapped = store.zarr_store.wrapped
    assert isinstance(wrapped, HelperStore)
    helper = wrapped.client._helper
    assert helper is not None
    process = helper.process
    assert isinstance(process, helper_zygote.ForkedHelper)  # forked, not a new interpreter
    return process


def test_helpers_are_forked_by_one_zygote_and_answer(static_http_url: str) -> None:
    parents = set()
    for _ in range(3):
        store = open_store(f"{static_http_url}/two_clusters.zarr")
        assert store.read_many_or_errors(["zarr.json"])[0] is not None
        parents.add(_parent_of(_helper_of(store).pid))
        store.close()
    zygote = helper_zygote._STATE.zygote
    assert zygote is not None and parents == {zygote.process.pid}


def test_a_zygote_that_died_is_replaced(static_http_url: str) -> None:
    first = open_store(f"{static_http_url}/two_clusters.zarr")
    assert first.read_many_or_errors(["zarr.json"])[0] is not None
    dead = helper_zygote._STATE.zygote
    assert dead is not None
    dead.process.kill()
    dead.process.wait(30)
    second = open_store(f"{static_http_url}/two_clusters.zarr")
    assert second.read_many_or_errors(["zarr.json"])[0] is not None
    assert _parent_of(_helper_of(second).pid) != dead.process.pid
    first.close()
    second.close()


def test_a_helper_killed_and_reaped_is_not_signalled_again(static_http_url: str) -> None:
    store = open_store(f"{static_http_url}/two_clusters.zarr")
    assert store.read_many_or_errors(["zarr.json"])[0] is not None
    helper = _helper_of(store)
    helper.kill()
    assert helper.stdout.read() == b""  # it ended: its end of the pipe closed
    while Path(f"/proc/{helper.pid}").exists() and _state_of(helper.pid) != "Z":
        time.sleep(0.01)
    helper.kill()  # by pidfd: nothing is signalled, nothing raised
    store.close()


def _state_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_each_helper_runs_with_the_environment_of_its_moment(azurite_server: CloudServer,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A credential changed after the zygote started reaches the next helper (Azurite checks the
    account key's signature), and its restoration the one after."""
    url = azurite_server.url("ecpfs", "two_clusters.zarr")  # conftest uploads it
    options = RemoteOptions(endpoint=azurite_server.endpoint)
    good = open_store(url, remote=options)
    assert isinstance(good.read_many_or_errors(["zarr.json"])[0], bytes)
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", base64.b64encode(b"not the key" * 4).decode())
    try:
        bad = open_store(url, remote=options)
    except StoreOpenError as exc:  # opening reads the root document
        refused: object = exc
    else:
        [refused] = bad.read_many_or_errors(["zarr.json"])
        bad.close()
    assert isinstance(refused, Exception), "answered with a wrong key"
    monkeypatch.undo()
    monkeypatch.setenv("ECPFS_REMOTE_HELPER", "1")
    again = open_store(url, remote=options)
    assert isinstance(again.read_many_or_errors(["zarr.json"])[0], bytes)
    for store in (good, again):
        store.close()
