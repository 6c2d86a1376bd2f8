"""Static web servers without folder listings, stalled servers, and errors as values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import remote_fixtures
from zarr.abc.store import RangeByteRequest, SuffixByteRequest

from ecpfs_viewer.model.ecpfs import level_stats, summarize
from ecpfs_viewer.model.ecpfs.derived_listing import (
    DERIVED_NOTE,
    UNREACHED_NOTE,
    index_hierarchy,
    is_derived,
    listing_note,
)
from ecpfs_viewer.model.search import IndexReader, SearchParams
from ecpfs_viewer.model.storage.counted_io import UnreadableFile
from ecpfs_viewer.model.storage.opening import OpenedStore, StoreOpenError, open_store
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.storage.remote import (
    RemoteAccessError,
    RemoteTimeoutError,
    open_remote,
    translate_error,
)
from ecpfs_viewer.model.validation import validate
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

pytestmark = pytest.mark.waits  # stalled, trickling and cut servers: request deadlines running out

pytest.importorskip("obstore", reason="obstore is part of the remote extra")


def test_index_without_listings_browses_completely(static_http_url: str, two_clusters_path: Path) -> None:
    remote = index_hierarchy(open_store(f"{static_http_url}/two_clusters.zarr"))
    local = Hierarchy(open_store(two_clusters_path))
    with pytest.raises(OSError, match="does not list folders"):
        remote.store.list_dir("lvl_1")  # the server really lists nothing
    before = remote.store.stats()
    assert remote_fixtures.tree_kinds(remote) == remote_fixtures.tree_kinds(local)
    assert (remote.store.stats() - before).listings == 0
    assert is_derived(remote, "lvl_2") and not is_derived(local, "lvl_2")
    assert listing_note(remote) == DERIVED_NOTE and listing_note(local) is None


def test_derived_index_summarises_checks_and_searches_like_its_folder(static_http_url: str,
                                                                     two_clusters_path: Path) -> None:
    url = f"{static_http_url}/two_clusters.zarr"
    remote = index_hierarchy(open_store(url))
    local = Hierarchy(open_store(two_clusters_path))
    summary = summarize(remote)
    assert summary.to_dict() == summarize(local).to_dict()
    assert level_stats(remote, 2, summary).to_dict() == level_stats(local, 2, summarize(local)).to_dict()
    report = validate(remote)
    assert report.ok
    assert [f.describe() for f in report.findings] == [f.describe() for f in validate(local).findings]
    reader = IndexReader(remote)
    query = np.array([0.1, 0.2], dtype=np.float32)
    params = SearchParams(k=3, search_exp=2)
    assert reader.search(query, params).items == IndexReader(two_clusters_path).search(query, params).items


def test_derived_node_reads_its_real_metadata_when_selected(static_http_url: str) -> None:
    h = index_hierarchy(open_store(f"{static_http_url}/two_clusters.zarr"))
    node = next(n for n in h.children("lvl_2") if n.name == "node_2")
    assert node.raw is None  # named by lvl_1's node_ids, not read yet
    details = h.details("lvl_2/node_2")
    assert details.error is None and details.node.raw is not None and details.node.zarr_format == 3


def test_plain_zarr_without_listings_shows_what_metadata_reaches(static_http_url: str) -> None:
    h = index_hierarchy(open_store(f"{static_http_url}/peer-data/generated/zarr_python_3.4.2.zarr"))
    assert h.root().kind.value == "group"
    assert h.children("") == []
    assert listing_note(h) == UNREACHED_NOTE


def test_static_server_counts_requests_not_listings(two_clusters_path: Path) -> None:
    with remote_fixtures.serve_static(two_clusters_path.parent) as (url, tally):
        h = index_hierarchy(open_store(f"{url}/two_clusters.zarr"))
        remote_fixtures.tree_kinds(h)
        assert tally.total == h.store.stats().requests > 0


def test_stalled_server_fails_within_the_timeout_naming_the_object() -> None:
    # the server never answers: only the timeout ends the open
    with remote_fixtures.serve_stalled() as (url, _connections), pytest.raises(StoreOpenError) as info:
        open_store(f"{url}/index.zarr", remote=RemoteOptions(timeout_s=1.0))
    assert f"{url}/index.zarr/zarr.json" in str(info.value)
    assert "retry" in str(info.value)


def test_stalled_reads_are_timeout_values_not_hangs() -> None:
    with remote_fixtures.serve_stalled() as (url, _connections):
        store = open_remote(f"{url}/index.zarr", RemoteOptions(timeout_s=1.0))
        found = OpenedStore(store, label=url, kind="remote").read_many_or_errors(["a/zarr.json", "b/zarr.json"])
    assert all(isinstance(f, RemoteTimeoutError) and f.retryable for f in found)
    assert f"{url}/index.zarr/a/zarr.json" in str(found[0])


@pytest.mark.parametrize(("scheme", "secret_var", "named"), [
    ("s3", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID"),
    ("gs", "GOOGLE_SERVICE_ACCOUNT_KEY", "GOOGLE_APPLICATION_CREDENTIALS"),  # fake-gcs-server never refuses
])
def test_access_denied_names_the_credentials_to_try_and_no_secret(monkeypatch: pytest.MonkeyPatch, scheme: str,
                                                                  secret_var: str, named: str) -> None:
    import obstore.exceptions

    monkeypatch.setenv(secret_var, "very-secret-value")
    error = translate_error(obstore.exceptions.PermissionDeniedError("403 Forbidden"),
                            f"{scheme}://b/x.zarr/zarr.json", scheme, 30)
    assert isinstance(error, RemoteAccessError)
    text = str(error)
    assert f"{scheme}://b/x.zarr/zarr.json" in text and "--anon" in text and named in text
    assert "very-secret-value" not in text


def test_remote_options_are_checked() -> None:
    with pytest.raises(ValueError, match="timeout"):
        RemoteOptions(timeout_s=0)
    with pytest.raises(ValueError, match="max_in_flight"):
        RemoteOptions(max_in_flight=0)


# -- hostile servers: a body cut short or trickled, a server that stalls part of the tree -------------
def _read(url: str, key: str, timeout_s: float = 2.0) -> BaseException | bytes | None:
    store = open_remote(url, RemoteOptions(timeout_s=timeout_s))
    return OpenedStore(store, label=url, kind="remote").read_many_or_errors([key])[0]


def test_a_trickled_body_ends_at_the_timeout(two_clusters_path: Path) -> None:
    """A byte a second never resets the 2 s deadline: the read fails instead of arriving whole."""
    with remote_fixtures.serve_hostile(two_clusters_path.parent, "trickle") as (url, _tally):
        found = _read(f"{url}/two_clusters.zarr", "zarr.json")
    assert isinstance(found, RemoteTimeoutError), found
    assert f"{url}/two_clusters.zarr/zarr.json: no answer within 2 s" in str(found)


def test_a_body_cut_short_is_named_as_such(two_clusters_path: Path) -> None:
    with remote_fixtures.serve_hostile(two_clusters_path.parent, "cut") as (url, _tally):
        found = _read(f"{url}/two_clusters.zarr", "zarr.json")
    assert isinstance(found, RemoteTimeoutError) and found.retryable, found
    assert str(found) == (f"{url}/two_clusters.zarr/zarr.json: the connection closed before the whole object "
                          "arrived; retry")  # named as a cut, not waited out as a timeout


@pytest.mark.parametrize("request_kind", ["range", "suffix"])
def test_a_range_past_the_end_of_a_remote_object_is_refused_naming_it(static_http_url: str, two_clusters_path: Path,
                                                                       request_kind: str) -> None:
    """Issue 34: a server answers a range past an object's end short (or with the whole object when
    it ignores Range): refused, naming the object, never taken for what is stored."""
    size = (two_clusters_path / "zarr.json").stat().st_size
    opened = open_store(f"{static_http_url}/two_clusters.zarr")
    asked = RangeByteRequest(size - 2, size + 50) if request_kind == "range" else SuffixByteRequest(size + 50)
    found = opened.read_ranges([(opened.key("zarr.json"), asked), (opened.key("zarr.json"), RangeByteRequest(0, 2))])
    assert isinstance(found[0], UnreadableFile), found[0]
    assert "two_clusters.zarr/zarr.json" in str(found[0]) and "could not be read" in str(found[0])
    assert found[1] == (two_clusters_path / "zarr.json").read_bytes()[:2]
