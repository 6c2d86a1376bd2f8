"""What a validation run produces (findings, progress) and the state it carries while it runs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ecpfs_viewer.model.ecpfs import Finding, IndexSummary, LevelStats, Severity
from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.hierarchy import Hierarchy


@dataclass(frozen=True)
class CheckProgress:
    done: int
    total: int
    message: str


@dataclass(frozen=True)
class ValidationReport:
    """Findings (errors first) plus what the sampled checks actually read."""

    findings: tuple[Finding, ...]
    summary: IndexSummary | None = None
    levels: tuple[LevelStats, ...] = ()
    checked: tuple[str, ...] = ()
    cancelled: bool = False

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.WARNING]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "cancelled": self.cancelled, "errors": len(self.errors),
                "warnings": len(self.warnings), "checked": list(self.checked),
                "findings": [f.to_dict() for f in self.findings]}


class Cancelled(Exception):
    pass


class Check:
    """State of one validation run: findings, the work budget and progress reporting."""

    def __init__(self, h: Hierarchy, progress: Callable[[CheckProgress], None] | None,
                 cancel: threading.Event | None) -> None:
        self.h = h
        self.findings: list[Finding] = []
        self.checked: list[str] = []
        self.progress = progress
        self.cancel = cancel
        self.done = 0
        self.total = 1

    def error(self, path: str, message: str, sampled: str = "") -> None:
        self.findings.append(Finding(Severity.ERROR, path, message, sampled))

    def warning(self, path: str, message: str, sampled: str = "") -> None:
        self.findings.append(Finding(Severity.WARNING, path, message, sampled))

    def step(self, message: str) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled()
        self.done += 1
        if self.progress is not None:
            self.progress(CheckProgress(min(self.done, self.total), self.total, message))

    def read(self, path: str) -> np.ndarray | None:
        try:
            return self.h.read_array(path)
        except Exception as exc:  # ArrayReadError names the path; anything else is reported likewise
            self.error(path, f"cannot read data: {describe_exception(exc)}")
            return None

