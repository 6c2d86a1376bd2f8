"""Remote figures: the benchmark index served over loopback HTTP with a fixed delay per request.

The server (benchmarks/_remote_server.py, in a child process) lists no folders, like a CDN or a
bucket website, so the tree is derived from the index itself. Each action runs on a freshly
opened store, once with the delay and once without, and prints wall time, the target from the
issue, the floor the requests allow, and the requests the server answered. Figures only;
nothing passes or fails.

    .venv-newest/bin/python benchmarks/bench_remote.py [--delay-ms 50] [--max-in-flight 64]

Last, the window's helper processes: seconds from opening a store in a helper to its first answer,
for six stores in turn, forked by the zygote against a new interpreter each (ECPFS_HELPER_ZYGOTE=0),
each in a fresh process, beside the floor of the same read made in process.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _bench_index import bench_index_path
from _remote_server import serve_static_child

from ecpfs_viewer.model.ecpfs import level_stats, summarize
from ecpfs_viewer.model.ecpfs.opened_index import open_index
from ecpfs_viewer.model.search import IndexReader, SearchParams, index_reader
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.validation import validate
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

TARGETS = {"open + index summary": 1.0, "leaf level listed (derived)": 2.0, "level statistics, all nodes": 6.0,
           "eCP search cold (k 10, exp 4)": 2.0, "eCP search warm": 0.3, "check, whole index": 15.0}


def actions(url: str, options: RemoteOptions) -> dict[str, Callable[[], object]]:
    def fresh() -> Hierarchy:
        return open_index(url, remote=options).hierarchy

    def open_summary() -> object:
        return summarize(fresh()).levels

    def leaf_level() -> object:
        h = fresh()
        return len(h.children(f"lvl_{summarize(h).levels}"))

    def all_levels() -> object:
        h = fresh()
        summary = summarize(h)
        return sum(level_stats(h, n, summary).node_count for n in range(1, (summary.levels or 0) + 1))

    def check() -> object:
        report = validate(fresh())
        return f"{len(report.errors)} errors, {len(report.warnings)} warnings"

    reader: list[IndexReader] = []
    queries: list[np.ndarray] = []

    def search_cold() -> object:
        opened = open_index(url, remote=options)
        query = np.asarray(opened.hierarchy.read_array("index_root/embeddings", 3), dtype=np.float32) + 0.5
        reader[:] = [index_reader(opened)]
        queries[:] = [query]
        return len(reader[0].search(query, SearchParams(k=10, search_exp=4)).items)

    def search_warm() -> object:
        return len(reader[0].search(queries[0], SearchParams(k=10, search_exp=4)).items)

    return {"open + index summary": open_summary, "leaf level listed (derived)": leaf_level,
            "level statistics, all nodes": all_levels, "eCP search cold (k 10, exp 4)": search_cold,
            "eCP search warm": search_warm, "check, whole index": check}


def measure(index: Path, delay: float, options: RemoteOptions) -> dict[str, tuple[float, int, object]]:
    results: dict[str, tuple[float, int, object]] = {}
    with serve_static_child(index.parent, delay) as server:
        for label, job in actions(f"{server.base}/{index.name}", options).items():
            before = server.requests()
            started = time.perf_counter()
            outcome = job()
            results[label] = (time.perf_counter() - started, server.requests() - before, outcome)
    return results


HELPER_STORES = 6


def first_answers(url: str, helper: bool) -> list[float]:
    """Seconds from opening each of HELPER_STORES stores to its root document read."""
    os.environ["ECPFS_REMOTE_HELPER"] = "1" if helper else "0"
    seconds = []
    for _ in range(HELPER_STORES):
        started = time.perf_counter()
        store = open_store(url)
        if store.read_many_or_errors(["zarr.json"])[0] is None:
            raise SystemExit(f"{url}: no root document")
        seconds.append(time.perf_counter() - started)
        store.close()
    return seconds


def helper_starts(index: Path) -> None:
    with serve_static_child(index.parent, 0.0) as server:
        url = f"{server.base}/{index.name}"
        runs = {}
        for label, helper, zygote in (("forked by the zygote", True, "1"), ("an interpreter each", True, "0"),
                                      ("floor: in process", False, "1")):
            done = subprocess.run([sys.executable, __file__, "--first-answers", url, "1" if helper else "0"],
                                  env={**os.environ, "ECPFS_HELPER_ZYGOTE": zygote}, capture_output=True,
                                  text=True, check=True)
            runs[label] = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"\nhelper processes: first answer of each of {HELPER_STORES} stores opened in turn (no delay)")
    print(f"{'helper':<24} {'first':>8} {'later, median':>14} {'later, worst':>13}")
    for label, seconds in runs.items():
        print(f"{label:<24} {seconds[0]:6.3f} s {statistics.median(seconds[1:]):12.3f} s {max(seconds[1:]):11.3f} s")


def main() -> None:
    if sys.argv[1:2] == ["--first-answers"]:
        print(json.dumps(first_answers(sys.argv[2], sys.argv[3] == "1")))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay-ms", type=float, default=50.0, help="delay the server adds to every request")
    parser.add_argument("--max-in-flight", type=int, default=128, help="concurrent requests per store")
    parser.add_argument("--helpers-only", action="store_true", help="only the helper processes' first answers")
    args = parser.parse_args()
    index = bench_index_path()
    if args.helpers_only:
        helper_starts(index)
        return
    options = RemoteOptions(max_in_flight=args.max_in_flight)
    slow = measure(index, args.delay_ms / 1000, options)
    fast = measure(index, 0.0, options)
    print(f"index {index.name} over loopback HTTP without listings; max_in_flight {options.max_in_flight}")
    print("floor: the time the requests take at best, ceil(requests / max_in_flight) round trips x delay")
    print(f"{'action':<32} {'delay ' + format(args.delay_ms, 'g') + ' ms':>12} {'target':>8} {'floor':>8} "
          f"{'requests':>9} {'no delay':>10} {'requests':>9}  result")
    for label, (seconds, requests, outcome) in slow.items():
        base_seconds, base_requests, _ = fast[label]
        floor = math.ceil(requests / options.max_in_flight) * args.delay_ms / 1000
        print(f"{label:<32} {seconds:10.2f} s {TARGETS[label]:6.1f} s {floor:6.2f} s {requests:9,d} "
              f"{base_seconds:8.2f} s {base_requests:9,d}  {outcome}")
    helper_starts(index)


if __name__ == "__main__":
    main()
