"""`ecpfs-viewer search`, `recall` and `locate`: eCP search, recall@k sweeps and item lookup.

Work on every store the app opens (folder, zip, http(s), s3). Every failure is one line on stderr
with the exit status of `cli.contract` (2 for a usage error or an index or file that cannot be
opened, 1 for data that cannot be used), never a traceback. Imports stay light: `search --item 5`
in a fresh process is mostly start-up time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from ecpfs_viewer.cli.commands import add_command
from ecpfs_viewer.cli.contract import (
    EXIT_FAILED,
    EXIT_OK,
    PREFIX,
    CannotOpen,
    CommandError,
    UsageError,
    unusable_file,
    versioned,
)
from ecpfs_viewer.cli.numbers import AtLeast, add_search_exp
from ecpfs_viewer.model.ecpfs.paths import node_path

if TYPE_CHECKING:
    import numpy as np

    from ecpfs_viewer.cli.progress import TerminalProgress
    from ecpfs_viewer.model.search import IndexReader, SearchResult


def run_body(body: Any, args: argparse.Namespace) -> int:
    """Run a subcommand body; the model's expected failures become a CommandError (exit 1)."""
    from ecpfs_viewer.model.errors import UserError, describe_exception

    try:
        return int(body(args))
    except (CommandError, BrokenPipeError):  # a closed stdout is the caller's to end quietly
        raise
    except (UserError, ValueError, KeyError) as exc:
        message = describe_exception(exc) if type(exc) is not KeyError else str(exc.args[0])
        raise CommandError(message) from None
    except OSError as exc:
        raise CommandError(f"{exc.filename or args.index}: {exc.strerror or exc}") from None


def open_index(args: argparse.Namespace, location: str | None = None) -> IndexReader:
    """The index named on the command line (or at location), opened with the remote options (read-only)."""
    from ecpfs_viewer.cli.remote import remote_options
    from ecpfs_viewer.model.ecpfs.opened_index import open_index as open_opened_index
    from ecpfs_viewer.model.errors import UserError, describe_exception
    from ecpfs_viewer.model.search import index_reader

    location = args.index if location is None else location
    options = remote_options(args)
    try:
        return index_reader(open_opened_index(location, remote=options))
    except (UserError, OSError, ValueError) as exc:
        message = describe_exception(exc)
        raise CannotOpen(message if location in message else f"{location}: cannot open ({message})") from None


def parse_ids(text: str, option: str) -> list[int]:
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"{option} must be comma-separated integers, got {text!r}") from None


def load_queries(path: str) -> np.ndarray:
    """A .npy of queries (1-D is one query), memory-mapped.

    CannotOpen when path is no readable file (absent, a folder, a pipe); CommandError when the
    file opens but holds no usable queries."""
    from ecpfs_viewer.model.search import QueryError
    from ecpfs_viewer.model.search.explore import load_npy

    try:
        return load_npy(path)
    except QueryError as exc:
        raise (CannotOpen if unusable_file(path) else CommandError)(str(exc)) from None


def subcommand(subparsers: argparse._SubParsersAction, name: str) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """A subcommand parser whose first argument is the index location."""
    p = add_command(subparsers, name)
    p.add_argument("index", metavar="INDEX", help="index folder, .zip or URL")
    from ecpfs_viewer.cli.remote import add_remote_options

    add_remote_options(p)
    return p


def add_query_source(p: argparse.ArgumentParser, count: str = "--sample",
                     count_help: str = "sample N stored items as queries", *, default: int | None = None,
                     queries_help: str = "2-D .npy of queries", required: bool = False,
                     seed: bool = True) -> argparse._MutuallyExclusiveGroup:
    """Where a command's queries come from: --queries Q.npy or N items (``count``: sampled, held out),
    with --seed for the sample; the group, for another source."""
    src = p.add_mutually_exclusive_group(required=required)
    src.add_argument("--queries", metavar="Q.npy", help=queries_help)
    src.add_argument(count, action=AtLeast, least=1, default=default, metavar="N", help=count_help)
    if seed:
        p.add_argument("--seed", action=AtLeast, least=0, default=0, help=f"seed for {count} (default 0)")
    return src


def _add_search_options(p: argparse.ArgumentParser, search_exp_default: int | tuple[int, ...]) -> None:
    p.add_argument("--k", action=AtLeast, least=1, default=10, help="results per query (default 10)")
    add_search_exp(p, search_exp_default)
    p.add_argument("--max-increments", action=AtLeast, least=-1, default=-1,
                   help="times search_exp may double (default -1: no limit)")
    p.add_argument("--exclude", default="", metavar="ID,ID", help="item ids never to return")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar (it is drawn only on a terminal anyway)")


def add_scheduler_option(p: argparse.ArgumentParser, what: str = "compute the exact neighbours as a dask graph "
                         "over blocks of leaves", local: bool = True) -> None:
    where = ("'threads' on this machine, or a dask.distributed scheduler address" if local
             else "a dask.distributed scheduler address")
    p.add_argument("--scheduler", metavar="threads|tcp://HOST:PORT" if local else "tcp://HOST:PORT",
                   help=f"{what}: {where} (needs the scale extra; workers open the input themselves, so it must "
                        "be a URL or a path they share)")


def scheduler_of(args: argparse.Namespace) -> str | None:
    """--scheduler as given (None without it); a usage error when it is no scheduler."""
    if getattr(args, "scheduler", None) is None:
        return None
    from ecpfs_viewer.model.search.cluster import scheduler_problem

    scheduler = str(args.scheduler).strip()
    problem = scheduler_problem(scheduler)
    if problem is not None:
        raise UsageError(f"--scheduler {problem}")
    return scheduler


def _exact_with(reader: IndexReader, args: argparse.Namespace) -> Any:
    """The exact-search function --scheduler asks for (None: the in-process one)."""
    scheduler = scheduler_of(args)
    if scheduler is None:
        return None
    from ecpfs_viewer.cli.remote import remote_options
    from ecpfs_viewer.model.search.exact_dask import exact_with

    return exact_with(reader, scheduler, remote_options(args))


# ------------------------------------------------------------------------------------ search


def add_search_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """Register `search INDEX (--item ID | --query-file Q.npy [--query-row N] | --saved-query ID)`."""
    p = subcommand(subparsers, "search")
    q = p.add_mutually_exclusive_group()
    q.add_argument("--item", action=AtLeast, least=0, metavar="ID", help="search with the stored vector of this item")
    q.add_argument("--saved-query", metavar="ID", help="search with the vector of queries/ID")
    p.add_argument("--query-file", metavar="Q.npy", help="2-D .npy of queries")
    p.add_argument("--query-row", action=AtLeast, least=0, metavar="N", help="row of --query-file (default 0)")
    _add_search_options(p, 4)
    p.add_argument("--trace", action="store_true", help="also print the popped nodes (to stderr unless --json)")
    p.add_argument("--explain", action="store_true",
                   help="also compute the exact neighbours and say why each missed one was missed")
    p.add_argument("--recall", action=AtLeast, least=1, metavar="N",
                   help="sample N queries (from --query-file, else stored items) and print recall@k")
    p.add_argument("--seed", action=AtLeast, least=0, default=0, help="seed for --recall sampling")
    add_scheduler_option(p)
    p.set_defaults(func=lambda args: run_body(_search, args))
    return p


def _search(args: argparse.Namespace) -> int:
    from ecpfs_viewer.model.search import SearchParams

    exclude = frozenset(parse_ids(args.exclude, "--exclude"))
    search_exp = args.search_exp
    if args.recall is not None:
        if args.json:  # its one text line is no JSON; `recall --json` is the contract
            raise UsageError("--recall prints text only; for JSON use `ecpfs-viewer recall --json`")
        return _legacy_recall(args, exclude, search_exp)
    if args.item is None and args.saved_query is None and args.query_file is None and args.query_row is None:
        raise UsageError("give --item ID, --query-file Q.npy [--query-row N] or --saved-query ID")
    if args.query_file is not None and (args.item is not None or args.saved_query is not None):
        raise UsageError("--query-file goes with --query-row, not with --item or --saved-query")
    key = _saved_search_key(args, exclude)
    if key is not None and _print_saved_search(args, key):
        return EXIT_OK
    queries = load_queries(args.query_file) if args.query_file else None
    started = time.time_ns()
    reader = open_index(args)
    query = _query_vector(reader, args, queries)
    params = SearchParams(args.k, search_exp, args.max_increments, exclude)
    result = reader.search(query, params, skip_unreadable=True)
    report: dict[str, Any] = {**result.to_dict(), "exact": None, "missed": None}  # one shape, with --explain or not
    if key is not None and not result.unreadable:
        _keep_search(reader, key, result, report, started)
    misses: tuple[Any, ...] = ()
    exact: tuple[Any, ...] = ()
    unreadable = list(result.unreadable)
    if args.explain:
        from ecpfs_viewer.model.search import explain_misses

        with _progress_bar(args) as bar:
            on_cluster = _exact_with(reader, args)
            truth = (on_cluster(query, args.k, exclude, progress=bar) if on_cluster is not None
                     else reader.exact(query, args.k, exclude, progress=bar, skip_unreadable=True))
        exact = truth.hits(0)
        misses = explain_misses(reader, query, result, exact)
        unreadable += [u for u in truth.unreadable if u not in unreadable]
        report["exact"] = [h.to_dict() for h in exact]
        report["missed"] = [m.to_dict() for m in misses]
        report["unreadable"] = [u.to_dict() for u in unreadable]
    if args.json:
        print(json.dumps(versioned(report), indent=2))
        return _unreadable_status(unreadable) or _finish_item_map(reader, args)
    print("\n".join(_answer_lines(result)))
    if args.trace:
        _print_trace(result)
    if args.explain:
        found = {h.item_id for h in result.hits}
        print(f"# exact top-{args.k}: {sum(h.item_id in found for h in exact)} of {len(exact)} found by eCP search "
              f"({result.leaves_visited} leaves visited)")
        for h in exact:
            print(f"# {h.item_id}\t{h.score:.6g}\t{node_path(reader.levels, h.leaf)}\t"
                  f"{'found' if h.item_id in found else 'missed'}")
        for m in misses:
            print(f"# {m.describe()}")
    for u in unreadable:
        print(f"# {u.describe()}")
    return _unreadable_status(unreadable) or _finish_item_map(reader, args)


def _unreadable_status(unreadable: list[Any]) -> int:
    """Exit 1 with one line on stderr when nodes could not be read: the answer printed is for
    every other node, and says which were left out."""
    if not unreadable:
        return EXIT_OK
    names = ", ".join(u.path for u in unreadable[:5]) + (f" and {len(unreadable) - 5} more" if len(unreadable) > 5
                                                          else "")
    print(f"{PREFIX}{names} could not be read; the answer is for every other node (see the lines starting "
          f"'# lvl_' or the unreadable key of --json)", file=sys.stderr)
    return EXIT_FAILED


def _finish_item_map(reader: IndexReader, args: argparse.Namespace) -> int:
    """After the answer of a lookup by item (search --item, locate): the rest of the item map, so
    that the next process finds any item without reading item_ids."""
    if args.item is not None:
        sys.stdout.flush()
        reader.finish_item_map()
        from ecpfs_viewer.model.ecpfs.index_cache import cache_note

        note = cache_note(reader.store)
        if note is not None:
            print(f"Note: {note}", file=sys.stderr)
    return EXIT_OK


def _query_vector(reader: IndexReader, args: argparse.Namespace, queries: np.ndarray | None) -> np.ndarray:
    import numpy as np

    from ecpfs_viewer.model.search import saved_queries

    if args.saved_query is not None:
        return saved_queries(reader, [args.saved_query]).vectors[0]  # type: ignore[no-any-return]
    if queries is not None:
        row = 0 if args.query_row is None else args.query_row
        if not 0 <= row < len(queries):
            raise CommandError(f"--query-row {row} is outside {args.query_file} ({len(queries)} rows)")
        return np.asarray(queries[row])  # converted and checked by the reader
    return reader.vector_for_item(args.item if args.item is not None else args.query_row)


def _answer_lines(result: SearchResult) -> list[str]:
    """The hits, then the '# cost' lines: machine-independent figures, the time, and reads per level."""
    from ecpfs_viewer.model.formatting import format_bytes

    cost = result.cost
    levels = [f"{'index_root' if i == 0 else f'lvl_{i}'} {format_bytes(b)}/{r}"
              for i, (b, r) in enumerate(zip(cost.bytes_read, cost.requests, strict=True))]
    return [*(f"{hit.item_id}\t{hit.score:.6g}" for hit in result.hits),
            f"# cost: {cost.describe()}; {result.seconds * 1e3:.2f} ms",
            f"# read per level (bytes/requests): {', '.join(levels)}"]


#: The line under an answer a later process took from the cache folder.
FROM_CACHE = "# answered from the cache folder: an earlier process's search, every node it read unchanged"


def _saved_search_key(args: argparse.Namespace, exclude: frozenset[int]) -> Any:
    """The key of a `search --item` whose answer may be kept and answered by a later process
    (plain --item searches of a local folder; None for anything else)."""
    if (args.item is None or args.explain or args.trace or args.scheduler is not None or args.query_row is not None
            or "://" in args.index):
        return None
    from ecpfs_viewer.model.search.saved_search import SearchKey

    return SearchKey.of(args.item, args.k, args.search_exp, args.max_increments, exclude)


def _print_saved_search(args: argparse.Namespace, key: Any) -> bool:
    """Print the answer an earlier process kept, when the index is unchanged (no zarr imported)."""
    from ecpfs_viewer.model.search.saved_search import saved_search

    saved = saved_search(args.index, key)
    if saved is None:
        return False
    report = {**saved.report, "unreadable": saved.report.get("unreadable", [])}  # kept by an older viewer
    print(json.dumps(versioned(report), indent=2) if args.json else "\n".join([*saved.text, FROM_CACHE]))
    return True


def _keep_search(reader: IndexReader, key: Any, result: SearchResult, report: dict[str, Any], started: int) -> None:
    """Keep this search's answer for a later process, stamped with what it read."""
    from ecpfs_viewer.model.search.saved_search import SavedSearch, save_search, search_sources

    leaf, _row = reader.locator.find_one(key.item)
    sources = search_sources(reader.levels, leaf, [(v.level, v.node_id) for v in (*result.trace, *result.skipped)])
    save_search(reader.cache, key, SavedSearch(report, tuple(_answer_lines(result))), sources, started)


def _print_trace(result: SearchResult) -> None:
    for v in result.trace:
        print(f"# {node_path(v.level, v.node_id)}\t{v.score:.6g}\t{'leaf' if v.is_leaf else ''}\t"
              f"rank {v.rank}/{v.siblings}", file=sys.stderr)


def _legacy_recall(args: argparse.Namespace, exclude: frozenset[int], search_exp: int) -> int:
    """`search --recall N`: recall@k of N sampled queries at one search_exp (kept for old scripts)."""
    import numpy as np

    from ecpfs_viewer.model.search import queries_from_array, recall_sweep, sample_items

    reader = open_index(args)
    if args.query_file:
        queries = load_queries(args.query_file)
        rng = np.random.default_rng(args.seed)
        rows = np.sort(rng.choice(len(queries), size=min(args.recall, len(queries)), replace=False))
        query_set = queries_from_array(reader, np.asarray(queries[rows], np.float32), args.query_file)
    else:
        query_set = sample_items(reader, args.recall, args.seed)
    t = time.perf_counter()
    report = recall_sweep(reader, query_set, args.k, (search_exp,), args.max_increments, exclude,
                          exclude_self=False)
    print(f"recall@{args.k}\t{report.rows[0].recall:.4f}\t({len(query_set)} queries, search_exp {search_exp}, "
          f"{time.perf_counter() - t:.2f} s)")
    return EXIT_OK


# ------------------------------------------------------------------------------------ recall


def add_recall_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """Register `recall INDEX [--queries Q.npy | --sample N [--seed S]] ...`."""
    p = subcommand(subparsers, "recall")
    add_query_source(p)
    p.add_argument("--include-self", action="store_true",
                   help="with sampled items, keep the query item in both result lists")
    _add_search_options(p, (1, 2, 4, 8))
    p.add_argument("--miss-map", action="store_true",
                   help="also say where recall is lost: the nodes where missed true neighbours left the search's "
                        "path (with --json: the miss_map key, else null)")
    add_scheduler_option(p)
    p.set_defaults(func=lambda args: run_body(_recall, args))
    return p


def _recall(args: argparse.Namespace) -> int:
    from ecpfs_viewer.model.search import (
        queries_from_array,
        recall_sweep,
        sample_items,
        saved_queries,
        saved_query_ids,
    )

    exps = list(args.search_exp)
    exclude = frozenset(parse_ids(args.exclude, "--exclude"))
    queries = load_queries(args.queries) if args.queries else None
    reader = open_index(args)
    reader.learn_from_scans = args.miss_map  # the miss map places misses with the whole item map
    exact = _exact_with(reader, args)
    with _progress_bar(args) as bar:
        if queries is not None:
            query_set = queries_from_array(reader, queries, args.queries)
        elif args.sample is None and saved_query_ids(reader):
            query_set = saved_queries(reader)
        else:
            query_set = sample_items(reader, 100 if args.sample is None else args.sample, args.seed)
        miss = _miss_map_collector(reader) if args.miss_map else None
        report = recall_sweep(reader, query_set, args.k, exps, args.max_increments, exclude,
                              exclude_self=not args.include_self, progress=bar, exact=exact,
                              observe=None if miss is None else miss.observe)
    miss_map = None if miss is None else miss.result(reader.locator.complete_map())
    if args.json:
        rows = [row.to_dict() for row in report.rows]
        body = {"rows": rows, "miss_map": None if miss_map is None else miss_map.to_dict()}
        print(json.dumps(versioned(body), indent=2))
        return EXIT_OK
    costs = [("dist", "distance_computations"), ("nodes", "nodes_visited"), ("bytes", "bytes"),
             ("requests", "requests")]
    cost_heads = "".join(f"  {f'{label} {stat}':>13}" for label, _ in costs for stat in ("mean", "p95"))
    if miss_map is not None:
        _print_lost(miss_map)
    print(f"{'search_exp':>10}  {f'recall@{args.k}':>9}  {'leaves mean':>11}  {'leaves p95':>10}  "
          f"{'ms mean':>8}  {'ms p95':>8}{cost_heads}")
    for row in report.rows:
        cost_cells = "".join(f"  {getattr(row, f'{name}_{stat}'):>13.1f}"
                             for _, name in costs for stat in ("mean", "p95"))
        print(f"{row.search_exp:>10}  {row.recall:>9.4f}  {row.leaves_mean:>11.1f}  {row.leaves_p95:>10.1f}  "
              f"{row.ms_mean:>8.2f}  {row.ms_p95:>8.2f}{cost_cells}")
    self_note = "" if query_set.self_ids[0] is None else (
        "; query items kept in the lists" if args.include_self else "; each query item left out of its lists")
    print(f"({len(query_set)} queries: {report.source}{self_note})")
    return EXIT_OK


def _miss_map_collector(reader: IndexReader) -> Any:
    from ecpfs_viewer.model.diagnostics.index_map_layout import layout_index
    from ecpfs_viewer.model.diagnostics.miss_map import MissMapCollector

    return MissMapCollector(layout_index(reader))


def _print_lost(miss_map: Any) -> None:
    """'where recall is lost': the top nodes with their share of all misses (above the recall table)."""
    print(f"# where recall is lost ({miss_map.total():,} missed true neighbours, all search_exp):")
    for row in miss_map.lost(10):
        print(f"#   {row.path:<24} {row.misses:>7,}  {row.share:>6.1%}")


def _progress_bar(args: argparse.Namespace) -> TerminalProgress:
    """The bar for a long step: on a terminal's stderr, unless --quiet."""
    from ecpfs_viewer.cli.progress import TerminalProgress

    return TerminalProgress(enabled=not args.quiet)


# ------------------------------------------------------------------------------------ locate


def add_locate_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """Register `locate INDEX ITEM_ID [--json]`."""
    p = subcommand(subparsers, "locate")
    p.add_argument("item", action=AtLeast, least=0, metavar="ITEM_ID")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=lambda args: run_body(_locate, args))
    return p


def _locate(args: argparse.Namespace) -> int:
    from ecpfs_viewer.model.search.saved_locate import saved_location

    # a later process answers from the cache folder before zarr is even imported (local folders)
    location = saved_location(args.index, args.item)
    reader = None
    if location is None:
        reader = open_index(args)
        location = reader.locate(args.item)
    print(json.dumps(versioned(location.to_dict()), indent=2) if args.json else location.describe())
    return EXIT_OK if reader is None else _finish_item_map(reader, args)
