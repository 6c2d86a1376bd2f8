"""Inputs for tune tests whose better setting is known by construction."""

from __future__ import annotations

from pathlib import Path

import numpy as np

CLUSTER = 50


def cluster_rows(folder: Path, clusters: int = 40, dim: int = 16, seed: int = 3) -> tuple[Path, Path]:
    """Tight clusters of exactly CLUSTER rows stored one after another, and a query file near their centres.

    Offset selection with target CLUSTER then takes one row of each cluster as representative, so
    every leaf is one whole cluster: one leaf holds a query's 10 neighbours at the least cost. A
    larger target puts several clusters in a leaf, which finds them too but scores many more items.
    """
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim)) * 100
    data = (np.repeat(centres, CLUSTER, axis=0) + rng.standard_normal((clusters * CLUSTER, dim))).astype(np.float32)
    queries = (centres + 0.5 * rng.standard_normal((clusters, dim))).astype(np.float32)
    np.save(folder / "rows.npy", data)
    np.save(folder / "queries.npy", queries)
    return folder / "rows.npy", folder / "queries.npy"
