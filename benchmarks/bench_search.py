"""Search benchmark on the cached 200,000 x 64 index (levels 3, target 50): figures, not pass/fail.

    .venv-newest/bin/python benchmarks/bench_search.py [--queries 100]

Prints, next to a baseline and the target of the query-explorer issue:
- `ecpfs-viewer search INDEX --item 5` in a fresh process, start-up included (before: 7.7 s);
- locate an item, cold (item_ids only), against zarr-python opening each leaf's item_ids;
- warm eCP search, k 10, search_exp 4: median ms per query;
- exact top-10 for N queries over every item (leaves already read), against a numpy brute force
  and faiss-cpu IndexFlatL2 (when installed), checking that the neighbour ids agree;
- `ecpfs-viewer recall INDEX --sample 100 --search-exp 1,2,4,8` in a fresh process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_index import bench_index_path

from ecpfs_viewer.model.search import IndexReader, NodeData, SearchParams

CLI = [sys.executable, "-m", "ecpfs_viewer"]


def _fresh(args: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    done = subprocess.run(CLI + args, capture_output=True, text=True, check=True)
    return time.perf_counter() - t, done.stdout


def _line(what: str, ours: str, baseline: str, target: str) -> None:
    print(f"{what:<44} {ours:>12}   {baseline:<40} target {target}")


def bench_fresh_search(index: Path) -> None:
    times = [_fresh(["search", str(index), "--item", "5"])[0] for _ in range(3)]
    _line("search --item 5, fresh process (median of 3)", f"{statistics.median(times):.2f} s",
          "before this change: 7.7 s", "<= 1.5 s")


def bench_locate(index: Path) -> None:
    t = time.perf_counter()
    location = IndexReader(index).locate(5)
    ours = time.perf_counter() - t
    import zarr

    t = time.perf_counter()
    reader = IndexReader(index)
    for leaf in reader.leaf_ids():  # zarr-python: open and read every leaf's item_ids until found
        ids = zarr.open_array(str(index), path=f"lvl_{reader.levels}/node_{leaf}/item_ids", mode="r")[:]
        if (ids == 5).any():
            break
    baseline = time.perf_counter() - t
    _line("locate item 5, cold (item_ids only)", f"{ours:.2f} s", f"zarr-python leaf by leaf: {baseline:.2f} s",
          f"<= 1 s   ({location.leaf_path}, row {location.row})")


def bench_warm_search(reader: IndexReader, queries: np.ndarray) -> None:
    params = SearchParams(k=10, search_exp=4)
    for q in queries:
        reader.search(q, params)
    times = []
    for q in queries:
        t = time.perf_counter()
        reader.search(q, params)
        times.append(time.perf_counter() - t)
    _line("warm search, k 10, search_exp 4 (median)", f"{statistics.median(times) * 1e3:.2f} ms",
          f"p95 {np.percentile(times, 95) * 1e3:.2f} ms over {len(queries)} queries", "<= 5 ms")


def _every_leaf(reader: IndexReader) -> NodeData:
    """Every stored item in one matrix, for the numpy and faiss baselines (exact search streams)."""
    leaves = reader.leaf_ids()
    nodes = [n for start in range(0, len(leaves), 256)
             for n in reader.read_nodes(reader.levels, leaves[start:start + 256]) if n is not None]
    return NodeData(np.concatenate([n.vectors for n in nodes]), np.concatenate([n.sq_norms for n in nodes]),
                    np.concatenate([n.ids for n in nodes]))


def bench_exact(reader: IndexReader, queries: np.ndarray) -> None:
    t = time.perf_counter()
    data = _every_leaf(reader)
    print(f"(reading all {len(reader.leaf_ids()):,} leaves, {len(data.ids):,} items: {time.perf_counter() - t:.2f} s)")
    reader.exact(queries[:2], 10)  # first-call costs (BLAS start-up) out of the figure
    t = time.perf_counter()
    exact = reader.exact(queries, 10)
    ours = time.perf_counter() - t
    t = time.perf_counter()
    v = data.vectors
    d = data.sq_norms[None, :] - 2 * (queries @ v.T)  # numpy brute force: one product, one partition
    part = np.argpartition(d, 9, axis=1)[:, :10]
    brute = np.take_along_axis(part, np.argsort(np.take_along_axis(d, part, 1), axis=1), 1)
    numpy_s = time.perf_counter() - t
    agree_numpy = np.mean([set(data.ids[brute[i]]) == set(exact.ids[i]) for i in range(len(queries))])
    baseline = f"numpy {numpy_s:.2f} s (ids agree {agree_numpy:.0%})"
    try:
        import faiss
    except ImportError:
        baseline += "; faiss-cpu not installed"
    else:
        flat = faiss.IndexFlatL2(v.shape[1])
        flat.add(v)
        t = time.perf_counter()
        _, ids = flat.search(queries, 10)
        faiss_s = time.perf_counter() - t
        agree = np.mean([set(data.ids[ids[i]]) == set(exact.ids[i]) for i in range(len(queries))])
        baseline += f"; faiss IndexFlatL2 {faiss_s:.2f} s (ids agree {agree:.0%})"
    _line(f"exact top-10, {len(queries)} queries, streaming every leaf", f"{ours:.2f} s", baseline,
          "about one read of every leaf")


def bench_fresh_recall(index: Path) -> None:
    seconds, out = _fresh(["recall", str(index), "--sample", "100", "--search-exp", "1,2,4,8"])
    _line("recall --sample 100 --search-exp 1,2,4,8", f"{seconds:.2f} s", "before: 16 s for one query", "<= 8 s")
    print("\n".join("    " + line for line in out.strip().splitlines()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=100)
    args = ap.parse_args()
    index = bench_index_path()
    print(f"index: {index.name} (200,000 x 64 float32, levels 3, target 50); load {os.getloadavg()[0]:.2f}")
    bench_fresh_search(index)
    bench_locate(index)
    reader = IndexReader(index)
    rng = np.random.default_rng(7)
    items = rng.choice(200_000, args.queries, replace=False)
    queries = (reader.vectors_for_items(items.tolist()) + rng.normal(0, 0.5, (args.queries, reader.dim))).astype(
        np.float32)
    bench_warm_search(reader, queries)
    bench_exact(reader, queries)
    bench_fresh_recall(index)


if __name__ == "__main__":
    main()
