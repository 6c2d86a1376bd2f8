"""`ecpfs-viewer info` and `ecpfs-viewer check`: the index summary and validation on a terminal."""

from __future__ import annotations

import argparse
import sys


def add_info_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register `info PATH [--json]`."""
    parser = subparsers.add_parser("info", help="print the index summary (like `ecp info`, and more)")
    parser.add_argument("path", metavar="PATH", help="index folder, .zip or URL")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(func=run_info)
    return parser


def add_check_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register `check PATH`."""
    parser = subparsers.add_parser("check", help="validate an index (exit 0 ok, 1 errors, 2 cannot open)")
    parser.add_argument("path", metavar="PATH", help="index folder, .zip or URL")
    parser.set_defaults(func=run_check)
    return parser


def run_info(args: argparse.Namespace) -> int:
    print("info: not implemented yet", file=sys.stderr)
    return 2


def run_check(args: argparse.Namespace) -> int:
    print("check: not implemented yet", file=sys.stderr)
    return 2
