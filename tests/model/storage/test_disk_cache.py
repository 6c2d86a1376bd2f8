"""The cache folder: entries keyed by store and fingerprint, atomic files, packs, the budget, clearing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ecpfs_viewer.model.build import demo
from ecpfs_viewer.model.limits import Limits, set_limits
from ecpfs_viewer.model.storage import disk_cache
from ecpfs_viewer.model.storage.disk_cache import DOCUMENTS, StoreCache, cache_root, cache_usage, clear_cache


@pytest.fixture
def small_budget():
    set_limits(Limits(max_cache_bytes=3000))
    yield
    set_limits(None)


def test_the_demo_and_the_store_entries_share_one_folder_that_the_environment_names(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(disk_cache.CACHE_ENV, str(tmp_path / "mine"))
    assert cache_root() == tmp_path / "mine" == demo.cache_dir()
    StoreCache("local:/some/index", "fp").write("item_map.npz", b"x")
    assert cache_usage().files == 1 and (tmp_path / "mine" / disk_cache.STORES).is_dir()


def test_an_entry_is_read_back_only_under_the_fingerprint_it_was_written_with() -> None:
    StoreCache("local:/a", "one").write("map", b"saved under one")
    assert StoreCache("local:/a", "one").read("map") == b"saved under one"
    assert StoreCache("local:/b", "one").read("map") is None  # another store
    changed = StoreCache("local:/a", "two")  # the index changed: the old entry is deleted
    assert changed.read("map") is None
    assert StoreCache("local:/a", "one").read("map") is None
    assert cache_usage().files == 0


def test_a_write_replaces_the_entry_whole_and_leaves_no_temporary_file() -> None:
    cache = StoreCache("local:/a", "fp")
    cache.write("map", b"first")
    cache.write("map", b"second, longer")
    assert cache.read("map") == b"second, longer"
    assert [p.name for p in cache.folder.iterdir()] == [cache.path("map").name]


def test_a_part_can_write_itself_into_the_entry_and_a_failing_one_keeps_the_old_entry() -> None:
    """A large entry (a 10M-item map's placement) is written straight into the file, not made as
    bytes first; when that writing fails, the entry before it stays whole and no temporary is left."""
    cache = StoreCache("local:/a", "fp")
    cache.write("map", b"head:", lambda handle: handle.write(b"written by the part"), b":tail")
    assert cache.read("map") == b"head:written by the part:tail"

    def fails(handle) -> None:
        handle.write(b"half")
        raise ValueError("the writer broke")

    with pytest.raises(ValueError, match="the writer broke"):
        cache.write("map", b"other", fails)
    assert cache.read("map") == b"head:written by the part:tail"
    assert [p.name for p in cache.folder.iterdir()] == [cache.path("map").name]


def test_a_pack_keeps_documents_and_absences_and_skips_a_torn_record() -> None:
    cache = StoreCache("remote:http://x", "fp")
    cache.add(DOCUMENTS, "zarr.json", b'{"zarr_format": 3}')
    cache.add(DOCUMENTS, "lvl_1/zarr.json", b"{}")
    with open(cache.path(DOCUMENTS), "ab") as pack:
        pack.write(b"\x05\x00\x00\x00\x09")  # a record cut short by a crash
    again = StoreCache("remote:http://x", "fp").pack(DOCUMENTS)
    assert again == {"zarr.json": b'{"zarr_format": 3}', "lvl_1/zarr.json": b"{}"}
    corrupt = StoreCache("remote:http://y", "fp")
    corrupt.add(DOCUMENTS, "a", b"value")
    data = bytearray(corrupt.path(DOCUMENTS).read_bytes())
    data[-1] ^= 0xFF  # a flipped byte: the CRC refuses the record
    corrupt.path(DOCUMENTS).write_bytes(bytes(data))
    assert StoreCache("remote:http://y", "fp").pack(DOCUMENTS) == {}


def test_a_damaged_record_is_a_miss_and_never_misread_while_the_others_are_served() -> None:
    cache = StoreCache("remote:http://d", "fp")
    for key, value in (("a", b"first"), ("b", b"second"), ("c", b"third")):
        cache.add(DOCUMENTS, key, value)
    data = bytearray(cache.path(DOCUMENTS).read_bytes())
    data[data.index(b"second")] ^= 0xFF  # b's value damaged, its framing intact
    cache.path(DOCUMENTS).write_bytes(bytes(data))
    again = StoreCache("remote:http://d", "fp").pack(DOCUMENTS)
    assert "b" not in again and again.get("b") is None
    assert again == {"a": b"first", "c": b"third"} and len(again) == 2
    data[data.index(b"\x01\x00\x00\x00\x06")] = 2  # b's key length wrong: it and what follows misframed
    cache.path(DOCUMENTS).write_bytes(bytes(data))
    assert StoreCache("remote:http://d", "fp").pack(DOCUMENTS) == {"a": b"first"}


def test_the_budget_evicts_the_least_recently_used_entries_first(small_budget) -> None:
    caches = [StoreCache(f"local:/index{i}", "fp") for i in range(3)]
    for i, cache in enumerate(caches):
        cache.write("map", bytes(1000))
        os.utime(cache.path("map"), ns=(i * 10**9, i * 10**9))  # index0 used longest ago
    caches[0].read("map")  # used again: now the most recent
    StoreCache("local:/index3", "fp").write("map", bytes(1000))
    usage = cache_usage()
    assert usage.nbytes <= 3000
    assert caches[0].read("map") is not None and caches[1].read("map") is None
    assert StoreCache("local:/index3", "fp").read("map") is not None


def test_clear_empties_the_folder_and_says_what_it_freed_but_keeps_the_demo(tmp_path: Path) -> None:
    StoreCache("local:/a", "fp").write("map", bytes(500))
    StoreCache("local:/b", "fp").add(DOCUMENTS, "zarr.json", bytes(100))
    demo_marker = demo.demo_index_path() / "zarr.json"
    demo_marker.parent.mkdir(parents=True)
    demo_marker.write_text("{}")
    freed = clear_cache()
    assert (freed.stores, freed.files) == (2, 2) and freed.nbytes >= 600
    assert cache_usage() == disk_cache.CacheUsage(0, 0, 0)
    assert demo_marker.is_file()


def test_documents_added_later_are_read_at_once_here_and_written_together_on_flush() -> None:
    cache = StoreCache("remote:http://z", "fp")
    cache.add_later(DOCUMENTS, "a/zarr.json", b"{}")
    cache.add_later(DOCUMENTS, "b/zarr.json", b"[]")
    assert cache.pack(DOCUMENTS) == {"a/zarr.json": b"{}", "b/zarr.json": b"[]"}  # this process: at once
    assert StoreCache("remote:http://z", "fp").pack(DOCUMENTS) == {}  # not written yet
    cache.flush()
    assert StoreCache("remote:http://z", "fp").pack(DOCUMENTS) == {"a/zarr.json": b"{}", "b/zarr.json": b"[]"}
    cache.add_later(DOCUMENTS, "c/zarr.json", b"1")
    cache.close()  # what waits is written before the pack is closed
    assert StoreCache("remote:http://z", "fp").pack(DOCUMENTS)["c/zarr.json"] == b"1"


def test_a_held_document_answers_once_within_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bytes a stamp was taken of answer the next read of their key once; past the budget the
    oldest are let go (read again when asked for), and a refresh lets go of all."""
    from ecpfs_viewer.model.storage.disk_cache import DocumentCache

    monkeypatch.setattr(disk_cache, "HELD_BYTES", 10)
    documents = DocumentCache(None, lambda key: True)
    documents.hold("a/zarr.json", b"12345")
    documents.hold("b/zarr.json", b"67890")
    assert documents.get("a/zarr.json") == (True, b"12345")
    assert documents.get("a/zarr.json") == (False, None)  # once
    documents.hold("c/zarr.json", b"abcdefgh")  # over the budget: b goes
    assert documents.get("b/zarr.json") == (False, None)
    documents.let_go()
    assert documents.get("c/zarr.json") == (False, None)
