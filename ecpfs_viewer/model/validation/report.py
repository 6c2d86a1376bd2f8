"""What a validation run produces (findings, progress) and the state it carries while it runs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

from ecpfs_viewer.model.ecpfs import Finding, IndexSummary, LevelStats, Severity
from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.paths import level_path
from ecpfs_viewer.model.errors import describe_exception, transport_failure
from ecpfs_viewer.model.tasks import checkpoint
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


@dataclass(frozen=True)
class CheckProgress:
    done: int
    total: int
    message: str


#: Severities from the worst.
SEVERITY_ORDER = (Severity.ERROR, Severity.WARNING, Severity.INFO)


def worst_severity(findings: Iterable[Finding]) -> Severity | None:
    """The most serious severity among findings (None when there are none)."""
    present = {f.severity for f in findings}
    return next((s for s in SEVERITY_ORDER if s in present), None)


def findings_under(findings: Iterable[Finding], path: str) -> tuple[Finding, ...]:
    """The findings about path or anything inside it ('' = all); a level's page lists its nodes' too."""
    path = path.strip("/")
    if not path:
        return tuple(findings)
    prefix = path + "/"
    return tuple(f for f in findings if f.path == path or f.path.startswith(prefix))


def _ancestors(path: str) -> list[str]:
    """'' and every container above path, nearest last ('lvl_2/node_3' -> ['', 'lvl_2'])."""
    parts = path.split("/") if path else []
    return ["/".join(parts[:i]) for i in range(len(parts))]


@dataclass(frozen=True)
class PathFindings:
    """The findings about one store path, to mark its tree row (worst severity, messages)."""

    path: str
    findings: tuple[Finding, ...]

    @property
    def severity(self) -> Severity:
        return worst_severity(self.findings) or Severity.INFO

    @property
    def messages(self) -> tuple[str, ...]:
        return tuple(f.message + (f" [sampled: {f.sampled}]" if f.sampled else "") for f in self.findings)

    def text(self) -> str:
        """One line per finding, worst first ('error: ...'), for a tooltip."""
        return "\n".join(f"{f.severity.value}: {m}" for f, m in zip(self.findings, self.messages, strict=True))


@dataclass(frozen=True)
class ValidationReport:
    """Findings (errors first) plus what the sampled checks actually read."""

    findings: tuple[Finding, ...]
    summary: IndexSummary | None = None
    levels: tuple[LevelStats, ...] = ()
    checked: tuple[str, ...] = ()
    cancelled: bool = False
    requests: int = 0  # what the run asked the store for
    unanswered: int = 0  # ... and how many of those failed on the way (no answer, a dropped connection)
    ignored: tuple[Finding, ...] = ()  # findings of codes the user chose to ignore: kept, never counted

    def ignoring(self, codes: Iterable[str]) -> ValidationReport:
        """The report with the findings of ``codes`` moved to :attr:`ignored` (they no longer count
        toward :attr:`ok`); ValueError for a code the table does not hold."""
        wanted = {fc.finding_code(code).code for code in codes}
        if not wanted:
            return self
        kept = tuple(f for f in self.findings if f.code not in wanted)
        moved = tuple(f for f in self.findings if f.code in wanted)
        return replace(self, findings=kept, ignored=(*self.ignored, *moved))

    @property
    def headline(self) -> str | None:
        """What to say before any finding when reads failed on the way; None when every read answered."""
        if not self.unanswered:
            return None
        return (f"the server did not answer {self.unanswered:,} of {self.requests:,} requests: what needed them "
                "could not be read, which says nothing about the index; retry")

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.WARNING]

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def layout_finding(self) -> Finding | None:
        """The finding that says what the layout means (legacy, newer, unstamped...), when reported.

        A view showing it in a banner lists :meth:`findings_except_layout` beside it, so the same
        problem is shown once, with one severity.
        """
        finding = None if self.summary is None else self.summary.layout.finding
        return finding if finding is not None and finding in self.findings else None

    def findings_except_layout(self) -> tuple[Finding, ...]:
        layout = self.layout_finding
        return self.findings if layout is None else tuple(f for f in self.findings if f != layout)

    def findings_by_path(self) -> dict[str, PathFindings]:
        """Findings grouped by the path they name, worst first, to mark tree rows; computed once."""
        return self._by_path

    def worst_below(self) -> dict[str, Severity]:
        """For each path with findings at or below it (its ancestors too, '' = the root), the worst
        severity: a collapsed ``lvl_3`` row can show that one of its nodes is broken."""
        return self._worst_below

    def level_findings(self, level: int) -> tuple[Finding, ...]:
        """The findings of ``lvl_{level}`` and of every node and array inside it."""
        return findings_under(self.findings, level_path(level))

    @cached_property
    def _by_path(self) -> dict[str, PathFindings]:
        grouped: dict[str, list[Finding]] = {}
        for finding in self.findings:  # already sorted errors first
            grouped.setdefault(finding.path, []).append(finding)
        return {path: PathFindings(path, tuple(group)) for path, group in grouped.items()}

    @cached_property
    def _worst_below(self) -> dict[str, Severity]:
        rank = {s: i for i, s in enumerate(SEVERITY_ORDER)}
        worst: dict[str, Severity] = {}
        for path, entry in self._by_path.items():
            severity = entry.severity
            for where in [*_ancestors(path), path]:
                if where not in worst or rank[severity] < rank[worst[where]]:
                    worst[where] = severity
        return worst

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "cancelled": self.cancelled, "headline": self.headline,
                "requests": self.requests, "unanswered": self.unanswered, "errors": len(self.errors),
                "warnings": len(self.warnings), "ignored": len(self.ignored), "checked": list(self.checked),
                "findings": [f.to_dict() for f in self.findings],
                "ignored_findings": [f.to_dict() for f in self.ignored]}


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

    def add(self, code: str, path: str, message: str, sampled: str = "") -> None:
        """A finding of ``code`` (a row of finding_codes, which gives its severity)."""
        self.findings.append(Finding(code, path, message, sampled))

    def step(self, message: str) -> None:
        checkpoint(self.cancel)
        self.done += 1
        if self.progress is not None:
            self.progress(CheckProgress(min(self.done, self.total), self.total, message))

    def read(self, path: str) -> np.ndarray | None:
        try:
            return self.h.read_array(path)
        except Exception as exc:  # ArrayReadError names the path; anything else is reported likewise
            self.read_failed(path, exc)
            return None

    def read_failed(self, path: str, exc: BaseException) -> None:
        """Report a failed read of path: 'could not be read' when it failed on the way, not a fact."""
        if transport_failure(exc) is not None:
            self.add(fc.COULD_NOT_BE_READ, path, describe_exception(exc) if "could not be read" in str(exc)
                       else f"could not be read ({describe_exception(exc)})")
        else:
            self.add(fc.UNREADABLE_DATA, path, f"cannot read data: {describe_exception(exc)}")

