"""Real object stores on loopback (moto's S3, fake-gcs-server, Azurite): an uploaded index reads the
same as its folder on s3://, gs:// and az:// alike."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import remote_fixtures
from cloud_emulators import AZURITE_KEY, CloudServer

from ecpfs_viewer.model.ecpfs import summarize
from ecpfs_viewer.model.ecpfs.derived_listing import index_hierarchy
from ecpfs_viewer.model.search import IndexReader, SearchParams
from ecpfs_viewer.model.storage.opening import StoreOpenError, open_store
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.storage.remote import RemoteAccessError
from ecpfs_viewer.model.storage.remote_clients import azure_account
from ecpfs_viewer.model.validation import validate
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def _url(cloud: CloudServer) -> str:
    return cloud.url("ecpfs", "two_clusters.zarr")


def _open(cloud: CloudServer, url: str | None = None, anon: bool = False) -> Hierarchy:
    return index_hierarchy(open_store(url or _url(cloud), remote=RemoteOptions(endpoint=cloud.endpoint, anon=anon)))


def test_index_browses_like_its_folder(cloud: CloudServer, two_clusters_path: Path) -> None:
    remote = _open(cloud)
    local = Hierarchy(open_store(two_clusters_path))
    assert remote.store.kind == "remote"
    assert remote_fixtures.tree_kinds(remote) == remote_fixtures.tree_kinds(local)
    assert summarize(remote).to_dict() == summarize(local).to_dict()
    assert np.array_equal(remote.read_array("lvl_2/node_2/embeddings"), local.read_array("lvl_2/node_2/embeddings"))


def test_listing_is_one_delimiter_listing_per_level(cloud: CloudServer) -> None:
    h = _open(cloud)
    before = h.store.stats()
    assert [n.name for n in h.children("lvl_2")] == ["node_0", "node_1", "node_2", "node_3"]
    assert (h.store.stats() - before).listings == 1


def test_check_gives_the_folders_report(cloud: CloudServer, two_clusters_path: Path) -> None:
    remote = validate(_open(cloud))
    local = validate(Hierarchy(open_store(two_clusters_path)))
    assert remote.ok and local.ok
    assert [f.describe() for f in remote.findings] == [f.describe() for f in local.findings]


def test_search_gives_the_folders_answer(cloud: CloudServer, two_clusters_path: Path) -> None:
    remote = IndexReader(_open(cloud).store)
    local = IndexReader(two_clusters_path)
    query = np.array([10.2, 10.1], dtype=np.float32)
    params = SearchParams(k=3, search_exp=2)
    assert remote.search(query, params).items == local.search(query, params).items
    assert remote.vector_for_item(5).tolist() == local.vector_for_item(5).tolist()  # one listing of the leaves


def test_wide_level_lists_without_a_request_per_node(cloud: CloudServer) -> None:
    group = b'{"zarr_format": 3, "node_type": "group"}'
    count = 1200  # more than one page of 1,000 keys
    cloud.put("wide", {"w.zarr/zarr.json": group, **{f"w.zarr/lvl/node_{i}/zarr.json": group for i in range(count)}})
    h = _open(cloud, cloud.url("wide", "w.zarr"))
    before = h.store.stats()
    names = [n.name for n in h.children("lvl")]
    cost = h.store.stats() - before
    assert names[:3] == ["node_0", "node_1", "node_2"] and len(names) == count
    assert cost.listings == 1
    assert cost.requests == 1 + count  # the listing, then each child's zarr.json: no listing per node


def test_missing_bucket_is_a_value_naming_it(cloud: CloudServer) -> None:
    url = cloud.url("no-such-bucket", "x.zarr")
    with pytest.raises(StoreOpenError, match=url.replace(".", r"\.")):
        open_store(url, remote=RemoteOptions(endpoint=cloud.endpoint, timeout_s=5))


def test_cli_info_check_search(cloud: CloudServer, two_clusters_path: Path,
                               capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from ecpfs_viewer.cli import main

    def run(*argv: str) -> tuple[int, str]:
        code = main(list(argv))
        return code, capsys.readouterr().out

    url = _url(cloud)
    options = ("--endpoint", cloud.endpoint, "--timeout", "10")
    assert run("info", url, "--leaf-sizes", *options) == run("info", str(two_clusters_path))
    assert "Sum of leaf sizes: not read (4 leaf documents" in run("info", url, *options)[1]  # remote default
    code, out = run("check", url, *options)
    local_code, local_out = run("check", str(two_clusters_path))
    assert code == local_code == 0
    kept = " (lvl_2's from the cache folder: none of its documents has changed since an earlier process read them)"
    assert kept in local_out  # `info` of the local copy above kept its leaf level's statistics; a remote's are read
    assert out.replace(url, "X") == local_out.replace(str(two_clusters_path), "X").replace(kept, "")
    queries = tmp_path / "q.npy"
    np.save(queries, np.array([[10.2, 10.1]], dtype=np.float32))
    search = ("--query-file", str(queries), "--query-row", "0", "--k", "3")
    remote, local = run("search", url, *search, *options), run("search", str(two_clusters_path), *search)

    def hits(out: str) -> list[str]:  # the cost lines carry a time and what this store read
        return [line for line in out.splitlines() if not line.startswith(("# cost: ", "# read per level"))]

    assert remote[0] == local[0] and hits(remote[1]) == hits(local[1]) and "# cost: " in remote[1]


# -- credentials: GCS and Azure ---------------------------------------------------------------------
def test_gcs_emulator_reads_unsigned_with_and_without_anon(gcs_server: CloudServer) -> None:
    # over an http:// endpoint no token is fetched (the instance metadata server is not asked)
    for anon in (False, True):
        assert [n.name for n in _open(gcs_server, anon=anon).children("lvl_1")] == ["node_0", "node_1"]


def test_azure_reads_with_the_key_from_the_environment_and_anonymously_when_public(
        azurite_server: CloudServer, monkeypatch: pytest.MonkeyPatch) -> None:
    assert [n.name for n in _open(azurite_server).children("lvl_1")] == ["node_0", "node_1"]
    # no credentials at all: the account comes from the emulator's endpoint
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_NAME")
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_KEY")
    public = _open(azurite_server, azurite_server.url("public", "two_clusters.zarr"), anon=True)
    assert [n.name for n in public.children("lvl_1")] == ["node_0", "node_1"]


@pytest.mark.parametrize("credentials", ["none", "wrong key"])
def test_azure_refusal_names_the_variables_to_check_and_no_secret(
        azurite_server: CloudServer, monkeypatch: pytest.MonkeyPatch, credentials: str) -> None:
    if credentials == "none":  # unsigned requests to a private container
        monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_KEY")
    else:
        monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", AZURITE_KEY[:-8] + "AAAAAAA=")
    url = _url(azurite_server)
    with pytest.raises(StoreOpenError) as raised:
        _open(azurite_server, anon=credentials == "none")
    text = str(raised.value)
    assert isinstance(raised.value.__cause__, RemoteAccessError)
    assert f"{url}/zarr.json" in text and "403" in text
    assert "AZURE_STORAGE_ACCOUNT_NAME" in text and "AZURE_STORAGE_ACCOUNT_KEY" in text and "--anon" in text
    assert AZURITE_KEY[:20] not in text and "AAAAAAA=" not in text


def test_azure_account_comes_from_the_environment_or_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_NAME", raising=False)
    assert azure_account("https://myaccount.blob.core.windows.net") == "myaccount"
    assert azure_account("http://127.0.0.1:10000/devstoreaccount1") == "devstoreaccount1"
    assert azure_account(None) is None
    with pytest.raises(StoreOpenError, match="AZURE_STORAGE_ACCOUNT_NAME"):
        open_store("az://container/x.zarr", remote=RemoteOptions(timeout_s=5))  # no request is made
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "named")
    assert azure_account("http://127.0.0.1:10000/devstoreaccount1") == "named"
