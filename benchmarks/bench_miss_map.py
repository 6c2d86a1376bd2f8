"""Miss map benchmark: what it adds to a recall sweep, figures not pass/fail.

    .venv-newest/bin/python benchmarks/bench_miss_map.py [--rows 200000] [--queries 200] [--repeat 2]

A recall sweep of sampled items over search_exp 1,2,4,8 on the cached benchmark index, with and
without the miss map (the observer on every search, placing every miss; the layout is shared per
opened index, its first and a repeated cost printed apart). CPU time beside wall time: on shared
cores the wall time of a sub-second sweep varies more than the difference measured. The exact
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

from ecpfs_viewer.model.diagnostics.index_map_layout import layout_index, shared_layout
from ecpfs_viewer.model.diagnostics.miss_map import MissMapCollector
from ecpfs_viewer.model.search import IndexReader, recall_sweep, sample_items
from ecpfs_viewer.model.search.recall import SweepSearch

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
    shared_layout(reader)  # the first layout parses every node's metadata; once per opened index
    cold_layout = time.perf_counter() - t
    t = time.perf_counter()
    layout_index(reader)
    warm_layout = time.perf_counter() - t

    def clocks() -> tuple[float, float]:
        return time.perf_counter(), time.process_time()

    def since(start: tuple[float, float]) -> tuple[float, float]:
        now = clocks()
        return now[0] - start[0], now[1] - start[1]

    def plain() -> tuple[float, float]:
        t = clocks()
        recall_sweep(reader, queries, 10, EXPS, exact=lambda *_: truth)
        return since(t)

    def with_map() -> tuple[tuple[float, float], float, float, int]:
        t = clocks()
        collector = MissMapCollector(shared_layout(reader))
        laid = since(t)[1]
        spent = [0.0]

        def observe(search: SweepSearch) -> None:  # the observer's own CPU time, apart from the noise
            started = time.process_time()
            collector.observe(search)
            spent[0] += time.process_time() - started

        recall_sweep(reader, queries, 10, EXPS, exact=lambda *_: truth, observe=observe)
        observed.append(spent[0])
        before_place = time.process_time()
        miss_map = collector.result(reader.locator.complete_map())
        return since(t), laid, time.process_time() - before_place, miss_map.total()

    without, within = [], []
    observed: list[float] = []
    for _ in range(args.repeat):  # alternating, so a change of the machine's load hits both alike
        without.append(plain())
        within.append(with_map())
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"miss map on {index.name}: {args.queries} queries x search_exp {','.join(map(str, EXPS))}, "
          f"k 10, median of {args.repeat}, load average {load}")
    for name, pick in (("CPU time", 1), ("wall time", 0)):
        base = statistics.median(w[pick] for w in without)
        total = statistics.median(w[0][pick] for w in within)
        print(f"{f'recall sweep without the miss map, {name}':<48} {base:>8.3f} s")
        print(f"{f'recall sweep with the miss map, {name}':<48} {total:>8.3f} s   "
              f"({(total / base - 1) * 100:+.1f}%)   target <= +10%")
    base_cpu = statistics.median(w[1] for w in without)
    watched = statistics.median(observed)
    print(f"{'  the observer itself (CPU, every search)':<48} {watched * 1e3:>6.1f} ms   "
          f"({watched / base_cpu * 100:.1f}% of the sweep without it)")
    layout = statistics.median(w[1] for w in within)
    place = statistics.median(w[2] for w in within)
    print(f"{'  of which the shared layout (CPU), placing':<48} {layout * 1e3:>6.1f} ms, "
          f"{place * 1e3:.1f} ms for {within[0][3]:,} misses")
    print(f"{'layout of the index: first / again':<48} {cold_layout:>8.3f} s / {warm_layout * 1e3:.0f} ms   "
          "(paid once per opened index: the map panel and every sweep share it)")


if __name__ == "__main__":
    main()
