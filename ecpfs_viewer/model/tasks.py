"""The boundary between long model work and whoever runs it: stopping, progress and failure as values.

Model code that may run for long takes ``progress`` and ``cancel`` arguments. It calls
:func:`checkpoint` (or ``cancel.checkpoint()``) between steps: that raises :class:`Cancelled`
once the caller asked it to stop, and runs the token's checkpoint hook otherwise. The model does
not know what a hook does; the GUI installs one to make its workers give way to the window (see
``gui/runtime/scheduling.py``). Checkpoints are these calls only: looking at ``cancel.is_set()``
or reading from a store never waits.
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
    it as is. ``on_checkpoint`` runs at every checkpoint of a token not cancelled (in the worker's
    thread); the model never learns what it is for.
    """

    def __init__(self, on_checkpoint: Callable[[], object] | None = None) -> None:
        super().__init__()
        self._on_checkpoint = on_checkpoint

    def cancel(self) -> None:
        """Ask the work to stop at its next checkpoint."""
        self.set()

    @property
    def cancelled(self) -> bool:
        return self.is_set()

    def checkpoint(self, error: type[Cancelled] = Cancelled) -> None:
        """Raise ``error`` if cancelled; else run the hook (and raise if it was cancelled meanwhile)."""
        if self.is_set():
            raise error()
        if self._on_checkpoint is not None:
            self._on_checkpoint()
            if self.is_set():
                raise error()


def checkpoint(cancel: threading.Event | None, error: type[Cancelled] = Cancelled) -> None:
    """A checkpoint for model code handed a CancelToken, a plain Event (the CLI, tests) or nothing."""
    if isinstance(cancel, CancelToken):
        cancel.checkpoint(error)
    elif cancel is not None and cancel.is_set():
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
