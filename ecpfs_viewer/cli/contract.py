"""The command line's contract: one set of exit codes, one error line, one JSON error object.

Every subcommand ends the same way (the README's "Exit status" table says it for users):

====  ===========================================================================================
0     done (for `check`: no errors found)
1     the command ran and the answer is "no": `check` found errors, `info` is not on an ecpfs
      index, no leaf holds the item, or the data could not be used (a query or input file with
      NaN or the wrong shape, a node that could not be read while working)
2     the command could not start: a usage error (unknown command or option, a bad option
      value), or a store, index or file named on the command line cannot be opened
130   interrupted (Ctrl+C); a build stopped by another signal exits 128 + its number
====  ===========================================================================================

A failure is one line on stderr, ``ecpfs-viewer: error: MESSAGE``; with ``--json`` the same is
also printed on stdout as ``{"schema_version": 1, "error": {"kind": ..., "message": ..., "exit_code": ...}}``
so a script reading stdout always gets JSON.

Every ``--json`` output is one object whose ``schema_version`` says which version of its JSON Schema
(``ecpfs_viewer/resources/schemas``, printed by ``ecpfs-viewer schema COMMAND``) it follows; the
version grows only when a key is removed or changes meaning.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, NoReturn

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CANNOT_START = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report Ctrl+C

PREFIX = "ecpfs-viewer: error: "
SCHEMA_VERSION = 1


def versioned(body: dict[str, Any]) -> dict[str, Any]:
    """A --json output: ``schema_version`` first, then the command's keys."""
    return {"schema_version": SCHEMA_VERSION, **body}


class CommandError(Exception):
    """A failure with its message for the user; subclasses say which exit code it means."""

    code = EXIT_FAILED
    kind = "failed"

    def __init_subclass__(cls, *, code: int | None = None, kind: str | None = None, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.code = cls.code if code is None else code
        cls.kind = cls.kind if kind is None else kind


class UsageError(CommandError, code=EXIT_CANNOT_START, kind="usage"):
    """The command line itself is wrong: an unknown command, a missing or bad option value."""


class CannotOpen(CommandError, code=EXIT_CANNOT_START, kind="cannot_open"):
    """A store, index or file named on the command line cannot be opened."""


class Interrupted(CommandError, code=EXIT_INTERRUPTED, kind="interrupted"):
    """The user pressed Ctrl+C."""


def report(error: CommandError, as_json: bool) -> int:
    """Print the error line on stderr (and the JSON object on stdout with --json); its exit code."""
    return report_message(str(error), error.code, error.kind, as_json)


def report_message(message: str, code: int, kind: str, as_json: bool) -> int:
    print(PREFIX + message, file=sys.stderr)
    if as_json:
        print(json.dumps(versioned({"error": {"kind": kind, "message": message, "exit_code": code}}), indent=2))
    return code


def unusable_file(path: str) -> bool:
    """True when path names nothing that can be opened as a file: absent, a folder, a pipe or
    device, or unreadable. Such a path is "cannot open" (2); a file that opens but holds the wrong
    data is a failure (1)."""
    try:
        return not os.path.isfile(path) or not os.access(path, os.R_OK)
    except (OSError, ValueError):  # a path with a NUL byte, a name too long
        return True


class Parser(argparse.ArgumentParser):
    """argparse with the contract's one-line usage error (exit 2 through :class:`UsageError`)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")
