"""Writing a subset to a file the user chose: .npy (exact) and .csv (for spreadsheets).

A CSV written for a subset the user looked at carries :class:`CsvLabels`: a header line, the
absolute index of each row in the array, and the item (or node) id of each row when the array is
an ecpfs ``embeddings`` array with its ids array beside it.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import base_name, parent_path
from ecpfs_viewer.model.zarrtree.subset import Subset

# embeddings array name -> the arrays beside it that name its rows, in the order tried
_ROW_ID_ARRAYS = {"embeddings": ("item_ids", "node_ids"), "rep_embeddings": ("rep_item_ids",)}


@dataclass(frozen=True)
class CsvLabels:
    """What labels the rows and columns of an exported subset (see :func:`subset_labels`)."""

    offsets: tuple[int, ...] = ()  # start of each axis in the array
    steps: tuple[int, ...] = ()  # step of each axis
    ids: Sequence[int] | None = None  # one id per row of the subset
    id_name: str = "item_id"

    def index(self, axis: int, position: int) -> int:
        """The absolute index in the array of position along an axis of the subset."""
        start = self.offsets[axis] if axis < len(self.offsets) else 0
        step = self.steps[axis] if axis < len(self.steps) else 1
        return start + position * step


def write_npy(data: ArrayLike, path: str | Path) -> None:
    """Save the values exactly, as numpy's .npy; never pickles (object arrays are refused)."""
    np.save(path, np.asarray(data), allow_pickle=False)


def write_csv(data: ArrayLike, path: str | Path, labels: CsvLabels | None = None) -> None:
    """Write a subset as CSV: one line per row (one value for 0-D/1-D, axes after the first flattened).

    Numbers are written with enough digits to read back the same value (9 for float32, 17 for
    float64); text is quoted where needed, UTF-8. With labels, a header line comes first and each
    line starts with the row's absolute index (and its id, when known).
    """
    array = np.asarray(data)
    rows = array.reshape(1, 1) if array.ndim == 0 else array.reshape(array.shape[0], -1)
    prefixes = None if labels is None else _row_prefixes(array, labels)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        if labels is not None:
            csv.writer(handle, lineterminator="\n").writerow(_header(array, labels))
        if rows.dtype.kind in "biuf":
            if rows.dtype.kind == "b":
                rows = rows.astype(np.uint8)
            fmt = "%d" if rows.dtype.kind in "iu" else ("%.17g" if rows.dtype.itemsize > 4 else "%.9g")
            body = io.StringIO()
            np.savetxt(body, rows, fmt=fmt, delimiter=",")
            if prefixes is None:
                handle.write(body.getvalue())
            else:
                handle.writelines(f"{prefix},{line}\n"
                                  for prefix, line in zip(prefixes, body.getvalue().splitlines(), strict=True))
            return
        writer = csv.writer(handle, lineterminator="\n")
        for i, row in enumerate(rows):
            head = [] if prefixes is None else prefixes[i].split(",")
            writer.writerow(head + [str(v) for v in row])


def _header(array: np.ndarray, labels: CsvLabels) -> list[str]:
    if array.ndim == 0:
        return ["value"]
    head = ["row"] + ([labels.id_name] if labels.ids is not None else [])
    if array.ndim == 1:
        return [*head, "value"]
    if array.ndim == 2:
        return head + [f"col_{labels.index(1, j)}" for j in range(array.shape[1])]
    return head + ["[" + ",".join(str(labels.index(axis + 1, k)) for axis, k in enumerate(where)) + "]"
                   for where in np.ndindex(*array.shape[1:])]


def _row_prefixes(array: np.ndarray, labels: CsvLabels) -> list[str] | None:
    if array.ndim == 0:
        return None
    ids = labels.ids
    if ids is not None and len(ids) != array.shape[0]:
        ids = None
    return [str(labels.index(0, i)) + ("" if ids is None else f",{int(ids[i])}") for i in range(array.shape[0])]


def subset_labels(h: Hierarchy, subset: Subset) -> CsvLabels:
    """Labels for a subset: its offsets and steps, and the ids of its rows when the array is an
    ecpfs embeddings array whose ids array (item_ids, node_ids, rep_item_ids) can be read.

    Reads only the ids of the rows in the subset; an unreadable ids array leaves ids out."""
    labels = CsvLabels(subset.offsets, subset.steps)
    if subset.data.ndim < 2 or not subset.offsets:
        return labels
    folder = parent_path(subset.path)
    for name in _ROW_ID_ARRAYS.get(base_name(subset.path), ()):
        sibling = f"{folder}/{name}" if folder else name
        if h.probe(sibling) is None:
            continue
        start = subset.offsets[0]
        step = subset.steps[0] if subset.steps else 1
        try:
            ids = h.read_array(sibling, slice(start, start + subset.data.shape[0] * step, step))
        except Exception:  # the export still has the row indices
            return labels
        if ids.ndim != 1 or ids.shape[0] != subset.data.shape[0]:
            return labels
        return CsvLabels(subset.offsets, subset.steps, ids.tolist(), "node_id" if name == "node_ids" else "item_id")
    return labels
