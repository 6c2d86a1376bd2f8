"""Input readers: header-only inspection, batched reads, Zarr arrays, no unpickling, narrowing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zarr

from ecpfs_viewer.model.build.builder import BuildError, BuildProblem
from ecpfs_viewer.model.build.sources import (
    EmbeddingSource,
    check_finite,
    inspect_source,
    narrow,
    split_source,
)


def test_inspect_reads_header_only(tmp_path: Path) -> None:
    p = tmp_path / "a.npy"
    np.save(p, np.arange(60, dtype=np.float32).reshape(20, 3))
    info = inspect_source(p)
    assert (info.rows, info.dim, info.dtype.name, info.kind) == (20, 3, "float32", "npy")
    assert info.data_offset in (128, 64)


def test_batches_cover_the_file_in_order(tmp_path: Path) -> None:
    data = np.random.default_rng(0).standard_normal((103, 5)).astype(np.float16)
    p = tmp_path / "b.npy"
    np.save(p, data)
    src = EmbeddingSource(p)
    got = list(src.batches(10))
    assert [s for s, _ in got] == list(range(0, 103, 10))
    np.testing.assert_array_equal(np.concatenate([b for _, b in got]), data)


def test_fortran_order_and_big_endian_inputs(tmp_path: Path) -> None:
    data = np.arange(24, dtype=np.float32).reshape(8, 3)
    pf, pb = tmp_path / "f.npy", tmp_path / "be.npy"
    np.save(pf, np.asfortranarray(data))
    np.save(pb, data.astype(">f4"))
    np.testing.assert_array_equal(EmbeddingSource(pf).read(2, 6), data[2:6])
    be = EmbeddingSource(pb).read(0, 8)
    np.testing.assert_array_equal(narrow(be, "float32"), data)
    assert narrow(be, "float32").dtype == np.dtype("<f4")


def test_object_arrays_are_never_unpickled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "o.npy"
    np.save(p, np.array([[1, 2]], dtype=object), allow_pickle=True)
    import pickle

    def boom(*a, **k):
        raise AssertionError("unpickled!")

    monkeypatch.setattr(pickle, "load", boom)
    monkeypatch.setattr(pickle, "loads", boom)
    with pytest.raises(BuildError, match="object"):
        EmbeddingSource(p)


def test_zarr_store_path_syntax(tmp_path: Path) -> None:
    store = tmp_path / "s.zarr"
    g = zarr.open_group(str(store), mode="w")
    g.create_array("embeddings", data=np.ones((7, 4), np.uint8), chunks=(3, 4))
    g.create_array("deep/other", data=np.zeros((5, 2), np.int8))
    assert split_source(f"{store}#deep/other") == (store, "deep/other")
    a = inspect_source(store)  # default array name "embeddings", as upstream
    assert (a.rows, a.dim, a.dtype.name, a.kind) == (7, 4, "uint8", "zarr")
    b = EmbeddingSource(f"{store}#deep/other")
    assert b.info.dtype.name == "int8" and b.read(1, 4).shape == (3, 2)
    with pytest.raises(BuildError, match="no readable Zarr array"):
        inspect_source(f"{store}#nothing/here")
    with pytest.raises(BuildError, match="store not found") as raised:
        inspect_source(f"{tmp_path / 'none.zarr'}#x")
    assert raised.value.problems == (BuildProblem("input", "store not found", f"{tmp_path / 'none.zarr'}#x"),)


def test_zarr_bad_dtype_and_shape(tmp_path: Path) -> None:
    store = tmp_path / "bad.zarr"
    g = zarr.open_group(str(store), mode="w")
    g.create_array("i64", data=np.ones((4, 2), np.int64))
    g.create_array("flat", data=np.ones(4, np.float32))
    with pytest.raises(BuildError, match="unsupported element type"):
        inspect_source(f"{store}#i64")
    with pytest.raises(BuildError, match="2-D"):
        inspect_source(f"{store}#flat")


def test_check_finite_names_the_absolute_row() -> None:
    batch = np.ones((4, 2), np.float16)
    batch[2, 0] = np.inf
    with pytest.raises(BuildError, match=r"x: row 102 contains infinity") as raised:
        check_finite(batch, 100, "x")
    assert raised.value.problems == (BuildProblem("input", "row 102 contains infinity", "x"),)
    check_finite(np.ones((3, 3), np.uint8), 0, "ints never fail")


def test_narrow_rules() -> None:
    x = np.array([[-1.5, 0.49, 1.5, 70000.0, -70000.0, 255.9, 128.0]], np.float32)
    assert narrow(x, "uint8").tolist() == [[0, 0, 1, 255, 0, 255, 128]]
    assert narrow(x, "int8").tolist() == [[-1, 0, 1, 127, -128, 127, 127]]
    assert narrow(x, "float16").dtype == np.float16
    assert narrow(np.array([[200, 3]], np.uint8), "int8").tolist() == [[127, 3]]
    assert narrow(np.array([[-5, 3]], np.int8), "uint8").tolist() == [[0, 3]]
    assert narrow(np.array([[0.1]], np.float64), "float32").dtype == np.float32
