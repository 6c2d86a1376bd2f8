"""Where diagnostics go: a small rotating log file in the user's log folder, and stderr with --verbose.

The UI shows a one-line message for a failed background job; when the failure is not one of the
project's own user errors (a bug), its traceback is kept here, so a bug report can include it.
Every module logs through ``logging.getLogger(__name__)``, below the ``ecpfs_viewer`` logger
that :func:`configure_logging` equips.
"""

from __future__ import annotations

import logging
import logging.handlers
import os
import sys
from pathlib import Path

import platformdirs

from ecpfs_viewer import APP_DIR_NAME

#: Environment variable that overrides the log folder (tests point it at a tmp dir).
LOG_DIR_ENV = "ECPFS_VIEWER_LOG_DIR"
LOG_FILE_NAME = "ecpfs-viewer.log"
LOG_FILE_BYTES = 512 * 1024  # per file; with the backups at most 1.5 MiB on disk
LOG_BACKUPS = 2
_ROOT = logging.getLogger("ecpfs_viewer")
_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s]: %(message)s"
_installed: list[logging.Handler] = []


def log_dir() -> Path:
    """The user log folder of ecpfs-viewer (~/.local/state/ecpfs-viewer/log on Linux), or the override."""
    override = os.environ.get(LOG_DIR_ENV)
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_log_dir(APP_DIR_NAME, appauthor=False))


class _StderrHandler(logging.Handler):
    """Writes to whatever sys.stderr is at the time of the record (it may be replaced later)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:
            self.handleError(record)


def configure_logging(*, verbose: bool = False) -> Path | None:
    """Log INFO and above to the log file, and with verbose everything to stderr too.

    Calling it again replaces what an earlier call installed. Returns the log file, or None when
    its folder cannot be written (the application runs on without a log file)."""
    remove_handlers()
    handlers: list[logging.Handler] = []
    path = log_dir() / LOG_FILE_NAME
    problem = ""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        log_file = logging.handlers.RotatingFileHandler(path, maxBytes=LOG_FILE_BYTES, backupCount=LOG_BACKUPS,
                                                        encoding="utf-8")
    except OSError as exc:
        problem = f"no log file: {exc}"
    else:
        log_file.setLevel(logging.INFO)
        handlers.append(log_file)
    if verbose:
        handlers.append(_StderrHandler(logging.DEBUG))
    formatter = logging.Formatter(_FORMAT)
    for handler in handlers:
        handler.setFormatter(formatter)
        _ROOT.addHandler(handler)
        _installed.append(handler)
    _ROOT.setLevel(logging.DEBUG if verbose else logging.INFO)
    if problem:
        _ROOT.debug(problem)
        return None
    return path


def remove_handlers() -> None:
    """Undo :func:`configure_logging` (closes the log file)."""
    while _installed:
        handler = _installed.pop()
        _ROOT.removeHandler(handler)
        handler.close()
    _ROOT.setLevel(logging.NOTSET)
