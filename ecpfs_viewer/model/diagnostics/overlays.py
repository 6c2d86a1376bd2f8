"""Per-node values of the workload and self-reachability for the index map.

Keyed by (level, node id), the form the map's ``overlay_from_nodes`` (model/diagnostics/index_map.py,
issue 24 §1) turns into a MapOverlay; nodes left out have no value.
"""

from __future__ import annotations

from ecpfs_viewer.model.diagnostics.reachability import ReachabilityReport
from ecpfs_viewer.model.diagnostics.workload import Workload

STRAYS_LEGEND = "share of a leaf's checked items whose search at search_exp 1 does not reach it (0 to 1)"
VISITS_LEGEND = "queries of the workload that read the node"


def stray_share_by_node(report: ReachabilityReport) -> dict[tuple[int, int], float]:
    """Every stored leaf with items: strays over items (over the items checked, on a sample)."""
    strays = report.per_leaf()
    scale = report.checked / report.total_items if report.total_items else 1.0
    return {(report.levels, leaf): strays.get(leaf, 0) / max(1.0, items * scale)
            for leaf, items in report.leaf_items.items() if items}


def visits_by_node(work: Workload) -> dict[tuple[int, int], float]:
    """Every stored node of every level: how many queries read it."""
    return {(lv.level, int(n)): float(v) for lv in work.levels for n, v in zip(lv.node_ids, lv.visits, strict=True)}
