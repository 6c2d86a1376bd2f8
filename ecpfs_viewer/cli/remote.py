"""The remote options every command that opens a store takes (--endpoint, --anon, ...), in a
module of their own so that registering a subcommand imports nothing of zarr."""

from __future__ import annotations

import argparse

from ecpfs_viewer.cli.contract import UsageError
from ecpfs_viewer.cli.numbers import AtLeast, Positive
from ecpfs_viewer.model.storage import schemes
from ecpfs_viewer.model.storage.options import RemoteOptions


def add_remote_options(parser: argparse.ArgumentParser) -> None:
    """--endpoint / --anon / --region / --timeout / --max-in-flight for commands that open a URL."""
    group = parser.add_argument_group(f"remote stores ({schemes.describe()})")
    group.add_argument("--endpoint", metavar="URL", help="S3-compatible or other custom endpoint "
                       "(MinIO, a local emulator); credentials come from the environment or profile")
    group.add_argument("--anon", action="store_true", help="public bucket: unsigned requests, no credentials")
    group.add_argument("--region", metavar="REGION", help="bucket region (default: AWS_REGION or us-east-1)")
    group.add_argument("--timeout", action=Positive, default=30.0, metavar="S",
                       help="seconds per request before it fails (default 30)")
    group.add_argument("--max-in-flight", action=AtLeast, least=1, default=128, metavar="N",
                       help="concurrent requests per store (default 128)")
    group.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE", dest="storage_option",
                       help="an option of the fsspec client (repeatable): VALUE is read as JSON when it parses, "
                            "else as text; PROTOCOL.KEY for one layer of a chain "
                            "(simplecache.cache_storage=DIR)")


def remote_options(args: argparse.Namespace) -> RemoteOptions:
    """The remote options of the command line; UsageError for a timeout or limit out of range."""
    pairs = []
    for text in getattr(args, "storage_option", None) or []:
        key, equals, value = text.partition("=")
        if not equals or not key.strip():
            raise UsageError(f"--storage-option {text!r}: expected KEY=VALUE")
        pairs.append((key.strip(), value))
    try:
        return RemoteOptions(endpoint=args.endpoint, anon=args.anon, region=args.region,
                             timeout_s=args.timeout, max_in_flight=args.max_in_flight,
                             storage_options=tuple(pairs))
    except ValueError as exc:  # invalid --timeout / --max-in-flight
        raise UsageError(str(exc)) from None
