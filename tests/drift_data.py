"""A tiny index grown from 20 % of its rows to all of them by add_rows, and a fresh build of the same rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.build.insert import add_rows

ROWS = 2000
PARAMS = BuildParams(levels=2, target_cluster_items=20)


def clustered(rows: int = ROWS, dim: int = 8, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((30, dim)) * 5
    return (centres[rng.integers(0, 30, rows)] + rng.standard_normal((rows, dim))).astype(np.float32)


def grown_and_fresh(folder: Path) -> tuple[Path, Path]:
    """(built on the first 20 % then grown to all rows by inserts, built on all rows at once)."""
    data = clustered()
    np.save(folder / "all.npy", data)
    np.save(folder / "first.npy", data[:ROWS // 5])
    build_index(folder / "first.npy", folder / "grown.zarr", PARAMS)
    add_rows(folder / "grown.zarr", data[ROWS // 5:])
    build_index(folder / "all.npy", folder / "fresh.zarr", PARAMS)
    return folder / "grown.zarr", folder / "fresh.zarr"
