"""Exceptions shared by the builder and its input readers (kept apart to avoid import cycles)."""

from __future__ import annotations

from ecpfs_viewer.model.errors import UserError


class BuildError(UserError, ValueError):
    """A build cannot start or cannot finish; the message is meant for the user and names the input."""


class BuildCancelled(Exception):
    """The caller asked the build to stop; nothing was left on disk."""
