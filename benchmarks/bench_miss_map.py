"""Miss map benchmark: what it adds to a recall sweep, figures not pass/fail.

    .venv-newest/bin/python benchmarks/bench_miss_map.py [--rows 200000] [--queries 200] [--repeat 2]

A recall sweep of sampled items over search_exp 1,2,4,8 on the cached benchmark index, with and
without the miss map (its layout, the observer on every search, placing every miss). The exact
neighbours are computed once and handed to both, so the overhead is against the searches alone
(stricter than against a whole sweep, which also pays for exact search). Target (issue 24): <= 10%.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_index import ROWS, bench_index_path

from ecpfs_viewer.model.diagnostics.index_map import layout_index
from ecpfs_viewer.model.diagnostics.miss_map import MissMapCollector
from ecpfs_viewer.model.search import IndexReader, recall_sweep, sample_items

EXPS = (1, 2, 4, 8)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=2, help="alternating runs of each (median)")
    args = parser.parse_args(argv)
    index = bench_index_path(rows=args.rows)
    reader = IndexReader(index)
    queries = sample_items(reader, args.queries, seed=7)
    own = list(queries.self_ids)
    truth = reader.exact(queries.vectors, 10, frozenset(), own)
    reader.preload_internal()
    recall_sweep(reader, queries, 10, (1,), exact=lambda *_: truth)  # warm the leaves' cache alike for both
    t = time.perf_counter()
    layout_index(reader)  # the first layout parses every node's metadata; the window and the CLI pay it once
    cold_layout = time.perf_counter() - t

    def plain() -> float:
        t = time.perf_counter()
        recall_sweep(reader, queries, 10, EXPS, exact=lambda *_: truth)
        return time.perf_counter() - t

    def with_map() -> tuple[float, float, float, int]:
        t = time.perf_counter()
        collector = MissMapCollector(layout_index(reader))
        laid = time.perf_counter()
        recall_sweep(reader, queries, 10, EXPS, exact=lambda *_: truth, observe=collector.observe)
        swept = time.perf_counter()
        miss_map = collector.result(reader.locator.complete_map())
        return time.perf_counter() - t, laid - t, time.perf_counter() - swept, miss_map.total()

    without, within = [], []
    for _ in range(args.repeat):
        without.append(plain())
        within.append(with_map())
    base = statistics.median(without)
    total = statistics.median(w[0] for w in within)
    layout = statistics.median(w[1] for w in within)
    place = statistics.median(w[2] for w in within)
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"miss map on {index.name}: {args.queries} queries x search_exp {','.join(map(str, EXPS))}, "
          f"k 10, load average {load}")
    print(f"{'recall sweep without the miss map':<40} {base:>8.3f} s")
    print(f"{'recall sweep with the miss map':<40} {total:>8.3f} s   (+{(total / base - 1) * 100:.1f}%; "
          f"layout {layout * 1e3:.0f} ms, placing {within[0][3]:,} misses {place * 1e3:.1f} ms)   target <= +10%")
    print(f"{'first layout of the index (once per index)':<40} {cold_layout:>8.3f} s   "
          f"(+{(total + cold_layout - layout) / base * 100 - 100:.1f}% on a sweep that pays it)")


if __name__ == "__main__":
    main()
