"""A progress bar showing a long job's Counted (or SearchProgress): what it does, done / total."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QProgressBar

#: QProgressBar counts in a C int: a larger total is shown as a share of _BAR_SCALE steps
_BAR_MAX, _BAR_SCALE = 2**31 - 1, 1_000_000


def show_progress(bar: QProgressBar, report: Any) -> None:
    """``report`` has done and total, and message (tasks.Counted) or phase (SearchProgress)."""
    done, total = int(getattr(report, "done", 0)), int(getattr(report, "total", 0))
    doing = getattr(report, "message", None) or getattr(report, "phase", "")
    top, value = max(total, 1), min(max(done, 0), max(total, 1))
    if top > _BAR_MAX:  # a count past a 32-bit int (bytes, distance computations): the bar shows the share
        top, value = _BAR_SCALE, int(value * _BAR_SCALE // max(total, 1))
    bar.setRange(0, top)
    bar.setValue(value)
    bar.setFormat(f"{doing} {done:,}/{total:,}")  # the text keeps the real numbers
    _fit_text(bar)


def _fit_text(bar: QProgressBar) -> None:
    """Widen the bar to its text (up to its maximum width), never narrowing it while a job reports:
    beside a wrapping status line a bar was squeezed until "levels laid out 2/3" broke over two clipped
    lines."""
    metrics = bar.fontMetrics()
    wanted = metrics.horizontalAdvance(bar.text()) + 4 * metrics.averageCharWidth()
    if wanted > bar.minimumWidth():
        bar.setMinimumWidth(min(wanted, bar.maximumWidth()))
