"""Saving what a view shows to a file the user names: ask where (unless told), write, and say what
happened on the view's status line (an OSError is a message there, never a crash)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtWidgets import QFileDialog, QWidget


def save_to(parent: QWidget, path: str | None, title: str, name: str, file_filter: str,
            write: Callable[[str], Sequence[str] | None], say: Callable[..., None]) -> str | None:
    """``write(path)`` (it returns the files written when not just ``path``), then ``say(text, error=)``.

    ``path`` None asks with a save dialog offering ``name``; the path chosen, None when nothing was
    written (nothing to save is the caller's test)."""
    if path is None:
        path, _ = QFileDialog.getSaveFileName(parent, title, name, file_filter)
        if not path:
            return None
    try:
        written = write(path) or [path]
    except OSError as exc:
        say(f"Could not write {exc.filename or path}: {exc.strerror or exc}", error=True)
        return None
    say(f"Saved {' and '.join(written)}")
    return path
