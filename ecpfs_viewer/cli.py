"""The `ecpfs-viewer` command: the GUI by default, subcommands info / check / build / search.

Subcommands are registered by small modules (`cli_read`, `cli_build`) so each stays next to the
model code it drives; this file only dispatches.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ecpfs_viewer import __version__

SUBCOMMANDS = ("info", "check", "build", "search", "recall", "locate")

DESCRIPTION = """\
Browse, validate and build ecpfs vector indexes (Zarr v3 stores).

  ecpfs-viewer [PATH_OR_URL]        open the desktop application (optionally on a store)
  ecpfs-viewer --demo               open the application on the bundled demo index
  ecpfs-viewer info PATH            print the index summary (like `ecp info`, and more)
  ecpfs-viewer check PATH           validate an index (exit 0 ok, 1 errors, 2 cannot open)
  ecpfs-viewer build IN.npy OUT.zarr  build an index from a .npy file
  ecpfs-viewer search INDEX ...     eCP search with a trace, exact neighbours, why-missed
  ecpfs-viewer recall INDEX ...     recall@k against exact search, per search_exp
  ecpfs-viewer locate INDEX ITEM    which leaf and row hold an item

Run `ecpfs-viewer SUBCOMMAND --help` for the options of each subcommand.
"""


#: subcommand -> (module, function that registers it); modules are imported only when needed
_REGISTRARS = {
    "info": ("cli_read", "add_info_parser"), "check": ("cli_read", "add_check_parser"),
    "build": ("cli_build", "add_build_parser"), "search": ("cli_search", "add_search_parser"),
    "recall": ("cli_search", "add_recall_parser"), "locate": ("cli_search", "add_locate_parser"),
}


def build_subcommand_parser(only: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """Parser for `ecpfs-viewer SUBCOMMAND ...`; `only` registers just those (a faster start)."""
    parser = argparse.ArgumentParser(prog="ecpfs-viewer", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=version_text())
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in only or SUBCOMMANDS:
        module, function = _REGISTRARS[name]
        getattr(importlib.import_module(f"ecpfs_viewer.{module}"), function)(subparsers)
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
    parser.add_argument("--version", action="version", version=version_text())
    return parser


def version_text() -> str:
    return f"ecpfs-viewer {__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list and args_list[0] in SUBCOMMANDS:
        args = build_subcommand_parser([args_list[0]]).parse_args(args_list)
        return int(args.func(args))
    args = build_gui_parser().parse_args(args_list)
    from ecpfs_viewer.gui.app import run_gui

    return run_gui(location=args.location, demo=args.demo, screenshot=args.screenshot)


if __name__ == "__main__":
    sys.exit(main())
