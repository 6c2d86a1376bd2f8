"""The `ecpfs-viewer` command: the GUI by default, subcommands info / check / build / search / ...

Subcommands are registered by small modules (`cli.read`, `cli.build`, `cli.search`) so each stays
next to the model code it drives; this file sets up logging, dispatches, and ends every command
the way `cli.contract` says (exit codes, the one error line, the JSON error object).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import logging
import os
import platform
import sys
from collections.abc import Sequence

from ecpfs_viewer import __version__, process_memory
from ecpfs_viewer.cli.contract import (
    EXIT_FAILED,
    CannotOpen,
    CommandError,
    Interrupted,
    Parser,
    UsageError,
    report,
)
from ecpfs_viewer.cli.numbers import Positive
from ecpfs_viewer.logs import configure_logging
from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.interpreter import fewer_collections
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.process_exit import leave_process, remote_clients_made

log = logging.getLogger(__name__)

SUBCOMMANDS = ("info", "check", "build", "add", "tune", "search", "recall", "locate", "compare", "drift", "drift-sim",
               "workload", "map", "cache", "completion", "install-desktop", "schema")

DESCRIPTION = """\
Browse, validate and build ecpfs vector indexes (Zarr v3 stores).

  ecpfs-viewer [PATH_OR_URL]        open the desktop application (optionally on a store)
  ecpfs-viewer --demo               open the application on the bundled demo index
  ecpfs-viewer info PATH            print the index summary (like `ecp info`, and more)
  ecpfs-viewer check PATH [--deep]  validate an index (exit 0 ok, 1 errors, 2 cannot open)
  ecpfs-viewer build IN.npy OUT.zarr  build an index from a .npy file
  ecpfs-viewer add INDEX ROWS.npy   add vectors to an index as upstream's insert does; prints their ids
  ecpfs-viewer tune IN.npy          build a grid of variants; the cheapest reaching a recall target
  ecpfs-viewer search INDEX ...     eCP search with a trace, exact neighbours, why-missed
  ecpfs-viewer recall INDEX ...     recall@k against exact search, per search_exp
  ecpfs-viewer locate INDEX ITEM    which leaf and row hold an item
  ecpfs-viewer compare A B          two indexes side by side: balance, migration, recall vs cost
  ecpfs-viewer drift INDEX          what inserts did against a fresh build; exit 1 when a rebuild is advised
  ecpfs-viewer drift-sim ROWS.npy   build on N% of the rows, add the rest: how recall and balance decay
  ecpfs-viewer workload INDEX ...   replay queries: visits per node, hot leaves, skew
  ecpfs-viewer cache [list|clear]   show or clear the cache folder (item maps, remote metadata)
  ecpfs-viewer completion bash|zsh  print a shell completion script
  ecpfs-viewer install-desktop      add the app to the desktop's menu for this user (--uninstall)
  ecpfs-viewer schema COMMAND       print the JSON Schema of COMMAND's --json output

Run `ecpfs-viewer SUBCOMMAND --help` for the options of each subcommand. --verbose (anywhere on
the line) prints debug messages on stderr; errors are also kept in a log file.

Exit status: 0 done, 1 the answer is no (errors found, not an index, item absent, unusable
data, a rebuild advised by drift), 2 cannot start (usage error, or a store or file cannot be
opened), 130 interrupted.
"""
VERBOSE_HELP = "print debug messages on stderr (errors are always kept in the log file)"
VERSION_HELP = ("print the version and exit; with --verbose also those of Python, Qt, zarr, numpy and the rest, "
                "the Qt platform plugin and the platform (for a bug report)")


#: subcommand -> (module, function that registers it); modules are imported only when needed
_REGISTRARS = {
    "info": ("read", "add_info_parser"), "check": ("read", "add_check_parser"),
    "build": ("build", "add_build_parser"), "add": ("add", "add_add_parser"), "tune": ("tune", "add_tune_parser"),
    "search": ("search", "add_search_parser"),
    "recall": ("search", "add_recall_parser"), "locate": ("search", "add_locate_parser"),
    "compare": ("compare", "add_compare_parser"),
    "drift": ("drift", "add_drift_parser"), "drift-sim": ("drift", "add_drift_sim_parser"),
    "workload": ("diagnostics", "add_workload_parser"), "map": ("embedding_map", "add_map_parser"),
    "cache": ("cache", "add_cache_parser"), "completion": ("completion", "add_completion_parser"),
    "install-desktop": ("desktop", "add_install_desktop_parser"),
    "schema": ("schema", "add_schema_parser"),
}


def build_subcommand_parser(only: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """Parser for `ecpfs-viewer SUBCOMMAND ...`; `only` registers just those (a faster start)."""
    parser = Parser(prog="ecpfs-viewer", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=version_text(), help=VERSION_HELP)
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in only or SUBCOMMANDS:
        module, function = _REGISTRARS[name]
        getattr(importlib.import_module(f"ecpfs_viewer.cli.{module}"), function)(subparsers)
    # `completion` describes every subcommand: it is handed this builder rather than importing its dispatcher
    parser.set_defaults(whole_parser=build_subcommand_parser)
    return parser


def build_gui_parser() -> argparse.ArgumentParser:
    """Parser for `ecpfs-viewer [PATH_OR_URL]`, the desktop application."""
    parser = Parser(prog="ecpfs-viewer", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("location", nargs="?", metavar="PATH_OR_URL",
                        help="an index folder, a Zarr store, a .zip, or an http(s)/s3/gs URL")
    parser.add_argument("--demo", action="store_true", help="open the bundled demo index")
    parser.add_argument("--screenshot", metavar="PNG",
                        help="save the window to PNG once the store has opened, then quit "
                             "(exit 0 opened, 1 could not open)")
    parser.add_argument("--select", metavar="PATH",
                        help="select this node or array once the store is open (e.g. lvl_3/node_812)")
    parser.add_argument("--timeout", action=Positive, metavar="S",
                        help="for a URL: seconds per request before it fails (default 30)")
    parser.add_argument("--version", action="version", version=version_text(), help=VERSION_HELP)
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    return parser


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def version_text() -> str:
    """What --version prints (the About box shows the same number)."""
    return f"ecpfs-viewer {__version__}"


def split_verbose(args_list: list[str]) -> tuple[bool, list[str]]:
    """--verbose / -v may come anywhere (before or after the subcommand): take it out first."""
    rest = [arg for arg in args_list if arg not in ("-v", "--verbose")]
    return len(rest) != len(args_list), rest


def main(argv: Sequence[str] | None = None) -> int:
    """Run a subcommand, or the desktop application; returns the exit status (see cli.contract)."""
    process_memory.limit_allocator_arenas()
    verbose, args_list = split_verbose(list(sys.argv[1:] if argv is None else argv))
    log_file = configure_logging(verbose=verbose)
    log.debug("ecpfs-viewer %s, Python %s on %s; arguments %s; log file %s", __version__,
              platform.python_version(), platform.platform(), args_list, log_file or "none")
    if args_list and args_list[0] in SUBCOMMANDS:
        return run_subcommand(args_list, as_program=argv is None)
    if verbose and "--version" in args_list:
        from ecpfs_viewer.cli.about import version_report

        print(version_report())
        return 0
    try:
        return _run_gui(args_list)
    except CommandError as exc:
        return report(exc, as_json=False)


def run_subcommand(args_list: list[str], as_program: bool = False) -> int:
    """Parse and run `SUBCOMMAND ...`; every failure ends as the contract says, never a traceback."""
    as_json = "--json" in args_list
    try:
        args, unknown = build_subcommand_parser([args_list[0]]).parse_known_args(args_list)
        if unknown:  # argparse would name the top-level parser; the subcommand's help is the one to read
            raise UsageError(f"unrecognized arguments: {' '.join(unknown)} (see `ecpfs-viewer {args_list[0]} --help`)")
        with fewer_collections():
            code = int(args.func(args))
    except BrokenPipeError:  # `check ... | head -1`: the reader left; exit quietly
        _silence_stdout()
        code = EXIT_FAILED
    except CommandError as exc:
        code = report(exc, as_json)
    except KeyboardInterrupt:
        code = report(Interrupted("interrupted"), as_json)
    except Exception as exc:  # an error the command did not expect: one line here, the traceback in the log
        log.error("%s failed", args_list[0], exc_info=True)
        code = report(CommandError(_describe(exc)), as_json)
    if as_program and remote_clients_made():  # run as the program: leave now
        leave_process(code)
    return code


def _describe(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and type(exc) is KeyError and exc.args:
        return str(exc.args[0])
    if isinstance(exc, OSError) and exc.strerror and exc.filename:
        return f"{exc.filename}: {exc.strerror}"
    return describe_exception(exc)


def _run_gui(args_list: list[str]) -> int:
    """The desktop application on PATH_OR_URL, unless the line is a mistyped command or there is no display."""
    if args_list:
        mistyped = _mistyped_command(args_list[0])
        if mistyped is not None:
            raise mistyped
    parser = build_gui_parser()
    args = parser.parse_args(args_list)
    try:
        remote = None if args.timeout is None else RemoteOptions(timeout_s=args.timeout)
    except ValueError as exc:  # a timeout of 0 or less
        raise UsageError(f"--timeout: {exc}") from None
    from ecpfs_viewer.cli.qt_platform import missing_platform_libraries

    problem = missing_display() or missing_platform_libraries()  # before Qt aborts for want of them
    if problem and args.screenshot:  # a picture needs no screen: draw it offscreen
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    elif problem:
        raise CannotOpen(problem)
    from ecpfs_viewer.gui.app import run_gui

    return run_gui(location=args.location, demo=args.demo, screenshot=args.screenshot, select=args.select,
                   remote=remote)


def _mistyped_command(word: str) -> UsageError | None:
    """`ecpfs-viewer chek x`: a first word that is no path but close to a command name."""
    if word.startswith("-") or "://" in word or os.path.exists(word.split("#")[0]):
        return None
    close = difflib.get_close_matches(word, SUBCOMMANDS, n=1, cutoff=0.6)
    if not close:
        return None
    return UsageError(f"unknown command {word!r}: did you mean `{close[0]}`? (see `ecpfs-viewer --help`)")


def missing_display() -> str | None:
    """Why the window cannot open on this machine (no X11 or Wayland display), else None.

    Qt would abort the process (exit 134) after a warning about the "xcb" plugin; saying so
    first, with exit 2, is what a user or a script can act on."""
    if not sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        return None
    platforms = [p.split(":")[0].strip().lower() for p in os.environ.get("QT_QPA_PLATFORM", "").split(";")]
    platforms = [p for p in platforms if p] or ["xcb", "wayland"]  # Qt's own choice on Linux
    if "xcb" in platforms and os.environ.get("DISPLAY"):
        return None
    if "wayland" in platforms and os.environ.get("WAYLAND_DISPLAY"):
        return None
    if any(p not in ("xcb", "wayland") for p in platforms):  # offscreen, minimal, vnc, eglfs, ...
        return None
    return ("no display to open the window on (DISPLAY and WAYLAND_DISPLAY are not set); run it in a desktop "
            "session, or use the subcommands (`ecpfs-viewer --help`)")


if __name__ == "__main__":
    sys.exit(main())
