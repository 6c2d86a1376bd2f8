"""Numeric options, checked while the line is parsed: a value out of range is a usage error (exit 2)
that names the option, before any store is opened, so it never reaches the index as a question
the index then answers wrongly (`check --max-node-reads 0` once reported a fabricated index error).

Each takes its bound where it is registered: ``p.add_argument("--k", action=AtLeast, least=1)``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

#: the one placeholder of an option that takes a list of integers (--search-exp 1,2,4)
LIST_METAVAR = "N[,N...]"


class AtLeast(argparse.Action):
    """An integer (or, with ``type=float``, a number) no smaller than ``least``."""

    def __init__(self, option_strings: Sequence[str], dest: str, least: float, **kwargs: Any) -> None:
        kwargs.setdefault("type", int)
        super().__init__(option_strings, dest, **kwargs)
        self.least = least

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        if values < self.least:
            parser.error(f"{_name(self, option_string)} must be at least {self.least} (got {values})")
        setattr(namespace, self.dest, values)


class Positive(argparse.Action):
    """A number above zero (seconds, a fraction): zero is as meaningless as a negative."""

    def __init__(self, option_strings: Sequence[str], dest: str, at_most: float | None = None,
                 **kwargs: Any) -> None:
        kwargs.setdefault("type", float)
        super().__init__(option_strings, dest, **kwargs)
        self.at_most = at_most

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        name = _name(self, option_string)
        if not values > 0:  # also NaN
            parser.error(f"{name} must be more than 0 (got {values})")
        if self.at_most is not None and values > self.at_most:
            parser.error(f"{name} must be at most {self.at_most} (got {values})")
        setattr(namespace, self.dest, values)


class IntList(argparse.Action):
    """Comma-separated integers, at least one, none smaller than ``least``; stored as a tuple."""

    def __init__(self, option_strings: Sequence[str], dest: str, least: int, **kwargs: Any) -> None:
        kwargs.setdefault("metavar", LIST_METAVAR)
        super().__init__(option_strings, dest, **kwargs)
        self.least = least

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        name = _name(self, option_string)
        try:
            numbers = tuple(int(x) for x in str(values).split(",") if x.strip())
        except ValueError:
            parser.error(f"{name} must be comma-separated integers, got {values!r}")
        if not numbers:
            parser.error(f"{name} needs at least one value")
        if min(numbers) < self.least:
            parser.error(f"{name} values must be at least {self.least} (got {min(numbers)})")
        setattr(namespace, self.dest, numbers)


def add_search_exp(parser: argparse.ArgumentParser, default: int | tuple[int, ...], least: int = 0,
                   help_text: str | None = None) -> None:
    """--search-exp, the same for every command: one value (``default`` an int) as N, a list as
    :data:`LIST_METAVAR`, a row per value."""
    if isinstance(default, int):
        parser.add_argument("--search-exp", action=AtLeast, least=least, default=default, metavar="N",
                            help=help_text or f"leaves to visit before the stop test (default {default})")
        return
    listed = ",".join(map(str, default))
    parser.add_argument("--search-exp", action=IntList, least=least, default=default,
                        help=help_text or f"search_exp values, comma-separated, a row each (default {listed})")


def _name(action: argparse.Action, option_string: str | None) -> str:
    if option_string:
        return option_string
    return action.metavar if isinstance(action.metavar, str) else action.dest
