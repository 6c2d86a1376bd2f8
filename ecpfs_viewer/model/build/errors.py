"""Build problems and exceptions shared by the builder and its input readers (apart, to avoid cycles).

A problem names the build setting it concerns, so the Build dialog shows it beside that field and
the command line prints the same text; nobody has to guess the field from the wording.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.tasks import Cancelled

#: The build settings a problem can concern: the input, the output, or one parameter.
ProblemField = Literal["input", "output", "levels", "target", "metric", "dtype", "rep_selection",
                       "node_chunk", "rep_chunk"]
PROBLEM_FIELDS: tuple[ProblemField, ...] = ("input", "output", "levels", "target", "metric", "dtype",
                                            "rep_selection", "node_chunk", "rep_chunk")


@dataclass(frozen=True)
class BuildProblem:
    """One reason a build cannot run: the setting it concerns and what is wrong with it.

    ``subject`` is the path the message is about; a form that shows the path in the field leaves it
    out, a terminal line puts it in front (``str(problem)``).
    """

    field: ProblemField
    message: str
    subject: str = ""

    def __str__(self) -> str:
        return f"{self.subject}: {self.message}" if self.subject else self.message


class BuildError(UserError, ValueError):
    """A build cannot start or cannot finish; carries the problems, each meant for the user."""

    def __init__(self, *problems: BuildProblem) -> None:
        self.problems: tuple[BuildProblem, ...] = problems
        super().__init__("; ".join(str(p) for p in problems))


def input_error(label: str, message: str) -> BuildError:
    """A BuildError about the input named ``label`` (a path, or store.zarr#array)."""
    return BuildError(BuildProblem("input", message, label))


class BuildCancelled(Cancelled):
    """The caller asked the build to stop; nothing was left on disk."""

    def __init__(self, message: str = "build cancelled") -> None:
        super().__init__(message)
