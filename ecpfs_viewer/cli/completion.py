"""`ecpfs-viewer completion bash|zsh`: a shell completion script generated from the argparse parser.

shtab writes a static script from the same parsers the commands use, so completion never runs
Python on a key press and cannot drift from the options. Install it with, for bash,
``ecpfs-viewer completion bash > ~/.local/share/bash-completion/completions/ecpfs-viewer``, and
for zsh, ``ecpfs-viewer completion zsh > ~/.zfunc/_ecpfs-viewer`` (a folder on ``$fpath``).
"""

from __future__ import annotations

import argparse

from ecpfs_viewer.cli.commands import add_command
from ecpfs_viewer.cli.contract import EXIT_OK, CannotOpen

SHELLS = ("bash", "zsh")
#: arguments that name a file or folder: completed as paths
PATH_ARGUMENTS = frozenset({"path", "index", "input", "output", "query_file", "queries", "screenshot"})


def add_completion_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register `completion SHELL`."""
    parser = add_command(subparsers, "completion")
    parser.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash or zsh")
    parser.set_defaults(func=run_completion)
    return parser


def completion_script(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script for shell, covering every subcommand and option of parser."""
    try:
        import shtab
    except ImportError:
        raise CannotOpen("shell completion needs the shtab package, which is not installed") from None
    for action in _all_actions(parser):
        if action.dest in PATH_ARGUMENTS:
            action.complete = shtab.FILE  # type: ignore[attr-defined]
    return str(shtab.complete(parser, shell=shell))


def run_completion(args: argparse.Namespace) -> int:
    print(completion_script(args.shell, args.whole_parser()))
    return EXIT_OK


def _all_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The actions of parser and of every subcommand parser below it."""
    found: list[argparse.Action] = []
    for action in parser._actions:
        found.append(action)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _all_actions(sub)
    return found
