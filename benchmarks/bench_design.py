"""Small measurements behind design choices the code's comments name (benchmarks/README.md lists them).

Each line times the choice made against the one it replaced, on synthetic data (no benchmark index
needed), as the median of a few runs. Figures only; nothing passes or fails. The machine's load is
printed first: on a shared machine, rerun before relying on a figure.

    .venv-newest/bin/python benchmarks/bench_design.py [--repeat N]
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from threadpoolctl import threadpool_limits

from ecpfs_viewer.model.storage.local_files import read_file
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def median_ms(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def row(what: str, chosen: float, other: float, other_name: str) -> None:
    print(f"{what:<58} {chosen:9.2f} ms   {other_name} {other:9.2f} ms   ({other / max(chosen, 1e-9):.1f} x)")


def blas(repeat: int) -> None:
    """Exact search and routing run BLAS on one thread (model/search/exact.py, model/build/routing.py)."""
    rng = np.random.default_rng(0)
    items = rng.standard_normal((200_000, 64), dtype=np.float32)
    queries = rng.standard_normal((100, 64), dtype=np.float32)
    reps = rng.standard_normal((10, 128))
    batch = rng.standard_normal((1000, 128))

    def scores() -> object:
        return queries @ items.T

    def routing() -> object:
        return batch @ reps.T

    def on_one_thread(action: Callable[[], object], runs: int) -> float:
        with threadpool_limits(limits=1, user_api="blas"):  # entered once, as the model does
            return median_ms(action, runs)

    row("exact scores, 100 queries x 200,000 items x 64", on_one_thread(scores, repeat),
        median_ms(scores, repeat), "all BLAS threads")
    row("routing product, 1000 x 128 by 128 x 10", on_one_thread(routing, repeat * 20),
        median_ms(routing, repeat * 20), "all BLAS threads")


def small_files(repeat: int) -> None:
    """Local files are read with raw descriptors (model/storage/local_files.py)."""
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for i in range(4000):
            path = Path(folder) / f"node_{i}" / "zarr.json"
            path.parent.mkdir()
            path.write_bytes(b'{"zarr_format": 3, "node_type": "group", "attributes": {}}' + b" " * 300)
            paths.append(str(path))

        def raw() -> object:
            return [read_file(p) for p in paths]

        def buffered() -> object:
            out = []
            for p in paths:
                with open(p, "rb") as file:
                    out.append(file.read())
            return out

        row("read 4,000 small zarr.json files", median_ms(raw, repeat), median_ms(buffered, repeat),
            "buffered open()")


def documents(repeat: int) -> None:
    """Node arrays are described from json.loads of their document (model/ecpfs/metadata.py)."""
    import zarr

    count = 500
    with tempfile.TemporaryDirectory() as folder:
        root = zarr.open_group(folder, mode="w")
        for i in range(count):
            root.create_array(f"a{i}", shape=(100, 64), chunks=(100, 64), dtype="float32")
        paths = [f"a{i}" for i in range(count)]

        def details() -> object:
            h = Hierarchy(open_store(folder))
            return [h.details(p) for p in paths]

        def loads() -> object:
            return [json.loads(read_file(os.path.join(folder, p, "zarr.json")) or b"{}") for p in paths]

        row(f"describe {count} arrays: json.loads of each zarr.json", median_ms(loads, repeat),
            median_ms(details, repeat), "Hierarchy.details")


def qt(repeat: int) -> None:
    """Qt costs the GUI works around (gui/search/path_view.py, gui/tree/columns.py)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    try:
        import pyqtgraph as pg
        from PySide6.QtWidgets import QApplication, QTreeView
    except ImportError as exc:
        print(f"(Qt figures skipped: {exc})")
        return
    app = QApplication.instance() or QApplication([])
    plots: list[object] = []
    per_plot = median_ms(lambda: plots.append(pg.PlotItem()), repeat * 5)
    print(f"{'create one pyqtgraph PlotItem':<58} {per_plot:9.2f} ms   (the search path view reuses them)")
    metrics = QTreeView().fontMetrics()
    names = [f"node_{i}" for i in range(4000)]
    widest_few = median_ms(lambda: max(metrics.horizontalAdvance(n) for n in heapq.nlargest(8, names, key=len)),
                           repeat * 5)
    every = median_ms(lambda: max(metrics.horizontalAdvance(n) for n in names), repeat * 5)
    row("widest of 4,000 names: measure the longest 8", widest_few, every, "measure all")
    del app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; median of {args.repeat} runs\n")
    blas(args.repeat)
    small_files(args.repeat)
    documents(args.repeat)
    qt(args.repeat)


if __name__ == "__main__":
    main()
