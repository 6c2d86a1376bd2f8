"""Every table of a comparison as headers and rows, what the view shows and what CSV / JSON export write.

One definition per table, so the window, the files and the tests read the same columns.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ecpfs_viewer.model.formatting import format_cell
from ecpfs_viewer.model.search.results import SearchResult
from ecpfs_viewer.model.tuning.compare import COST_AXES, RecallComparison, SideBySide
from ecpfs_viewer.model.tuning.migration import Migration


@dataclass(frozen=True)
class Table:
    """A titled table; ``marked`` are the rows to point out (a summary row that differs)."""

    name: str
    headers: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    marked: tuple[int, ...] = field(default=())
    kinds: tuple[str, ...] = ()  # per column, as :func:`format_cell` takes it ("bytes", "id"); "" for the rest
    byte_rows: tuple[int, ...] = ()  # rows whose numbers are bytes (the summary's "disk bytes")

    def texts(self) -> list[list[str]]:
        """Every cell as the window shows it, with the one formatter of the application (exports keep the values)."""
        kinds = self.kinds + ("",) * (len(self.headers) - len(self.kinds))
        return [[format_cell(v, "bytes" if r in self.byte_rows and not isinstance(v, str) else kind)
                 for v, kind in zip(row, kinds, strict=False)] for r, row in enumerate(self.rows)]

    def csv_text(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(self.headers)
        writer.writerows(["" if v is None else v for v in row] for row in self.rows)
        return out.getvalue()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "rows": [dict(zip(self.headers, row, strict=True)) for row in self.rows]}

    def write(self, path: str | Path) -> None:
        """CSV, or JSON when the name ends in .json (OSError as raised, for the caller to show)."""
        text = json.dumps(self.to_dict(), indent=2) + "\n" if str(path).lower().endswith(".json") else self.csv_text()
        Path(path).write_text(text, encoding="utf-8")


def summary_table(sides: SideBySide) -> Table:
    rows = tuple((r.name, r.a, r.b, "yes" if r.differs else "") for r in sides.rows)
    marked = tuple(i for i, r in enumerate(sides.rows) if r.differs)
    byte_rows = tuple(i for i, r in enumerate(sides.rows) if r.name == "disk bytes")
    return Table("summary", ("fact", "A", "B", "differs"), rows, marked, byte_rows=byte_rows)


def balance_table(sides: SideBySide) -> Table:
    rows = []
    for name, side in (("A", sides.a), ("B", sides.b)):
        for lv in side.balance:
            d = lv.to_dict()
            rows.append((name, lv.level, lv.nodes, d["size_min"], d["size_median"], d["size_max"],
                         _short(lv.max_over_median), _short(lv.coefficient_of_variation), _short(lv.imbalance_factor)))
    headers = ("index", "level", "nodes", "min", "median", "max", "max / median", "CV", "imbalance factor")
    return Table("balance", headers, tuple(rows))


def flows_table(migration: Migration) -> Table:
    rows = tuple((f.leaf_a, f.leaf_b, f.items, f.leaf_a_size, f.stayed_in) for f in migration.flows)
    return Table("flows", ("leaf of A", "leaf of B", "items moved", "items of the A leaf", "most went to B leaf"), rows,
                 kinds=("id", "id", "", "", "id"))


def curve_table(recall: RecallComparison) -> Table:
    rows = tuple((name, p.search_exp, round(p.recall, 4), *(round(p.cost(axis), 2) for axis in COST_AXES))
                 for name, curve in (("A", recall.curve_a), ("B", recall.curve_b)) for p in curve)
    kinds = ("", "", "", *("bytes" if axis == "bytes_cold" else "" for axis in COST_AXES))
    return Table("recall_vs_cost", ("index", "search_exp", f"recall@{recall.k}", *COST_AXES.values()), rows,
                 kinds=kinds)


def differing_table(recall: RecallComparison) -> Table:
    rows = tuple((d.query, d.item_id, d.search_exp, round(d.recall_a, 3), round(d.recall_b, 3),
                  round(d.difference, 3)) for d in recall.differing)
    return Table("differing_queries", ("query", "item id", "search_exp", "recall A", "recall B", "B - A"), rows,
                 kinds=("id", "id"))


def trace_table(name: str, result: SearchResult, found: frozenset[int] = frozenset()) -> Table:
    """One search's popped nodes in order, leaves marked with how many true neighbours they held."""
    per_leaf: dict[int, int] = {}
    for hit in result.hits:
        if hit.item_id in found:
            per_leaf[hit.leaf] = per_leaf.get(hit.leaf, 0) + 1
    rows = tuple((i + 1, v.path, v.rank, v.siblings, round(float(v.score), 4),
                  per_leaf.get(v.node_id, 0) if v.is_leaf else None) for i, v in enumerate(result.trace))
    return Table(name, ("step", "node", "rank", "siblings", "score", "true neighbours found"), rows)


def _short(value: float | None) -> float | None:
    return None if value is None else float(f"{value:.4g}")


def size_histogram(sizes_a: np.ndarray, sizes_b: np.ndarray, bins: int = 30) -> tuple[np.ndarray, ...]:
    """Counts of both indexes' node sizes over the same log-spaced edges (sizes below 1 count as 1)."""
    both = np.concatenate([sizes_a, sizes_b]).astype(np.float64)
    if not both.size:
        return np.array([1.0, 2.0]), np.zeros(1, np.int64), np.zeros(1, np.int64)
    low, high = max(float(np.min(both)), 1.0), max(float(np.max(both)), 1.0)
    edges = np.geomspace(low, high * 1.0001 if high > low else low + 1, bins + 1)
    counts = [np.histogram(np.maximum(s, 1), edges)[0] for s in (sizes_a, sizes_b)]
    return edges, counts[0], counts[1]
