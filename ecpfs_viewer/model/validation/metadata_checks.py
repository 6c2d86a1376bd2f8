"""The checks of §10 that need only metadata: layout, data types, counters and every level's nodes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ecpfs_viewer.model.ecpfs import (
    INFO_INTEGERS,
    MAX_LISTED_LEVELS,
    ROOT_EMBEDDINGS,
    IndexSummary,
    LevelStats,
    MetadataReader,
    level_plan,
    shared_level_stats,
)
from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.paths import level_path
from ecpfs_viewer.model.ecpfs.sizing import STORED_DTYPES
from ecpfs_viewer.model.formatting import count_noun
from ecpfs_viewer.model.validation.report import Check
from ecpfs_viewer.model.zarrtree.nodes import NodeKind

#: A leaf is reported as slowing search when it spans at least this many chunks ...
DRIFT_MIN_CHUNKS = 3
#: ... and lies above Q3 + this many interquartile ranges of its level's leaf sizes (Tukey's far out).
DRIFT_FENCE_IQR = 3.0
#: Oversized leaves named one by one; the rest are counted in one finding.
MAX_OVERSIZED_LISTED = 10


def check_layout(check: Check, summary: IndexSummary) -> bool:
    """§10 items 1 and 2 plus the §7 generations; False when nothing more can be checked.

    What the layout means is one finding (``layout.finding``), never restated: a store that is
    not an index names its missing arrays in that one message.
    """
    layout = summary.layout
    if summary.unread is not None:  # not read on the way: no fact about the layout to report
        check.add(fc.HEADER_UNREAD, "", summary.unread)
        return False
    if layout.finding is not None:
        check.findings.append(layout.finding)
    if not layout.supported:
        return False
    for path in layout.missing:
        check.add(fc.MISSING_REQUIRED, path, "missing (required by format version 1)")
    return True


def check_types(check: Check, reader: MetadataReader, summary: IndexSummary) -> None:
    """§10 item 3: data types and ranks of the info scalars and the top-level arrays."""
    for path in INFO_INTEGERS:
        meta = reader.array(path)
        if meta is None:
            continue
        if meta.data_type != "uint32":
            check.add(fc.INFO_SCALAR_TYPE, path, f"must be uint32, found {meta.data_type}")
        if meta.shape != ():
            check.add(fc.INFO_SCALAR_TYPE, path, f"must be a scalar (shape []), found shape {list(meta.shape)}")
    metric = reader.array("info/metric")
    if metric is not None and (metric.data_type != "string" or metric.shape != ()):
        check.add(fc.INFO_SCALAR_TYPE,
                  "info/metric", f"must be a variable-length string scalar, found {metric.data_type} "
                                   f"with shape {list(metric.shape)}")
    normalized = reader.array("info/is_normalized")
    if normalized is not None and (normalized.data_type != "bool" or normalized.shape != ()):
        check.add(fc.INFO_SCALAR_TYPE, "info/is_normalized", f"must be a bool scalar, found {normalized.data_type} "
                                          f"with shape {list(normalized.shape)}")
    rep_ids = reader.array("rep_item_ids")
    if rep_ids is not None:
        if rep_ids.data_type != "uint32":
            check.add(fc.REP_IDS_TYPE, "rep_item_ids", f"must be uint32, found {rep_ids.data_type}")
        if len(rep_ids.shape) != 1:
            check.add(fc.REP_IDS_TYPE, "rep_item_ids", f"must be 1-D, found shape {list(rep_ids.shape)}")
    if summary.dtype is not None and summary.dtype not in STORED_DTYPES:
        check.add(fc.STORED_DTYPE,
                  ROOT_EMBEDDINGS, f"data type {summary.dtype} is not one of {', '.join(STORED_DTYPES)}")
    rep_emb = reader.array("rep_embeddings")
    if rep_emb is not None:
        if summary.dtype is not None and rep_emb.data_type != summary.dtype:
            check.add(fc.REP_EMBEDDINGS_MISMATCH,
                      "rep_embeddings", f"data type {rep_emb.data_type} differs from {ROOT_EMBEDDINGS} "
                                          f"({summary.dtype})")
        if len(rep_emb.shape) != 2 or (summary.dim is not None and rep_emb.shape[1] != summary.dim):
            check.add(fc.REP_EMBEDDINGS_MISMATCH,
                      "rep_embeddings", f"shape {list(rep_emb.shape)} does not match dimension {summary.dim}")
        elif summary.representatives is not None and rep_emb.rows != summary.representatives:
            check.add(fc.REP_EMBEDDINGS_MISMATCH,
                      "rep_embeddings", f"{rep_emb.rows} rows but rep_item_ids has {summary.representatives}")
    if summary.levels is not None and summary.levels < 1:
        check.add(fc.LEVELS_TOO_FEW, "info/levels", f"must be at least 1, found {summary.levels}")
    if summary.fan_out is not None and summary.representatives is not None and \
            summary.fan_out > summary.representatives:
        check.add(fc.FAN_OUT_TOO_LARGE,
                  ROOT_EMBEDDINGS, f"{summary.fan_out} rows but there are only {summary.representatives} "
                                     "representatives")
    implicit = [p or "/" for p in ("", "info", "index_root") if _is_implicit(reader, p)]
    implicit += [p for p in summary.level_paths if _is_implicit(reader, p)]
    if implicit:
        check.add(fc.IMPLICIT_GROUPS, "", "no group metadata (zarr.json) at " + ", ".join(implicit)
                      + " (written before 0.9.99); zarr-python cannot open these as groups")


def _is_implicit(reader: MetadataReader, path: str) -> bool:
    node = reader.h.root() if not path else reader.node(path)
    return node is not None and node.kind is NodeKind.IMPLICIT_GROUP


def check_counters(check: Check, summary: IndexSummary) -> None:
    gap = summary.gap
    if gap is not None and gap > 0:
        check.add(fc.ITEM_ID_GAP, "info/next_item_id", f"{count_noun(gap, 'item id')} reserved but never written "
                                           f"(next_item_id {summary.next_item_id} > total_items "
                                           f"{summary.total_items}); likely a crash during insert")
    elif gap is not None and gap < 0:
        check.add(fc.NEXT_ID_BELOW_TOTAL,
                  "info/next_item_id", f"next_item_id {summary.next_item_id} is below total_items "
                                           f"{summary.total_items}; impossible upstream, likely corruption")
    expected = summary.expected_fan_out
    if expected is not None and summary.fan_out is not None and summary.fan_out != expected:
        check.add(fc.FAN_OUT_DIFFERS,
                  ROOT_EMBEDDINGS, f"fan-out {summary.fan_out} differs from ceil(R^(1/L)) = {expected} "
                                       f"(R = {summary.representatives}, L = {summary.levels}); "
                                       "fine for custom or hand-made indexes")


#: Items below which a tree's shape does not matter to search cost (upstream's two-cluster fixture, 8 items with
#: fan-out 2, is not worth a warning)
MIN_SHAPE_ITEMS = 100


def check_fan_out(check: Check, summary: IndexSummary, levels: list[LevelStats]) -> None:
    """A fan-out of 1 or 2 at the root or (on average) at an internal level: all depth, no breadth."""
    if (summary.total_items or 0) < MIN_SHAPE_ITEMS:
        return
    if summary.fan_out is not None and summary.fan_out <= 2 and (summary.representatives or 0) > 1:
        check.add(fc.FAN_OUT_TINY, ROOT_EMBEDDINGS,
                  f"fan-out {summary.fan_out} (R = {summary.representatives}, L = {summary.levels}): each node has at "
                  f"most {summary.fan_out} children, so a search walks a deep, narrow tree; use fewer levels or a "
                  "smaller target_cluster_items")
        return
    for stats in levels:
        if stats.is_leaf is not False or len(stats.sizes) < 2:
            continue
        mean = float(stats.sizes.mean())
        if mean <= 2:
            check.add(fc.FAN_OUT_TINY, stats.path,
                      f"{len(stats.sizes):,} internal nodes with {mean:.2f} rows (children) each on average: the "
                      "tree is all depth and no breadth here; fewer levels give wider nodes")


def check_levels(check: Check, reader: MetadataReader, summary: IndexSummary) -> list[LevelStats]:
    """§10 items 4-6 (from metadata) and the level warnings, for every lvl_N."""
    plan = level_plan(summary)  # from the stored lvl_N: info/levels may be huge or unreadable
    count = summary.levels or 0
    check.total = len(plan.stored) + 1
    if count >= 1 and 1 in plan.missing:
        check.add(fc.LEVEL_ONE_MISSING, level_path(1), "missing; an index needs at least level 1")
    if plan.extra and summary.levels is not None:
        check.add(fc.EXTRA_LEVELS, plan.extra[0], f"{', '.join(plan.extra)} not part of an index with "
                                     f"{count_noun(count, 'level')}; ignored")
    for level in plan.missing[:MAX_LISTED_LEVELS]:
        if level > 1:
            check.add(fc.MISSING_LEVEL_GROUP,
                      level_path(level), "missing level group; every node at this level is absent")
    if plan.missing_count > len(plan.missing):
        check.add(fc.MISSING_LEVEL_GROUP,
                  "info/levels", f"declares {count:,} levels but {count_noun(len(plan.stored), 'level')} "
                                     f"are stored; {plan.missing_count:,} are missing")
    stats: list[LevelStats] = []
    for level in plan.stored:
        check.step(f"reading metadata of {level_path(level)}")
        level_result = shared_level_stats(check.h, level, summary)
        stats.append(level_result)
        check.findings += level_result.findings
    node_total = sum(s.node_count for s in stats)
    unread = sum(len(s.unread_ids) for s in stats)
    incomplete = [s.path for s in stats if not s.complete]
    if incomplete:
        lacking = f"{count_noun(unread, 'node')} in" if unread else "what is in"
        check.checked.append(f"metadata of {node_total:,} nodes on {count_noun(len(stats), 'level')}; "
                             f"{lacking} {', '.join(incomplete)} could not be read")
    else:
        kept = next((s.path for s in stats if s.kept), None)
        check.checked.append(f"metadata of all {node_total:,} nodes on {count_noun(len(stats), 'level')}"
                             + (f" ({kept}'s from the cache folder: none of its documents has changed since an "
                                "earlier process read them)" if kept else ""))
    if stats and stats[-1].is_leaf:
        leaves = stats[-1]
        # a sum lacking leaves that could not be read is no finding (the level's finding says what it lacks)
        if leaves.complete and summary.total_items is not None and leaves.leaf_sum != summary.total_items:
            sizeless = len(leaves.sizeless)
            unsized = f" ({count_noun(sizeless, 'leaf', 'leaves')} without usable embeddings not counted)" \
                if sizeless else ""
            check.add(fc.LEAF_SUM_DIFFERS,
                leaves.path,
                f"leaf sizes sum to {leaves.leaf_sum:,} but total_items is {summary.total_items:,}{unsized}",
            )
        _check_oversized_leaves(check, leaves)
    return stats


def _check_oversized_leaves(check: Check, leaves: LevelStats) -> None:
    """One warning per leaf that makes search slow (see :func:`oversized_leaves`), the rule stated."""
    found = oversized_leaves(leaves)
    if not found:
        return
    rule = oversize_rule()
    for leaf in found[:MAX_OVERSIZED_LISTED]:
        check.add(fc.OVERSIZED_LEAF,
            leaf.path,
            f"{leaf.rows:,} rows in {leaf.chunks:,} chunks of {leaf.chunk_rows:,}, far above this level's "
            f"leaves (median {leaf.median:g}, Q3 + {DRIFT_FENCE_IQR:g} x IQR = {leaf.fence:,.0f}); a search "
            f"that visits it decodes every chunk. {rule}",
        )
    if len(found) > MAX_OVERSIZED_LISTED:
        rest = len(found) - MAX_OVERSIZED_LISTED
        check.add(fc.OVERSIZED_LEAF, leaves.path, f"{count_noun(rest, 'more leaf', 'more leaves')} like "
                                   f"{found[0].path} (largest first). {rule}")


@dataclass(frozen=True)
class OversizedLeaf:
    """A leaf far larger than the rest of its level and spanning several chunks."""

    path: str
    rows: int
    chunk_rows: int
    median: float
    fence: float  # Q3 + DRIFT_FENCE_IQR x IQR of the level's leaf sizes

    @property
    def chunks(self) -> int:
        return -(-self.rows // self.chunk_rows)


def oversize_rule() -> str:
    """The rule behind the big-leaf warning, in words (shown in each finding)."""
    return (f"Rule: a leaf is flagged when it spans at least {DRIFT_MIN_CHUNKS} chunks and exceeds "
            f"Q3 + {DRIFT_FENCE_IQR:g} x IQR of its level's leaf sizes; eCP does not balance clusters, "
            "so uneven sizes alone are not a problem.")


def oversized_leaves(leaves: LevelStats) -> list[OversizedLeaf]:
    """Leaves that really hurt search, largest first: at least DRIFT_MIN_CHUNKS chunks and far above
    the level's spread (Tukey's far-out fence). Imbalance as such is information, not a warning."""
    sizes = leaves.sizes
    chunk_rows = leaves.chunk_rows
    if sizes.size < 4 or not chunk_rows:
        return []
    q1, median, q3 = (float(v) for v in np.percentile(sizes, [25, 50, 75]))
    fence = q3 + DRIFT_FENCE_IQR * (q3 - q1)
    least = max(fence, (DRIFT_MIN_CHUNKS - 1) * chunk_rows)
    return [
        OversizedLeaf(node.path, node.rows, chunk_rows, median, fence)
        for node in leaves.largest(int((sizes > least).sum()))
    ]
