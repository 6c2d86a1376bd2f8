"""`ecpfs-viewer compare`: two indexes side by side (summaries, balance, migration, recall against cost).

Works on every store the app opens (folder, zip, http(s), s3); progress on stderr, failures as
`cli.contract` says. `tune` (issue 23 §3) is registered from this module too.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ecpfs_viewer.cli.commands import add_command
from ecpfs_viewer.cli.contract import EXIT_OK, versioned
from ecpfs_viewer.cli.numbers import AtLeast, add_search_exp

if TYPE_CHECKING:
    from ecpfs_viewer.model.search import IndexReader
    from ecpfs_viewer.model.tuning.compare import Comparison

# ------------------------------------------------------------------------------------ compare


def add_compare_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """Register `compare A B [--queries Q.npy | --sample N] [--k 10] [--search-exp 1,2,4,8] [--json]`."""
    from ecpfs_viewer.cli.remote import add_remote_options
    from ecpfs_viewer.cli.search import add_query_source, add_scheduler_option

    p: argparse.ArgumentParser = add_command(subparsers, "compare")
    p.add_argument("index_a", metavar="A", help="first index: folder, .zip or URL")
    p.add_argument("index_b", metavar="B", help="second index: folder, .zip or URL")
    add_query_source(p, count_help="sample N items both indexes hold as queries (default 200)", default=200)
    p.add_argument("--k", action=AtLeast, least=1, default=10, help="results per query (default 10)")
    add_search_exp(p, (1, 2, 4, 8))
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar (it is drawn only on a terminal anyway)")
    add_remote_options(p)
    add_scheduler_option(p)
    p.set_defaults(func=_compare_command, index=None)
    return p


def _compare_command(args: argparse.Namespace) -> int:
    from ecpfs_viewer.cli.search import run_body

    return run_body(_compare, args)


def _open_index(location: str, args: argparse.Namespace) -> IndexReader:
    from ecpfs_viewer.cli.search import open_index

    return open_index(args, location)


def _compare(args: argparse.Namespace) -> int:
    from ecpfs_viewer.cli.progress import TerminalProgress
    from ecpfs_viewer.cli.remote import remote_options
    from ecpfs_viewer.cli.search import load_queries, scheduler_of
    from ecpfs_viewer.model.tuning.compare import compare_indexes

    exps = list(args.search_exp)
    scheduler = scheduler_of(args)
    queries = load_queries(args.queries) if args.queries else None
    args.index = args.index_a  # what an OSError names
    a = _open_index(args.index_a, args)
    b = _open_index(args.index_b, args)
    with TerminalProgress(enabled=not args.quiet) as bar:
        comparison = compare_indexes(a, b, queries=queries, query_source=args.queries or "", sample=args.sample,
                                     seed=args.seed, k=args.k, search_exps=exps, progress=bar, scheduler=scheduler,
                                     remote=remote_options(args))
    if args.json:
        print(json.dumps(versioned(comparison.to_dict()), indent=2, default=_plain))
    else:
        print_comparison(comparison)
    return EXIT_OK


def _plain(value: Any) -> Any:
    """numpy scalars and arrays in the JSON output."""
    return value.tolist() if hasattr(value, "tolist") else str(value)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def print_comparison(c: Comparison) -> None:
    """The comparison as text: summary rows (* where they differ), balance, migration, recall, queries."""
    sides = c.sides
    print(f"A: {sides.a.label}\nB: {sides.b.label}\n")
    width = max(len(r.name) for r in sides.rows)
    print(f"  {'':<{width}}  {'A':>16}  {'B':>16}")
    for row in sides.rows:
        print(f"{'*' if row.differs else ' '} {row.name:<{width}}  {_cell(row.a):>16}  {_cell(row.b):>16}")
    print("\nbalance   level  nodes      min   median      max  max/med     CV  imbalance")
    for name, side in (("A", sides.a), ("B", sides.b)):
        for lv in side.balance:
            fig = lv.to_dict()
            print(f"{name:>7}  {lv.level:>6}  {lv.nodes:>5}  {_cell(fig['size_min']):>7}  "
                  f"{_cell(fig['size_median']):>7}  {_cell(fig['size_max']):>7}  {_cell(fig['max_over_median']):>7}  "
                  f"{_cell(fig['coefficient_of_variation']):>5}  {_cell(fig['imbalance_factor']):>9}")
    m = c.migration
    if m is None:
        print(f"\nmigration: {c.migration_note}")
    else:
        print(f"\nmigration over {m.common_items:,} common items ({m.only_a:,} only in A, {m.only_b:,} only in B): "
              f"pair agreement {m.pair_agreement:.4f} (from B's side {m.pair_agreement_b:.4f}), adjusted Rand "
              f"{m.adjusted_rand:.4f}; {m.moved_items:,} items ({m.moved_share:.1%}) left their leaf's main "
              f"counterpart in {m.flow_count:,} flows")
        for f in m.flows[:10]:
            print(f"  A leaf {f.leaf_a} -> B leaf {f.leaf_b}: {f.items:,} of {f.leaf_a_size:,} items "
                  f"(most went to B leaf {f.stayed_in})")
    r = c.recall
    print(f"\nrecall@{r.k} on {r.source} ({r.note})")
    print(f"{'':>3}{'search_exp':>11}  {'recall':>7}  {'distances':>10}  {'leaves':>7}  {'nodes':>7}  {'ms':>7}")
    for name, curve in (("A", r.curve_a), ("B", r.curve_b)):
        for p in curve:
            print(f"{name:>3}{p.search_exp:>11}  {p.recall:>7.4f}  {p.distance_computations:>10.1f}  "
                  f"{p.leaves_scanned:>7.1f}  {p.nodes_visited:>7.1f}  {p.ms:>7.2f}")
    if r.differing:
        print("\nqueries whose recall differs most (row, item, search_exp: A -> B)")
        for d in r.differing[:10]:
            print(f"  {d.query:>5}  {'-' if d.item_id is None else d.item_id:>8}  {d.search_exp:>3}: "
                  f"{d.recall_a:.2f} -> {d.recall_b:.2f}")
