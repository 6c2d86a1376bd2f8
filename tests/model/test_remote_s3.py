"""Real S3 (moto's server on loopback): an uploaded index reads the same as its folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import remote_fixtures

from ecpfs_viewer.model.ecpfs import summarize
from ecpfs_viewer.model.hierarchy import Hierarchy
from ecpfs_viewer.model.remote import RemoteOptions
from ecpfs_viewer.model.search import IndexReader, SearchParams
from ecpfs_viewer.model.stores import StoreOpenError, open_store
from ecpfs_viewer.model.validation import validate

URL = "s3://ecpfs/two_clusters.zarr"


def test_s3_index_browses_like_its_folder(moto_endpoint: str, two_clusters_path: Path) -> None:
    remote = Hierarchy(open_store(URL, remote=RemoteOptions(endpoint=moto_endpoint)))
    local = Hierarchy(open_store(two_clusters_path))
    assert remote.store.kind == "remote"
    assert remote_fixtures.tree_kinds(remote) == remote_fixtures.tree_kinds(local)
    assert summarize(remote).to_dict() == summarize(local).to_dict()
    assert np.array_equal(remote.read_array("lvl_2/node_2/embeddings"), local.read_array("lvl_2/node_2/embeddings"))


def test_s3_listing_is_one_delimiter_listing_per_level(moto_endpoint: str) -> None:
    h = Hierarchy(open_store(URL, remote=RemoteOptions(endpoint=moto_endpoint)))
    before = h.store.stats()
    assert [n.name for n in h.children("lvl_2")] == ["node_0", "node_1", "node_2", "node_3"]
    assert (h.store.stats() - before).listings == 1


def test_s3_check_gives_the_folders_report(moto_endpoint: str, two_clusters_path: Path) -> None:
    remote = validate(Hierarchy(open_store(URL, remote=RemoteOptions(endpoint=moto_endpoint))))
    local = validate(Hierarchy(open_store(two_clusters_path)))
    assert remote.ok and local.ok
    assert [f.describe() for f in remote.findings] == [f.describe() for f in local.findings]


def test_s3_search_gives_the_folders_answer(moto_endpoint: str, two_clusters_path: Path) -> None:
    opened = open_store(URL, remote=RemoteOptions(endpoint=moto_endpoint))
    remote = IndexReader(opened)
    local = IndexReader(two_clusters_path)
    query = np.array([10.2, 10.1], dtype=np.float32)
    params = SearchParams(k=3, search_exp=2)
    assert remote.search(query, params).items == local.search(query, params).items
    assert remote.vector_for_item(5).tolist() == local.vector_for_item(5).tolist()  # one listing of the leaves


def test_wide_level_lists_without_a_request_per_node(moto_endpoint: str) -> None:
    client = remote_fixtures.s3_client(moto_endpoint)
    client.create_bucket(Bucket="wide")
    group = b'{"zarr_format": 3, "node_type": "group"}'
    client.put_object(Bucket="wide", Key="w.zarr/zarr.json", Body=group)
    count = 1200  # more than one page of 1,000 keys
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=16) as pool:
        list(pool.map(lambda i: client.put_object(Bucket="wide", Key=f"w.zarr/lvl/node_{i}/zarr.json", Body=group),
                      range(count)))
    h = Hierarchy(open_store("s3://wide/w.zarr", remote=RemoteOptions(endpoint=moto_endpoint)))
    before = h.store.stats()
    names = [n.name for n in h.children("lvl")]
    cost = h.store.stats() - before
    assert names[:3] == ["node_0", "node_1", "node_2"] and len(names) == count
    assert cost.listings == 1
    assert cost.requests == 1 + count  # the listing, then each child's zarr.json: no listing per node


def test_missing_bucket_is_a_value_naming_it(moto_endpoint: str) -> None:
    with pytest.raises(StoreOpenError, match=r"s3://no-such-bucket/x\.zarr"):
        open_store("s3://no-such-bucket/x.zarr", remote=RemoteOptions(endpoint=moto_endpoint, timeout_s=5))


def test_cli_info_check_search_on_s3(moto_endpoint: str, two_clusters_path: Path,
                                     capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from ecpfs_viewer.cli import main

    def run(*argv: str) -> tuple[int, str]:
        code = main(list(argv))
        return code, capsys.readouterr().out

    options = ("--endpoint", moto_endpoint, "--timeout", "10")
    assert run("info", URL, *options) == run("info", str(two_clusters_path))
    code, out = run("check", URL, *options)
    local_code, local_out = run("check", str(two_clusters_path))
    assert code == local_code == 0
    assert out.replace(URL, "X") == local_out.replace(str(two_clusters_path), "X")
    queries = tmp_path / "q.npy"
    np.save(queries, np.array([[10.2, 10.1]], dtype=np.float32))
    search = ("--query-file", str(queries), "--query-row", "0", "--k", "3")
    assert run("search", URL, *search, *options) == run("search", str(two_clusters_path), *search)
