"""A remote index on an object store (moto's S3, fake-gcs-server, Azurite on loopback) keeps its
per-index cache across processes, each entry stamped with the ETag / Last-Modified / size its
store lists for the objects it came from: a later process answers ``locate`` with a few listings
instead of reading the leaves, and an object changed on the server (swapped leaves, swapped
internal nodes, a rewritten leaf) is never answered from the cache."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import numpy as np
import pytest
import zarr
from cloud_emulators import CloudServer, folder_objects
from index_factory import build_clustered_index

from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.search.locate import ItemLocation
from ecpfs_viewer.model.storage.counted_io import IOStats
from ecpfs_viewer.model.storage.disk_cache import cache_usage
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.storage.remote_stamps import listing_prefixes

pytest.importorskip("obstore", reason="obstore is part of the remote extra")

_uploads = itertools.count()


@pytest.fixture(scope="module")
def clustered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of about 100 leaves in three levels (built once; each test uploads its own copy)."""
    folder = tmp_path_factory.mktemp("clustered")
    build_clustered_index(folder, 2500, 8, levels=3)
    return folder / "idx.zarr"


def _upload(cloud: CloudServer, index: Path) -> str:
    """index uploaded into a bucket of its own (tests change what they uploaded; an emulator lists a
    prefix by going through the whole bucket); its URL."""
    bucket = f"stamped-{next(_uploads)}"
    cloud.upload_folder(bucket, index, "idx.zarr")
    return cloud.url(bucket, "idx.zarr")


def _locate(cloud: CloudServer, url: str, item: int) -> tuple[ItemLocation, IOStats]:
    """locate as the CLI runs it in a fresh process: the answer, then the rest of the item map kept."""
    reader = IndexReader(open_store(url, remote=RemoteOptions(endpoint=cloud.endpoint)))
    found = reader.locate(item)
    reader.finish_item_map()
    stats = reader.store.stats()
    reader.store.close()
    return found, stats


def _swap(cloud: CloudServer, index: Path, url: str, first: str, second: str) -> None:
    """Upload the objects of two node folders each under the other's name at url (an rsync of a
    rebuilt index: the root documents unchanged)."""
    prefix = _prefix(url)
    cloud.put(_bucket(url), {**folder_objects(index / first, f"{prefix}/{second}"),
                        **folder_objects(index / second, f"{prefix}/{first}")})


def _prefix(url: str) -> str:
    return url.split("://", 1)[1].split("/", 1)[1]


def _bucket(url: str) -> str:
    return url.split("://", 1)[1].split("/", 1)[0]


def test_a_later_process_locates_from_the_cache_with_far_fewer_requests(cloud: CloudServer, clustered: Path) -> None:
    """The first locate reads the leaves' item_ids (and keeps the map); a later one checks the
    entries by listing: the same answer, with a few listings instead of a request per leaf."""
    url = _upload(cloud, clustered)
    item = int(IndexReader(clustered).node(3, 7).ids[0])  # type: ignore[union-attr]
    first, asked_first = _locate(cloud, url, item)
    assert cache_usage().files >= 3  # the item map, the facts and the parent links
    later, asked_later = _locate(cloud, url, item)
    assert later == first and later.leaf == 7
    assert asked_later.requests * 4 < asked_first.requests, (asked_first, asked_later)
    leaves = len(IndexReader(clustered).leaf_ids())
    assert asked_later.requests < leaves // 2, (asked_later, leaves)


@pytest.mark.parametrize("swapped", ["lvl_3/node_7|lvl_3/node_40", "lvl_2/node_0|lvl_2/node_1",
                                     "lvl_1/node_0|lvl_1/node_1"])
def test_swapped_nodes_on_the_server_are_never_answered_from_the_cache(cloud: CloudServer, clustered: Path,
                                                                        tmp_path: Path, swapped: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two node folders' objects swapped after locate (leaves: the item map; internal nodes: the
    parent links): the later answer is the index's as it is now, the one an empty cache gives."""
    url = _upload(cloud, clustered)
    item = int(IndexReader(clustered).node(3, 7).ids[0])  # type: ignore[union-attr]
    _locate(cloud, url, item)
    _locate(cloud, url, item)  # answered from the cache
    first, second = swapped.split("|")
    _swap(cloud, clustered, url, first, second)
    after, _ = _locate(cloud, url, item)
    monkeypatch.setenv("ECPFS_VIEWER_CACHE", str(tmp_path / "empty"))
    fresh, _ = _locate(cloud, url, item)
    assert after == fresh
    if first.startswith("lvl_3"):
        assert fresh.leaf == 40


def test_a_rewritten_leaf_is_read_afresh(cloud: CloudServer, clustered: Path, tmp_path: Path) -> None:
    """A leaf whose item_ids are uploaded again with its ids in another order: the later answer
    names the row the item is in now (the object's ETag and Last-Modified changed), never the
    cached row."""
    url = _upload(cloud, clustered)
    ids = np.asarray(IndexReader(clustered).node(3, 7).ids)  # type: ignore[union-attr]
    assert _locate(cloud, url, int(ids[0]))[0].row == 0
    assert _locate(cloud, url, int(ids[0]))[0].row == 0  # answered from the cache
    copy = tmp_path / "idx.zarr"
    shutil.copytree(clustered, copy)
    array = zarr.open_array(str(copy / "lvl_3" / "node_7" / "item_ids"), mode="r+")
    array[:] = np.roll(ids, 1)
    leaf = "lvl_3/node_7/item_ids"
    cloud.put(_bucket(url), folder_objects(copy / leaf, f"{_prefix(url)}/{leaf}"))
    assert _locate(cloud, url, int(ids[0]))[0].row == 1


def test_listing_prefixes_list_few_node_folders_apart_and_many_by_their_folder() -> None:
    assert listing_prefixes(["lvl_3/node_5/item_ids"]) == ["lvl_3/node_5"]
    assert listing_prefixes([f"lvl_3/node_{n}/item_ids" for n in range(500)]) == ["lvl_3"]
    assert listing_prefixes([f"lvl_{n}/node_0/node_ids" for n in range(1, 9)]) == [""]


def _check(cloud: CloudServer, url: str) -> tuple[list[object], IOStats]:
    """check and every level's statistics, as the CLI's `check` and `info` run them."""
    from ecpfs_viewer.model.ecpfs import shared_level_stats, summarize
    from ecpfs_viewer.model.ecpfs.derived_listing import index_hierarchy
    from ecpfs_viewer.model.validation import validate

    h = index_hierarchy(open_store(url, remote=RemoteOptions(endpoint=cloud.endpoint)))
    summary = summarize(h)
    report = validate(h)
    levels = [shared_level_stats(h, level, summary).to_dict() for level in range(1, summary.levels + 1)]
    leaf = h.read_array("lvl_3/node_7/item_ids")
    stats = h.store.stats()
    h.store.close()
    return [[f.describe() for f in report.findings], levels, leaf.tolist()], stats


def test_a_later_check_answers_the_documents_from_the_cache_checked_by_listing(cloud: CloudServer,
                                                                                clustered: Path) -> None:
    """The metadata and id arrays a check reads are kept with their listed stamps: a later check
    reads a fraction of them (each level listed once instead) and reports the same."""
    url = _upload(cloud, clustered)
    first, asked_first = _check(cloud, url)
    later, asked_later = _check(cloud, url)
    assert later == first
    assert asked_later.requests * 2 < asked_first.requests, (asked_first, asked_later)


def test_a_later_check_reads_swapped_leaves_afresh(cloud: CloudServer, clustered: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Two leaves' objects swapped after a check: the later check, its level statistics and the
    leaf's item_ids are those an empty cache gives, never the documents kept before."""
    url = _upload(cloud, clustered)
    before, _ = _check(cloud, url)
    _check(cloud, url)
    _swap(cloud, clustered, url, "lvl_3/node_7", "lvl_3/node_40")
    after, _ = _check(cloud, url)
    monkeypatch.setenv("ECPFS_VIEWER_CACHE", str(tmp_path / "empty"))
    fresh, _ = _check(cloud, url)
    assert after == fresh
    assert after[2] != before[2]  # node_7's item_ids are node_40's now


def test_a_refresh_checks_the_kept_documents_against_a_new_listing(cloud: CloudServer, clustered: Path) -> None:
    """In one long-lived process (the window) the documents are checked against the listing made
    when first asked for; F5 lists again, so leaves swapped meanwhile are read afresh."""
    from ecpfs_viewer.model.ecpfs.derived_listing import index_hierarchy

    url = _upload(cloud, clustered)
    _check(cloud, url)  # keeps the documents
    h = index_hierarchy(open_store(url, remote=RemoteOptions(endpoint=cloud.endpoint)))
    before = [h.read_array(f"lvl_3/node_{n}/item_ids").tolist() for n in range(20)]
    assert h.store.zarr_store.documents is not None and h.store.zarr_store.documents.hits > 0
    _swap(cloud, clustered, url, "lvl_3/node_7", "lvl_3/node_8")
    h.refresh("")
    after = [h.read_array(f"lvl_3/node_{n}/item_ids").tolist() for n in range(20)]
    assert after[7] == before[8] and after[8] == before[7]
    h.store.close()
