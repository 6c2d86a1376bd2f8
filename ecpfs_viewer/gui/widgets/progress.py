"""A progress bar showing a long job's Counted (or SearchProgress): what it does, done / total."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QProgressBar


def show_progress(bar: QProgressBar, report: Any) -> None:
    """``report`` has done and total, and message (tasks.Counted) or phase (SearchProgress)."""
    done, total = int(getattr(report, "done", 0)), int(getattr(report, "total", 0))
    doing = getattr(report, "message", None) or getattr(report, "phase", "")
    bar.setRange(0, max(total, 1))
    bar.setValue(min(done, max(total, 1)))
    bar.setFormat(f"{doing} {done:,}/{total:,}")
