"""Sizing formulas of the ecpfs format (spec §2 and §3.2), in one place.

The builder, the build preview and the validator must agree on these numbers to the last
integer, so nobody re-derives them: chunk rows, representative count, fan-out (computed in
double precision exactly as upstream, including its rounding quirks), nodes per level.
"""

from __future__ import annotations

import math

import numpy as np

#: Stored embedding dtypes an ecpfs index accepts, with their item sizes (§1.7, §2).
STORED_DTYPES: dict[str, int] = {"float32": 4, "float16": 2, "uint8": 1, "int8": 1}

#: Values accepted for the user-facing ``dtype`` parameter.
DTYPE_CHOICES: tuple[str, ...] = ("native", "float32", "float16", "uint8", "int8")

#: Source dtypes the builder reads; float64 is narrowed to float32 first.
SOURCE_DTYPES: tuple[str, ...] = ("float64", "float32", "float16", "uint8", "int8")

DEFAULT_NODE_CHUNK_BYTES = 512 * 1024
DEFAULT_REP_CHUNK_BYTES = 8 * 1024 * 1024


def itemsize(stored_dtype: str) -> int:
    """Bytes per element of a stored embedding dtype (ValueError for anything else)."""
    try:
        return STORED_DTYPES[stored_dtype]
    except KeyError:
        raise ValueError(
            f"unsupported stored dtype {stored_dtype!r}; allowed: {', '.join(STORED_DTYPES)}"
        ) from None


def chunk_rows(dim: int, stored_dtype: str, budget_bytes: int) -> int:
    """Rows per chunk, ``floor(bytes / (dim * itemsize))`` (§2); errors instead of clamping to 1."""
    if dim <= 0:
        raise ValueError("embedding dimension must be at least 1")
    row_bytes = dim * itemsize(stored_dtype)
    if row_bytes > budget_bytes:
        raise ValueError(
            f"chunk budget of {budget_bytes} bytes is smaller than one row "
            f"({dim} x {stored_dtype} = {row_bytes} bytes)"
        )
    return budget_bytes // row_bytes


def total_clusters(rows: int, target_cluster_items: int) -> int:
    """R = ceil(N / target_cluster_items), the number of representatives (§3.2)."""
    return -(-rows // target_cluster_items)


def fan_out(representatives: int, levels: int) -> int:
    """ns = ceil(R ** (1.0 / L)) in IEEE double, exactly as upstream (3125, L=5 gives 6).

    ValueError for R < 0 or L < 1 (a negative base would give a complex number), so a hostile
    store's numbers produce a message rather than a TypeError deep inside.
    """
    if levels < 1 or representatives < 0:
        raise ValueError(f"fan-out needs R >= 0 and L >= 1, found R = {representatives}, L = {levels}")
    try:
        root: float = float(representatives) ** (1.0 / levels)
        return math.ceil(root)
    except OverflowError:
        raise ValueError(f"R = {representatives} is too large for a fan-out") from None


def capped_power(base: int, exponent: int, cap: int) -> int:
    """min(base ** exponent, cap) without computing a huge power (a store may declare L = 2^32-1)."""
    if base < 0 or exponent < 0:
        raise ValueError(f"capped_power needs base >= 0 and exponent >= 0, found {base}, {exponent}")
    if cap <= 0:
        return cap
    if base <= 1 or exponent == 0:
        return min(int(base**exponent), cap)
    if exponent >= cap.bit_length():  # base >= 2, so base ** exponent >= 2 ** bit_length > cap
        return cap
    return min(int(base**exponent), cap)


def max_nodes_per_level(ns: int, representatives: int, levels: int) -> list[int]:
    """Upper bound ``min(ns^N, R)`` of node count for levels N = 1..L (§1.4)."""
    return [capped_power(ns, n, representatives) for n in range(1, levels + 1)]


def reps_placed_at_level(target: int, ns: int, representatives: int) -> int:
    """How many representatives the level pass ``target`` (< L) places: min(ns^(target+1), R)."""
    return capped_power(ns, target + 1, representatives)


def resolve_stored_dtype(source_dtype: np.dtype | str, requested: str) -> str:
    """Stored dtype for a source dtype and a ``native``/explicit request (float64 -> float32)."""
    src = np.dtype(source_dtype).name
    if requested not in DTYPE_CHOICES:
        raise ValueError(
            f"unknown dtype {requested!r}; choose one of {', '.join(DTYPE_CHOICES)}"
        )
    if requested != "native":
        return requested
    if src == "float64":
        return "float32"
    if src in STORED_DTYPES:
        return src
    raise ValueError(f"source dtype {src} has no native stored dtype")


_RANK = {"float64": 4, "float32": 3, "float16": 2, "uint8": 1, "int8": 1}


def is_narrowing(source_dtype: np.dtype | str, stored_dtype: str) -> bool:
    """True when storing loses information, the cases upstream warns about (§3.1)."""
    src = np.dtype(source_dtype).name
    if src == stored_dtype:
        return False
    if stored_dtype in ("uint8", "int8"):
        return True  # floats truncate, and uint8 <-> int8 saturate
    return _RANK[stored_dtype] < _RANK[src]
