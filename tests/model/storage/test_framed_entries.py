"""A cache entry framed with its stamps: written in parts, read back whole or from its file (the stamps
first, the data left to be read from where it starts), and refused when it is not one."""

from __future__ import annotations

import struct

import numpy as np

from ecpfs_viewer.model.storage.disk_cache import StoreCache
from ecpfs_viewer.model.storage.stamps import Stamps, frame_parts, read_framed_stamps, unframe_entry


def _stamps() -> Stamps:
    paths = ("lvl_2/node_0/zarr.json", "lvl_2/node_1/zarr.json")
    return Stamps("local", paths, np.array([0, 1], np.int64), np.arange(10, dtype=np.int64).reshape(2, 5))


def _same(a: Stamps, b: Stamps) -> bool:
    return (a.kind, a.paths) == (b.kind, b.paths) and np.array_equal(a.owners, b.owners) and np.array_equal(
        a.values, b.values)


def test_an_entry_written_by_a_part_reads_back_whole_and_from_its_file() -> None:
    cache = StoreCache("local:/a", "fp")
    cache.write("entry", *frame_parts(lambda handle: handle.write(b"the data, written into the file"), _stamps()))
    raw = cache.read("entry")
    assert raw is not None
    data, stamps = unframe_entry(raw) or (b"", None)
    assert data == b"the data, written into the file" and stamps is not None and _same(stamps, _stamps())
    handle = cache.open("entry")
    assert handle is not None
    with handle:
        from_file = read_framed_stamps(handle)
        assert from_file is not None and _same(from_file, _stamps())
        assert handle.read() == b"the data, written into the file"  # the file was left where the data starts


def test_a_head_announcing_more_stamps_than_the_file_holds_is_refused_before_reading_them() -> None:
    cache = StoreCache("local:/a", "fp")
    cache.write("entry", struct.pack("<8sIQ", b"ECPFSENT", 1, 2**60), b"not that many bytes")
    cache.write("other", b"an entry of an older viewer, no head at all")
    for name in ("entry", "other"):
        handle = cache.open(name)
        assert handle is not None
        with handle:
            assert read_framed_stamps(handle) is None  # no MemoryError: the length is checked first
        assert unframe_entry(cache.read(name) or b"") is None
    assert cache.open("absent") is None
