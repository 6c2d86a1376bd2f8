"""The tree-row marks of a validation report: each path it names, and the collapsed ancestors of
those paths, so a broken node shows before its level is expanded."""

from __future__ import annotations

from ecpfs_viewer.gui.tree.marks import MarkKind, RowMark
from ecpfs_viewer.model.ecpfs import Severity
from ecpfs_viewer.model.formatting import count_noun
from ecpfs_viewer.model.validation import ValidationReport

VALIDATION_LAYER = "validation"
_KINDS = {Severity.ERROR: MarkKind.ERROR, Severity.WARNING: MarkKind.WARNING, Severity.INFO: MarkKind.INFO}


def validation_marks(report: ValidationReport) -> dict[str, RowMark]:
    """path -> mark: a path's own findings in its tooltip; an ancestor says how many are below it."""
    by_path = report.findings_by_path()
    below: dict[str, int] = {}
    for path, entry in by_path.items():
        parts = path.split("/") if path else []
        for depth in range(len(parts)):
            ancestor = "/".join(parts[:depth])
            below[ancestor] = below.get(ancestor, 0) + len(entry.findings)
    marks: dict[str, RowMark] = {}
    for path, severity in report.worst_below().items():
        lines = [by_path[path].text()] if path in by_path else []
        if below.get(path):
            lines.append(f"{count_noun(below[path], 'finding')} below (worst: {severity.value}); "
                         "expand to see the nodes")
        marks[path] = RowMark(_KINDS[severity], "\n".join(lines))
    return marks
