"""Progress bars with an ETA on stderr for long commands (check, recall, search --explain, build).

Drawn with rich, and only when stderr is a terminal and --quiet was not given: piped output and
logs stay free of bars. The model reports progress through callbacks with ``done`` / ``total``
and a ``phase`` (build, search) or a ``message`` (validation); each phase gets its own bar.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Protocol


class _Report(Protocol):
    """What every progress report of the model carries (BuildProgress, CheckProgress, SearchProgress)."""

    @property
    def done(self) -> int: ...

    @property
    def total(self) -> int: ...


class TerminalProgress:
    """A progress callback that draws one bar per phase; does nothing when disabled.

    Callbacks may come from worker threads (the exact search, a dask graph): rich's Progress
    takes its own lock, and the bar is created under ours."""

    def __init__(self, enabled: bool = True, stream: Any = None) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self.enabled = bool(enabled) and _is_terminal(self._stream)
        self._lock = threading.Lock()
        self._progress: Any = None
        self._task: Any = None
        self._phase: str | None = None

    def __call__(self, report: _Report) -> None:
        if not self.enabled:
            return
        phase = str(getattr(report, "phase", "") or "check")
        description = str(getattr(report, "message", "") or phase)
        with self._lock:
            progress = self._started()
            if phase != self._phase or self._task is None:
                self._phase = phase
                self._task = progress.add_task(_short(description), total=max(int(report.total), 0) or None)
            progress.update(self._task, completed=int(report.done), total=max(int(report.total), 0) or None,
                            description=_short(description))

    def close(self) -> None:
        """Stop drawing (the last state stays on screen); safe to call more than once."""
        with self._lock:
            if self._progress is not None:
                self._progress.stop()
                self._progress = None

    def __enter__(self) -> TerminalProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _started(self) -> Any:
        if self._progress is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description:<24}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("ETA"), TimeRemainingColumn(), console=Console(file=self._stream), transient=False,
            )
            self._progress.start()
        return self._progress


def _short(text: str, width: int = 24) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False
