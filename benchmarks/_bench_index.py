"""The benchmark index (200,000 x 64 float32, levels 3, target_cluster_items 50), built once and cached.

Shared by the read and GUI-stall benchmarks. It is built with the project's own builder
(`ecpfs_viewer.model.build.builder.build_index`) into benchmarks/.cache/ (git-ignored) and reused while
its stamp file matches the parameters below.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROWS = 200_000
DIM = 64
LEVELS = 3
TARGET_CLUSTER_ITEMS = 50
SEED = 20250601
CACHE = Path(__file__).resolve().parent / ".cache"
_STAMP = {"rows": ROWS, "dim": DIM, "levels": LEVELS, "target_cluster_items": TARGET_CLUSTER_ITEMS, "seed": SEED}


def _vectors() -> np.ndarray:
    """Clustered float32 vectors (so the tree is not degenerate), reproducible from SEED."""
    rng = np.random.default_rng(SEED)
    centres = rng.normal(0, 10, size=(512, DIM)).astype(np.float32)
    labels = rng.integers(0, len(centres), size=ROWS)
    return centres[labels] + rng.normal(0, 1, size=(ROWS, DIM)).astype(np.float32)


def bench_index_path(progress: bool = True) -> Path:
    """The path of the cached benchmark index, building it on first use (about a minute)."""
    index = CACHE / "bench_200k_64_l3_t50.zarr"
    stamp = CACHE / "bench_200k_64_l3_t50.json"
    if index.is_dir() and stamp.is_file() and json.loads(stamp.read_text()) == _STAMP:
        return index
    from ecpfs_viewer.model.build.builder import BuildParams, build_index

    CACHE.mkdir(parents=True, exist_ok=True)
    source = CACHE / "bench_200k_64.npy"
    np.save(source, _vectors())
    if progress:
        print(f"building the benchmark index into {index} ...", file=sys.stderr, flush=True)
    params = BuildParams(levels=LEVELS, target_cluster_items=TARGET_CLUSTER_ITEMS, metric="L2")
    result = build_index(source, index, params, overwrite=True)
    if progress:
        print(f"built in {result.seconds:.1f} s: nodes per level {result.nodes_per_level}", file=sys.stderr)
    source.unlink()
    stamp.write_text(json.dumps(_STAMP))
    return index


if __name__ == "__main__":
    print(bench_index_path())
