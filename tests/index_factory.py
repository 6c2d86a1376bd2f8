"""Indexes for tests: small ones built for tests that need more than the two_clusters fixture, and the
one way a test opens a Hierarchy on a path."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def build_clustered_index(folder: Path, items: int, dim: int, clusters: int = 12, seed: int = 5, *,
                          levels: int = 2, target_cluster_items: int = 25) -> Path:
    """Build an index (2 levels by default) of `items` float32 vectors drawn around `clusters` centres; its path."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)) * 4
    data = (centres[rng.integers(0, clusters, items)] + rng.standard_normal((items, dim))).astype(np.float32)
    np.save(folder / "data.npy", data)
    params = BuildParams(levels=levels, target_cluster_items=target_cluster_items)
    build_index(folder / "data.npy", folder / "idx.zarr", params)
    return folder / "idx.zarr"


def build_two_clusters(folder: Path, items: int, dim: int, seed: int = 3, *, levels: int = 2,
                       target_cluster_items: int = 20) -> tuple[Path, np.ndarray, np.ndarray]:
    """An index of two clusters 40 apart along a random direction (the embedding map's tests: they
    must land apart): (index path, the float32 vectors, the cluster of each item id)."""
    rng = np.random.default_rng(seed)
    direction = rng.standard_normal(dim)
    direction /= np.linalg.norm(direction)
    side = rng.integers(0, 2, items)
    shift = np.where(side[:, None] == 1, 20.0, -20.0) * direction
    data = (rng.standard_normal((items, dim)) + shift).astype(np.float32)
    np.save(folder / "data.npy", data)
    params = BuildParams(levels=levels, target_cluster_items=target_cluster_items)
    build_index(folder / "data.npy", folder / "idx.zarr", params)
    return folder / "idx.zarr", data, side


def hierarchy(path: Path) -> Hierarchy:
    """A fresh Hierarchy (no cached listing or document) on the store at path."""
    return Hierarchy(open_store(path))
