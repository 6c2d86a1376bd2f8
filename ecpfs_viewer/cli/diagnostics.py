"""`ecpfs-viewer workload`: replay a query set and show where the search goes (issue 24 §3).

Works on every store the app opens (folder, zip, http(s), s3); progress on stderr; failures are
one line with the exit status of `cli.contract`.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from ecpfs_viewer.cli.contract import EXIT_OK, CannotOpen, unusable_file, versioned
from ecpfs_viewer.cli.numbers import AtLeast, add_search_exp
from ecpfs_viewer.cli.search import add_query_source, load_queries, open_index, run_body, subcommand

if TYPE_CHECKING:
    from ecpfs_viewer.model.diagnostics.workload import Workload


def add_workload_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """Register `workload INDEX (--queries Q.npy | --sample N | --saved | --log LOG.jsonl) [--search-exp 4]`."""
    p = subcommand(subparsers, "workload")
    src = add_query_source(p, required=True)
    src.add_argument("--saved", action="store_true", help="the index's saved queries (queries/*)")
    src.add_argument("--log", metavar="FILE.jsonl",
                     help="the searches an ecpfs JSONL log recorded (written at trace level: the visited nodes)")
    add_search_exp(p, 4, least=1, help_text="leaves per search (default 4)")
    p.add_argument("--k", action=AtLeast, least=1, default=10, help="results per query (default 10)")
    p.add_argument("--top", action=AtLeast, least=1, default=10, metavar="N", help="hot leaves to print (default 10)")
    p.add_argument("--json", action="store_true", help="print JSON (every node's visits included)")
    p.add_argument("--quiet", action="store_true", help="no progress bar (it is drawn only on a terminal anyway)")
    p.set_defaults(func=lambda args: run_body(_workload, args))
    return p


def _workload(args: argparse.Namespace) -> int:
    from ecpfs_viewer.cli.progress import TerminalProgress
    from ecpfs_viewer.model.diagnostics.search_log import workload_from_log
    from ecpfs_viewer.model.diagnostics.workload import replay
    from ecpfs_viewer.model.search import SearchParams, queries_from_array, sample_items, saved_queries

    if args.log and unusable_file(args.log):
        raise CannotOpen(f"{args.log}: cannot read the log (no such readable file)")
    matrix = load_queries(args.queries) if args.queries else None
    reader = open_index(args)
    with TerminalProgress(enabled=not args.quiet) as bar:
        if args.log:
            work = workload_from_log(reader, args.log, progress=bar)
        else:
            if matrix is not None:
                queries = queries_from_array(reader, matrix, args.queries)
            elif args.saved:
                queries = saved_queries(reader)
            else:
                queries = sample_items(reader, args.sample, args.seed, progress=bar)
            work = replay(reader, queries, SearchParams(k=args.k, search_exp=args.search_exp), progress=bar)
    if args.json:
        print(json.dumps(versioned(work.to_dict()), indent=2))
    else:
        print(format_workload(work, args.top))
    return EXIT_OK


def format_workload(work: Workload, top: int = 10) -> str:
    """The text report: the summary line, leaves per query, skew per level, the hot leaves."""
    lines = [work.sentence(), *(f"  note: {n}" for n in work.notes), "", "leaves scanned  queries"]
    values, counts = work.leaves_histogram()
    lines += [f"{int(v):>14}  {int(c):>7}" for v, c in zip(values, counts, strict=True)]
    lines += ["", "level   nodes  visited  top 1% share"]
    for lv in work.levels:
        lines.append(f"lvl_{lv.level:<3} {len(lv.node_ids):>6}  {int((lv.visits > 0).sum()):>7}  "
                     f"{100 * lv.top_share():>11.1f}%")
    hot: list[dict[str, Any]] = work.hot_leaves(top)
    if hot:
        lines += ["", "hot leaves             visits  items  share of queries"]
        lines += [f"{h['path']:<20} {h['visits']:>8}  {h['items']:>5}  {100 * h['share_of_queries']:>15.1f}%"
                  for h in hot]
    return "\n".join(lines)
