"""The guarded decode: every codec that can grow its input decodes a chunk with a bound worked out
before decoding, refuses past it naming the codec and the size, and reads good chunks as zarr-python
(numcodecs) reads them.

zstd chunks that are one frame declaring its size (what zarr writes) take the kept context's
one-shot path; several frames and frames without a declared size are read by a bounded stream.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import struct
import threading
import tracemalloc
import warnings
import zlib
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import zarr
import zstandard
from zarr.codecs import ZstdCodec

from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.array_batch import ArrayBatchReader
from ecpfs_viewer.model.zarrtree.guarded_decode import ChunkDecoder, DecodeRefused, decode_bounded
from ecpfs_viewer.model.zarrtree.hierarchy import ArrayReadError, Hierarchy

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
    assert decode_bounded("zstd", chunk, DATA.nbytes) == DATA.tobytes()
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
    assert decode_bounded("zstd", chunk, DATA.nbytes) == DATA.tobytes()
    reader = ArrayBatchReader(Hierarchy(open_store(path)))
    expected = zarr.open_array(path / "ids", mode="r")[...]  # zarr's registry holds the guarded codec
    np.testing.assert_array_equal(expected, DATA)
    found = reader.read(["ids"])[0]
    assert found is not None
    np.testing.assert_array_equal(found, expected)


@pytest.mark.parametrize("tail", [b"\x00", b"junk"])
def test_a_frame_with_bytes_after_it_fails_naming_the_chunk(tmp_path: Path, tail: bytes) -> None:
    path = _store(tmp_path)
    chunk = (path / "ids/c/0").read_bytes() + tail
    (path / "ids/c/0").write_bytes(chunk)
    with pytest.raises(Exception):  # noqa: B017  # numcodecs fails it too, with its own type
        numcodecs.Zstd().decode(chunk)
    with pytest.raises(ArrayReadError, match=r"ids/c/0\b.*: the zstd chunk cannot be decoded"):
        ArrayBatchReader(Hierarchy(open_store(path))).read(["ids"])


def test_a_frame_followed_by_a_grown_tail_is_refused_without_copying_the_tail() -> None:
    """zarr-python hands the codec a chunk already read (bounded by the per-object cap only): the
    decode refuses a frame followed by a huge tail without a second copy of the tail."""
    chunk = numcodecs.Zstd().encode(DATA.tobytes()) + bytes(32 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(DecodeRefused, match="the zstd chunk cannot be decoded"):
            decode_bounded("zstd", chunk, DATA.nbytes)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak


def test_threads_decode_at_once_each_with_its_own_context() -> None:
    chunks = [(np.full(200 + i, i, "uint32").tobytes(), numcodecs.Zstd(level=1).encode(np.full(200 + i, i, "uint32")))
              for i in range(64)]
    codec = ChunkDecoder("zstd", {}, 1 << 20)
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
    tracemalloc.start()
    try:
        with pytest.raises(DecodeRefused, match="the zstd chunk cannot be decoded"):
            decode_bounded("zstd", lying, 8192)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def _declaring(nbytes: int) -> bytes:
    """One zstd frame that declares and holds nbytes (of ones): a few KiB stored."""
    return zstandard.ZstdCompressor(write_content_size=True).compress(b"\1" * nbytes)


def test_a_frame_declaring_more_than_the_chunk_is_refused_before_it_is_decoded() -> None:
    frame = _declaring(32 << 20)
    assert ChunkDecoder("zstd", {}, 32 << 20).decode(frame) == b"\1" * (32 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(DecodeRefused, match=r"frame declares 33,554,432 decoded bytes, more than its 1,200; "
                                                 "not decoded"):
            ChunkDecoder("zstd", {}, 1200).decode(frame)
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
                           match=rf"ids/c/0\b.*: the zstd chunk.s frame declares 67,108,864 decoded bytes, "
                                 rf"more than its {rows * 4:,}; not decoded"):
            reader.read(["ids"])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


# every codec that can grow its input: a bomb of BOMB decoded bytes is refused at the chunk's size

BOMB = 64 << 20
CHUNK = 25_600  # a leaf's embeddings chunk: 100 x 64 float32


def _blosc_bomb() -> bytes:
    return bytes(numcodecs.Blosc(cname="zstd", clevel=9).encode(np.zeros(BOMB, np.uint8)))


BOMBS = {
    "zstd declaring its size": ("zstd", lambda: zstandard.ZstdCompressor(write_content_size=True).compress(
        bytes(BOMB))),
    "zstd without a declared size": ("zstd", lambda: zstandard.ZstdCompressor(write_content_size=False).compress(
        bytes(BOMB))),
    "zstd of two frames": ("zstd", lambda: numcodecs.Zstd().encode(bytes(CHUNK)) + numcodecs.Zstd().encode(
        bytes(BOMB))),
    "gzip": ("gzip", lambda: gzip.compress(bytes(BOMB), compresslevel=9)),
    "gzip of two members": ("gzip", lambda: gzip.compress(bytes(CHUNK)) + gzip.compress(bytes(BOMB))),
    "zlib": ("zlib", lambda: zlib.compress(bytes(BOMB), 9)),
    "blosc": ("blosc", _blosc_bomb),
    "lz4": ("lz4", lambda: bytes(numcodecs.LZ4().encode(bytes(BOMB)))),
    "bz2": ("bz2", lambda: bz2.compress(bytes(16 << 20))),
    "lzma": ("lzma", lambda: lzma.compress(bytes(16 << 20))),
}


@pytest.mark.parametrize("kind", list(BOMBS))
def test_each_codec_refuses_a_bomb_before_decoding_past_the_chunk(kind: str) -> None:
    codec, make = BOMBS[kind]
    bomb = make()
    tracemalloc.start()
    try:
        with pytest.raises(DecodeRefused, match=rf"^the {codec} chunk.* more than its 25,600( bytes)?; not decoded$"):
            decode_bounded(codec, bomb, CHUNK)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 12 << 20  # the stored bytes, a decoder's state (lzma's 8 MiB dictionary), never the bomb


@pytest.mark.parametrize("codec", ["zstd", "gzip", "zlib", "blosc", "lz4", "bz2", "lzma"])
def test_each_codec_reads_a_good_chunk_as_numcodecs_does(codec: str) -> None:
    raw = DATA.tobytes()
    stored = numcodecs.get_codec({"id": codec}).encode(raw)
    assert bytes(decode_bounded(codec, stored, len(raw))) == raw
    assert bytes(ChunkDecoder(codec, {}, len(raw)).decode(stored, out=np.empty(len(raw), np.uint8))) == raw


def test_a_blosc_header_whose_stored_size_lies_is_refused_before_decoding() -> None:
    stored = bytearray(numcodecs.Blosc().encode(DATA.tobytes()))
    struct.pack_into("<I", stored, 12, len(stored) + 100)
    with pytest.raises(DecodeRefused, match=r"header says [\d,]+ stored bytes, [\d,]+ are stored; not decoded"):
        decode_bounded("blosc", bytes(stored), DATA.nbytes)


def test_a_stream_that_ends_early_is_refused_not_read_short() -> None:
    stored = gzip.compress(DATA.tobytes())[:-40]
    with pytest.raises(DecodeRefused, match="the gzip chunk ends before its stream does"):
        decode_bounded("gzip", stored, DATA.nbytes)


@pytest.mark.parametrize("kind", ["zstd without a declared size", "gzip", "blosc"])
def test_the_batch_reader_refuses_a_bomb_naming_the_chunk(tmp_path: Path, kind: str) -> None:
    codec, make = BOMBS[kind]
    path = tmp_path / "s.zarr"
    root = zarr.open_group(path, mode="w", zarr_format=3)
    compressor = {"zstd": ZstdCodec(), "gzip": zarr.codecs.GzipCodec(), "blosc": zarr.codecs.BloscCodec()}[codec]
    root.create_array("e", shape=(100, 64), dtype="float32", chunks=(100, 64), compressors=[compressor])[...] = 1
    # a bomb of no more bytes than the chunk may be stored as: past that it is refused unread
    # (test_stored_bound.py), and the decode is what is tested here
    (path / "e/c/0/0").write_bytes(gzip.compress(bytes(16 << 20), compresslevel=9) if codec == "gzip" else make())
    reader = ArrayBatchReader(Hierarchy(open_store(path)))
    tracemalloc.start()
    try:
        found = reader.read_each(["e"])[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(found, ArrayReadError)
    assert str(found).startswith(f"e/c/0/0: the {codec} chunk"), found
    assert "25,600" in str(found)
    assert peak < 8 << 20


def _zarr_bomb_store(tmp_path: Path, kind: str) -> Path:
    """Arrays zarr-python decodes itself (not the batch path), each with a zstd bomb for a chunk."""
    bomb = BOMBS["zstd without a declared size"][1]()
    path = tmp_path / f"{kind}.zarr"
    if kind == "v2":
        array = zarr.create_array(path, shape=(100, 64), dtype="float32", chunks=(100, 64), zarr_format=2,
                                  compressors=numcodecs.Zstd())
        array[...] = 1
        (path / "0.0").write_bytes(bomb)
    elif kind == "numcodecs.zstd":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numcodecs codecs "are not in the Zarr version 3 specification"
            codec = zarr.codecs.numcodecs.Zstd(level=1)
            array = zarr.create_array(path, shape=(100, 64), dtype="float32", chunks=(100, 64), compressors=[codec])
        array[...] = 1
        (path / "c/0/0").write_bytes(bomb)
    else:  # a shard of four inner zstd chunks
        array = zarr.create_array(path, shape=(100, 64), dtype="float32", chunks=(50, 64), shards=(100, 64),
                                  compressors=[ZstdCodec()])
        array[...] = 1
        stored = (path / "c/0/0").read_bytes()
        index = np.frombuffer(stored[-(2 * 16 + 4):-4], "<u8").reshape(2, 2)
        body = bomb + stored[int(index[0, 0]) + int(index[0, 1]):-(2 * 16 + 4)]
        shifted = index.copy()
        shifted[0] = (0, len(bomb))
        shifted[1, 0] = len(bomb) + int(index[1, 0]) - (int(index[0, 0]) + int(index[0, 1]))
        table = shifted.astype("<u8").tobytes()
        (path / "c/0/0").write_bytes(body + table + struct.pack("<I", _crc32c(table)))
    return path


def _crc32c(data: bytes) -> int:
    import google_crc32c

    return int(google_crc32c.value(data))


@pytest.mark.parametrize("kind", ["v2", "numcodecs.zstd", "sharded"])
def test_zarr_python_decodes_through_the_guarded_decode(tmp_path: Path, kind: str) -> None:
    path = _zarr_bomb_store(tmp_path, kind)
    h = Hierarchy(open_store(path))
    tracemalloc.start()
    try:
        with pytest.raises(ArrayReadError, match=r"the zstd chunk decodes to more than its [\d,]+ bytes; not decoded"):
            h.read_array("")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def _large_store(tmp_path: Path, rows: int) -> tuple[Path, np.ndarray]:
    """An array of 300 rows of 64 float32 in one chunk of `rows` rows (past 64 KiB: decoded with the
    batch reader's scratch buffer, as a 10M index's leaf embeddings are)."""
    data = np.random.default_rng(4).normal(size=(300, 64)).astype(np.float32)
    path = tmp_path / "l.zarr"
    root = zarr.open_group(path, mode="w", zarr_format=3)
    root.create_array("e", shape=data.shape, dtype=data.dtype, chunks=(rows, 64), compressors=[ZstdCodec(level=3)],
                      fill_value=0)[...] = data
    return path, data


@pytest.mark.parametrize("rows", [300, 2048])
def test_a_large_chunk_decodes_as_zarr_reads_it(tmp_path: Path, rows: int) -> None:
    path, data = _large_store(tmp_path, rows)
    found = ArrayBatchReader(Hierarchy(open_store(path))).read(["e"])[0]
    assert found is not None and found.flags.writeable
    np.testing.assert_array_equal(found, zarr.open_array(path / "e", mode="r")[...])
    np.testing.assert_array_equal(found, data)
    chunk = (path / "e/c/0/0").read_bytes()
    size = rows * 64 * 4
    assert bytes(ChunkDecoder("zstd", {}, size).decode(chunk, out=bytearray(size)))[:data.nbytes] == data.tobytes()


@pytest.mark.parametrize("tail", [b"\x00", b"junk", "a second frame"])
def test_a_large_frame_with_bytes_after_it_fails_naming_the_chunk(tmp_path: Path, tail: bytes | str) -> None:
    """The one-shot decode of a large chunk refuses what follows its frame, as the stream does."""
    path, _ = _large_store(tmp_path, 2048)
    chunk = (path / "e/c/0/0").read_bytes()
    extra = numcodecs.Zstd().encode(b"\x00" * 8) if tail == "a second frame" else tail
    (path / "e/c/0/0").write_bytes(chunk + extra)  # type: ignore[operator]
    with pytest.raises(ArrayReadError, match=r"e/c/0/0\b.*: the zstd chunk"):
        ArrayBatchReader(Hierarchy(open_store(path))).read(["e"])
