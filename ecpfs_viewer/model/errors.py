"""Errors as values the UI can show: which exceptions carry a message written for the user."""

from __future__ import annotations


class UserError(Exception):
    """An error whose message is written for the user and names what it concerns (a path, a field).

    Shown as is: no exception class name in front of it.
    """


class MetadataError(UserError, ValueError):
    """A stored metadata document holds a value the format does not allow (the message names it)."""


class TransportError(UserError, OSError):
    """A read that failed on the way (no answer, a refused or dropped connection, a server too busy).

    It says nothing about what is stored: whatever needed the read "could not be read", is never
    cached, and is asked for again on a retry."""

    retryable = True


def transport_failure(exc: BaseException | None) -> TransportError | None:
    """The TransportError exc is or was raised from (its causes, a few deep), else None."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, TransportError):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


#: What an exception raised without a message means, in words (its class name alone says little).
_WITHOUT_MESSAGE: tuple[tuple[type[BaseException], str], ...] = (
    (TimeoutError, "timed out"),
    (MemoryError, "ran out of memory"),
    (ConnectionResetError, "the connection was reset"),
    (BrokenPipeError, "the connection was closed"),
    (ConnectionError, "the connection failed"),
    (PermissionError, "permission denied"),
    (FileNotFoundError, "not found"),
    (EOFError, "the data ended early"),
    (RecursionError, "nested too deeply to process"),
    (OverflowError, "a number too large to process"),
    (UnicodeError, "not valid text"),
)


def describe_exception(exc: BaseException) -> str:
    """A one-line message for any exception: its text, never its class name (the caller puts the
    path or node in front; the type and traceback go to the log, e.g. ``TaskError``). One raised
    without a message is said in words ('timed out'); a KeyError names the key it did not find."""
    text = str(exc).strip()
    if isinstance(exc, UserError) and text:
        return text  # written for the user, whatever else it is (an UnknownItemError is a KeyError too)
    if isinstance(exc, KeyError) and exc.args:
        return f"no entry {exc.args[0]!r}"
    if text:
        prefix = f"{type(exc).__name__}: "
        return text[len(prefix):] if text.startswith(prefix) else text
    said = next((words for kind, words in _WITHOUT_MESSAGE if isinstance(exc, kind)), None)
    return said or "failed without saying why"
