"""Tune benchmark: a grid of builds and recall sweeps on one .npy, with the share spent building (never pass/fail).

    .venv-newest/bin/python benchmarks/bench_tune.py                   # 100,000 x 64, levels 1,2,3 x 25,50,100,200
    .venv-newest/bin/python benchmarks/bench_tune.py --rows 5000 --levels 1,2 --targets 50 --holdout 20

Target from issue 23: 3 levels x 4 targets on 100,000 x 64 float32 with 200 held-out queries and
search_exp 1,2,4,8,16 in at most 2 minutes on the 2-core machine. Baseline beside it: the sum of
plain `build_index` times of the same variants on the same rows (what building alone costs).
The machine is shared: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ecpfs_viewer.model.build.builder import build_index
from ecpfs_viewer.model.tuning.tune import TuneGrid, TuneSettings, tune


def clustered(rows: int, dim: int, seed: int = 20250601, centres: int = 512) -> np.ndarray:
    """Clustered float32 vectors as benchmarks/_bench_index.py makes them (so the trees are not degenerate)."""
    rng = np.random.default_rng(seed)
    c = rng.normal(0, 10, size=(centres, dim)).astype(np.float32)
    return c[rng.integers(0, centres, size=rows)] + rng.normal(0, 1, size=(rows, dim)).astype(np.float32)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--levels", default="1,2,3")
    ap.add_argument("--targets", default="25,50,100,200")
    ap.add_argument("--holdout", type=int, default=200)
    ap.add_argument("--search-exp", default="1,2,4,8,16")
    ap.add_argument("--no-baseline", action="store_true", help="skip the plain build_index baseline")
    args = ap.parse_args(argv)
    grid = TuneGrid(levels=_ints(args.levels), target_cluster_items=_ints(args.targets))
    with tempfile.TemporaryDirectory(prefix="bench-tune-") as folder:
        src = Path(folder) / "rows.npy"
        np.save(src, clustered(args.rows, args.dim))
        t = time.perf_counter()
        cpu = time.process_time()
        report = tune(src, grid, TuneSettings(holdout=args.holdout, search_exps=_ints(args.search_exp)))
        total = time.perf_counter() - t
        cpu = time.process_time() - cpu
        print(f"tune {args.rows:,} x {args.dim}, {len(report.variants)} variants, {report.queries} held-out queries, "
              f"search_exp {args.search_exp}: {total:.1f} s (target <= 120 s), {cpu:.1f} s of process CPU; "
              f"load {os.getloadavg()}")
        other = total - report.build_seconds - report.search_seconds - report.exact_seconds
        print(f"  building {report.build_seconds:.1f} s ({report.build_seconds / total:.0%}), searching "
              f"{report.search_seconds:.1f} s ({report.search_seconds / total:.0%}), exact neighbours "
              f"{report.exact_seconds:.2f} s, other {other:.1f} s ({other / total:.0%}: the remaining-rows copy, "
              f"disk figures, waiting for the last removal); removing the variants in {report.work_folder} "
              f"{report.remove_seconds:.1f} s ({report.remove_seconds / total:.0%}, in a thread while the next built)")
        for v in report.variants:
            print(f"  {v.name:<10} build {v.build_seconds:6.1f} s  search {v.search_seconds:5.1f} s  "
                  f"recall {' '.join(f'{p.recall:.3f}' for p in v.points)}")
        rec = report.recommendation
        print(f"  recommended: {report.variants[rec.variant].name} search_exp {rec.search_exp} "
              f"(recall {rec.recall:.3f})" if rec else "  no variant reached recall 0.9")
        if not args.no_baseline:
            plain = removing = 0.0
            for params in grid.variants():
                out = Path(folder) / "plain.zarr"
                t = time.perf_counter()
                build_index(src, out, params)
                plain += time.perf_counter() - t
                t = time.perf_counter()
                shutil.rmtree(out)
                removing += time.perf_counter() - t
            print(f"baseline: plain build_index of the same {len(report.variants)} variants: {plain:.1f} s in "
                  f"{folder}, removing them {removing:.1f} s (tune's builds {report.build_seconds:.1f} s); "
                  f"load {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
