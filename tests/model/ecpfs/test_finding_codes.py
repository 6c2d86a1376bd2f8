"""Findings carry a stable code from one table; the docs list that table; the severity is the code's."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ecpfs_viewer
from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.findings import Finding, Severity, cap_findings

PACKAGE = Path(ecpfs_viewer.__file__).parent
DOCS = PACKAGE.parent / "docs" / "finding-codes.md"


def _constants() -> dict[str, str]:
    """The table's names (UNREADABLE_METADATA -> ECPFS-E001)."""
    return {name: value for name, value in vars(fc).items()
            if name.isupper() and isinstance(value, str) and value in fc.CODES}


def test_docs_list_exactly_the_table() -> None:
    assert DOCS.read_text(encoding="utf-8") == fc.markdown(), \
        "docs/finding-codes.md is stale: python -m ecpfs_viewer.model.ecpfs.finding_codes > docs/finding-codes.md"
    for code in fc.CODES:
        assert f"`{code}`" in DOCS.read_text(encoding="utf-8")


def test_codes_are_stable_in_form_and_their_letter_is_their_severity() -> None:
    letters = {"E": Severity.ERROR, "W": Severity.WARNING, "I": Severity.INFO}
    assert len(fc.CODES) >= 50
    for code, row in fc.CODES.items():
        assert fc.CODE_RE.match(code) and row.code == code
        assert row.severity is letters[code[6]]
        assert row.title and row.explanation.endswith(".")
    assert len(set(_constants().values())) == len(fc.CODES)  # one name per code


def test_a_finding_takes_its_severity_from_its_code_and_refuses_an_unknown_code() -> None:
    finding = Finding(fc.DUPLICATE_ITEM_ID, "lvl_2/node_3/item_ids", "item id 7 appears twice")
    assert finding.severity is Severity.ERROR
    assert finding.to_dict()["code"] == "ECPFS-E052"
    assert finding.describe().endswith("[ECPFS-E052]")
    assert Finding(fc.FAN_OUT_DIFFERS, "", "x").severity is Severity.WARNING
    with pytest.raises(ValueError, match="unknown finding code"):
        Finding("ECPFS-E999", "", "no such code")
    with pytest.raises(ValueError, match="unknown finding code"):
        Finding(Severity.ERROR, "", "a severity is no code")


def test_the_count_of_many_alike_keeps_their_code() -> None:
    many = [Finding(fc.CHILD_MISSING, f"lvl_2/node_{i}", f"node {i} missing") for i in range(15)]
    capped = cap_findings(many, per_kind=10)
    assert len(capped) == 11 and capped[-1].code == fc.CHILD_MISSING and "5 more like" in capped[-1].message


def _made_findings() -> tuple[set[str], list[str]]:
    """Every table name the package uses (fc.NAME), and every Finding(...) or .add(...) whose code is
    not taken from the table."""
    used: set[str] = set()
    loose: list[str] = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "fc":
                used.add(node.attr)
            if not isinstance(node, ast.Call) or not node.args:
                continue
            if not isinstance(node.func, ast.Name) or node.func.id not in ("Finding", "_finding"):
                continue
            first = node.args[0]
            from_table = isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name) and \
                first.value.id == "fc"
            if not from_table and not isinstance(first, ast.Name):  # a name: a code passed through
                loose.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return used, loose


def test_every_place_that_makes_a_finding_names_a_code_of_the_table_and_every_code_is_made() -> None:
    used, loose = _made_findings()
    assert not loose, f"findings made without a code from finding_codes: {loose}"
    unused = sorted(set(_constants()) - used)
    assert not unused, f"codes in the table that nothing makes (retire them in the docs instead): {unused}"
    assert not used - set(_constants()) - {"CODES", "Severity", "CODE_RE", "finding_code", "markdown"}
