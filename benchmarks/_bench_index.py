"""The benchmark indexes (200,000, 2,000,000 or 10,000,000 x 64 float32, levels 3, target_cluster_items 50),
built once and cached.

Shared by the read, scale and GUI-stall benchmarks. They are built with the project's own builder
(`ecpfs_viewer.model.build.builder.build_index`) into benchmarks/.cache/ (git-ignored; the
ECPFS_BENCH_CACHE environment variable names another folder, so worktrees can share one 2.5 GB
index) and reused while the stamp file matches the parameters below.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROWS = 200_000
DIM = 64
LEVELS = 3
TARGET_CLUSTER_ITEMS = 50
SEED = 20250601
SCALE_ROWS = 2_000_000
HUGE_ROWS = 10_000_000
CACHE = Path(os.environ.get("ECPFS_BENCH_CACHE") or Path(__file__).resolve().parent / ".cache")


def _stamp(rows: int) -> dict[str, int]:
    return {"rows": rows, "dim": DIM, "levels": LEVELS, "target_cluster_items": TARGET_CLUSTER_ITEMS, "seed": SEED}


def write_vectors(path: Path, rows: int, block: int = 1_000_000) -> None:
    """Clustered float32 vectors (so the tree is not degenerate), reproducible from SEED, written to
    the .npy file path a block of rows at a time: the noise drawn per block is the same stream as one
    draw of all rows (numpy's Generator keeps no state between normal() calls), so 10M rows need no
    5 GB float64 temporary and the 200k and 2M inputs are the ones they always were."""
    rng = np.random.default_rng(SEED)
    centres = rng.normal(0, 10, size=(512, DIM)).astype(np.float32)
    labels = rng.integers(0, len(centres), size=rows)
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, DIM))
    for start in range(0, rows, block):
        stop = min(rows, start + block)
        out[start:stop] = centres[labels[start:stop]] + rng.normal(0, 1, size=(stop - start, DIM)).astype(np.float32)
    out.flush()
    del out


def bench_index_path(progress: bool = True, rows: int = ROWS, in_child: bool = True) -> Path:
    """The path of the cached benchmark index of `rows` items, building it on first use.

    The build runs in a child process unless in_child is false: a benchmark that built a 2 GB index
    in its own process would see that peak in the resident memory of every child it starts after
    (Linux gives a forked child its parent's high-water mark).
    """
    name = f"bench_{rows // 1000}k_64_l3_t50" if rows < 1_000_000 else f"bench_{rows // 1_000_000}m_64_l3_t50"
    index = CACHE / f"{name}.zarr"
    stamp = CACHE / f"{name}.json"
    if index.is_dir() and stamp.is_file() and json.loads(stamp.read_text()) == _stamp(rows):
        return index
    if in_child:
        subprocess.run([sys.executable, __file__, str(rows), *([] if progress else ["--quiet"])],
                       check=True, stdout=subprocess.DEVNULL)
        return index
    from ecpfs_viewer.model.build.builder import BuildParams, build_index

    CACHE.mkdir(parents=True, exist_ok=True)
    source = CACHE / f"{name}.npy"
    write_vectors(source, rows)
    if progress:
        print(f"building the benchmark index into {index} ...", file=sys.stderr, flush=True)
    params = BuildParams(levels=LEVELS, target_cluster_items=TARGET_CLUSTER_ITEMS, metric="L2")
    result = build_index(source, index, params, overwrite=True)
    if progress:
        print(f"built in {result.seconds:.1f} s: nodes per level {result.nodes_per_level}", file=sys.stderr)
    source.unlink()
    stamp.write_text(json.dumps(_stamp(rows)))
    return index


if __name__ == "__main__":
    print(bench_index_path(progress="--quiet" not in sys.argv, in_child=False,
                           rows=int(sys.argv[1]) if len(sys.argv) > 1 else ROWS))
