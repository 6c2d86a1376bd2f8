"""`ecpfs-viewer cache [list|clear]`: what the cache folder keeps of the stores opened, and emptying it."""

from __future__ import annotations

import argparse

from ecpfs_viewer.cli.commands import add_command
from ecpfs_viewer.cli.contract import EXIT_OK
from ecpfs_viewer.model.formatting import format_bytes
from ecpfs_viewer.model.limits import current_limits
from ecpfs_viewer.model.storage.disk_cache import CacheUsage, cache_root, cache_usage, clear_cache

#: What is kept of which store, and how an entry is checked before it answers (docs/reliability.md).
KEPT_NOTE = ("Kept per index, each entry checked before it answers: local folders and zips (file stamps), "
             "s3/gs/az object stores (ETag, Last-Modified, size from listings), plain http(s) servers (the "
             "item map and parent links; each object an answer depends on asked for again: its ETag, "
             "Last-Modified and bytes). Nothing is kept of fsspec stores, nor of a server or objects with "
             "neither an ETag nor a Last-Modified.")


def add_cache_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register `cache [list|clear]`."""
    parser = add_command(subparsers, "cache")
    parser.add_argument("action", nargs="?", choices=("list", "clear"), default="list", help="list (default) or clear")
    parser.set_defaults(func=run_cache)
    return parser


def describe_usage(usage: CacheUsage) -> str:
    """'3 stores, 5 files, 12.3 MB'."""
    return f"{usage.stores} store(s), {usage.files} file(s), {format_bytes(usage.nbytes)}"


def run_cache(args: argparse.Namespace) -> int:
    if args.action == "clear":
        print(f"Cleared {cache_root()}: freed {describe_usage(clear_cache())}")
        return EXIT_OK
    print(f"Cache folder: {cache_root()}")
    print(f"Holds: {describe_usage(cache_usage())} (budget {format_bytes(current_limits().max_cache_bytes)})")
    print(KEPT_NOTE)
    return EXIT_OK
