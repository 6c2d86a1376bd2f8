"""`ecpfs-viewer add INDEX ROWS.npy`: upstream's insert (`ecp add-data`, format document §3.8) on a terminal.

Registered by ``cli/__init__.py``; the job is model/build/insert.py's :func:`add_rows`, which the
window's Build ▸ Add Vectors… calls too. Exit status as in `cli.contract`: 2 when the add cannot
start (the index is not a local folder that can be written, ROWS cannot be opened, another
ecpfs-viewer writer holds the index), 1 when the rows cannot be added (wrong dimension, NaN, not unit
length under ``is_normalized``, a route through a missing internal node; or writing failed after
the ids were reserved), 130 for Ctrl+C (after the reservation it leaves upstream's id gap, and says so).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ecpfs_viewer.cli.commands import add_command
from ecpfs_viewer.cli.contract import (
    EXIT_OK,
    PREFIX,
    CannotOpen,
    CommandError,
    Interrupted,
    unusable_file,
    versioned,
)
from ecpfs_viewer.cli.numbers import AtLeast
from ecpfs_viewer.cli.progress import TerminalProgress
from ecpfs_viewer.model.build.errors import BuildError
from ecpfs_viewer.model.build.insert import AddFailed, AddInterrupted, AddResult, add_rows
from ecpfs_viewer.model.build.write_lock import UPSTREAM_NOT_COVERED, IndexLocked


def add_add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register `add INDEX ROWS [options]`."""
    p = add_command(subparsers, "add")
    p.add_argument("index", metavar="INDEX", help="local index folder to add to (written in place)")
    p.add_argument("rows", metavar="ROWS", help=".npy file of vectors (rows x dim)")
    p.add_argument("--wait", type=float, action=AtLeast, least=0, default=10,
                   help="seconds to wait for another ecpfs-viewer writer of INDEX to finish (default 10)")
    p.add_argument("--force", action="store_true",
                   help="add rows that are not unit length to an index that promises is_normalized")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run_add)
    return p


class _Failed(CommandError):
    """The rows could not be added (exit 1)."""


def run_add(args: argparse.Namespace) -> int:
    """Add the rows; print the ids they got."""
    bar = TerminalProgress(enabled=not args.quiet and not args.json)
    try:
        with bar:
            result = add_rows(args.index, args.rows, progress=bar, cancel=None, lock_wait_seconds=args.wait,
                              force=args.force)
    except BuildError as exc:
        if any(p.field == "output" for p in exc.problems) and _cannot_open_index(exc):
            raise CannotOpen(str(exc)) from None
        if any(p.field == "input" for p in exc.problems) and unusable_file(args.rows):
            raise CannotOpen(str(exc)) from None
        for problem in exc.problems[:-1]:
            print(PREFIX + str(problem), file=sys.stderr)
        raise _Failed(str(exc.problems[-1]) if exc.problems else str(exc)) from None
    except IndexLocked as exc:
        raise CannotOpen(str(exc)) from None
    except AddInterrupted as exc:
        raise Interrupted(str(exc)) from None
    except KeyboardInterrupt:
        raise Interrupted("add interrupted before the ids were reserved; the index is unchanged") from None
    except AddFailed as exc:
        raise _Failed(str(exc)) from None
    if args.json:
        print(json.dumps(versioned(add_json(result)), indent=2))
    else:
        print(format_add_summary(result))
    return EXIT_OK


def _cannot_open_index(exc: BuildError) -> bool:
    """An index problem that stops the add before it starts (not local, absent, not writable, no index)."""
    starts = ("vectors are added", "no such index", "the index folder cannot", "choose the index", "info/",
              "format_version", "index_root")
    return any(p.field == "output" and p.message.startswith(starts) for p in exc.problems)


def add_json(result: AddResult) -> dict[str, Any]:
    return {
        "index": str(result.index),
        "ids": {"start": result.ids.start, "stop": result.ids.stop},
        "rows": len(result.ids),
        "leaves_appended": result.leaves_appended,
        "leaves_created": result.leaves_created,
        "seconds": round(result.seconds, 3),
        "warnings": [w for w in result.warnings if w != UPSTREAM_NOT_COVERED],
        "lock_note": UPSTREAM_NOT_COVERED,
    }


def format_add_summary(result: AddResult) -> str:
    ids = result.ids
    lines = [f"Added {len(ids):,} rows to {result.index}: item ids {ids.start}..{ids.stop - 1} "
             f"({result.leaves_appended:,} leaves appended, {len(result.leaves_created):,} created) "
             f"in {result.seconds:.2f} s"]
    lines += [f"  note: {w}" if w == UPSTREAM_NOT_COVERED else f"  warning: {w}" for w in result.warnings]
    return "\n".join(lines)

