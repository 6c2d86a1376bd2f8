"""A stored chunk is bounded by what its codecs can make of its decoded size (issue 34, "a store
rewritten by another process while read"): a chunk of a ``bytes`` + compressor chain grown past that
bound (or, stored uncompressed, of any other size) is refused by the batch reader from its size alone,
before its body is read, naming it, whatever the store (a folder, a zip, HTTP). A legitimate chunk
of every codec the guarded decode knows, incompressible (each codec's worst case), still reads.
"""

from __future__ import annotations

import tracemalloc
import warnings
import zipfile
from pathlib import Path
from typing import Any

import numcodecs
import numpy as np
import pytest
import remote_fixtures
import zarr
import zarr.codecs
import zarr.codecs.numcodecs as zn

from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.zarrtree.array_batch import ArrayBatchReader
from ecpfs_viewer.model.zarrtree.hierarchy import ArrayReadError, Hierarchy

GROWN = 64 << 20  # the grown chunk, a sparse file: reading it would take this much memory at once
SHAPE = (100, 64)  # float32: 25,600 bytes decoded


def _compressors() -> dict[str, list[Any]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numcodecs codecs "are not in the Zarr version 3 specification"
        return {
            "bytes alone": [],
            "zstd": [zarr.codecs.ZstdCodec(level=3)],
            "zstd with checksum, then crc32c": [zarr.codecs.ZstdCodec(checksum=True), zarr.codecs.Crc32cCodec()],
            "gzip": [zarr.codecs.GzipCodec()],
            "blosc": [zarr.codecs.BloscCodec()],
            "numcodecs.zstd": [zn.Zstd(level=1)],
            "numcodecs.gzip": [zn.GZip()],
            "numcodecs.zlib": [zn.Zlib()],
            "numcodecs.blosc": [zn.Blosc()],
            "numcodecs.lz4": [zn.LZ4()],
            "numcodecs.bz2": [zn.BZ2()],
            "numcodecs.lzma": [zn.LZMA()],
            "gzip of zstd": [zarr.codecs.ZstdCodec(), zarr.codecs.GzipCodec()],
        }


COMPRESSORS = list(_compressors())


def _array(path: Path, compressors: list[Any], data: np.ndarray, chunks: tuple[int, ...]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zarr.create_array(path, name="e", shape=data.shape, dtype=data.dtype, chunks=chunks,
                          compressors=compressors or None, fill_value=0)[...] = data


def _read(location: str | Path, **remote: Any) -> np.ndarray | ArrayReadError | None:
    """The array `e` through the batch reader: the array, or why it could not be read."""
    opened = open_store(location, remote=RemoteOptions(**remote)) if remote else open_store(location)
    reader = ArrayBatchReader(Hierarchy(opened))
    return reader.read_each(["e"])[0]


@pytest.mark.parametrize("name", COMPRESSORS)
@pytest.mark.parametrize("shape", [(3,), (256, 64)], ids=["a few bytes", "64 KiB"])
def test_incompressible_chunks_of_every_codec_still_read(tmp_path: Path, name: str, shape: tuple[int, ...]) -> None:
    data = np.random.default_rng(7).integers(0, 1 << 32, shape, dtype="uint32")  # random bits: each codec's worst case
    _array(tmp_path / "s.zarr", _compressors()[name], data, shape)
    found = _read(tmp_path / "s.zarr")
    assert isinstance(found, np.ndarray), found
    np.testing.assert_array_equal(found, data)
    # and through zarr-python, with the bound the Hierarchy gives the store
    np.testing.assert_array_equal(Hierarchy(open_store(tmp_path / "s.zarr")).read_array("e"), data)


@pytest.mark.parametrize("codec", [None, "zstd", "gzip", "zlib", "blosc", "lz4", "bz2", "lzma"])
def test_incompressible_zarr_v2_chunks_still_read(tmp_path: Path, codec: str | None) -> None:
    data = np.random.default_rng(8).integers(0, 1 << 32, (256, 64), dtype="uint32")
    zarr.create_array(tmp_path / "s.zarr", name="e", shape=data.shape, dtype=data.dtype, chunks=(100, 64),
                      zarr_format=2, compressors=None if codec is None else numcodecs.get_codec({"id": codec}),
                      fill_value=0)[...] = data
    np.testing.assert_array_equal(Hierarchy(open_store(tmp_path / "s.zarr")).read_array("e"), data)


def _grown(tmp_path: Path, name: str) -> Path:
    """A store whose one chunk of `e` (25,600 bytes decoded) grew to GROWN bytes of zeros after its start."""
    store = tmp_path / "s.zarr"
    _array(store, _compressors()[name], np.ones(SHAPE, "float32"), SHAPE)
    with open(store / "e/c/0/0", "r+b") as chunk:
        chunk.truncate(GROWN)
    return store


def _refused_within(read: Any, limit: int) -> str:
    """What the read refused, checking the Python memory it took at its peak stayed under limit."""
    tracemalloc.start()
    try:
        found = read()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(found, ArrayReadError), found
    assert peak < limit, peak
    return str(found)


@pytest.mark.parametrize("name", ["zstd", "gzip", "numcodecs.lz4", "numcodecs.lzma", "gzip of zstd"])
def test_a_grown_chunk_is_refused_by_its_size_before_it_is_read(tmp_path: Path, name: str) -> None:
    store = _grown(tmp_path, name)
    said = _refused_within(lambda: _read(store), 4 << 20)
    assert said == "e/c/0/0: 67,108,864 bytes stored for a chunk that decodes to 25,600 bytes; could not be read"


@pytest.mark.parametrize("size", [25_599, 25_601, GROWN])
def test_an_uncompressed_chunk_of_another_size_than_its_own_is_damage(tmp_path: Path, size: int) -> None:
    store = _grown(tmp_path, "bytes alone")
    with open(store / "e/c/0/0", "r+b") as chunk:
        chunk.truncate(size)
    said = _refused_within(lambda: _read(store), 4 << 20)
    assert said == f"e/c/0/0: {size:,} bytes stored for an uncompressed chunk of 25,600 bytes; could not be read"


def test_a_grown_zip_member_is_refused_by_its_declared_size(tmp_path: Path) -> None:
    store = _grown(tmp_path, "zstd")
    archive = tmp_path / "s.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for file in sorted(p for p in store.rglob("*") if p.is_file()):
            zf.write(file, file.relative_to(store).as_posix())
    assert archive.stat().st_size < GROWN // 100  # the zeros deflate: only decompressing would take GROWN
    said = _refused_within(lambda: _read(archive), 4 << 20)
    assert said == "e/c/0/0: 67,108,864 bytes stored for a chunk that decodes to 25,600 bytes; could not be read"


def test_a_grown_http_object_is_refused_by_its_length_before_its_body(tmp_path: Path) -> None:
    pytest.importorskip("obstore", reason="obstore is part of the remote extra")
    store = _grown(tmp_path, "zstd")
    # the chunk's body comes at a byte a second: only a refusal from its Content-Length answers
    with remote_fixtures.serve_hostile(tmp_path, "trickle", lambda path: path.endswith("e/c/0/0")) as (url, _):
        found = _read(f"{url}/{store.name}", timeout_s=10.0)
    assert isinstance(found, ArrayReadError), found
    assert str(found) == ("e/c/0/0: 67,108,864 bytes stored for a chunk that decodes to 25,600 bytes; "
                          "could not be read")


@pytest.mark.parametrize("kind", ["v3 subset", "v2", "v3 at the store's root"])
def test_zarr_pythons_own_reads_refuse_a_grown_chunk_by_its_size(tmp_path: Path, kind: str) -> None:
    """Arrays zarr-python reads itself (a subset preview, a Zarr v2 array): the Hierarchy gives the
    store each array's bound, and the chunk is refused from its size before it is read."""
    from ecpfs_viewer.model.zarrtree.subset import SelectionError, read_subset

    store = tmp_path / "s.zarr"
    if kind == "v2":
        zarr.create_array(store, name="e", shape=SHAPE, dtype="float32", chunks=SHAPE, zarr_format=2,
                          compressors=numcodecs.Zstd(), fill_value=0)[...] = 1
        chunk, key = store / "e" / "0.0", "e/0.0"
    else:
        at_root = kind == "v3 at the store's root"
        zarr.create_array(store, name=None if at_root else "e", shape=SHAPE, dtype="float32", chunks=SHAPE,
                          fill_value=0)[...] = 1
        chunk, key = (store / "c/0/0", "c/0/0") if at_root else (store / "e/c/0/0", "e/c/0/0")
    with open(chunk, "r+b") as grown:
        grown.truncate(GROWN)
    h = Hierarchy(open_store(store))
    path = "" if kind == "v3 at the store's root" else "e"
    with pytest.raises(SelectionError) as refused:
        read_subset(h, path, "0:10, :")
    assert f"{key}: 67,108,864 bytes stored for a chunk that decodes to 25,600 bytes; could not be read" in str(
        refused.value), refused.value
    # what this store read, not tracemalloc's peak, which counts every thread of the test worker: a
    # fresh-clone run once saw a 64 MB peak with this very refusal, which only a read of 64 KiB makes
    read = h.store.stats().bytes_read
    assert read < 1 << 20, read  # refused from its size: the chunk's body was never read
