"""Drift simulation on a realistic input: the figures behind docs/drift.md's default thresholds (never pass/fail).

    .venv-newest/bin/python benchmarks/bench_drift.py                      # 50,000 x 32, both arrival orders
    .venv-newest/bin/python benchmarks/bench_drift.py --rows 5000 --dim 16 --order iid

The rows are clustered (512 centres, as bench_tune.py makes them). Two arrival orders:
``iid`` — rows arrive in random order, so the first N % look like the rest; ``shift`` — half the
clusters exist from the start and the other half appear at a uniformly random time, so later rows
come more and more from clusters the first build never saw (``sorted``, run alone: the clusters
arrive one after another, the extreme of it). For each order and each built share
(20, 40, 60, 80, 100 %) the rest is added with add_rows and the drift report compares the grown
index with a build of all rows (model/drift/simulate.py, what `ecpfs-viewer drift-sim` runs).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ecpfs_viewer.cli.drift import print_simulation
from ecpfs_viewer.model.build.builder import BuildParams
from ecpfs_viewer.model.drift.report import DriftSettings
from ecpfs_viewer.model.drift.simulate import simulate_drift


def arrivals(rows: int, dim: int, order: str, seed: int = 20250601, centres: int = 512) -> np.ndarray:
    """Clustered float32 rows in the order they arrive (see the module's docstring)."""
    rng = np.random.default_rng(seed)
    c = rng.normal(0, 10, size=(centres, dim)).astype(np.float32)
    label = rng.integers(0, centres, size=rows)
    data = c[label] + rng.normal(0, 1, size=(rows, dim)).astype(np.float32)
    if order == "iid":
        return data
    if order == "sorted":  # the clusters arrive one after another: the first build sees only the first ones
        sorted_rows: np.ndarray = data[np.argsort(label, kind="stable")]
        return sorted_rows
    birth = np.where(rng.random(centres) < 0.5, 0.0, rng.random(centres))  # half the clusters are new
    at = birth[label] + (1 - birth[label]) * rng.random(rows)
    out: np.ndarray = data[np.argsort(at, kind="stable")]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--levels", type=int, default=3)
    ap.add_argument("--target", type=int, default=100)
    ap.add_argument("--search-exp", type=int, default=4)
    ap.add_argument("--sample", type=int, default=500)
    ap.add_argument("--order", choices=("iid", "shift", "sorted", "both"), default="both")
    ap.add_argument("--json", metavar="OUT", help="write every point's figures to OUT")
    args = ap.parse_args(argv)
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for order in ("iid", "shift") if args.order == "both" else (args.order,):
            src = Path(folder) / f"{order}.npy"
            np.save(src, arrivals(args.rows, args.dim, order))
            t = time.perf_counter()
            sim = simulate_drift(src, BuildParams(levels=args.levels, target_cluster_items=args.target),
                                 settings=DriftSettings(search_exp=args.search_exp, sample=args.sample))
            print(f"\n== arrival order {order}: {time.perf_counter() - t:.0f} s, load {os.getloadavg()[0]:.1f}")
            print_simulation(sim)
            results[order] = sim.to_dict()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
