"""The input's values read for NaN and infinity before a build (issue 37 §12), as the builder words it."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from ecpfs_viewer.model.build.errors import BuildCancelled
from ecpfs_viewer.model.build.value_scan import scan_values


def test_the_first_bad_row_is_named_and_clean_input_passes(tmp_path: Path) -> None:
    data = np.ones((500, 4), np.float32)
    np.save(tmp_path / "ok.npy", data)
    seen = []
    assert scan_values(tmp_path / "ok.npy", progress=seen.append) is None
    assert seen and seen[-1].done == seen[-1].total == 500
    data[123, 1] = np.inf
    data[300, 0] = np.nan
    np.save(tmp_path / "bad.npy", data)
    problem = scan_values(tmp_path / "bad.npy")
    assert problem is not None and problem.field == "input" and problem.message == "row 123 contains infinity"
    missing = scan_values(tmp_path / "none.npy")
    assert missing is not None and missing.field == "input" and "not found" in missing.message


def test_a_scan_stops_when_cancelled(tmp_path: Path) -> None:
    np.save(tmp_path / "ok.npy", np.ones((10, 4), np.float32))
    stop = threading.Event()
    stop.set()
    with pytest.raises(BuildCancelled):
        scan_values(tmp_path / "ok.npy", cancel=stop)
