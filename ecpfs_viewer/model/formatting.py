"""How numbers, sizes, shapes and ages are written for users: one place, so the CLI, the
panels and the findings never disagree on digit grouping or plurals."""

from __future__ import annotations

import numbers
from typing import Any


def count_noun(n: int, noun: str, plural: str | None = None) -> str:
    """'1 request', '0 requests', '1,024 requests': a count with its noun in the right number."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def format_value(value: Any, absent: str = "-", grouped: bool = False) -> str:
    """A summary value as text: true/false for bools, 4 significant digits for floats, `absent`
    for None; grouped=True writes 200,000 (the GUI), False writes 200000 (the CLI, like `ecp info`)."""
    if value is None:
        return absent
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:,}" if grouped else f"{value}"
    if isinstance(value, float):
        return f"{value:,.4g}" if grouped else f"{value:.4g}"
    return str(value)


def format_cell(value: Any, kind: str = "") -> str:
    """A table cell as the window shows it: 200,000 for counts, 56.5 MiB for bytes (kind "bytes"),
    0.8125 for fractions, 1,234.5 for large means, yes/no, a dash for nothing; kind "id" keeps an
    id's digits ungrouped (it is copied and searched for, not read as an amount); kind "percent"
    writes a fraction as 12.5%. numpy's numbers are written as Python's."""
    if value is None:
        return "—"
    if isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", "") == "b":
        return "yes" if value else "no"
    if not isinstance(value, numbers.Real):
        return str(value)
    if isinstance(value, numbers.Integral):
        value = int(value)
        if kind == "bytes":
            return format_bytes(value)
        if kind == "percent":
            return f"{value:.1%}"
        return str(value) if kind == "id" else f"{value:,}"
    value = float(value)
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    if kind == "bytes":
        return format_bytes(value)
    if kind == "percent":
        return f"{value:.1%}"
    return f"{value:,.1f}" if abs(value) >= 1000 else f"{value:.4g}"


def format_bytes(n: float) -> str:
    """Human-readable byte count (1 KiB = 1024 B)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def format_shape(shape: tuple[int, ...]) -> str:
    """'4,000 x 64', or 'scalar' for a rank-0 array: the one way shapes are written for users."""
    return " x ".join(f"{s:,}" for s in shape) if shape else "scalar"


def format_age(seconds: float) -> str:
    """A short age such as '3.5 h' for saved queries (persisted_at → now)."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def format_percent(share: float, digits: int = 2) -> str:
    """A share (0..1) as a percentage that is never rounded to all or nothing: 199,999 of 200,000
    is '> 99.99%', not '100.00%' (a reader takes that for every one)."""
    text = f"{100 * share:.{digits}f}%"
    if 0 < share < 1 and text in (f"{100:.{digits}f}%", f"{0:.{digits}f}%"):
        step = 10.0 ** -digits
        return f"> {100 - step:.{digits}f}%" if share > 0.5 else f"< {step:.{digits}f}%"
    return text
