"""Running the §10 checklist: the metadata checks, then the sampled data checks, as one report."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ecpfs_viewer.model.ecpfs import (
    REQUIRED_ARRAYS,
    Finding,
    IndexSummary,
    LevelStats,
    MetadataReader,
    summarize,
)
from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.tasks import Cancelled
from ecpfs_viewer.model.validation.data_checks import check_data
from ecpfs_viewer.model.validation.metadata_checks import (
    check_counters,
    check_fan_out,
    check_layout,
    check_levels,
    check_types,
)
from ecpfs_viewer.model.validation.report import SEVERITY_ORDER, Check, CheckProgress, ValidationReport
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def validate(h: Hierarchy, *, max_node_reads: int = 256, max_vectors: int = 4096,
             progress: Callable[[CheckProgress], None] | None = None,
             cancel: threading.Event | None = None) -> ValidationReport:
    """Run the §10 checklist; decodes at most max_node_reads nodes. Never raises."""
    with h.store.counter.action() as tally:
        report = _validate(h, max_node_reads, max_vectors, progress, cancel)
    cost = tally.stats()
    return replace(report, requests=cost.requests, unanswered=cost.unanswered)


def _validate(h: Hierarchy, max_node_reads: int, max_vectors: int,
              progress: Callable[[CheckProgress], None] | None, cancel: threading.Event | None) -> ValidationReport:
    check = Check(h, progress, cancel)
    summary: IndexSummary | None = None
    levels: list[LevelStats] = []
    cancelled = False
    try:
        summary = summarize(h)
        check.findings += summary.findings
        if check_layout(check, summary):
            reader = MetadataReader(h)
            check_types(check, reader, summary)
            check_counters(check, summary)
            levels = check_levels(check, reader, summary)
            check_fan_out(check, summary, levels)
            check_data(check, summary, levels, max_node_reads, max_vectors)
    except Cancelled:
        cancelled = True
        check.add(fc.CHECK_CANCELLED, "", "check cancelled; the report is incomplete")
    except Exception as exc:  # a bug must still produce a readable report
        check.add(fc.VALIDATION_STOPPED, "", f"validation stopped: {describe_exception(exc)}")
    order = {severity: rank for rank, severity in enumerate(SEVERITY_ORDER)}
    findings = sorted(_dedupe(check.findings), key=lambda f: order[f.severity])
    return ValidationReport(tuple(findings), summary, tuple(levels), tuple(check.checked), cancelled)


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[Any, ...]] = set()
    unique = []
    for f in findings:
        key = (f.severity, f.path, f.message)
        if key not in seen:
            seen.add(key)
            unique.append(f)
    return unique

def required_paths() -> tuple[str, ...]:
    """The arrays a v1 index must hold, for messages that list them."""
    return ("info/format_version", *REQUIRED_ARRAYS)
