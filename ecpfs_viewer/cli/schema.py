"""`ecpfs-viewer schema COMMAND`: the JSON Schema a subcommand's --json output follows.

The schemas ship in the package (``ecpfs_viewer/resources/schemas``); every --json output is one
object whose ``schema_version`` names the version of its schema (``cli.contract.SCHEMA_VERSION``).
``error`` is the object stdout holds when a command with --json fails.
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
from typing import Any

from ecpfs_viewer.cli.commands import add_command
from ecpfs_viewer.cli.contract import EXIT_OK, UsageError

#: what has a schema: every subcommand with --json, and the error object
SCHEMA_NAMES = ("info", "check", "add", "search", "recall", "locate", "compare", "drift", "drift-sim", "workload",
                "tune", "error")


def schema_text(name: str) -> str:
    """The JSON Schema of ``name`` as shipped (UsageError for a name without one)."""
    if name not in SCHEMA_NAMES:
        raise UsageError(f"no schema for {name!r}; these have one: {', '.join(SCHEMA_NAMES)}")
    resource = importlib.resources.files("ecpfs_viewer.resources").joinpath("schemas", f"{name}.schema.json")
    return resource.read_text(encoding="utf-8")


def load_schema(name: str) -> dict[str, Any]:
    """The schema of ``name`` as a dict."""
    loaded: dict[str, Any] = json.loads(schema_text(name))
    return loaded


def add_schema_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register `schema (COMMAND | --list)`."""
    parser = add_command(subparsers, "schema")
    parser.add_argument("name", nargs="?", metavar="COMMAND", help=f"one of {', '.join(SCHEMA_NAMES)}")
    parser.add_argument("--list", action="store_true", help="print the names that have a schema, one a line")
    parser.set_defaults(func=run_schema)
    return parser


def run_schema(args: argparse.Namespace) -> int:
    if args.list == (args.name is not None):
        raise UsageError("give COMMAND or --list (see `ecpfs-viewer schema --help`)")
    print("\n".join(SCHEMA_NAMES) if args.list else schema_text(args.name), end="\n" if args.list else "")
    return EXIT_OK
