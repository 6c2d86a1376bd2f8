"""`ecpfs-viewer drift INDEX [--against FRESH]` and `ecpfs-viewer drift-sim ROWS.npy`: both drive
model/drift (the window's Diagnostics ▸ Drift… and Build ▸ Simulate Drift… run the same functions)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ecpfs_viewer.cli.commands import add_command
from ecpfs_viewer.cli.contract import EXIT_FAILED, EXIT_OK, versioned
from ecpfs_viewer.cli.numbers import AtLeast, IntList, Positive, add_search_exp
from ecpfs_viewer.model.drift.text import fixed, report_lines

if TYPE_CHECKING:
    from ecpfs_viewer.model.drift.report import DriftReport
    from ecpfs_viewer.model.drift.simulate import DriftSimulation
    from ecpfs_viewer.model.drift.verdict import DriftThresholds


def _add_thresholds(p: argparse.ArgumentParser) -> None:
    from ecpfs_viewer.model.drift.verdict import DriftThresholds

    d = DriftThresholds()
    g = p.add_argument_group("thresholds (a rebuild is advised when any is crossed; docs/drift.md)")
    g.add_argument("--recall-drop", action=Positive, at_most=1, default=d.recall_drop, metavar="X",
                   help=f"a fresh build reaches this much more recall@k for the same cost (default {d.recall_drop})")
    g.add_argument("--cost-ratio", action=AtLeast, type=float, least=1, default=d.cost_ratio, metavar="X",
                   help=f"distance computations grew this many times (default {d.cost_ratio})")
    g.add_argument("--over-4x-share", action=Positive, at_most=1, default=d.over_4x_share, metavar="X",
                   help=f"this much more of the leaves hold over 4x the target (default {d.over_4x_share})")
    g.add_argument("--imbalance-ratio", action=AtLeast, type=float, least=1, default=d.imbalance_ratio, metavar="X",
                   help=f"the leaves' imbalance factor grew this many times (default {d.imbalance_ratio})")
    g.add_argument("--reach-gap", action=Positive, at_most=1, default=d.reach_gap, metavar="X",
                   help=f"inserted items reach their own leaf this much less often (default {d.reach_gap})")


def _measure_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--k", action=AtLeast, least=1, default=10, help="results per query (default 10)")
    add_search_exp(p, 4, least=1, help_text="the search_exp your searches use (default 4)")
    p.add_argument("--sample", action=AtLeast, least=1, default=200, metavar="N",
                   help="sample N stored items as queries (default 200)")
    p.add_argument("--seed", action=AtLeast, least=0, default=0, help="seed for the samples (default 0)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar (it is drawn only on a terminal anyway)")
    _add_thresholds(p)


def thresholds_of(args: argparse.Namespace) -> DriftThresholds:
    from ecpfs_viewer.cli.contract import UsageError
    from ecpfs_viewer.model.drift.verdict import DriftThresholds

    t = DriftThresholds(args.recall_drop, args.cost_ratio, args.over_4x_share, args.imbalance_ratio, args.reach_gap)
    if t.problems():
        raise UsageError("; ".join(t.problems()))
    return t


def add_drift_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """Register `drift INDEX [--against FRESH] [--search-exp 4] [thresholds] [--json]`."""
    from ecpfs_viewer.cli.remote import add_remote_options

    p: argparse.ArgumentParser = add_command(subparsers, "drift")
    p.add_argument("index", metavar="INDEX", help="index folder, .zip or URL")
    p.add_argument("--against", metavar="FRESH",
                   help="a fresh build of the same items to compare with (default: made in a temporary folder)")
    p.add_argument("--queries", metavar="Q.npy", help="2-D .npy of queries instead of --sample")
    p.add_argument("--built-items", action=AtLeast, least=1, default=None, metavar="N",
                   help="how many items the index was built with (default: told by offset representatives)")
    p.add_argument("--target-cluster-items", action=AtLeast, least=1, default=None, metavar="T",
                   help="the build's target leaf size (default: told by offset representatives)")
    p.add_argument("--force", action="store_true", help="make the fresh build even when it would be unusually large")
    _measure_options(p)
    add_remote_options(p)
    p.set_defaults(func=_drift_command)
    return p


def _drift_command(args: argparse.Namespace) -> int:
    from ecpfs_viewer.cli.search import run_body

    return run_body(_drift, args)


def _drift(args: argparse.Namespace) -> int:
    from ecpfs_viewer.cli.progress import TerminalProgress
    from ecpfs_viewer.cli.search import load_queries, open_index
    from ecpfs_viewer.model.drift.report import DriftSettings, drift_report

    settings = DriftSettings(search_exp=args.search_exp, k=args.k, sample=args.sample, seed=args.seed,
                             built_items=args.built_items, target=args.target_cluster_items,
                             thresholds=thresholds_of(args), force=args.force,
                             queries=load_queries(args.queries) if args.queries else None)
    index = open_index(args)
    against = open_index(args, args.against) if args.against else None
    with TerminalProgress(enabled=not args.quiet) as bar:
        report = drift_report(index, against, settings, progress=bar)
    if args.json:
        print(json.dumps(versioned(report.to_dict()), indent=2, default=_plain))
    else:
        print_report(report)
    return EXIT_FAILED if report.verdict.rebuild else EXIT_OK


def _plain(value: Any) -> Any:
    return value.tolist() if hasattr(value, "tolist") else str(value)


def print_report(r: DriftReport) -> None:
    """The report as text (the window shows the same lines)."""
    print("\n".join(report_lines(r)))


# ------------------------------------------------------------------------------------ drift-sim


def add_drift_sim_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """Register `drift-sim ROWS.npy [--built 20,40,60,80,100] [build options] [--search-exp 4] [--json]`."""
    from ecpfs_viewer.model.ecpfs.sizing import DTYPE_CHOICES

    p: argparse.ArgumentParser = add_command(subparsers, "drift-sim")
    p.add_argument("input", metavar="ROWS.npy", help="the rows, in the order they would arrive")
    p.add_argument("--built", action=IntList, least=1, default=(20, 40, 60, 80, 100),
                   help="percentages of the rows to build on before adding the rest (default 20,40,60,80,100)")
    p.add_argument("--levels", action=AtLeast, least=1, default=3, help="node levels below the root (default 3)")
    p.add_argument("--target-cluster-items", action=AtLeast, least=1, default=100,
                   help="average leaf size to aim for (default 100)")
    p.add_argument("--metric", choices=("L2", "IP"), type=str.upper, default="L2")
    p.add_argument("--dtype", choices=DTYPE_CHOICES, default="native", help="stored embedding type")
    p.add_argument("--normalized", action="store_true", help="promise that vectors are unit length")
    p.add_argument("--work-dir", metavar="DIR", help="where the indexes are made (default: the temporary folder)")
    _measure_options(p)
    p.set_defaults(func=_drift_sim_command, index=None)
    return p


def _drift_sim_command(args: argparse.Namespace) -> int:
    from ecpfs_viewer.cli.search import run_body

    args.index = args.input
    return run_body(_drift_sim, args)


def _drift_sim(args: argparse.Namespace) -> int:
    from ecpfs_viewer.cli.progress import TerminalProgress
    from ecpfs_viewer.model.build.builder import BuildParams
    from ecpfs_viewer.model.drift.report import DriftSettings
    from ecpfs_viewer.model.drift.simulate import simulate_drift

    params = BuildParams(levels=args.levels, target_cluster_items=args.target_cluster_items, metric=args.metric,
                         is_normalized=args.normalized, dtype=args.dtype)
    settings = DriftSettings(search_exp=args.search_exp, k=args.k, sample=args.sample, seed=args.seed,
                             thresholds=thresholds_of(args))
    with TerminalProgress(enabled=not args.quiet) as bar:
        sim = simulate_drift(args.input, params, [min(100, b) for b in args.built], settings,
                             work_dir=args.work_dir, progress=bar)
    if args.json:
        print(json.dumps(versioned(sim.to_dict()), indent=2, default=_plain))
    else:
        print_simulation(sim)
    return EXIT_OK


def print_simulation(sim: DriftSimulation) -> None:
    p = sim.params
    print(f"{sim.input}: {sim.rows:,} x {sim.dim}; levels {p.levels}, target {p.target_cluster_items}, {p.metric}; "
          f"recall@{sim.k} and distance computations at search_exp {sim.search_exp}; against a build of all rows\n")
    print("inserted  recall  fresh  same cost  distances  fresh  leaves  >2x  >4x  fresh>4x  imbalance  fresh  "
          "reach ins.  rebuild")
    points = sorted(sim.points, key=lambda pt: pt.inserted_percent)
    for pt in points:
        d = pt.to_dict()
        same = ("≥" if d["same_cost_bound"] == "at least" else "≤" if d["same_cost_bound"] else " ") + \
            f"{d['fresh_recall_same_cost']:.3f}"
        print(f"{pt.inserted_percent:>7.0f}%  {d['recall']:.3f}  {d['fresh_recall']:.3f}  {same:>9}  "
              f"{d['distance_computations']:>9,.0f}  {d['fresh_distance_computations']:>5,.0f}  {d['leaves']:>6,}  "
              f"{d['over_2x_target']:>3,}  {d['over_4x_target']:>3,}  {d['fresh_over_4x_target']:>8,}  "
              f"{fixed(d['imbalance_factor']):>9}  {fixed(d['fresh_imbalance_factor']):>5}  "
              f"{fixed(d['reach_inserted']):>10}  {'yes' if d['rebuild'] else 'no'}")
    for pt in points:
        if pt.report.verdict.rebuild:
            print(f"\n{pt.inserted_percent:.0f}% inserted: {pt.report.verdict.headline()}")
