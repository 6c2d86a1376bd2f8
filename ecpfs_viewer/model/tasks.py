"""The boundary between long model work and whoever runs it: stopping, progress and failure as values.

Model code that may run for long takes ``progress`` and ``cancel`` arguments. It calls
:func:`checkpoint` (or ``cancel.checkpoint()``) between steps: that raises :class:`Cancelled`
once the caller asked it to stop. Nothing in the model waits for the GUI.
"""

from __future__ import annotations

import threading
import traceback as _traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ecpfs_viewer.model.errors import UserError, describe_exception


class Cancelled(UserError):
    """Work stopped because its caller asked it to; nothing partial is returned.

    The one cancellation type: callers that must tell whose work stopped catch a subclass
    (``BuildCancelled``, ``SearchCancelled``)."""

    def __init__(self, message: str = "cancelled") -> None:
        super().__init__(message)


class Progress(Protocol):
    """How far a long run got, in one shape every runner can show: done of total, and what it does."""

    @property
    def done(self) -> int: ...

    @property
    def total(self) -> int: ...

    @property
    def message(self) -> str: ...


#: what long model work calls after each step
ProgressCallback = Callable[[Progress], None]


@dataclass(frozen=True)
class Counted:
    """The Progress of work in plain units (arrays read, rows measured, parents decoded)."""

    done: int
    total: int
    message: str = ""


class CancelToken(threading.Event):
    """A cancel flag with an explicit checkpoint: ``cancel()`` asks, ``checkpoint()`` stops the work.

    An Event, so model code typed for ``threading.Event`` (the CLI's signal handler sets one) takes
    it as is.
    """

    def cancel(self) -> None:
        """Ask the work to stop at its next checkpoint."""
        self.set()

    @property
    def cancelled(self) -> bool:
        return self.is_set()

    def checkpoint(self, error: type[Cancelled] = Cancelled) -> None:
        """Raise ``error`` if cancelled."""
        if self.is_set():
            raise error()


def checkpoint(cancel: threading.Event | None, error: type[Cancelled] = Cancelled) -> None:
    """A checkpoint for model code handed a CancelToken, a plain Event (the CLI, tests) or nothing."""
    if cancel is not None and cancel.is_set():
        raise error()


class TaskError(str):
    """A failed task as a value: its one-line message for the user, the exception's type and traceback.

    A str (the message), so a callback written to show text takes it as is; decisions are taken on
    :attr:`kind` (``error.is_a(SelectionTooLarge)``), never on the message's words.
    """

    kind: type[BaseException]
    traceback: str

    def __new__(cls, message: str, kind: type[BaseException], traceback: str = "") -> TaskError:
        value = super().__new__(cls, message)
        value.kind = kind
        value.traceback = traceback
        return value

    @classmethod
    def of(cls, exc: BaseException) -> TaskError:
        """The TaskError of exc (call it in the except block that caught exc, for its traceback)."""
        formatted = "".join(_traceback.format_exception(type(exc), exc, exc.__traceback__))
        return cls(describe_exception(exc), type(exc), formatted)

    @property
    def message(self) -> str:
        return str(self)

    @property
    def cancelled(self) -> bool:
        """The task stopped because it was asked to (no failure to show)."""
        return issubclass(self.kind, Cancelled)

    def is_a(self, *kinds: type[BaseException]) -> bool:
        return issubclass(self.kind, kinds)
