"""Remote requests made in a helper process (model/storage/remote_helper.py): answers reach this
process through one thread, in frames, never from obstore's threads; every remote guard holds
there as in process (the guard tests of the other remote modules, run again with the helper)."""

from __future__ import annotations

import asyncio
import importlib.util
import pickle
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import remote_fixtures

from ecpfs_viewer.model.ecpfs.derived_listing import index_hierarchy
from ecpfs_viewer.model.limits import Limits
from ecpfs_viewer.model.storage import event_loop
from ecpfs_viewer.model.storage.counted_io import UnreadableFile
from ecpfs_viewer.model.storage.opening import OpenedStore, open_store
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.storage.remote import BoundedStore, RemoteBusyError
from ecpfs_viewer.model.storage.remote_helper import HelperEndedError, HelperStore, open_remote_store

pytestmark = pytest.mark.waits  # stalled servers through the helper: request deadlines running out

pytest.importorskip("obstore", reason="obstore is part of the remote extra")


def _sibling(name: str) -> ModuleType:
    """A test module beside this one (the tests import in importlib mode: not by name)."""
    spec = importlib.util.spec_from_file_location(f"{name}_again", Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_recovery, _caps_tests = _sibling("test_remote_recovery"), _sibling("test_remote_caps")
many_files = _recovery.many_files  # fixtures of the guard tests run again below
small_caps = _caps_tests.small_caps

DOCUMENTS = 2_000


@pytest.fixture
def helper_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remote stores opened in this test make their requests in a helper process."""
    monkeypatch.setenv("ECPFS_REMOTE_HELPER", "1")


@pytest.fixture(scope="module")
def level_documents(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A level of 2,000 node documents, as a leaf level's zarr.json files."""
    root = tmp_path_factory.mktemp("level")
    for n in range(DOCUMENTS):
        node = root / "lvl_1" / f"node_{n}"
        node.mkdir(parents=True)
        (node / "zarr.json").write_bytes(b'{"zarr_format": 3, "node_type": "group", "n": %d}' % n)
    return root


@contextmanager
def foreign_wakeups() -> Iterator[list[int]]:
    """The native ids of the threads that wake the model's event loop from outside (each call of
    its call_soon_threadsafe made from another thread: how an answer resumes its coroutine); the
    calling thread's, which submits the read, are left out."""
    loop = event_loop.current_loop()
    callers: list[int] = []
    original = loop.call_soon_threadsafe
    ours = {event_loop.run(_native_id()), threading.get_native_id()}

    def counted(callback: Callable[..., object], *args: Any, **kwargs: Any) -> asyncio.Handle:
        ident = threading.get_native_id()
        if ident not in ours:
            callers.append(ident)
        return original(callback, *args, **kwargs)

    loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
    try:
        yield callers
    finally:
        del loop.call_soon_threadsafe


async def _native_id() -> int:
    return threading.get_native_id()


def _read_level(url: str, helper: bool) -> tuple[OpenedStore, list[bytes | Exception | None]]:
    store = OpenedStore(open_remote_store(url, RemoteOptions(timeout_s=20), helper=helper), label=url, kind="remote",
                        max_in_flight=128)
    keys = [f"lvl_1/node_{n}/zarr.json" for n in range(DOCUMENTS)]
    return store, store.read_many_or_errors(keys)


def test_answers_reach_this_process_through_one_thread_in_frames(level_documents: Path) -> None:
    """2,000 documents over a delayed loopback server: in process, obstore's threads wake the loop
    at least once per request; with the helper, one thread wakes it, once per frame of answers."""
    with remote_fixtures.serve_static(level_documents, delay=0.2) as (url, tally):
        with foreign_wakeups() as in_process:
            store, found = _read_level(url, helper=False)
        assert all(isinstance(value, bytes) for value in found)
        assert len(in_process) >= DOCUMENTS  # what the helper is for: a wake-up per completion
        with foreign_wakeups() as helped:
            store, found = _read_level(url, helper=True)
        bounded = store.zarr_store.wrapped
        assert isinstance(bounded, HelperStore)
        store.close()
    assert [value for value in found] == [
        b'{"zarr_format": 3, "node_type": "group", "n": %d}' % n for n in range(DOCUMENTS)]
    assert store.stats().requests == DOCUMENTS  # counted here, one per document
    assert len(set(helped)) == 1  # only the thread that reads the helper's frames
    assert len(helped) == bounded.client.wakeups <= DOCUMENTS // 2  # several answers per wake-up
    assert tally.total >= 2 * DOCUMENTS


def test_a_helper_that_ends_fails_what_waits_on_it_and_the_next_read_starts_another(
        two_clusters_path: Path, helper_process: None) -> None:
    stalled = "two_clusters.zarr/lvl_2/node_1/zarr.json"
    with remote_fixtures.serve_hostile(two_clusters_path.parent, "stall", lambda path: path == stalled) as (url, _):
        store = open_store(f"{url}/two_clusters.zarr", remote=RemoteOptions(timeout_s=60))
        bounded = store.zarr_store.wrapped
        assert isinstance(bounded, HelperStore)
        found: list[list[bytes | Exception | None]] = []
        reading = threading.Thread(target=lambda: found.append(store.read_many_or_errors([
            "lvl_2/node_1/zarr.json"])))
        reading.start()
        while not bounded.client._helper or not bounded.client._helper.pending:  # the read waits on the helper
            reading.join(0.01)
        bounded.client._helper.process.kill()
        reading.join(30)
        [[failed]] = found
        assert isinstance(failed, HelperEndedError) and f"{url}/two_clusters.zarr" in str(failed)
        assert "ended before answering; retry" in str(failed)
        assert store.stats().unanswered == 1  # a failure on the way, counted as one
        assert store.read_many_or_errors(["zarr.json"])[0] is not None  # a new helper answers
        store.close()


def test_an_index_without_listings_browses_through_the_helper(static_http_url: str, helper_process: None) -> None:
    hierarchy = index_hierarchy(open_store(f"{static_http_url}/two_clusters.zarr"))
    assert isinstance(hierarchy.store.zarr_store.wrapped, HelperStore)
    assert [node.path for node in hierarchy.children("lvl_2")][:2] == ["lvl_2/node_0", "lvl_2/node_1"]
    assert hierarchy.read_array("lvl_2/node_1/item_ids").size > 0
    absent = hierarchy.store.read_many_or_errors(["no_such/zarr.json"])
    assert absent == [None]  # absent, not a failure
    floor = hierarchy.store.request_floor()
    assert floor is not None and floor.answer_s > 0  # the helper's store reports the server's answer time
    hierarchy.store.close()


def test_a_pickled_helper_store_arrives_as_a_store_in_process(static_http_url: str, helper_process: None) -> None:
    store = open_remote_store(f"{static_http_url}/two_clusters.zarr", RemoteOptions())
    assert isinstance(store, HelperStore)
    copy = pickle.loads(pickle.dumps(store))
    assert type(copy) is BoundedStore and copy.url == store.url
    store.close()


def test_refusals_come_back_from_the_helper_as_themselves() -> None:
    refused = pickle.loads(pickle.dumps(UnreadableFile("s3://b/x/c/0", "the object is 5 KiB; not read")))
    assert type(refused) is UnreadableFile and refused.filename == "s3://b/x/c/0"
    assert str(refused) == "s3://b/x/c/0: the object is 5 KiB; not read"
    busy = pickle.loads(pickle.dumps(RemoteBusyError("u: the server answered 503; retry", 503)))
    assert type(busy) is RemoteBusyError and busy.status == 503 and busy.retryable


# -- the remote guards, again with the helper ----------------------------------------------------

def test_caps_hold_in_the_helper(tmp_path: Path, small_caps: Limits, helper_process: None) -> None:
    _caps_tests.test_static_server_objects_past_their_cap_are_refused_in_one_request(tmp_path, small_caps)


def test_busy_servers_cut_the_helpers_requests_in_flight(many_files: Path,
                                                          helper_process: None) -> None:
    _recovery.test_503_cuts_the_requests_in_flight_and_is_retried(many_files)


def test_a_stalled_object_fails_alone_in_the_helper(two_clusters_path: Path, helper_process: None) -> None:
    _recovery.test_one_stalled_object_fails_alone(two_clusters_path)


def test_a_server_not_answering_is_said_once_through_the_helper(helper_process: None) -> None:
    _recovery.test_a_server_that_stops_answering_is_said_once_then_retried_on_request()


def test_an_unanswered_leaf_is_could_not_be_read_through_the_helper(two_clusters_path: Path,
                                                                   helper_process: None) -> None:
    _recovery.test_a_leaf_that_does_not_answer_is_could_not_be_read_not_missing(two_clusters_path)
