"""What the table view needs beyond the subset: ids beside rows, links, and row blocks read lazily.

A table of numbers is most useful next to what its rows stand for: the rows of a leaf's
``embeddings`` are items (``item_ids`` holds their ids), the rows of an internal node's (or
``index_root``'s) are the children they lead (``node_ids``, or the row number at the root), and the
values of ``node_ids`` name nodes one level down. :class:`TableWindow` describes a 1-D or 2-D
selection too large to read at once; :func:`read_table_rows` reads the rows a table shows, so
scrolling a 10-million-row array reads a few chunks, not the array. No Qt.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ecpfs_viewer.model.ecpfs.paths import ROOT_EMBEDDINGS, parse_node_array
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.subset import Index, SelectionError, format_selection, parse_selection


@dataclass(frozen=True, eq=False)
class RowIds:
    """Ids of a table's rows: item ids (link_level None) or node ids at link_level."""

    name: str  # column header: 'item id' or 'child node'
    values: np.ndarray  # int64, one per row shown
    link_level: int | None


def link_level(path: str) -> int | None:
    """The level of the nodes a node_ids array's values name (lvl_2/node_5/node_ids -> 3), else None."""
    found = parse_node_array(path.strip("/"))
    if found is None or found[1] != "node_ids":
        return None
    return found[0] + 1


def _row_ids_source(h: Hierarchy, path: str) -> tuple[str | None, str, int | None] | None:
    """(ids array or None for row numbers, column name, link level) for an embeddings array."""
    path = path.strip("/")
    if path == ROOT_EMBEDDINGS:
        return None, "child node", 1
    found = parse_node_array(path)
    if found is None or found[1] != "embeddings":
        return None
    folder = path.rsplit("/", 1)[0]
    for name, label, level in (("item_ids", "item id", None), ("node_ids", "child node", found[0] + 1)):
        try:
            h.array_details(f"{folder}/{name}")
        except Exception:  # not there (or unreadable): try the other one; no id column at worst
            continue
        return f"{folder}/{name}", label, level
    return None


def row_ids(h: Hierarchy, path: str, rows: slice) -> RowIds | None:
    """The ids beside rows (a normalised slice of axis 0) of an embeddings array, or None."""
    source = _row_ids_source(h, path)
    if source is None:
        return None
    ids_path, name, level = source
    if ids_path is None:
        values = np.arange(rows.start, rows.stop, rows.step, dtype=np.int64)
    else:
        try:
            values = np.asarray(h.read_array(ids_path, rows)).astype(np.int64, copy=False).ravel()
        except Exception:  # the table still shows the numbers; the node page reports the broken ids
            return None
    return RowIds(name, values, level)


@dataclass(frozen=True)
class TableWindow:
    """A 1-D or 2-D selection of an array, read a block of rows at a time by the table."""

    path: str
    text: str
    selection: tuple[Index, ...]
    rows: int
    cols: int
    offsets: tuple[int, int]
    steps: tuple[int, int]
    dtype: str
    ndim: int  # 1 or 2: the rank of the selection

    def block(self, start: int, stop: int) -> tuple[Index, ...]:
        """The selection of table rows [start, stop)."""
        axis = next(i for i, s in enumerate(self.selection) if isinstance(s, slice))
        whole = self.selection[axis]
        assert isinstance(whole, slice)
        first = whole.start + start * whole.step
        part = slice(first, min(whole.stop, whole.start + stop * whole.step), whole.step)
        return (*self.selection[:axis], part, *self.selection[axis + 1:])


def table_window(h: Hierarchy, path: str, text: str) -> TableWindow:
    """Describe a selection for lazy reading (no chunk is read); SelectionError above 2 kept axes."""
    path = path.strip("/")
    details = h.array_details(path, SelectionError)
    selection = parse_selection(text, details.shape)
    kept = [s for s in selection if isinstance(s, slice)]
    if not 1 <= len(kept) <= 2:
        raise SelectionError(f"a table shows 1 or 2 axes; this selection keeps {len(kept)}")
    lengths = [len(range(s.start, s.stop, s.step)) for s in kept]
    rows, cols = lengths[0], lengths[1] if len(kept) == 2 else 1
    offsets = (kept[0].start, kept[1].start if len(kept) == 2 else 0)
    steps = (kept[0].step, kept[1].step if len(kept) == 2 else 1)
    return TableWindow(path, format_selection(selection, details.shape), selection, rows, cols, offsets, steps,
                       details.dtype, len(kept))


def read_table_rows(h: Hierarchy, window: TableWindow, start: int, stop: int
                    ) -> tuple[np.ndarray, RowIds | None]:
    """Table rows [start, stop) as a 2-D array, with the ids beside them where there are some."""
    start, stop = max(0, start), min(window.rows, stop)
    block = window.block(start, max(start, stop))
    data = np.asarray(h.read_array(window.path, block)).reshape(max(0, stop - start), window.cols)
    ids = None
    if window.ndim and isinstance(window.selection[0], slice):
        first = block[0]
        assert isinstance(first, slice)
        ids = row_ids(h, window.path, first)
    return data, ids
