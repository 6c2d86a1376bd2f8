"""Zips read from their central directory by our own reader (model/storage/zip_directory.py) and
store (zip_store.py): the listing agrees with python's zipfile, is kept compactly, and every member
that is not what its entry declares is refused with its name, the file never written."""

from __future__ import annotations

import importlib.util
import os
import pickle
import struct
import subprocess
import sys
import threading
import tracemalloc
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
from locations import REPO
from zarr.abc.store import ByteRequest, RangeByteRequest
from zarr.buffer import default_buffer_prototype

from ecpfs_viewer.model.storage import event_loop
from ecpfs_viewer.model.storage.counted_io import UnreadableFile
from ecpfs_viewer.model.storage.opening import StoreOpenError, open_store
from ecpfs_viewer.model.storage.zip_directory import read_directory
from ecpfs_viewer.model.storage.zip_store import GuardedZipStore


def _bench_zip() -> ModuleType:
    """benchmarks/bench_zip.py, whose hand-written zips (many members, ZIP64 end records) these use."""
    spec = importlib.util.spec_from_file_location("bench_zip", REPO / "benchmarks" / "bench_zip.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _read(store: GuardedZipStore, key: str, byte_range: ByteRequest | None = None) -> bytes | None:
    found = event_loop.run(store.get(key, default_buffer_prototype(), byte_range))
    return None if found is None else found.to_bytes()


def _agrees_with_zipfile(path: Path) -> None:
    directory = read_directory(path)
    with zipfile.ZipFile(path) as archive:
        infos = {info.filename: info for info in archive.infolist() if not info.is_dir()}
    assert list(directory.names_below("")) == sorted(infos, key=lambda name: name.encode())
    for index in range(len(directory)):
        member, info = directory.member(index), infos[directory.name(index)]
        assert (member.header_offset, member.compressed, member.size, member.crc, member.method) == \
            (info.header_offset, info.compress_size, info.file_size, info.CRC, info.compress_type)


def test_the_directory_agrees_with_zipfile(tmp_path: Path) -> None:
    path = tmp_path / "mixed.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("zarr.json", b"{}")
        archive.writestr("a/c/0", b"x" * 1000, compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("a/", b"")  # a folder entry: not a key
        archive.writestr("é/ü/zarr.json", b"{}")  # UTF-8 names
        archive.writestr("b/c/0", b"", compress_type=zipfile.ZIP_STORED)
    _agrees_with_zipfile(path)
    # a zip behind other bytes (a self-extractor): offsets are found from the end records
    shifted = tmp_path / "shifted.zip"
    shifted.write_bytes(b"#!/bin/sh\nexit 0\n" + path.read_bytes())
    _agrees_with_zipfile(shifted)
    store = GuardedZipStore(shifted)
    assert _read(store, "a/c/0") == b"x" * 1000 and _read(store, "é/ü/zarr.json") == b"{}"


def test_a_zip64_directory_of_70000_members_is_read_and_listed_by_folder(tmp_path: Path) -> None:
    path = tmp_path / "many.zip"
    members = [(f"d/c/{i}/0", struct.pack("<2L", i, i + 1)) for i in range(70_000)] + [("zarr.json", b"{}")]
    _bench_zip().write_stored_zip(path, members)
    _agrees_with_zipfile(path)
    store = GuardedZipStore(path)
    assert _read(store, "d/c/12345/0") == struct.pack("<2L", 12345, 12346)

    async def collect(prefix: str) -> list[str]:
        return [key async for key in store.list_dir(prefix)]

    assert event_loop.run(collect("")) == ["d", "zarr.json"]
    assert event_loop.run(collect("d/c"))[:3] == ["0", "1", "10"] and len(event_loop.run(collect("d/c/"))) == 70_000
    assert event_loop.run(collect("d/c/7")) == ["0"]
    assert event_loop.run(store.getsize_prefix("d/c/1")) == 8


def test_a_name_given_twice_answers_with_its_last_entry_and_is_listed_once(tmp_path: Path) -> None:
    path = tmp_path / "twice.zip"
    with pytest.warns(UserWarning, match="Duplicate name"), zipfile.ZipFile(path, "w") as archive:
        archive.writestr("zarr.json", b'{"first": 1}')
        archive.writestr("zarr.json", b'{"last": 2}')
    store = GuardedZipStore(path)
    assert _read(store, "zarr.json") == b'{"last": 2}'
    with zipfile.ZipFile(path) as archive:
        assert archive.read("zarr.json") == b'{"last": 2}'  # as zipfile answers
    assert list(store.directory.names_below("")) == ["zarr.json"]


def _patch_entry(path: Path, name: str, **fields: int) -> None:
    """Change fields (flags, method, compressed, size, crc) of a member's central entry and local header."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(name)
        central = data.index(b"PK\x01\x02" + data[archive.start_dir + 4:archive.start_dir + 6], archive.start_dir)
    encoded = name.encode()
    central = data.index(encoded, central) - 46
    layout = {"flags": (8, 6, "<H"), "method": (10, 8, "<H"), "crc": (16, 14, "<L"),
              "compressed": (20, 18, "<L"), "size": (24, 22, "<L")}
    for field, value in fields.items():
        in_central, in_local, fmt = layout[field]
        struct.pack_into(fmt, data, central + in_central, value)
        struct.pack_into(fmt, data, info.header_offset + in_local, value)
    path.write_bytes(bytes(data))


@pytest.fixture
def small_zip(tmp_path: Path) -> Path:
    path = tmp_path / "s.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("zarr.json", b'{"zarr_format": 3, "node_type": "group"}')
        archive.writestr("a/c/0", bytes(range(256)) * 64, compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("a/c/1", bytes(range(256)) * 4)
    return path


@pytest.mark.parametrize(("change", "problem"), [
    ({"flags": 1}, "an encrypted zip member (it needs a password); not read"),
    ({"method": 12}, "its bzip2 data is invalid"),
    ({"method": 95}, "a zip member compressed with xz, which this viewer does not read"),
    ({"method": 93}, "a zip member compressed with zstandard"),
    ({"size": 100}, "it decompresses to more than the 100 bytes its entry declares"),
    ({"size": 20000}, "its deflate data ends after 16,384 of the 20,000 bytes"),
    ({"crc": 7}, "its CRC-32 does not match its entry"),
    ({"compressed": 3}, "damaged zip member (its deflate data ends"),
])
def test_a_member_that_is_not_what_its_entry_declares_is_refused_with_its_name(
        small_zip: Path, change: dict[str, int], problem: str) -> None:
    _patch_entry(small_zip, "a/c/0", **change)
    before = small_zip.read_bytes()
    store = GuardedZipStore(small_zip)
    with pytest.raises(UnreadableFile, match=f"{small_zip}#a/c/0: ") as caught:
        _read(store, "a/c/0")
    assert problem in str(caught.value)
    assert _read(store, "a/c/1") == bytes(range(256)) * 4  # its neighbours read
    assert small_zip.read_bytes() == before


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_members_of_every_method_zipfile_writes_read_as_zipfile_reads_them(tmp_path: Path, method: int) -> None:
    path = tmp_path / "m.zip"
    body = bytes(range(256)) * 300 + b"tail"
    with zipfile.ZipFile(path, "w", compression=method) as archive:
        archive.writestr("a/c/0", body)
    store = GuardedZipStore(path)
    assert _read(store, "a/c/0") == body
    assert _read(store, "a/c/0", RangeByteRequest(10, 20)) == body[10:20]


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_a_compressed_bomb_is_stopped_at_its_declared_size(tmp_path: Path, method: int) -> None:
    """64 MiB of zeros in a few KB, declared as 4 KiB: refused after decoding 4 KiB and a byte (an lzma
    member's dictionary, 8 MiB as zipfile writes it, is allocated as its header declares)."""
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", compression=method) as archive:
        archive.writestr("a/c/0", bytes(64 << 20))
    with zipfile.ZipFile(path) as archive:
        crc = archive.getinfo("a/c/0").CRC
    _patch_entry(path, "a/c/0", size=4096, crc=crc)
    tracemalloc.start()
    try:
        with pytest.raises(UnreadableFile, match="decompresses to more than the 4,096 bytes its entry declares"):
            _read(GuardedZipStore(path), "a/c/0")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < (4 << 20) + (8 << 20 if method == zipfile.ZIP_LZMA else 0)


def test_an_lzma_member_declaring_a_huge_dictionary_is_refused_before_it_is_allocated(tmp_path: Path) -> None:
    path = tmp_path / "dict.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_LZMA) as archive:
        archive.writestr("a/c/0", b"x" * 1000)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("a/c/0")
    start = info.header_offset + 30 + len(b"a/c/0") + len(info.extra)
    struct.pack_into("<I", data, start + 5, 0xFFFF_FFFF)  # after version (2), properties size (2), lc/lp/pb (1)
    path.write_bytes(bytes(data))
    with pytest.raises(UnreadableFile, match=r"a/c/0: damaged zip member .its lzma data is invalid: it declares a "
                                             r"dictionary of 4,294,967,295 bytes"):
        _read(GuardedZipStore(path), "a/c/0")


def test_a_stored_member_whose_sizes_disagree_or_that_runs_past_the_file_is_refused(small_zip: Path) -> None:
    _patch_entry(small_zip, "a/c/1", compressed=5)
    with pytest.raises(UnreadableFile, match=r"a/c/1: damaged zip member .stored, but declared as 5 bytes"):
        _read(GuardedZipStore(small_zip), "a/c/1")
    _patch_entry(small_zip, "a/c/1", compressed=1 << 20, size=1 << 20)
    with pytest.raises(UnreadableFile, match=r"a/c/1: damaged zip member .*run past the end of the"):
        _read(GuardedZipStore(small_zip), "a/c/1")


def test_entries_that_share_a_local_header_are_refused(small_zip: Path) -> None:
    """An overlapping zip bomb points many entries at one compressed body: the header names another member."""
    data = bytearray(small_zip.read_bytes())
    with zipfile.ZipFile(small_zip) as archive:
        target = archive.getinfo("a/c/0").header_offset
    entry = data.index(b"a/c/1", data.index(b"PK\x01\x02")) - 46
    struct.pack_into("<L", data, entry + 42, target)
    small_zip.write_bytes(bytes(data))
    store = GuardedZipStore(small_zip)
    with pytest.raises(UnreadableFile, match=r"#a/c/1: damaged zip member \(its local header names 'a/c/0'\)"):
        _read(store, "a/c/1")
    assert _read(store, "a/c/0") == bytes(range(256)) * 64


def test_a_member_declared_past_the_cap_is_refused_before_it_is_read(small_zip: Path) -> None:
    _patch_entry(small_zip, "a/c/0", size=0xFFFFFFFE)
    with pytest.raises(UnreadableFile, match=r"the member, uncompressed as the zip declares, is 4\.0 GiB"):
        _read(GuardedZipStore(small_zip), "a/c/0")


def test_byte_ranges_and_sizes_are_those_of_the_uncompressed_member(small_zip: Path) -> None:
    from zarr.abc.store import OffsetByteRequest, SuffixByteRequest

    store = GuardedZipStore(small_zip)
    whole = bytes(range(256)) * 64
    for key, value in (("a/c/0", whole), ("a/c/1", bytes(range(256)) * 4)):
        for request, expected in ((RangeByteRequest(3, 10), value[3:10]), (OffsetByteRequest(1000), value[1000:]),
                                  (SuffixByteRequest(5), value[-5:])):
            assert store.read_member(key, request) == expected
        assert event_loop.run(store.getsize(key)) == len(value)
    assert _read(store, "nothing/here") is None


def test_reads_from_many_threads_at_once_each_get_their_member(tmp_path: Path) -> None:
    path = tmp_path / "threads.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for i in range(200):
            archive.writestr(f"c/{i}", struct.pack("<L", i) * (50 + i))
    store = GuardedZipStore(path)
    wrong: list[int] = []

    def reader(offset: int) -> None:
        for round_ in range(20):
            i = (offset * 37 + round_ * 11) % 200
            if store.read_member(f"c/{i}") != struct.pack("<L", i) * (50 + i):
                wrong.append(i)

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not wrong


def test_a_zip_is_never_written_and_a_closed_store_reads_only_the_same_file(small_zip: Path) -> None:
    stamp = small_zip.stat()
    store = GuardedZipStore(small_zip)
    for write in (store.set("x", default_buffer_prototype().buffer.from_bytes(b"1")), store.delete("zarr.json"),
                  store.clear()):
        with pytest.raises(ValueError, match="read-only"):
            event_loop.run(write)
    store.close()
    assert _read(store, "a/c/1") is not None  # opened again: the same file
    after = small_zip.stat()
    assert (after.st_size, after.st_mtime_ns) == (stamp.st_size, stamp.st_mtime_ns)
    store.close()
    replacement = small_zip.with_suffix(".new")
    replacement.write_bytes(small_zip.read_bytes())
    pickled = pickle.dumps(store)  # as dask hands it to a worker
    os.replace(replacement, small_zip)  # another file in its place: the listing would not describe it
    for reader in (store, pickle.loads(pickled)):
        with pytest.raises(UnreadableFile, match="the zip changed on disk since it was opened"):
            _read(reader, "a/c/1")


@pytest.mark.parametrize("damage", ["no-entry-signature", "directory-too-large", "zip64-record-missing"])
def test_a_central_directory_that_does_not_hold_together_is_a_damaged_zip(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "d.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("zarr.json", b"{}")
        archive.writestr("a/zarr.json", b"{}")
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        start = archive.start_dir
    end = data.rindex(b"PK\x05\x06")
    if damage == "no-entry-signature":
        data[start:start + 4] = b"XXXX"
    elif damage == "directory-too-large":
        struct.pack_into("<L", data, end + 12, len(data) * 2)
    else:
        data[end:end] = struct.pack("<4sLQL", b"PK\x06\x07", 0, 0, 1)
    path.write_bytes(bytes(data))
    with pytest.raises(StoreOpenError, match=rf"{path}: damaged zip file \("):
        open_store(path)


def test_100000_members_are_listed_in_a_few_dozen_bytes_each(tmp_path: Path) -> None:
    """The listing kept for a zip takes its names' bytes and under 60 bytes per member besides; what
    reading it takes on the way stays under 450 bytes per member (zipfile keeps over 1 KB each)."""
    path = tmp_path / "big.zip"
    members = 100_000
    names = [f"lvl_3/node_{i // 5}/{('embeddings/c/0/0', 'item_ids/c/0', 'zarr.json', 'a/zarr.json', 'b/c/0')[i % 5]}"
             for i in range(members)]
    _bench_zip().write_stored_zip(path, ((name, b"\x01\x02\x03\x04") for name in names))
    name_bytes = sum(len(name) for name in names)
    del names
    tracemalloc.start()
    try:
        store = GuardedZipStore(path)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(store.directory) == members
    assert (kept - name_bytes) / members < 60, (kept, name_bytes)
    assert peak / members < 450, peak
    assert store.read_member("lvl_3/node_19999/item_ids/c/0") == b"\x01\x02\x03\x04"


_INFO_PEAK = """
import runpy, sys
sys.argv = ["ecpfs-viewer", "info", "--no-leaf-sizes", sys.argv[1]]
try:
    runpy.run_module("ecpfs_viewer", run_name="__main__")
except SystemExit as exc:
    assert not exc.code, exc.code
with open("/proc/self/status") as status:
    print(next(line for line in status if line.startswith("VmHWM:")).split()[1])
"""


def _info_peak_rss(path: Path) -> int:
    """Peak resident bytes of `ecpfs-viewer info PATH` in a fresh process (which must succeed): its
    own VmHWM, which unlike ru_maxrss does not start from the high-water mark of the parent."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", _INFO_PEAK, str(path)], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.splitlines()[-1]) * 1024


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="the peak is read from /proc (Linux)")
def test_info_on_a_zip_of_100000_members_costs_a_few_hundred_bytes_a_member(tmp_path: Path,
                                                                             two_clusters_path: Path) -> None:
    """The whole command, in a child: beside the same index zipped alone, 100,000 more members add
    under 600 bytes each to the peak (a ZipInfo per member, held twice, added over 1.5 KB)."""
    bench = _bench_zip()
    small = tmp_path / "alone.zip"
    bench.write_stored_zip(small, bench.index_with_dataset(two_clusters_path, 1))
    big = bench.many_member_zip(100_000, two_clusters_path, tmp_path)
    added = _info_peak_rss(big) - _info_peak_rss(small)
    assert added / 100_000 < 600, added
