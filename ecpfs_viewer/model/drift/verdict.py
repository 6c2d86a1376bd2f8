"""When to rebuild: the thresholds a drift report is judged by, and the verdict with its reasons.

Each threshold compares the grown index with a fresh build of its own items, so what the data
does to any build (clusters of unequal size, a hard recall target) is not held against inserts.
The defaults come from the drift simulation in docs/drift.md (a clustered 50 000 × 32 set built
on 20–100 % of its rows, the rest added): each is set where the curve shows inserts costing a
user something a rebuild gives back, and none trips for a fresh build.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class DriftThresholds:
    """A rebuild is advised when any one is crossed (each against the fresh build)."""

    recall_drop: float = 0.02  # a fresh build reaches this much more recall@k for the same cost (absolute)
    cost_ratio: float = 1.5  # distance computations per search at search_exp grew by this factor
    over_4x_share: float = 0.05  # this much more of the leaves hold over 4× the target
    imbalance_ratio: float = 1.5  # the leaf level's imbalance factor grew by this factor
    reach_gap: float = 0.05  # inserted items reach their own leaf this much less often than built ones

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    def problems(self) -> list[str]:
        """What is wrong with these thresholds ([] when usable)."""
        out = []
        for name in ("recall_drop", "over_4x_share", "reach_gap"):
            if not 0 <= getattr(self, name) <= 1:
                out.append(f"{name.replace('_', '-')} must be between 0 and 1 (got {getattr(self, name)})")
        for name in ("cost_ratio", "imbalance_ratio"):
            if getattr(self, name) < 1:
                out.append(f"{name.replace('_', '-')} must be at least 1 (got {getattr(self, name)})")
        return out


@dataclass(frozen=True)
class DriftFigures:
    """The figures a verdict reads, index against fresh build (None: not measured)."""

    search_exp: int
    k: int
    recall: float
    fresh_recall: float
    cost: float  # mean distance computations per search
    fresh_cost: float
    leaves: int
    over_4x: int
    fresh_leaves: int
    fresh_over_4x: int
    imbalance: float | None
    fresh_imbalance: float | None
    reach_inserted: float | None  # share of inserted items reaching their own leaf
    reach_built: float | None
    target: int
    equal_cost_recall: float  # the fresh build's recall at this index's cost
    equal_cost_bound: str = ""  # "at least" / "at most" when the cost lies beyond what was measured


@dataclass(frozen=True)
class Verdict:
    rebuild: bool
    reasons: tuple[str, ...]  # why a rebuild is advised (empty when it is not)
    checks: tuple[str, ...]  # every threshold, measured, whether crossed or not
    command: str  # the `ecpfs-viewer build` line that rebuilds

    def headline(self) -> str:
        if self.rebuild:
            return "rebuild: " + " and ".join(self.reasons)
        return "no rebuild needed: every figure is within its threshold of a fresh build"

    def to_dict(self) -> dict[str, Any]:
        return {"rebuild": self.rebuild, "reasons": list(self.reasons), "checks": list(self.checks),
                "headline": self.headline(), "command": self.command}


def judge(f: DriftFigures, t: DriftThresholds, command: str) -> Verdict:
    """The verdict: a reason for every threshold crossed, a line for every threshold checked."""
    reasons: list[str] = []
    checks: list[str] = []

    def check(crossed: bool, reason: str, line: str) -> None:
        checks.append(("CROSSED " if crossed else "ok ") + line)
        if crossed:
            reasons.append(reason)

    drop = f.equal_cost_recall - f.recall
    bound = f"{f.equal_cost_bound} " if f.equal_cost_bound else ""
    check(drop >= t.recall_drop,
          f"recall@{f.k} at search_exp {f.search_exp} is {f.recall:.2f} where a fresh build reaches {bound}"
          f"{f.equal_cost_recall:.2f} for the same {f.cost:,.0f} distance computations",
          f"recall@{f.k} for the same cost ({f.cost:,.1f} distance computations): {f.recall:.4f} vs fresh "
          f"{bound}{f.equal_cost_recall:.4f} (drop {drop:+.4f}; threshold {t.recall_drop}); at search_exp "
          f"{f.search_exp} the fresh build reaches {f.fresh_recall:.4f}")
    ratio = f.cost / f.fresh_cost if f.fresh_cost > 0 else 1.0
    check(ratio >= t.cost_ratio,
          f"a search at search_exp {f.search_exp} computes {ratio:.1f}× the distances of a fresh build "
          f"({f.cost:,.0f} vs {f.fresh_cost:,.0f})",
          f"distance computations at search_exp {f.search_exp}: {f.cost:,.1f} vs fresh {f.fresh_cost:,.1f} "
          f"(×{ratio:.2f}; threshold ×{t.cost_ratio})")
    share = f.over_4x / f.leaves if f.leaves else 0.0
    fresh_share = f.fresh_over_4x / f.fresh_leaves if f.fresh_leaves else 0.0
    check(share - fresh_share >= t.over_4x_share,
          f"{f.over_4x:,} of {f.leaves:,} leaves exceed 4× the target of {f.target:,} items "
          f"(a fresh build: {f.fresh_over_4x:,} of {f.fresh_leaves:,})",
          f"leaves over 4× the target ({f.target:,}): {share:.1%} vs fresh {fresh_share:.1%} "
          f"(threshold +{t.over_4x_share:.0%})")
    if f.imbalance is not None and f.fresh_imbalance:
        grown = f.imbalance / f.fresh_imbalance
        check(grown >= t.imbalance_ratio,
              f"the leaves' imbalance factor is {f.imbalance:.2f} against {f.fresh_imbalance:.2f} for a fresh build",
              f"leaf imbalance factor: {f.imbalance:.3f} vs fresh {f.fresh_imbalance:.3f} (×{grown:.2f}; "
              f"threshold ×{t.imbalance_ratio})")
    if f.reach_inserted is not None and f.reach_built is not None:
        gap = f.reach_built - f.reach_inserted
        check(gap >= t.reach_gap,
              f"{f.reach_inserted:.0%} of the inserted items reach their own leaf against {f.reach_built:.0%} of "
              f"the built ones",
              f"own leaf reached: inserted {f.reach_inserted:.4f} vs built {f.reach_built:.4f} (gap {gap:+.4f}; "
              f"threshold {t.reach_gap})")
    return Verdict(bool(reasons), tuple(reasons), tuple(checks), command)
