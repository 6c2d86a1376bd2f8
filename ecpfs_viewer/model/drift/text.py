"""The drift report as text: what `ecpfs-viewer drift` prints and the Drift dialog shows."""

from __future__ import annotations

from ecpfs_viewer.model.drift.report import VECTORS_NOTE, DriftReport


def fixed(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def report_lines(r: DriftReport) -> list[str]:
    """The report as lines of text: the facts, the levels, reachability, recall and cost, the verdict."""
    out: list[str] = []
    out.append(f"index: {r.index}\nagainst: {r.fresh}")
    gap = "unknown" if r.gap is None else f"{r.gap:,}"
    if r.gap:
        gap += " (ids reserved by an insert, never written)"
    out.append(f"items: {r.total_items:,}; next item id {r.next_item_id:,}; gap {gap}" if r.total_items is not None
          and r.next_item_id is not None else f"items: {r.total_items}; gap {gap}")
    out.append(f"build: {r.origin.how}; target {r.origin.target:,} items a leaf\n")
    out.append("level  side    nodes      CV  imbalance   >2x target  >4x target")
    for lv in r.levels:
        for name, side, fresh in (("index", lv.index, False), ("fresh", lv.fresh, True)):
            if side is None:
                continue
            over = (f"{lv.over(2, fresh):>11,}  {lv.over(4, fresh):>10,}" if side.is_leaf else f"{'':>11}  {'':>10}")
            out.append(f"{lv.index.level:>5}  {name:<5}  {side.nodes:>6,}  {fixed(side.coefficient_of_variation):>6}  "
                       f"{fixed(side.imbalance_factor):>9}  {over}".rstrip())
    out.append("")
    for name, share in (("built", r.reach_built), ("inserted", r.reach_inserted)):
        if share is not None:
            out.append(f"own leaf reached ({name}): {share.reached:,} of {share.checked:,} ({fixed(share.share, 4)})")
    out.append(f"  {r.reach_note}\n")
    f, rec = r.figures, r.recall
    out.append(f"recall@{f.k} at search_exp {f.search_exp} on {rec.source}:")
    out.append(f"  index {f.recall:.4f}, {f.cost:,.1f} distance computations a search")
    out.append(f"  fresh {f.fresh_recall:.4f}, {f.fresh_cost:,.1f} distance computations a search")
    same = r.equal_cost
    measured = ", ".join(f"{e}: {rc:.4f} at {c:,.0f}" for e, rc, c in same.points)
    out.append(f"  fresh at the index's cost: {same.bound + ' ' if same.bound else ''}{same.fresh_recall:.4f} "
               f"(search_exp {measured})\n")
    out.append("checks:")
    for line in r.verdict.checks:
        out.append(f"  {line}")
    out.append(f"\n{r.verdict.headline()}")
    out.append(f"rebuild with: {r.verdict.command}\n  ({VECTORS_NOTE})")
    return out
