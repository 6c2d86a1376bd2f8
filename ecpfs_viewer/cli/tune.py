"""`ecpfs-viewer tune`: build a grid of variants of one .npy and say which setting reaches the recall target cheapest.

Registered by ``cli/__init__.py``. Progress goes to stderr (a bar on a terminal, and one line per
measured variant unless --quiet); the table or --json goes to stdout. Exit status as in
`cli.contract`: 2 when the tune cannot start (a bad option, an input or query file that cannot be
read, a grid variant `build` would refuse, every variant over the size guard without --force, the
disk estimate over the free space), 1 when the input's data cannot be built, 130 for Ctrl+C; every
folder the tune wrote is removed on the way out.
"""

from __future__ import annotations

import argparse
import json
import sys

from ecpfs_viewer.cli.commands import add_command
from ecpfs_viewer.cli.contract import EXIT_CANNOT_START, EXIT_OK, CommandError, UsageError, versioned
from ecpfs_viewer.cli.numbers import AtLeast, IntList, Positive, add_search_exp
from ecpfs_viewer.cli.progress import TerminalProgress
from ecpfs_viewer.model.build.builder import BuildError
from ecpfs_viewer.model.formatting import format_bytes
from ecpfs_viewer.model.tuning.grid_sizes import left_out_text
from ecpfs_viewer.model.tuning.tune import (
    COST_AXES,
    DEFAULT_COST,
    TuneError,
    TuneGrid,
    TuneReport,
    TuneSettings,
    VariantResult,
    tune,
)


class CannotTune(CommandError, code=EXIT_CANNOT_START, kind="cannot_start"):
    """The grid, the input or the queries stop the tune before anything is built."""


def add_tune_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register `tune IN.npy [grid and measurement options]`."""
    from ecpfs_viewer.cli.search import add_query_source, add_scheduler_option

    p = add_command(subparsers, "tune")
    p.add_argument("input", metavar="IN.npy", help="2-D .npy of embeddings")
    p.add_argument("--levels", action=IntList, least=1, default=(1, 2, 3),
                   help="comma-separated levels (default 1,2,3)")
    p.add_argument("--target-cluster-items", action=IntList, least=1, default=(25, 50, 100, 200),
                   help="comma-separated target leaf sizes (default 25,50,100,200)")
    p.add_argument("--rep-selection", default="offset", help="offset, random or offset,random (default offset)")
    p.add_argument("--seed", action=AtLeast, least=0, default=0,
                   help="seed of the held-out rows and of random selection (default 0)")
    p.add_argument("--metric", choices=("L2", "IP"), type=str.upper, default="L2")
    add_query_source(p, "--holdout", "rows left out of the builds and used as queries (default 200)", default=200,
                     queries_help="2-D .npy of queries (then no rows are held out)", seed=False)
    p.add_argument("--recall-target", action=Positive, at_most=1.0, default=0.9, metavar="R",
                   help="recall@k to reach, in (0, 1] (default 0.9)")
    p.add_argument("--k", action=AtLeast, least=1, default=10, help="neighbours per query (default 10)")
    add_search_exp(p, (1, 2, 4, 8, 16))
    p.add_argument("--cost", choices=tuple(COST_AXES), default=DEFAULT_COST,
                   help="cost axis of the frontier and the recommendation (default distance_computations)")
    p.add_argument("--force", action="store_true",
                   help="build the grid's variants that are unusually large for the input too (left out otherwise, "
                        "as `build` asks for --force)")
    p.add_argument("--keep", metavar="DIR", help="keep every variant in DIR (created; must not hold them already)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    add_scheduler_option(p, "build and measure each variant as a task of a dask cluster, in a folder of the worker's "
                            "own that it removes", local=False)
    p.set_defaults(func=run_tune)
    return p


def _selections(text: str) -> tuple[str, ...]:
    values = tuple(x.strip() for x in text.split(",") if x.strip())
    bad = [v for v in values if v not in ("offset", "random")]
    if not values or bad:
        raise UsageError(f"--rep-selection takes offset, random or both, got {text!r}")
    return values


def run_tune(args: argparse.Namespace) -> int:
    """Run the grid; the report as a table or JSON on stdout."""
    from ecpfs_viewer.cli.search import scheduler_of
    from ecpfs_viewer.model.search.cluster import SchedulerError, is_cluster

    scheduler = scheduler_of(args)
    if scheduler is not None and not is_cluster(scheduler):
        raise UsageError(f"--scheduler of tune takes a scheduler address like tcp://HOST:PORT (got {scheduler!r})")
    grid = TuneGrid(levels=args.levels, target_cluster_items=args.target_cluster_items,
                    rep_selections=_selections(args.rep_selection), metric=args.metric, seed=args.seed,
                    include_oversize=args.force)
    settings = TuneSettings(k=args.k, search_exps=args.search_exp,
                            holdout=args.holdout, queries=args.queries, recall_target=args.recall_target,
                            seed=args.seed, keep=args.keep)
    bar = TerminalProgress(enabled=not args.quiet)

    def line(v: VariantResult) -> None:
        if args.quiet:
            return
        recalls = ", ".join(f"{p.recall:.3f}" for p in v.points)
        print(f"variant {v.index + 1}: {v.name}: built in {v.build_seconds:.1f} s, {format_bytes(v.disk_bytes)} "
              f"in {v.files:,} files; recall {recalls}", file=sys.stderr, flush=True)

    try:
        with bar:
            report = tune(args.input, grid, settings, progress=bar, cost_axis=args.cost, on_variant=line,
                          scheduler=scheduler)
    except TuneError as exc:
        raise CannotTune(str(exc)) from None
    except BuildError as exc:
        raise CommandError("; ".join(str(p) for p in exc.problems)) from None
    except SchedulerError as exc:
        raise CommandError(str(exc)) from None
    print(json.dumps(versioned(report.to_dict()), indent=2) if args.json else format_tune(report))
    return EXIT_OK


def format_tune(report: TuneReport) -> str:
    """The table of every point (frontier marked *), each variant's build figures, and the recommendation."""
    axis = report.cost_axis
    lines = [f"Tune of {report.input}: {report.rows:,} rows x {report.dim}, {report.queries} queries "
             f"({report.query_source}), recall@{report.k}, cost = mean {COST_AXES[axis]}",
             f"{report.seconds:.1f} s in all: building {report.build_seconds:.1f} s "
             f"({report.build_seconds / max(report.seconds, 1e-9):.0%}), searching {report.search_seconds:.1f} s, "
             f"exact neighbours {report.exact_seconds:.1f} s", ""]
    lines.append(f"{'variant':<18}{'build s':>8}{'disk':>11}{'files':>8}{'leaf max/med':>13}{'leaf CV':>8}")
    for v in report.variants:
        leaf = v.balance[-1] if v.balance else None
        lines.append(f"{v.name:<18}{v.build_seconds:>8.1f}{format_bytes(v.disk_bytes):>11}{v.files:>8,}"
                     f"{_figure(leaf.max_over_median if leaf else None, '.1f'):>13}"
                     f"{_figure(leaf.coefficient_of_variation if leaf else None, '.2f'):>8}")
    lines += ["", f"{'':2}{'variant':<18}{'search_exp':>10}{'recall':>8}{'dist mean':>11}{'dist p95':>10}"
                  f"{'leaves':>8}{'nodes':>7}{'ms':>7}"]
    for v in report.variants:
        for p in v.points:
            c = p.costs
            lines.append(f"{'*' if p.on_frontier else ' ':2}{v.name:<18}{p.search_exp:>10}{p.recall:>8.3f}"
                         f"{c['distance_computations'].mean:>11,.0f}{c['distance_computations'].p95:>10,.0f}"
                         f"{c['leaves_scanned'].mean:>8.1f}{c['nodes_visited'].mean:>7.1f}{p.ms_mean:>7.2f}")
    lines.append("")
    rec = report.recommendation
    if rec is None:
        best = max(report.points(), key=lambda p: p.recall)
        lines.append(f"No variant reaches recall {report.recall_target:g}; the best is "
                     f"{report.variants[best.variant].name} at search_exp {best.search_exp} ({best.recall:.3f}).")
    else:
        lines.append(f"Recommended: {report.variants[rec.variant].name} at search_exp {rec.search_exp}: recall "
                     f"{rec.recall:.3f} at {rec.cost:,.0f} {COST_AXES[axis]} per query")
        lines.append(f"  {rec.command}")
    if report.left_out:
        lines.append(left_out_text(report.left_out, len(report.variants) + len(report.left_out))
                     + "; --force builds them")
    if report.kept:
        lines.append(f"Variants kept in {report.kept}")
    return "\n".join(lines)


def _figure(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)
