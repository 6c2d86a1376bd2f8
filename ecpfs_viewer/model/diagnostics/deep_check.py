"""What `check --deep` adds to the §10 checklist: findings computed by searching the index itself."""

from __future__ import annotations

import threading
from dataclasses import replace

from ecpfs_viewer.model.diagnostics.reachability import ReachabilityReport, self_reachability
from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.findings import Finding
from ecpfs_viewer.model.ecpfs.paths import node_path
from ecpfs_viewer.model.search.index import IndexReader
from ecpfs_viewer.model.search.results import ProgressCallback
from ecpfs_viewer.model.validation.report import SEVERITY_ORDER, ValidationReport

#: Leaves named one by one (the most strays first); the index-wide finding counts them all.
NAMED_LEAVES = 50


def reachability_findings(report: ReachabilityReport) -> list[Finding]:
    """One finding for the index (the rule and the numbers), one per leaf whose items stray."""
    sampled = f"{report.checked:,} sampled items (seed {report.seed})" if report.sampled else ""
    code = fc.SELF_REACHABILITY if report.strays else fc.SELF_REACHABILITY_OK
    found = [Finding(code, "", f"self-reachability: {report.sentence()}", sampled)]
    per_leaf = sorted(report.per_leaf().items(), key=lambda kv: (-kv[1], kv[0]))[:NAMED_LEAVES]
    for leaf, count in per_leaf:
        rows = report.strays_of_leaf(leaf)
        levels = sorted({r["leaves_branch_at"] for r in rows})
        items = ", ".join(str(r["item_id"]) for r in rows[:5]) + (", ..." if len(rows) > 5 else "")
        found.append(Finding(fc.LEAF_STRAYS, node_path(report.levels, leaf),
                             f"{count:,} item(s) of this leaf do not reach it with search_exp 1 (items {items}); "
                             f"their search leaves this branch at {', '.join(f'lvl_{lv}' for lv in levels)}",
                             sampled))
    return found


def with_reachability(report: ValidationReport, index: IndexReader, progress: ProgressCallback | None = None,
                      cancel: threading.Event | None = None) -> tuple[ValidationReport, ReachabilityReport]:
    """The report with the self-reachability findings added (warnings after errors, as sorted)."""
    reach = self_reachability(index, progress=progress, cancel=cancel)
    findings = [*report.findings, *reachability_findings(reach)]
    rank = {severity: at for at, severity in enumerate(SEVERITY_ORDER)}
    findings.sort(key=lambda f: rank[f.severity])
    checked = (*report.checked, f"self-reachability of {reach.checked:,} items (search_exp 1)")
    return replace(report, findings=tuple(findings), checked=checked), reach
