"""Search's batch reader decodes whole arrays exactly as zarr-python reads them, whatever the codecs.

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

from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.array_batch import ArrayBatchReader
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
        with pytest.raises(ArrayReadError, match=f"{name}/{key} \\(or a chunk read with it\\): cannot decode"):
            ArrayBatchReader(Hierarchy(open_store(store_dir))).read([name])
