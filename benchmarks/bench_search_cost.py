"""What counting a search's cost adds to a warm search (issue 23: "cost counting adds <= 5%").

    .venv-newest/bin/python benchmarks/bench_search_cost.py [--queries 1000] [--rounds 5] [--rows N]

On the cached 200,000 x 64 index (levels 3, target 50), k 10, search_exp 4: the same queries
searched with the cost counted (``ecp_search(..., counted=True)``, what every search does) and
without (``counted=False``: no representatives or items tallied, no per-level reads, no cold read
figures, an empty SearchCost); everything else, the heap, the trace and the scoring, is the same
code. Every node is read before timing, so this is the warm case. Each query is timed in both modes
in every round, the order alternating, and its fastest time per mode is kept, so a burst of load
from other processes does not land on one mode only. Prints both totals and the overhead.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_index import ROWS, bench_index_path

from ecpfs_viewer.model.search import IndexReader, SearchParams, sample_items
from ecpfs_viewer.model.search.ecp import ecp_search


def _load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split(" ")[0]
    except OSError:
        return "?"


def measure(reader: IndexReader, queries: np.ndarray, rounds: int, params: SearchParams) -> tuple[np.ndarray, ...]:
    """Fastest seconds per query with the cost counted and without, over alternating rounds."""
    counted = np.full(len(queries), np.inf)
    bare = np.full(len(queries), np.inf)
    for r in range(rounds):
        for j, q in enumerate(queries):
            for mode in ((True, False) if (r + j) % 2 == 0 else (False, True)):
                t = time.perf_counter()
                ecp_search(reader, q, params, counted=mode)
                took = time.perf_counter() - t
                best = counted if mode else bare
                best[j] = min(best[j], took)
    return counted, bare


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rows", type=int, default=ROWS, help="items of the benchmark index (default 200,000)")
    args = parser.parse_args(argv)
    reader = IndexReader(bench_index_path(rows=args.rows))
    queries = sample_items(reader, args.queries, seed=3).vectors
    params = SearchParams(k=10, search_exp=4)
    reader.preload_internal()
    cold = [ecp_search(reader, q, params).cost for q in queries]  # reads every leaf the queries reach
    warm = ecp_search(reader, queries[0], params).cost
    assert warm.total_bytes == 0 and warm.distance_computations == cold[0].distance_computations
    counted, bare = measure(reader, queries, args.rounds, params)
    overhead = (counted.sum() - bare.sum()) / bare.sum() * 100
    print(f"warm eCP search, k 10, search_exp 4, {len(queries):,} queries x {args.rounds} rounds "
          f"({reader.total_items:,} items), load {_load()}")
    print(f"  cost counted    : {counted.sum() * 1e3:9.1f} ms total, median {np.median(counted) * 1e3:.3f} ms/query")
    print(f"  without (baseline, counted=False): {bare.sum() * 1e3:9.1f} ms total, "
          f"median {np.median(bare) * 1e3:.3f} ms/query")
    print(f"  overhead        : {overhead:+.2f} %   target <= 5 %")
    dc = np.array([c.distance_computations for c in cold])
    print(f"  per search: {dc.mean():,.0f} distance computations, "
          f"{np.mean([c.total_cold_bytes for c in cold]) / 1024:,.1f} KiB read cold, warm reads 0 B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
