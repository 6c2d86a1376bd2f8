"""Node-page figures on the benchmark index: parent lookup, breadcrumb, node info (cold and warm),
children, leaf items, spread and projections. Figures only; nothing passes or fails.

Index: 200,000 x 64 float32, levels 3, target_cluster_items 50 (16 / 256 / 4,000 nodes), built
once by benchmarks/_bench_index.py. "cold" is the first call on a fresh Hierarchy (it decodes the
parent level's node_ids once); "warm" is the median of later calls for other nodes.

    .venv-newest/bin/python benchmarks/bench_nodes.py
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_index import bench_index_path

from ecpfs_viewer.model.ecpfs import shared_level_stats
from ecpfs_viewer.model.ecpfs.nodes import NodeRef, breadcrumb, parent_of
from ecpfs_viewer.model.ecpfs.opened_index import open_index
from ecpfs_viewer.model.views.node_info import children_of, leaf_items, node_info, node_spread
from ecpfs_viewer.model.views.projection import project_level, project_node
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def ms(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    h = open_index(bench_index_path()).hierarchy
    leaves = [NodeRef(3, int(i)) for i in shared_level_stats(h, 3).node_ids[::97]]
    print(f"level statistics of lvl_3 computed first; {len(leaves)} leaves sampled")
    print(f"cold parent_of lvl_3 (decodes 256 node_ids)  {ms(lambda: parent_of(h, leaves[0])):8.1f} ms")
    print(f"cold breadcrumb (adds lvl_2's parent map)    {ms(lambda: breadcrumb(h, leaves[0])):8.1f} ms")
    print(f"first node_info                              {ms(lambda: node_info(h, leaves[0])):8.1f} ms")
    actions: tuple[tuple[str, Callable[[Hierarchy, NodeRef], object]], ...] = (
        ("parent_of", parent_of), ("breadcrumb", breadcrumb), ("node_info", node_info))
    for name, action in actions:
        times = []
        for ref in leaves[1:]:
            started = time.perf_counter()
            action(h, ref)
            times.append((time.perf_counter() - started) * 1000)
        print(f"warm {name:<12} median {statistics.median(times):6.2f} ms, max {max(times):6.2f} ms")
    internal = NodeRef(2, int(shared_level_stats(h, 2).node_ids[5]))
    print(f"children_of {internal.path:<16}             {ms(lambda: children_of(h, internal)):8.1f} ms")
    print(f"leaf_items {leaves[1].path:<18}            {ms(lambda: leaf_items(h, leaves[1])):8.1f} ms")
    print(f"node_spread {leaves[1].path:<17}            {ms(lambda: node_spread(h, leaves[1])):8.1f} ms")
    print(f"project_node leaf                            {ms(lambda: project_node(h, leaves[1])):8.1f} ms")
    print(f"project_node {internal.path} with members   "
          f"{ms(lambda: project_node(h, internal, members=True)):8.1f} ms")
    print(f"project_level 3 (4,000 reps, 256 parents)    {ms(lambda: project_level(h, 3)):8.1f} ms")


if __name__ == "__main__":
    main()
