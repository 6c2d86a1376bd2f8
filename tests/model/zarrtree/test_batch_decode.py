"""The batch reader decodes whole arrays exactly as zarr-python reads them, whatever the codecs.

The common chains (bytes + zstd / gzip / blosc) are decoded with numcodecs, others by zarr through
an in-memory array of the same layout; both must give zarr's own values, fill for missing chunks,
and a message naming the chunk for a damaged one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zarr
from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, TransposeCodec, ZstdCodec

from ecpfs_viewer.model.limits import Limits, set_limits
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.array_batch import ArrayBatchReader, read_whole_arrays
from ecpfs_viewer.model.zarrtree.hierarchy import ArrayReadError, Hierarchy

RNG = np.random.default_rng(7)

# name -> (data, chunks, serializer, compressors, filters)
CASES = {
    "zstd_f32_edge": (RNG.normal(size=(37, 5)).astype("float32"), (8, 5), BytesCodec(), [ZstdCodec(level=3)], []),
    "zstd_checksum": (RNG.integers(0, 9, size=20).astype("uint32"), (6,), BytesCodec(),
                      [ZstdCodec(level=1, checksum=True)], []),
    "gzip_big_endian_i16": (RNG.integers(-500, 500, size=(9, 4)).astype("int16"), (4, 4),
                            BytesCodec(endian="big"), [GzipCodec(level=4)], []),
    "blosc_u8": (RNG.integers(0, 255, size=50).astype("uint8"), (16,), BytesCodec(), [BloscCodec()], []),
    "plain_f64": (RNG.normal(size=(3, 3)), (2, 2), BytesCodec(), [], []),
    "bool": (RNG.integers(0, 2, size=11).astype(bool), (4,), BytesCodec(), [ZstdCodec()], []),
    "crc32c_zstd": (RNG.normal(size=12).astype("float32"), (5,), BytesCodec(), [ZstdCodec(), Crc32cCodec()], []),
    "transpose": (RNG.normal(size=(6, 4)).astype("float32"), (3, 4), BytesCodec(), [ZstdCodec()],
                  [TransposeCodec(order=(1, 0))]),
}


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    root = zarr.open_group(tmp_path / "s.zarr", mode="w", zarr_format=3)
    for name, (data, chunks, serializer, compressors, filters) in CASES.items():
        array = root.create_array(name, shape=data.shape, dtype=data.dtype, chunks=chunks, serializer=serializer,
                                  compressors=compressors, filters=filters, fill_value=0)
        array[...] = data
    return tmp_path / "s.zarr"


def test_every_chain_reads_as_zarr_reads_it(store_dir: Path) -> None:
    reader = ArrayBatchReader(Hierarchy(open_store(store_dir)))
    names = list(CASES)
    found = reader.read(names)
    for name, values in zip(names, found, strict=True):
        expected = zarr.open_array(store_dir / name, mode="r")[...]
        assert values is not None and values.dtype == expected.dtype, name
        np.testing.assert_array_equal(values, expected, err_msg=name)
        np.testing.assert_array_equal(values, CASES[name][0], err_msg=name)


def test_missing_chunks_read_as_fill_and_a_damaged_one_is_named(store_dir: Path) -> None:
    (store_dir / "zstd_f32_edge/c/1/0").unlink()
    (store_dir / "transpose/c/1/0").unlink()
    reader = ArrayBatchReader(Hierarchy(open_store(store_dir)))
    edge, transposed = reader.read(["zstd_f32_edge", "transpose"])
    assert edge is not None and transposed is not None
    assert (edge[8:16] == 0).all() and np.array_equal(edge[16:], CASES["zstd_f32_edge"][0][16:])
    assert (transposed[3:] == 0).all() and np.array_equal(transposed[:3], CASES["transpose"][0][:3])
    for name, key in (("gzip_big_endian_i16", "c/0/0"), ("crc32c_zstd", "c/0")):
        (store_dir / name / key).write_bytes(b"junk")
        with pytest.raises(ArrayReadError, match=f"{name}/{key} \\(or a chunk read with it\\): "
                                                 "(the \\w+ chunk )?cannot (be )?decode"):
            ArrayBatchReader(Hierarchy(open_store(store_dir))).read([name])


def test_in_place_a_damaged_chunk_fails_only_its_own_array(store_dir: Path) -> None:
    root = zarr.open_group(store_dir, mode="r+")
    data = RNG.normal(size=(6, 4)).astype("float32")
    for name in ("side_a", "side_b"):  # one layout the batch decodes side by side, in one call
        array = root.create_array(name, shape=data.shape, dtype=data.dtype, chunks=(3, 4), compressors=[ZstdCodec()],
                                  filters=[TransposeCodec(order=(1, 0))], fill_value=0)
        array[...] = data
    (store_dir / "side_a/c/1/0").write_bytes(b"junk")
    h = Hierarchy(open_store(store_dir))
    broken, whole, missing = read_whole_arrays(h, ["side_a", "side_b", "no_such_array"])
    assert isinstance(broken, ArrayReadError) and "side_a/c/1/0: the zstd chunk cannot be decoded" in str(broken)
    assert isinstance(whole, np.ndarray)
    np.testing.assert_array_equal(whole, data)
    assert isinstance(missing, ArrayReadError) and "no_such_array" in str(missing)
    assert h.held("side_b") is not None  # the documents read stay in the Hierarchy
    fresh = ArrayBatchReader(Hierarchy(open_store(store_dir)))
    assert fresh.read_each(["no_such_array", "side_a"])[0] is None  # nothing stored: no failure
    with pytest.raises(ArrayReadError,
                       match=r"side_[ab]/c/[01]/0 \(or a chunk read with it\): the zstd chunk cannot be decoded"):
        fresh.read(["side_b", "side_a"])


def test_arrays_of_one_document_are_each_their_own_and_checked_again_when_the_caps_change(store_dir: Path) -> None:
    root = zarr.open_group(store_dir, mode="r+")
    data = RNG.integers(0, 1000, size=40).astype("uint32")
    for name in ("twin_a", "twin_b", "twin_c"):  # one document; one chunk larger than the array
        root.create_array(name, shape=data.shape, dtype=data.dtype, chunks=(64,), compressors=[ZstdCodec()],
                          fill_value=7)[...] = data
    (store_dir / "twin_c/c/0").unlink()
    reader = ArrayBatchReader(Hierarchy(open_store(store_dir)))
    a, b, c = reader.read(["twin_a", "twin_b", "twin_c"])
    assert a is not None and b is not None and c is not None
    a[0] += 1  # writable, and shared with nothing
    np.testing.assert_array_equal(b, data)
    assert c.tolist() == [7] * 40 and c.flags.writeable
    set_limits(Limits(max_decoded_read_bytes=100))  # 40 values and a 64-value chunk need more
    try:
        refused = reader.read_each(["twin_a", "twin_b"])
    finally:
        set_limits(None)
    for name, found in zip(("twin_a", "twin_b"), refused, strict=True):
        assert isinstance(found, ArrayReadError) and str(found).startswith(f"{name}: the read needs about")
    np.testing.assert_array_equal(reader.read(["twin_b"])[0], data)  # the default caps again
