"""The one guarded .npy open (issue 34): a header that lies is one sentence naming the file and the
fault, for build inputs, query files and a tune's input alike."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ecpfs_viewer.model.build.errors import BuildError
from ecpfs_viewer.model.build.sources import inspect_source
from ecpfs_viewer.model.search.explore import load_npy
from ecpfs_viewer.model.search.results import QueryError
from ecpfs_viewer.model.storage.npy_file import NpyFileError, map_npy_file, read_npy_header
from ecpfs_viewer.model.tuning.tune import TuneError, TuneGrid, tune
from tests.npy_headers import write_lying_npy


@pytest.mark.parametrize("shape", [(-1, 64), (-5, 64), (5, -64)])
def test_a_negative_shape_is_named_by_every_opener(tmp_path: Path, shape: tuple[int, int]) -> None:
    path = write_lying_npy(tmp_path / "q.npy", shape)
    sentence = f"{path}: the header declares shape {shape}; a shape cannot be negative"
    with pytest.raises(NpyFileError) as caught:
        map_npy_file(path)
    assert str(caught.value) == sentence
    with pytest.raises(QueryError) as as_query:
        load_npy(str(path))
    assert str(as_query.value) == sentence
    with pytest.raises(BuildError) as as_input:
        inspect_source(path)
    assert str(as_input.value) == sentence
    with pytest.raises(TuneError) as as_tune:
        tune(path, TuneGrid(levels=(1,), target_cluster_items=(4,)))
    assert str(as_tune.value) == sentence


def test_a_header_promising_more_than_the_file_holds(tmp_path: Path) -> None:
    path = write_lying_npy(tmp_path / "big.npy", (1 << 40, 64))
    with pytest.raises(NpyFileError, match=r"big\.npy: file is truncated \(\d+ bytes, the header promises \d+\)"):
        map_npy_file(path)


def test_good_files_map_as_numpy_reads_them(tmp_path: Path) -> None:
    data = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.save(tmp_path / "c.npy", data)
    np.save(tmp_path / "f.npy", np.asfortranarray(data))
    np.save(tmp_path / "e.npy", np.zeros((0, 4), np.float32))
    assert np.array_equal(map_npy_file(tmp_path / "c.npy"), data)
    assert np.array_equal(map_npy_file(tmp_path / "f.npy"), data)
    assert map_npy_file(tmp_path / "e.npy").shape == (0, 4)
    header = read_npy_header(tmp_path / "f.npy")
    assert (header.shape, header.dtype, header.fortran_order) == ((3, 4), np.dtype(np.float32), True)
