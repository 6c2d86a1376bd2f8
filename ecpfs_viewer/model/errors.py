"""Errors as values the UI can show: which exceptions carry a message written for the user."""

from __future__ import annotations


class UserError(Exception):
    """An error whose message is written for the user and names what it concerns (a path, a field).

    Shown as is: no exception class name in front of it.
    """


class MetadataError(UserError, ValueError):
    """A stored metadata document holds a value the format does not allow (the message names it)."""


def describe_exception(exc: BaseException) -> str:
    """A one-line message for any exception: the text of a UserError, else 'Type: text'."""
    text = str(exc).strip()
    if isinstance(exc, UserError) and text:
        return text
    text = text or type(exc).__name__
    return text if type(exc).__name__ in text else f"{type(exc).__name__}: {text}"
