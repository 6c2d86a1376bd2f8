"""Self-reachability of every item and the workload of 1,000 queries on the benchmark index, beside
their baselines, and the GUI thread's longest stall while the Diagnostics dialogs run them.

Targets (issue 24): self-reachability of all 200,000 items <= 15 s; the workload of 1,000 queries
<= 5 s; no GUI stall above 100 ms. Baselines: ecp_search once per item on a sample, extrapolated to
every item (what self-reachability would cost without batching), ecp_search once per query, and
exact search of the same queries.

    .venv-newest/bin/python benchmarks/bench_diagnostics.py [INDEX] [--rows N] [--queries 1000]
        [--baseline-sample 500] [--no-gui]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from _bench_index import ROWS, bench_index_path

from ecpfs_viewer.model.diagnostics.reachability import self_reachability
from ecpfs_viewer.model.diagnostics.workload import replay
from ecpfs_viewer.model.search import IndexReader, SearchParams, sample_items
from ecpfs_viewer.model.search.ecp import ecp_search


def _timed(fn):  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - started


def model_figures(path: str, queries: int, baseline_sample: int) -> list[tuple[str, float, str]]:
    """(what, seconds, note) for the model work and its baselines, each on a fresh reader."""
    rows: list[tuple[str, float, str]] = []
    report, seconds = _timed(lambda: self_reachability(IndexReader(path)))
    rows.append(("self-reachability, every item (reads every leaf)", seconds,
                 f"{report.checked:,} items, {report.strays:,} strays, {report.searched} settled by ecp_search"))
    index = IndexReader(path)
    index.preload_internal()
    sample = sample_items(index, baseline_sample, seed=1)
    _, seconds = _timed(lambda: [ecp_search(index, q, SearchParams(k=1, search_exp=1)) for q in sample.vectors])
    scale = report.checked / len(sample)
    rows.append(("  baseline: ecp_search per item, extrapolated", seconds * scale,
                 f"{len(sample):,} items took {seconds:.2f} s"))
    index = IndexReader(path)
    chosen = sample_items(index, queries, seed=0)
    work, seconds = _timed(lambda: replay(index, chosen, SearchParams(k=10, search_exp=4)))
    rows.append((f"workload of {queries:,} queries, search_exp 4 (leaf sizes read once)", seconds,
                 f"{float(work.leaves_per_query.mean()):.1f} leaves per query, {work.searched} settled by ecp_search"))
    _, seconds = _timed(lambda: replay(index, chosen, SearchParams(k=10, search_exp=4)))
    rows.append(("  the same again, warm", seconds, ""))
    _, seconds = _timed(lambda: [ecp_search(index, q, SearchParams(k=10, search_exp=4)) for q in chosen.vectors])
    rows.append(("  baseline: ecp_search per query", seconds, ""))
    _, seconds = _timed(lambda: index.exact(np.asarray(chosen.vectors), 10))
    rows.append(("  baseline: exact search of the same queries", seconds, ""))
    return rows


def gui_figures(path: str, queries: int, explain: float | None = None) -> list[tuple[str, float, float]]:
    """(phase, seconds, longest stall ms) while the dialogs run in the window."""
    from bench_gui_stalls import StallMeter, wait_until

    from ecpfs_viewer.gui.app import create_main_window, ensure_application, tune_interpreter_for_gui
    from ecpfs_viewer.gui.runtime import settings as app_settings
    from ecpfs_viewer.gui.runtime.shutdown import shut_down

    settings_dir = tempfile.TemporaryDirectory(prefix="ecpfs-bench-settings-")
    app_settings.use_settings_dir(settings_dir.name)
    ensure_application()
    collector = tune_interpreter_for_gui()
    window = create_main_window()
    window.resize(1280, 800)
    window.show()
    meter = StallMeter(explain)
    out: list[tuple[str, float, float]] = []
    try:
        window.open_location(path)
        wait_until(lambda: not window.is_busy() and window.diagnostics.workload_action.isEnabled())
        dialog = window.diagnostics.open_workload()
        dialog.count.setValue(queries)
        meter.start()
        started = time.perf_counter()
        dialog.run_button.click()
        wait_until(lambda: dialog.workload is not None)
        meter.stop()
        out.append((f"Query Workload dialog, {queries:,} sampled items", time.perf_counter() - started, meter.longest))
        reach = window.diagnostics.open_reachability()
        meter.start()
        started = time.perf_counter()
        reach.run_button.click()
        wait_until(lambda: reach.report is not None)
        meter.stop()
        out.append(("Self-Reachability dialog, every item", time.perf_counter() - started, meter.longest))
    finally:
        meter.close()
        window.close()
        shut_down(window, [collector.timer, meter.timer])
    for gap, stacks in meter.explained:
        print(f"stall of {gap:.0f} ms; the GUI thread was in: {stacks[0]}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("index", nargs="?", help="an ecpfs index (default: the benchmark index)")
    parser.add_argument("--rows", type=int, default=ROWS, help=f"benchmark index size (default {ROWS:,})")
    parser.add_argument("--queries", type=int, default=1000, help="workload queries (default 1000)")
    parser.add_argument("--baseline-sample", type=int, default=500, help="items searched one by one (default 500)")
    parser.add_argument("--no-gui", action="store_true", help="model figures only")
    parser.add_argument("--no-model", action="store_true", help="GUI figures only")
    parser.add_argument("--explain", type=float, default=None, metavar="MS",
                        help="print where the GUI thread was in each stall over MS")
    args = parser.parse_args()
    path = args.index or str(bench_index_path(rows=args.rows))
    print(f"Diagnostics on {Path(path).name} (targets: self-reachability of 200,000 items <= 15 s, "
          f"1,000 queries <= 5 s, no GUI stall > 100 ms)")
    for what, seconds, note in [] if args.no_model else model_figures(path, args.queries, args.baseline_sample):
        print(f"{what:64s} {seconds:8.2f} s  {note}")
    if not args.no_gui:
        for what, seconds, longest in gui_figures(path, args.queries, args.explain):
            print(f"{what:64s} {seconds:8.2f} s  longest GUI stall {longest:.0f} ms")
    if hasattr(os, "getloadavg"):
        print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
