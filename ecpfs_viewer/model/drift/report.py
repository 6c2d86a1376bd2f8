"""How far an index has drifted from a fresh build of its own items, and whether to rebuild.

One model job for ``ecpfs-viewer drift`` and Diagnostics ▸ Drift…: the id gap, each level's node
sizes beside the fresh build's, how often inserted items reach their own leaf against built ones
(model/diagnostics/reachability.py), recall@k and cost at one search_exp on the same queries for
both (model/tuning/compare.py), and the verdict (verdict.py) with the ``build`` line that rebuilds.
The fresh build is made in a temporary folder (fresh.py) unless one is given.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ecpfs_viewer.model.diagnostics.reachability import SAMPLE, self_reachability
from ecpfs_viewer.model.drift.equal_cost import EqualCost, equal_cost_recall
from ecpfs_viewer.model.drift.fresh import (
    DriftCancelled,
    DriftError,
    fresh_build,
    fresh_params,
    plan_fresh,
    rebuild_command,
)
from ecpfs_viewer.model.drift.origin import BuildOrigin, build_origin
from ecpfs_viewer.model.drift.verdict import DriftFigures, DriftThresholds, Verdict, judge
from ecpfs_viewer.model.ecpfs.opened_index import open_index
from ecpfs_viewer.model.ecpfs.summary import IndexSummary, summarize
from ecpfs_viewer.model.search.index import IndexReader, index_reader
from ecpfs_viewer.model.search.item_map import ItemMap
from ecpfs_viewer.model.search.queries import sample_items
from ecpfs_viewer.model.search.results import ProgressCallback, Reporter, SearchProgress
from ecpfs_viewer.model.tasks import Cancelled
from ecpfs_viewer.model.tuning.balance import LevelBalance
from ecpfs_viewer.model.tuning.compare import RecallComparison, compare_recall, index_side

VECTORS_PLACEHOLDER = "ITEMS.npy"
VECTORS_NOTE = (f"{VECTORS_PLACEHOLDER}: every item's vector in id order, i.e. the rows the index was built from "
                f"followed by each batch added since, in the order they were added")


@dataclass(frozen=True)
class LevelDrift:
    """One level's node sizes in the index and in the fresh build; leaf levels count big leaves."""

    index: LevelBalance
    fresh: LevelBalance | None
    target: int

    def over(self, factor: int, fresh: bool = False) -> int:
        side = self.fresh if fresh else self.index
        if side is None or not side.is_leaf:
            return 0
        return int((side.sizes > factor * self.target).sum())

    def to_dict(self) -> dict[str, Any]:
        def side(b: LevelBalance | None, fresh: bool) -> dict[str, Any] | None:
            if b is None:
                return None
            return {**b.to_dict(), "over_2x_target": self.over(2, fresh) if b.is_leaf else None,
                    "over_4x_target": self.over(4, fresh) if b.is_leaf else None}

        return {"level": self.index.level, "is_leaf": self.index.is_leaf, "index": side(self.index, False),
                "fresh": side(self.fresh, True)}


@dataclass(frozen=True)
class ReachShare:
    """Items of one kind (built or inserted) checked, and how many reach their own leaf at search_exp 1."""

    checked: int
    reached: int

    @property
    def share(self) -> float | None:
        return self.reached / self.checked if self.checked else None

    def to_dict(self) -> dict[str, Any]:
        return {"checked": self.checked, "reached": self.reached, "share": self.share}


@dataclass(frozen=True)
class DriftReport:
    index: str
    fresh: str  # "a fresh build in a temporary folder" or the location given
    total_items: int | None
    next_item_id: int | None
    origin: BuildOrigin
    levels: tuple[LevelDrift, ...]
    reach_built: ReachShare | None
    reach_inserted: ReachShare | None
    reach_note: str
    recall: RecallComparison
    equal_cost: EqualCost
    thresholds: DriftThresholds
    figures: DriftFigures
    verdict: Verdict

    @property
    def gap(self) -> int | None:
        if self.total_items is None or self.next_item_id is None:
            return None
        return self.next_item_id - self.total_items

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "fresh": self.fresh, "total_items": self.total_items,
                "next_item_id": self.next_item_id, "gap": self.gap, "origin": self.origin.to_dict(),
                "levels": [lv.to_dict() for lv in self.levels],
                "reachability": {"built": self.reach_built and self.reach_built.to_dict(),
                                 "inserted": self.reach_inserted and self.reach_inserted.to_dict(),
                                 "note": self.reach_note},
                "recall": {"k": self.figures.k, "search_exp": self.figures.search_exp, "source": self.recall.source,
                           "note": self.recall.note, "index": self.recall.curve_a[0].to_dict(),
                           "fresh": self.recall.curve_b[0].to_dict(), "equal_cost": self.equal_cost.to_dict()},
                "thresholds": self.thresholds.to_dict(), "verdict": self.verdict.to_dict(),
                "vectors_note": VECTORS_NOTE}


@dataclass(frozen=True)
class DriftSettings:
    search_exp: int = 4
    k: int = 10
    sample: int = 200  # queries: items sampled from the index
    seed: int = 0
    built_items: int | None = None  # the build's size, when the user knows it
    target: int | None = None  # the build's target_cluster_items, when the user knows it
    thresholds: DriftThresholds = field(default_factory=DriftThresholds)
    force: bool = False  # a fresh build over Build's size guard
    work_dir: str | None = None  # where the fresh build is made (default: the temporary folder)
    queries: Any = None  # a query matrix instead of sampled items


def drift_report(index: IndexReader, against: IndexReader | None = None, settings: DriftSettings | None = None, *,
                 progress: ProgressCallback | None = None, cancel: threading.Event | None = None) -> DriftReport:
    """The drift report of ``index`` against ``against`` or a fresh build of its items (made and removed here)."""
    s = settings or DriftSettings()
    problems = s.thresholds.problems()
    if s.search_exp < 1 or s.k < 1:
        problems.append(f"search_exp and k must be at least 1 (got {s.search_exp}, {s.k})")
    if problems:
        raise DriftError("; ".join(problems))
    summary = summarize(index.hierarchy)
    if not summary.levels or not summary.dim:
        raise DriftError(f"{index.label}: no levels or no dimension: not an index a drift report can read")
    origin = build_origin(index, built_items=s.built_items, target=s.target)
    try:
        if against is not None:
            return _measure(index, against, against.label, summary, origin, s, progress, cancel)
        plan = plan_fresh(summary, origin, summary.total_items or 0)
        with fresh_build(index, summary, plan, parent=Path(s.work_dir) if s.work_dir else None, force=s.force,
                         progress=progress, cancel=cancel) as path:
            fresh = index_reader(open_index(path))
            what = f"a fresh build of its {plan.rows:,} items (made in a temporary folder, removed)"
            return _measure(index, fresh, what, summary, origin, s, progress, cancel)
    except DriftCancelled:
        raise
    except Cancelled:  # a search's or a reader's own cancel type: one type for the caller
        raise DriftCancelled() from None


def _phase(progress: ProgressCallback | None, name: str) -> ProgressCallback | None:
    if progress is None:
        return None
    return lambda p: progress(SearchProgress(f"{name}: {p.phase}" if p.phase else name, p.done, p.total))


def _item_map(reader: IndexReader, name: str, progress: ProgressCallback | None,
              cancel: threading.Event | None) -> ItemMap:
    found = reader.locator.read_everything(Reporter(_phase(progress, f"{name}: item ids"), cancel))
    return found if found is not None else ItemMap.of_leaves([], [])


def _measure(index: IndexReader, fresh: IndexReader, fresh_label: str, summary: IndexSummary, origin: BuildOrigin,
             s: DriftSettings, progress: ProgressCallback | None, cancel: threading.Event | None) -> DriftReport:
    map_i, map_f = _item_map(index, "index", progress, cancel), _item_map(fresh, "fresh build", progress, cancel)
    side_i, side_f = index_side(index, map_i), index_side(fresh, map_f)
    levels = tuple(LevelDrift(b, side_f.balance[i] if i < len(side_f.balance) else None, origin.target)
                   for i, b in enumerate(side_i.balance))
    built, inserted, note = _reach(index, map_i, origin, s, progress, cancel)
    recall = _recall(index, fresh, map_i, map_f, s, progress, cancel)
    leaf = levels[-1]
    point, fresh_point = recall.curve_a[0], recall.curve_b[0]
    same_cost = equal_cost_recall(fresh, recall.queries_b, s.k, fresh_point, point.distance_computations,
                                  progress=_phase(progress, "fresh build at the index's cost"), cancel=cancel)
    figures = DriftFigures(
        s.search_exp, s.k, point.recall, fresh_point.recall, point.distance_computations,
        fresh_point.distance_computations, leaf.index.nodes, leaf.over(4), leaf.fresh.nodes if leaf.fresh else 0,
        leaf.over(4, True), leaf.index.imbalance_factor, leaf.fresh.imbalance_factor if leaf.fresh else None,
        inserted.share if inserted else None, built.share if built else None, origin.target,
        same_cost.fresh_recall, same_cost.bound)
    stem = Path(index.label.rstrip("/")).name.removesuffix(".zarr") or "index"
    command = rebuild_command(fresh_params(summary, origin), VECTORS_PLACEHOLDER, f"{stem}-rebuilt.zarr")
    return DriftReport(index.label, fresh_label, summary.total_items, summary.next_item_id, origin, levels,
                       built, inserted, note, recall, same_cost, s.thresholds, figures,
                       judge(figures, s.thresholds, command))


def _reach(index: IndexReader, item_map: ItemMap, origin: BuildOrigin, s: DriftSettings,
           progress: ProgressCallback | None, cancel: threading.Event | None
           ) -> tuple[ReachShare | None, ReachShare | None, str]:
    """Self-reachability of the built and of the inserted items, apart."""
    report = self_reachability(index, seed=s.seed, progress=_phase(progress, "self-reachability"), cancel=cancel)
    if report.sampled:
        checked = np.asarray(sample_items(index, SAMPLE, s.seed).self_ids, np.int64)
    else:
        checked = item_map.unique_ids().astype(np.int64)
    strays = np.asarray(report.stray_items, np.int64)
    if not origin.known:
        everyone = ReachShare(len(checked), len(checked) - len(strays))
        return everyone, None, f"{report.sentence()}; built and inserted items cannot be told apart ({origin.how})"
    assert origin.built_below is not None and origin.inserted_from is not None
    def share(in_group: np.ndarray, strays_in_group: np.ndarray) -> ReachShare:
        return ReachShare(int(in_group.sum()), int(in_group.sum() - strays_in_group.sum()))

    built = share(checked < origin.built_below, strays < origin.built_below)
    inserted = share(checked >= origin.inserted_from, strays >= origin.inserted_from)
    return built, (inserted if inserted.checked else None), report.sentence()


def _recall(index: IndexReader, fresh: IndexReader, map_i: ItemMap, map_f: ItemMap, s: DriftSettings,
            progress: ProgressCallback | None, cancel: threading.Event | None) -> RecallComparison:
    """Both on the same queries: sampled items both hold under the same ids (each left out of its own
    results), or, when the fresh build numbers them differently (an index with a gap), the vectors of
    items sampled from the index, or the user's queries."""
    ids_i, ids_f = map_i.unique_ids(), map_f.unique_ids()
    common = np.intersect1d(ids_i, ids_f)
    exps = (s.search_exp,)
    if s.queries is not None:
        return compare_recall(index, fresh, queries=s.queries, query_source="the queries given", k=s.k,
                              search_exps=exps, common_ids=common, progress=progress, cancel=cancel)
    if np.array_equal(ids_i, ids_f):
        return compare_recall(index, fresh, sample=s.sample, seed=s.seed, k=s.k, search_exps=exps,
                              common_ids=common, progress=progress, cancel=cancel)
    chosen = sample_items(index, s.sample, s.seed, _phase(progress, "query vectors"), cancel)
    return compare_recall(index, fresh, queries=chosen.vectors, query_source=f"the vectors of {chosen.source}",
                          k=s.k, search_exps=exps, common_ids=common, progress=progress, cancel=cancel)
