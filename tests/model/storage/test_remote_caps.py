"""The byte caps of Limits hold for remote objects too: an object past its cap is refused from the
answer's headers, before its body is read, with the same message as a local file; a range longer
than the cap is not asked for. Small reads cost the one request they did before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import remote_fixtures
from cloud_emulators import CloudServer
from zarr.abc.store import OffsetByteRequest, RangeByteRequest, SuffixByteRequest

from ecpfs_viewer.model.limits import Limits, set_limits
from ecpfs_viewer.model.storage.counted_io import UnreadableFile
from ecpfs_viewer.model.storage.opening import OpenedStore
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.storage.remote_helper import open_remote_store

pytest.importorskip("obstore", reason="obstore is part of the remote extra")

KB = 1024
OBJECTS = {"big.zarr/zarr.json": b"{" + b" " * (3 * KB) + b"}", "big.zarr/c/0": b"x" * (5 * KB),
           "big.zarr/c/1": b"y" * (2 * KB), "big.zarr/small/zarr.json": b"{}"}


@pytest.fixture
def small_caps() -> Iterator[Limits]:
    limits = Limits(max_metadata_bytes=2 * KB, max_chunk_bytes=4 * KB)
    set_limits(limits)
    yield limits
    set_limits(None)


def _opened(url: str, endpoint: str | None = None) -> OpenedStore:
    return OpenedStore(open_remote_store(url, RemoteOptions(endpoint=endpoint, timeout_s=10)), label=url, kind="remote")


def _check_refusals(store: OpenedStore, url: str) -> None:
    big_doc, big_chunk, chunk, small_doc = store.read_many_or_errors(
        ["zarr.json", "c/0", "c/1", "small/zarr.json"])
    assert isinstance(big_doc, UnreadableFile)
    assert f"{url}/zarr.json" in str(big_doc) and "ECPFS_VIEWER_MAX_METADATA_MB" in str(big_doc)
    assert "metadata document; not read" in str(big_doc)
    assert isinstance(big_chunk, UnreadableFile) and f"{url}/c/0" in str(big_chunk)
    assert "ECPFS_VIEWER_MAX_CHUNK_MB" in str(big_chunk) and "for one chunk; not read" in str(big_chunk)
    assert chunk == OBJECTS["big.zarr/c/1"] and small_doc == b"{}"


def test_static_server_objects_past_their_cap_are_refused_in_one_request(tmp_path: Path,
                                                                        small_caps: Limits) -> None:
    for key, body in OBJECTS.items():
        (tmp_path / key).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / key).write_bytes(body)
    with remote_fixtures.serve_static(tmp_path) as (base, tally):
        url = f"{base}/big.zarr"
        store = _opened(url)
        store.read_many_or_errors(["c/1"])
        assert tally.counts == {"GET": 1}  # a read within the cap: one request, as before
        store.read_many_or_errors(["c/0"])
        assert tally.counts == {"GET": 2}  # refused from the first answer's headers: no second request
        _check_refusals(store, url)
        # this server ignores Range headers: a short range of c/0 would bring the whole object
        before = tally.total
        short = store.read_ranges([("c/0", RangeByteRequest(0, KB))])[0]
        assert isinstance(short, UnreadableFile) and "the object is 5.0 KiB" in str(short)
        assert tally.total - before == 2  # the range request, then the whole object refused from its headers


def test_cloud_objects_past_their_cap_are_refused(cloud: CloudServer, small_caps: Limits) -> None:
    cloud.put("caps", OBJECTS)
    url = cloud.url("caps", "big.zarr")
    store = _opened(url, cloud.endpoint)
    _check_refusals(store, url)
    # a range within the cap is read; an open-ended one past it is refused like the whole object,
    # a suffix longer than the cap before it is asked for
    ranged = store.read_ranges([("c/0", RangeByteRequest(KB, 4 * KB)), ("c/0", OffsetByteRequest(KB // 2)),
                                ("c/0", SuffixByteRequest(5 * KB)), ("c/0", RangeByteRequest(0, 5 * KB))])
    assert ranged[0] == b"x" * (3 * KB)
    assert isinstance(ranged[1], UnreadableFile) and "the object from byte 512 is 4.5 KiB" in str(ranged[1])
    assert isinstance(ranged[2], UnreadableFile) and "the requested range is 5.0 KiB" in str(ranged[2])
    assert isinstance(ranged[3], UnreadableFile) and "the requested range is 5.0 KiB" in str(ranged[3])
