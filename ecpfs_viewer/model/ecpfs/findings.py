"""Problems found in an index, as values naming the store path they concern."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

_DIGITS_RE = re.compile(r"\d+")


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Finding:
    """One problem (or note) about an index, with the store path it concerns ('' = the root).

    ``sampled`` is empty for a complete check, else says what part was examined.
    """

    severity: Severity
    path: str
    message: str
    sampled: str = ""

    def describe(self) -> str:
        where = self.path or "/"
        note = f" [sampled: {self.sampled}]" if self.sampled else ""
        return f"{self.severity.value.upper()}: {where}: {self.message}{note}"

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity.value, "path": self.path, "message": self.message,
                "sampled": self.sampled or None}


def error(path: str, message: str) -> Finding:
    """An error finding (shorthand used by every check)."""
    return Finding(Severity.ERROR, path, message)


def warning(path: str, message: str) -> Finding:
    """A warning finding (shorthand used by every check)."""
    return Finding(Severity.WARNING, path, message)


def cap_findings(findings: list[Finding], per_kind: int = 10) -> tuple[Finding, ...]:
    """Keep the first few findings of each kind and one line counting the rest (4,000 alike say little)."""
    kept: list[Finding] = []
    counts: dict[tuple[Severity, str], list[Finding]] = {}
    for finding in findings:
        key = (finding.severity, _DIGITS_RE.sub("#", finding.message))
        seen = counts.setdefault(key, [])
        seen.append(finding)
        if len(seen) <= per_kind:
            kept.append(finding)
    for (severity, _), group in counts.items():
        if len(group) > per_kind:
            first = group[0]
            parent = first.path.split("/node_")[0] if "/node_" in first.path else first.path
            kept.append(Finding(severity, parent, f"... and {len(group) - per_kind} more like: {first.message}"))
    return tuple(kept)
