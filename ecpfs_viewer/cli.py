"""The `ecpfs-viewer` command: the GUI by default, subcommands info / check / build / search.

Subcommands are registered by small modules (`cli_read`, `cli_build`) so each stays next to the
model code it drives; this file only dispatches.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ecpfs_viewer import __version__

SUBCOMMANDS = ("info", "check", "build", "search")

DESCRIPTION = """\
Browse, validate and build ecpfs vector indexes (Zarr v3 stores).

  ecpfs-viewer [PATH_OR_URL]        open the desktop application (optionally on a store)
  ecpfs-viewer --demo               open the application on the bundled demo index
  ecpfs-viewer info PATH            print the index summary (like `ecp info`, and more)
  ecpfs-viewer check PATH           validate an index (exit 0 ok, 1 errors, 2 cannot open)
  ecpfs-viewer build IN.npy OUT.zarr  build an index from a .npy file
  ecpfs-viewer search INDEX ...     eCP search, exact search and recall@k

Run `ecpfs-viewer SUBCOMMAND --help` for the options of each subcommand.
"""


def build_subcommand_parser() -> argparse.ArgumentParser:
    """Parser for `ecpfs-viewer SUBCOMMAND ...`."""
    parser = argparse.ArgumentParser(prog="ecpfs-viewer", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=version_text())
    subparsers = parser.add_subparsers(dest="command", required=True)
    from ecpfs_viewer import cli_build, cli_read

    cli_read.add_info_parser(subparsers)
    cli_read.add_check_parser(subparsers)
    cli_build.add_build_parser(subparsers)
    cli_build.add_search_parser(subparsers)
    return parser


def build_gui_parser() -> argparse.ArgumentParser:
    """Parser for `ecpfs-viewer [PATH_OR_URL]`, the desktop application."""
    parser = argparse.ArgumentParser(prog="ecpfs-viewer", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("location", nargs="?", metavar="PATH_OR_URL",
                        help="an index folder, a Zarr store, a .zip, or an http(s)/s3/gs URL")
    parser.add_argument("--demo", action="store_true", help="open the bundled demo index")
    parser.add_argument("--screenshot", metavar="PNG",
                        help="save the window to PNG once the store has opened, then quit "
                             "(exit 0 opened, 1 could not open)")
    parser.add_argument("--select", metavar="PATH",
                        help="select this node or array once the store is open (e.g. lvl_3/node_812)")
    parser.add_argument("--version", action="version", version=version_text())
    return parser


def version_text() -> str:
    return f"ecpfs-viewer {__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] in SUBCOMMANDS:
        args = build_subcommand_parser().parse_args(args_list)
        return int(args.func(args))
    args = build_gui_parser().parse_args(args_list)
    from ecpfs_viewer.gui.app import run_gui

    return run_gui(location=args.location, demo=args.demo, screenshot=args.screenshot, select=args.select)


if __name__ == "__main__":
    sys.exit(main())
