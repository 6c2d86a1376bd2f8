"""`ecpfs-viewer info` and `ecpfs-viewer check`: the index summary and validation on a terminal.

`info` prints the lines `ecp info` prints (spec §5) first, so scripts reading those keep working,
then what the viewer adds: format version, dimension, dtype, fan-out and a per-level table. On a
remote store the leaf row counts the listed leaves only: their sizes need one request per leaf
(`check` and `info --leaf-sizes` read them).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from enum import Enum
from typing import Any

import numpy as np

from ecpfs_viewer.cli.commands import add_command
from ecpfs_viewer.cli.contract import EXIT_FAILED, EXIT_OK, CannotOpen, UsageError, versioned
from ecpfs_viewer.cli.numbers import AtLeast
from ecpfs_viewer.cli.progress import TerminalProgress
from ecpfs_viewer.cli.remote import add_remote_options, remote_options
from ecpfs_viewer.model.ecpfs import Finding, IndexSummary, LevelStats, Severity, level_plan, level_stats, summarize
from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.finding_codes import normalise_code
from ecpfs_viewer.model.ecpfs.index_cache import cache_note
from ecpfs_viewer.model.ecpfs.level_count import LevelCount, level_count
from ecpfs_viewer.model.ecpfs.opened_index import open_index, opened_index_of
from ecpfs_viewer.model.formatting import count_noun, format_age, format_value
from ecpfs_viewer.model.storage.opening import StoreOpenError
from ecpfs_viewer.model.validation import ValidationReport, validate
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def add_info_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register `info PATH [--json]`."""
    parser = add_command(subparsers, "info")
    parser.add_argument("path", metavar="PATH", help="index folder, .zip or http(s)/s3/gs/az URL")
    parser.add_argument("--json", action="store_true", help="print the same information as JSON")
    parser.add_argument("--leaf-sizes", action=argparse.BooleanOptionalAction, default=None,
                        help="read every leaf's metadata for the leaf sizes and their sum (default: on a folder "
                             "or .zip, not on a remote store, where it is one request per leaf)")
    add_remote_options(parser)
    parser.set_defaults(func=run_info)
    return parser


def add_check_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register `check PATH`."""
    parser = add_command(subparsers, "check")
    parser.add_argument("path", metavar="PATH", help="index folder, .zip or http(s)/s3/gs/az URL")
    parser.add_argument("--max-node-reads", action=AtLeast, least=1, default=256, metavar="N",
                        help="decode at most N nodes for the sampled checks (default 256)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--deep", action="store_true",
                        help="also search the index with its own items: self-reachability at search_exp 1 "
                             "(every item, or a seeded sample of 20,000 on indexes of over 250,000)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar (it is drawn only on a terminal anyway)")
    parser.add_argument("--ignore", action="append", default=[], metavar="CODE",
                        help="leave findings of CODE (e.g. ECPFS-W005; repeatable, or comma-separated) out of the "
                             "verdict and the exit status; they are still listed as ignored "
                             "(codes: docs/finding-codes.md)")
    add_remote_options(parser)
    parser.set_defaults(func=run_check)
    return parser


def _open(path: str, args: argparse.Namespace) -> Hierarchy:
    options = remote_options(args)
    try:
        return open_index(path, remote=options).hierarchy
    except StoreOpenError as exc:
        raise CannotOpen(str(exc)) from None


def run_info(args: argparse.Namespace) -> int:
    h = _open(args.path, args)
    summary = summarize(h)
    if summary.unread is not None:  # no header to show: say why, not 'not an index'
        raise CannotOpen(f"{args.path}: {summary.unread}; retry")
    levels, source = info_levels(h, summary, args)
    if args.json:
        print(json.dumps(versioned({**info_dict(summary, levels), "leaf_sizes": source.value}), indent=2,
                         default=_json_default))
    else:
        print(format_info(summary, levels, source))
    return EXIT_OK if summary.layout.is_index and all(s.complete for s in levels) else EXIT_FAILED


class LeafSizes(Enum):
    """Where `info`'s leaf sizes came from."""

    READ = "read"
    CACHED = "cached"
    BACKGROUND = "reading in the background"
    NOT_READ = "not read"


#: Leaves above which a plain `info` of a folder or zip does not read every leaf's documents
#: (three each) itself: a background process reads them for the next `info`, and it says so.
BACKGROUND_LEAVES = 50_000


def info_levels(h: Hierarchy, summary: IndexSummary, args: argparse.Namespace) -> tuple[list[LevelRow], LeafSizes]:
    """The level rows `info` shows, and where the leaf level's sizes came from: read (--leaf-sizes,
    or a folder or zip of up to BACKGROUND_LEAVES leaves), the cache folder, a background reader
    started now, or not read (a remote store, --no-leaf-sizes)."""
    from ecpfs_viewer.model.ecpfs.leaf_stats_cache import claim_leaf_reader, read_leaf_stats, saved_leaf_stats

    if not summary.layout.is_index or summary.levels is None:
        return collect_level_stats(h, summary, leaf_sizes=bool(args.leaf_sizes)), LeafSizes.READ
    shown = level_plan(summary).shown
    upper: list[LevelRow] = [level_stats(h, level, summary) for level in shown if level != summary.levels]
    if summary.levels not in shown:
        return upper, LeafSizes.READ
    if args.leaf_sizes is False or (args.leaf_sizes is None and h.store.kind == "remote"):
        return [*upper, level_count(h, summary.levels, summary)], LeafSizes.NOT_READ
    if args.leaf_sizes is None:
        # the kept leaf sizes are checked (a stat of every leaf document) after the levels above are
        # read, not beside them: one thread statting from the page cache is fastest, and beside a
        # busy thread each stat waited for the interpreter lock (10M items: 4.2 s against 2.6 s)
        saved = saved_leaf_stats(h, summary)
        if saved is not None:
            return [*upper, saved], LeafSizes.CACHED
        counted = level_count(h, summary.levels, summary)
        if counted.node_count > BACKGROUND_LEAVES:
            claim = claim_leaf_reader(h, summary)
            if claim.elsewhere or _read_in_background(args.path, claim.fd):
                return [*upper, counted], LeafSizes.BACKGROUND
    return [*upper, read_leaf_stats(h, summary)], LeafSizes.READ


def _read_in_background(path: str, claim: int | None) -> bool:
    """Start `info PATH --leaf-sizes` as a process of its own that outlives this one (its answer
    is kept in the cache folder for the next `info`), handing it the claim (a lock held while it
    runs); False when it cannot be started."""
    import os
    import subprocess

    try:
        subprocess.Popen([sys.executable, "-m", "ecpfs_viewer", "info", path, "--leaf-sizes", "--json"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True, pass_fds=() if claim is None else (claim,),
                         env=os.environ.copy())
    except OSError:
        return False
    finally:
        if claim is not None:
            os.close(claim)  # the reader holds it now (or, not started, nobody)
    return True


def ignored_codes(values: Sequence[str]) -> tuple[str, ...]:
    """The codes of `check --ignore` ('ECPFS-W005', 'w005', 'E012,W005'); a usage error for a code the
    table does not hold, so a typo never silently ignores nothing."""
    codes: list[str] = []
    for value in values:
        for part in (p.strip().upper() for p in value.split(",")):
            if not part:
                continue
            code = normalise_code(part)
            if code is None:
                raise UsageError(f"--ignore: {part!r} is not a finding code (see docs/finding-codes.md)")
            codes.append(code)
    return tuple(dict.fromkeys(codes))


def run_check(args: argparse.Namespace) -> int:
    started = time.monotonic()
    ignore = ignored_codes(args.ignore)
    h = _open(args.path, args)
    with TerminalProgress(enabled=not args.quiet) as bar:
        report = validate(h, max_node_reads=args.max_node_reads, progress=bar).ignoring(ignore)
        if args.deep and report.ok and not report.cancelled:
            report = _deepen(h, report, bar).ignoring(ignore)
    if args.json:
        print(json.dumps(versioned(report.to_dict()), indent=2))
    else:
        print(format_report(report, location=args.path))
        floor = h.store.request_floor()
        if floor is not None:  # on stderr: the report reads the same as the local one
            print(f"Remote: {time.monotonic() - started:.1f} s for {floor.describe()}", file=sys.stderr)
        note = cache_note(h.store)
        if note is not None:
            print(f"Note: {note}", file=sys.stderr)
    return EXIT_OK if report.ok else EXIT_FAILED


def _deepen(h: Hierarchy, report: ValidationReport, bar: TerminalProgress) -> ValidationReport:
    """The report with what searching the index finds (self-reachability); the index must search."""
    from ecpfs_viewer.model.diagnostics.deep_check import with_reachability
    from ecpfs_viewer.model.search.index import index_reader
    from ecpfs_viewer.model.search.results import SearchError

    try:
        deep, _ = with_reachability(report, index_reader(opened_index_of(h)), progress=bar)
    except SearchError as exc:
        return replace(report, findings=(*report.findings, Finding(fc.DEEP_CHECK_FAILED, "", f"--deep: {exc}")))
    return deep


#: A row of the level table: full statistics, or the listed node count only (leaves not read)
LevelRow = LevelStats | LevelCount


def collect_level_stats(h: Hierarchy, summary: IndexSummary, leaf_sizes: bool = True) -> list[LevelRow]:
    """Statistics of every level the index declares (none for a store that is not an index).

    Without leaf_sizes the leaf level is only counted from its listing: no leaf document is read."""
    if not summary.layout.is_index:
        return []
    return [level_count(h, level, summary) if not leaf_sizes and level == summary.levels
            else level_stats(h, level, summary) for level in level_plan(summary).shown]


def _json_default(value: Any) -> Any:
    """numpy scalars and enums (severity, generation) as plain JSON values; anything else as text."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Enum):
        return value.value
    return str(value)


def info_dict(summary: IndexSummary, levels: Sequence[LevelRow] = ()) -> dict[str, Any]:
    """What `info --json` prints: the summary plus one entry per level.

    Every level entry has the same keys: a level whose sizes were not read (``sizes_read`` false,
    `--no-leaf-sizes`) has null for what only the sizes tell."""
    result = summary.to_dict()
    result["level_stats"] = [{key: row.get(key) for key in LEVEL_KEYS} | {"sizes_read": isinstance(s, LevelStats)}
                             for s, row in ((s, s.to_dict()) for s in levels)]
    return result


#: The keys of every `info --json` level entry (LevelStats.to_dict's; info.schema.json lists them)
LEVEL_KEYS = ("level", "path", "is_leaf", "node_count", "max_nodes", "gap_count", "gap_ids", "out_of_range_ids",
              "size_min", "size_median", "size_mean", "size_max", "total_rows", "leaf_sum", "total_items",
              "chunk_rows", "underfill", "histogram", "largest", "smallest", "empty_nodes", "other_entries",
              "findings")


def _text(value: Any, absent: str = "-") -> str:
    return format_value(value, absent)


def format_info(summary: IndexSummary, levels: Sequence[LevelRow] = (),
                source: LeafSizes = LeafSizes.READ) -> str:
    """The `info` text: `ecp info`'s lines, then the viewer's additions and a per-level table.

    Shared with the builder's post-build summary, so both read the same.
    """
    lines: list[str] = []
    layout = summary.layout
    if not layout.supported:
        lines.append(f"!! {layout.generation.value.upper()}: {layout.reason}")
        lines.append("")
    if layout.is_index or summary.levels is not None:
        normalized = _text(summary.is_normalized) + ("" if summary.normalized_stored else " (absent, read as false)")
        lines += [
            f"Levels: {_text(summary.levels)}",
            f"Metric: {_text(summary.metric)}",
            f"Normalized: {normalized}",
            f"Total Items: {_text(summary.total_items)}",
            f"Next Item Id: {_text(summary.next_item_id)}",
        ]
        if summary.gap is not None and summary.gap > 0:
            lines.append(f"  ({summary.gap} item ids reserved but never written; likely a crash during insert)")
        lines.append(f"Total Representatives: {_text(summary.representatives)}")
        lines.append("")
        version = summary.format_version
        lines += [
            f"Format Version: {version if version is not None else 'missing'}"
            + (" (treated as 1)" if layout.generation.name == "UNSTAMPED" else ""),
            f"Dimension: {_text(summary.dim)}",
            f"Stored Dtype: {_text(summary.dtype)}",
            f"Fan-out: {_text(summary.fan_out)} (expected ceil(R^(1/L)) = {_text(summary.expected_fan_out)})",
            f"Node Chunk Rows: {_text(summary.node_chunk_rows)}",
            f"Representative Chunk Rows: {_text(summary.rep_chunk_rows)}",
            f"Rep Embeddings: {'present' if summary.has_rep_embeddings else 'absent'}",
            f"Writer: {_text(summary.writer, 'unknown')}",
            f"Saved Queries: {summary.saved_query_count}",
        ]
        for query in summary.saved_queries:
            age = "unknown age" if query.age_seconds is None else format_age(query.age_seconds)
            lines.append(f"  query {query.query_id}: saved {age} ago, {_text(query.buffered_items, '0')} buffered "
                         f"items, {_text(query.heap_entries, '0')} heap entries, exclude {query.exclude_size}")
    if levels:
        lines.append("")
        lines.append(format_level_table(levels))
        leaf = levels[-1]
        unsized = sum(why == "unreadable" for why in leaf.sizeless.values()) if isinstance(leaf, LevelStats) else 0
        if isinstance(leaf, LevelCount) and leaf.is_leaf and source is LeafSizes.BACKGROUND:
            lines.append(f"Sum of leaf sizes: not yet known ({leaf.node_count:,} leaves: their documents are being "
                         "read in the background for the next `info`; `info --leaf-sizes` reads them now)")
        elif isinstance(leaf, LevelCount) and leaf.is_leaf:
            lines.append(f"Sum of leaf sizes: not read ({leaf.node_count:,} leaf documents, one request each; "
                         "`check` or `info --leaf-sizes` reads them)")
        elif isinstance(leaf, LevelStats) and leaf.is_leaf and leaf.leaf_sum is not None and not leaf.complete:
            known = f"{leaf.leaf_sum} over the leaves read" if leaf.node_count else "not known"
            lines.append(f"Sum of leaf sizes: {known} (incomplete: the figures {leaf.lacking()}; retry)")
        elif isinstance(leaf, LevelStats) and leaf.is_leaf and leaf.leaf_sum is not None and unsized:
            unread_leaves = count_noun(unsized, "leaf", "leaves")
            lines.append(f"Sum of leaf sizes: {leaf.leaf_sum} over the leaves read ({unread_leaves} could not be "
                         f"read, so it is not compared with Total Items {_text(summary.total_items)})")
        elif isinstance(leaf, LevelStats) and leaf.is_leaf and leaf.leaf_sum is not None:
            match = "matches" if leaf.leaf_sum == summary.total_items else "DIFFERS from"
            kept = "; from the cache folder: no leaf document changed since" if source is LeafSizes.CACHED else ""
            lines.append(f"Sum of leaf sizes: {leaf.leaf_sum} ({match} Total Items {_text(summary.total_items)}{kept})")
    problems = [f for f in summary.findings if f.severity is not Severity.INFO]
    problems += [f for s in levels for f in s.findings]
    if problems:
        lines.append("")
        lines.append("Problems:")
        lines += [f"  {f.describe()}" for f in problems]
    return "\n".join(lines)


def format_level_table(levels: Sequence[LevelRow]) -> str:
    """One row per level; size columns read '-' where the sizes were not read."""
    header = ("Level", "Nodes", "Max", "Gaps", "Min", "Median", "Mean", "Max rows", "Rows", "Chunk rows")
    rows = [header]
    for s in levels:
        counts = (s.path + (" (leaves)" if s.is_leaf else ""), str(s.node_count), _text(s.max_nodes),
                  str(s.gap_count))
        if isinstance(s, LevelCount):
            rows.append((*counts, *("-",) * 6))
            continue
        rows.append((*counts, _text(s.min_size), _text(s.median_size), _text(s.mean_size),
                     _text(s.max_size), str(s.total_rows), _text(s.chunk_rows)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i])
                               for i, cell in enumerate(row)).rstrip() for row in rows)


def format_report(report: ValidationReport, location: str = "") -> str:
    """The `check` text: a verdict line, every finding with its path, then what was sampled."""
    lines = []
    verdict = "OK" if report.ok else "ERRORS"
    head = f"{location}: " if location else ""
    if report.headline:  # before any finding: the errors below may all come from it
        verdict = f"INCOMPLETE: {report.headline}\n{head}{verdict}"
    ignored = ""
    if report.ignored:
        codes = ", ".join(sorted({f.code for f in report.ignored}))
        ignored = f", {len(report.ignored)} ignored ({codes})"
    lines.append(f"{head}{verdict} - {len(report.errors)} error(s), {len(report.warnings)} warning(s){ignored}")
    for finding in report.findings:
        lines.append(f"  {finding.describe()}")
    if report.checked:
        lines.append("Checked:")
        lines += [f"  {item}" for item in report.checked]
    if report.cancelled:
        lines.append("(cancelled: the report is incomplete)")
    return "\n".join(lines)
