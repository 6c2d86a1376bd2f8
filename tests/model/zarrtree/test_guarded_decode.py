"""zstd chunks decode with a kept context, and exactly as zarr-python (numcodecs) reads them.

The kept context serves only a chunk that is one frame declaring its size (what zarr writes);
several frames, no declared size, trailing bytes and damage go to numcodecs, whose result or
error the batch reader then gives (numcodecs 0.14 refuses the first two, as zarr then does).
"""

from __future__ import annotations

import threading
import tracemalloc
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr
import zstandard
from zarr.codecs import ZstdCodec

from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.array_batch import ArrayBatchReader
from ecpfs_viewer.model.zarrtree.hierarchy import ArrayReadError, Hierarchy
from ecpfs_viewer.model.zarrtree.guarded_decode import ZstdChunks, _one_declared_frame

DATA = np.random.default_rng(3).integers(0, 1 << 30, size=300).astype("uint32")


def _store(tmp_path: Path) -> Path:
    """An array of one chunk of 300 uint32 (1,200 bytes: decoded to a new object, not into scratch)."""
    path = tmp_path / "s.zarr"
    root = zarr.open_group(path, mode="w", zarr_format=3)
    root.create_array("ids", shape=DATA.shape, dtype=DATA.dtype, chunks=(300,), compressors=[ZstdCodec(level=3)],
                      fill_value=0)[...] = DATA
    return path


def test_the_chunks_zarr_writes_are_decoded_with_the_kept_context(tmp_path: Path) -> None:
    chunk = (_store(tmp_path) / "ids/c/0").read_bytes()
    assert _one_declared_frame(chunk) == DATA.tobytes()
    found = ArrayBatchReader(Hierarchy(open_store(tmp_path / "s.zarr"))).read(["ids"])[0]
    assert found is not None
    np.testing.assert_array_equal(found, DATA)


@pytest.mark.parametrize("stored", ["two frames", "no declared size"])
def test_other_frames_read_as_zarr_reads_them(tmp_path: Path, stored: str) -> None:
    path = _store(tmp_path)
    raw = DATA.tobytes()
    chunk = (numcodecs.Zstd().encode(raw[:500]) + numcodecs.Zstd().encode(raw[500:]) if stored == "two frames"
             else zstandard.ZstdCompressor(write_content_size=False).compress(raw))
    (path / "ids/c/0").write_bytes(chunk)
    assert _one_declared_frame(chunk) is None  # left to numcodecs
    reader = ArrayBatchReader(Hierarchy(open_store(path)))
    try:  # numcodecs 0.14 reads neither; later releases read both
        expected = zarr.open_array(path / "ids", mode="r")[...]
    except RuntimeError as exc:
        with pytest.raises(ArrayReadError, match="ids/c/0") as failed:
            reader.read(["ids"])
        assert str(exc) in str(failed.value)
        return
    np.testing.assert_array_equal(expected, DATA)
    found = reader.read(["ids"])[0]
    assert found is not None
    np.testing.assert_array_equal(found, expected)


@pytest.mark.parametrize("tail", [b"\x00", b"junk"])
def test_a_frame_with_bytes_after_it_fails_as_numcodecs_fails(tmp_path: Path, tail: bytes) -> None:
    path = _store(tmp_path)
    chunk = (path / "ids/c/0").read_bytes() + tail
    (path / "ids/c/0").write_bytes(chunk)
    assert _one_declared_frame(chunk) is None
    with pytest.raises(Exception) as by_numcodecs:
        numcodecs.Zstd().decode(chunk)
    with pytest.raises(ArrayReadError, match="ids/c/0") as by_reader:
        ArrayBatchReader(Hierarchy(open_store(path))).read(["ids"])
    assert str(by_numcodecs.value) in str(by_reader.value)


def test_threads_decode_at_once_each_with_its_own_context() -> None:
    chunks = [(np.full(200 + i, i, "uint32").tobytes(), numcodecs.Zstd(level=1).encode(np.full(200 + i, i, "uint32")))
              for i in range(64)]
    codec = ZstdChunks()
    wrong: list[int] = []
    start = threading.Barrier(4)

    def decode_all() -> None:
        start.wait()
        for _ in range(20):
            wrong.extend(i for i, (raw, chunk) in enumerate(chunks) if bytes(codec.decode(chunk)) != raw)

    threads = [threading.Thread(target=decode_all) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_a_frame_that_outgrows_the_size_it_declares_is_stopped_at_that_size() -> None:
    """A header that lies (8 KiB declared, 32 MiB of zeros inside) is refused while decoding, not
    after the whole content was made: the numcodecs path then fails it in its fixed buffer."""
    real = zstandard.ZstdCompressor(write_content_size=True).compress(b"\0" * (32 << 20))
    descriptor = real[4]
    single, dict_flag, size_flag = (descriptor >> 5) & 1, descriptor & 3, descriptor >> 6
    start = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag]
    width = (1 if single else 0, 2, 4, 8)[size_flag]
    lying = real[:start] + (8192).to_bytes(width, "little") + real[start + width:]
    assert zstandard.frame_content_size(lying) == 8192
    assert _one_declared_frame(lying) is None
    with pytest.raises(RuntimeError):
        ZstdChunks().decode(lying)


def _declaring(nbytes: int) -> bytes:
    """One zstd frame that declares and holds nbytes (of ones): a few KiB stored."""
    return zstandard.ZstdCompressor(write_content_size=True).compress(b"\1" * nbytes)


def test_a_frame_declaring_more_than_the_chunk_is_refused_before_it_is_decoded() -> None:
    frame = _declaring(32 << 20)
    assert ZstdChunks(decoded_bytes=32 << 20).decode(frame) == b"\1" * (32 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"declares 33,554,432 decoded bytes, expected 1,200; not decoded"):
            ZstdChunks(decoded_bytes=1200).decode(frame)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


@pytest.mark.parametrize("rows", [300, 32_768])  # decoded to a new object; into the scratch buffer first
def test_a_stored_chunk_declaring_far_more_than_its_array_fails_naming_it_without_decoding(
        tmp_path: Path, rows: int) -> None:
    path = tmp_path / "s.zarr"
    root = zarr.open_group(path, mode="w", zarr_format=3)
    root.create_array("ids", shape=(rows,), dtype="uint32", chunks=(rows,), compressors=[ZstdCodec()],
                      fill_value=0)[...] = np.arange(rows, dtype="uint32")
    (path / "ids/c/0").write_bytes(_declaring(64 << 20))
    reader = ArrayBatchReader(Hierarchy(open_store(path)))
    tracemalloc.start()
    try:
        with pytest.raises(ArrayReadError,
                           match=rf"ids/c/0 .*declares 67,108,864 decoded bytes, expected {rows * 4:,}; not decoded"):
            reader.read(["ids"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20
