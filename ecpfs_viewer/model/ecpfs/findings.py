"""Problems found in an index, as values naming the store path they concern."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ecpfs_viewer.model.ecpfs.finding_codes import Severity, finding_code

__all__ = ["Finding", "Severity", "cap_findings"]

_DIGITS_RE = re.compile(r"\d+")


@dataclass(frozen=True)
class Finding:
    """One problem (or note) about an index, with the store path it concerns ('' = the root).

    ``code`` is a row of :mod:`finding_codes` (ValueError otherwise); the severity is the code's.
    ``sampled`` is empty for a complete check, else says what part was examined.
    """

    code: str
    path: str
    message: str
    sampled: str = ""

    def __post_init__(self) -> None:
        finding_code(self.code)

    @property
    def severity(self) -> Severity:
        return finding_code(self.code).severity

    def describe(self) -> str:
        where = self.path or "/"
        note = f" [sampled: {self.sampled}]" if self.sampled else ""
        return f"{self.severity.value.upper()}: {where}: {self.message}{note} [{self.code}]"

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "severity": self.severity.value, "path": self.path, "message": self.message,
                "sampled": self.sampled or None}


def cap_findings(findings: list[Finding], per_kind: int = 10) -> tuple[Finding, ...]:
    """Keep the first few findings of each kind and one line counting the rest (4,000 alike say little)."""
    kept: list[Finding] = []
    counts: dict[tuple[str, str], list[Finding]] = {}
    for finding in findings:
        key = (finding.code, _DIGITS_RE.sub("#", finding.message))
        seen = counts.setdefault(key, [])
        seen.append(finding)
        if len(seen) <= per_kind:
            kept.append(finding)
    for (code, _), group in counts.items():
        if len(group) > per_kind:
            first = group[0]
            parent = first.path.split("/node_")[0] if "/node_" in first.path else first.path
            kept.append(Finding(code, parent, f"... and {len(group) - per_kind} more like: {first.message}"))
    return tuple(kept)
