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


def test_the_stamps_of_several_reads_are_joined_as_they_are_written() -> None:
    """Parts saved as one (never joined in memory first) read back as Stamps.joined makes them: the
    paths' offsets shifted past each part's, a part with no path kept in its place; a part of
    another kind, or one that could not be stamped, makes them not joinable."""
    rng = np.random.default_rng(4)
    parts = []
    for k, count in enumerate((3, 0, 2, 5)):
        paths = tuple(f"lvl_3/node_{k}{i}/c/0/{'é' * i}" for i in range(count))
        parts.append(Stamps("local", paths, np.full(count, k, np.int64), rng.integers(-9, 2**40, (count, 5))))
    joinable = Stamps.joinable(parts)
    assert joinable == parts
    expected = Stamps.joined(parts)
    assert expected is not None and len(expected.paths) == 10
    cache = StoreCache("local:/a", "fp")
    cache.write("entry", *frame_parts(b"data after", joinable))
    data, stamps = unframe_entry(cache.read("entry") or b"") or (b"", None)
    assert data == b"data after" and stamps is not None and _same(stamps, expected)
    assert list(stamps.paths)[3:5] == ["lvl_3/node_20/c/0/", "lvl_3/node_21/c/0/é"]
    assert _same(Stamps.from_bytes(bytes(_stamps().to_bytes())), _stamps())
    assert Stamps.joinable([*parts, None]) is None
    assert Stamps.joinable([*parts, Stamps("zip", ("a",), np.zeros(1, np.int64), np.zeros((1, 5), np.int64))]) is None
