"""Search benchmark on the 200,000 x 64 index: query latency and recall@10 (figures, not pass/fail).

    .venv/bin/python benchmarks/bench_search.py [--dir DIR] [--queries 200]

Latency is measured cold (a fresh IndexReader per query: every visited node is opened and
decoded through zarr-python) and warm (one reader, node cache filled). Queries are held-out
points from the same distribution as the indexed data. Recall@10 is against exact search
over every leaf, for a few search_exp values.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_build import clustered

from ecpfs_viewer.model.build import BuildParams, build_index
from ecpfs_viewer.model.search import IndexReader, SearchParams, recall_at_k


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="ecpfs-bench-search-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        # same generator and seed as bench_build; the extra rows are held-out queries
        allrows = clustered(200_000 + args.queries, 64, seed=200_000 + 64)
        data, queries = allrows[:200_000], allrows[200_000:]
        src = work / "in.npy"
        np.save(src, data)
        index = work / "idx.zarr"
        shutil.rmtree(index, ignore_errors=True)
        t = time.perf_counter()
        build_index(src, index, BuildParams(levels=3, target_cluster_items=50))
        print(f"index: 200,000 x 64, levels 3, target 50, built in {time.perf_counter() - t:.2f} s "
              f"(load {os.getloadavg()[0]:.2f})")
        p = SearchParams(k=10, search_exp=4)

        cold = []
        visited = []
        for q in queries[:50]:
            reader = IndexReader(index)
            t = time.perf_counter()
            res = reader.search(q, p)
            cold.append(time.perf_counter() - t)
            visited.append(len(res.trace))
        print(f"cold query (fresh reader, k 10, search_exp 4): median {statistics.median(cold) * 1e3:.1f} ms, "
              f"{statistics.median(visited):.0f} nodes visited (median of 50)")

        reader = IndexReader(index)
        for q in queries:  # warm the node cache with the nodes these queries visit
            reader.search(q, p)
        warm = []
        for q in queries:
            t = time.perf_counter()
            reader.search(q, p)
            warm.append(time.perf_counter() - t)
        print(f"warm query (cached nodes): median {statistics.median(warm) * 1e3:.2f} ms over {len(warm)}")

        t = time.perf_counter()
        reader.exact_search(queries[0], 10)
        print(f"exact search: loading all {len(reader.leaf_ids())} leaves took {time.perf_counter() - t:.1f} s "
              "(once); then per query:", end=" ")
        t = time.perf_counter()
        for q in queries[:50]:
            reader.exact_search(q, 10)
        print(f"{(time.perf_counter() - t) / 50 * 1e3:.1f} ms")

        for exp in (1, 4, 16, 64):
            t = time.perf_counter()
            r = recall_at_k(reader, queries, 10, exp)
            print(f"recall@10 at search_exp {exp:>2}: {r:.3f}  ({len(queries)} held-out queries, "
                  f"{time.perf_counter() - t:.1f} s)")
        noise = np.random.default_rng(1).standard_normal((args.queries, 64)).astype(np.float32) * 4
        print(f"recall@10 at search_exp  4 for white-noise queries (no cluster structure): "
              f"{recall_at_k(reader, noise, 10, 4):.3f}")
    finally:
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
