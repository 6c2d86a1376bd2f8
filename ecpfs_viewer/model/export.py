"""Writing a subset to a file the user chose: .npy (exact) and .csv (for spreadsheets)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike


def write_npy(data: ArrayLike, path: str | Path) -> None:
    """Save the values exactly, as numpy's .npy; never pickles (object arrays are refused)."""
    np.save(path, np.asarray(data), allow_pickle=False)


def write_csv(data: ArrayLike, path: str | Path) -> None:
    """Write a subset as CSV: one line per row (one value for 0-D/1-D, axes after the first flattened).

    Numbers are written with enough digits to read back the same value (9 for float32, 17 for
    float64); text is quoted where needed, UTF-8.
    """
    array = np.asarray(data)
    rows = array.reshape(1, 1) if array.ndim == 0 else array.reshape(array.shape[0], -1)
    if rows.dtype.kind in "biuf":
        if rows.dtype.kind == "b":
            rows = rows.astype(np.uint8)
        fmt = "%d" if rows.dtype.kind in "iu" else ("%.17g" if rows.dtype.itemsize > 4 else "%.9g")
        np.savetxt(path, rows, fmt=fmt, delimiter=",")
        return
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        for row in rows:
            writer.writerow([str(v) for v in row])
