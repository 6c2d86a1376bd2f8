"""Resident memory and time of the steps of a recall sweep (and the index map), one fresh process.

    .venv-newest/bin/python benchmarks/bench_10m_actions.py recall INDEX [--sample 100]
    .venv-newest/bin/python benchmarks/bench_10m_actions.py map INDEX
    .venv-newest/bin/python benchmarks/bench_10m_actions.py node INDEX [--node lvl_3/node_123]

Prints, after each step, the wall time and the process's resident and peak resident memory
(``VmRSS``/``VmHWM``): where memory grows with the number of items. Figures, not pass/fail; the
floors (``cat`` of the files a step reads) are measured separately (see the README).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _status() -> str:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) // 1024
    return f"rss {fields.get('VmRSS', 0):>5} MB  peak {fields.get('VmHWM', 0):>5} MB"


class _Steps:
    def __init__(self) -> None:
        self.start = self.last = time.perf_counter()

    def __call__(self, what: str) -> None:
        now = time.perf_counter()
        print(f"{what:<28} {now - self.last:8.2f} s  (total {now - self.start:7.2f} s)  {_status()}", flush=True)
        self.last = now


def recall(index: str, sample: int, exps: list[int]) -> None:
    from ecpfs_viewer.model.search import IndexReader, recall_sweep, sample_items

    step = _Steps()
    reader = IndexReader(index)
    reader.learn_from_scans = False  # as `recall` without --miss-map
    step("open")
    queries = sample_items(reader, sample, 0)
    step("sample")
    truth = reader.exact(queries.vectors, 10, frozenset(), list(queries.self_ids))
    step("exact neighbours")
    report = recall_sweep(reader, queries, 10, exps, exact=lambda *a, **k: truth)
    step("searches")
    print(" ".join(f"{r.search_exp}:{r.recall:.4f}" for r in report.rows))


def index_map(index: str) -> None:
    from ecpfs_viewer.model.diagnostics.index_map_layout import layout_index
    from ecpfs_viewer.model.search import IndexReader

    step = _Steps()
    reader = IndexReader(index)
    step("open")
    layout = layout_index(reader, on_sketch=lambda sketch: step(f"first picture ({sketch.node_count:,} nodes)"))
    step(f"layout ({layout.node_count:,} nodes)")


def node_page(index: str, node: str) -> None:
    """The window's node page (as its worker loads it), e.g. ``lvl_3/node_123``, in a fresh process."""
    import threading

    from ecpfs_viewer.gui.overview.node_page import load_node_page
    from ecpfs_viewer.model.ecpfs.nodes import NodeRef
    from ecpfs_viewer.model.ecpfs.opened_index import open_index

    step = _Steps()
    opened = open_index(index)
    step("open")
    level, node_id = node.split("/")
    load_node_page(opened.hierarchy, NodeRef(int(level[4:]), int(node_id[5:])), progress=lambda *_: None,
                   cancel=threading.Event())
    step(f"node page {node}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("recall", "map", "node"))
    parser.add_argument("--node", default="lvl_3/node_123", help="for node: the node whose page is loaded")
    parser.add_argument("index")
    parser.add_argument("--sample", type=int, default=100)
    parser.add_argument("--search-exp", default="1,2,4,8")
    args = parser.parse_args()
    if args.action == "recall":
        recall(args.index, args.sample, [int(e) for e in args.search_exp.split(",")])
    elif args.action == "map":
        index_map(args.index)
    else:
        node_page(args.index, args.node)


if __name__ == "__main__":
    main()
