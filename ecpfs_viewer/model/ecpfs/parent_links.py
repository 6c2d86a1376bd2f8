"""The saved form of a level's child -> (parent, row) links, kept in the index's cache (model/ecpfs/index_cache.py).

One entry per level, ``parents_lvl_{level}.npz``, shared by ``locate`` (model/search/locate.py,
which calls the children "items" and the parents "leaves") and the node page
(model/ecpfs/nodes.py): whichever reads every node_ids of a level first keeps the links, and the
other answers from them while every node_ids they were made from is unchanged (the entry carries
their stamps). Zarr-free: a later ``locate`` reads them without importing zarr.
"""

from __future__ import annotations

import io
import zipfile

import numpy as np

from ecpfs_viewer.model.errors import describe_exception

#: The entry of a level's links (an .npz of three 1-D int64 arrays: child ids ascending, a
#: repeated child's entries in parent order; the parent of each; the row in that parent).
PARENT_LINKS = "parents_lvl_{level}.npz"
_NAMES = ("item_ids", "leaves", "rows")


def links_bytes(children: np.ndarray, parents: np.ndarray, rows: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.savez(out, item_ids=np.asarray(children, np.int64), leaves=np.asarray(parents, np.int64),
             rows=np.asarray(rows, np.int64))  # held narrower where they fit (model/search/item_map.py)
    return out.getvalue()


def read_links(data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The arrays saved by :func:`links_bytes`; ValueError (saying what is wrong) for anything else."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as saved:
            if sorted(saved.files) != sorted(_NAMES):
                raise ValueError(f"holds {sorted(saved.files)}, expected item_ids, leaves and rows")
            ids, leaves, rows = (saved[name] for name in _NAMES)
    except ValueError as exc:
        raise ValueError(f"not an item map: {exc}") from None
    except (OSError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise ValueError(f"not an item map: {describe_exception(exc)}") from None
    if any(a.dtype != np.int64 or a.ndim != 1 for a in (ids, leaves, rows)):
        raise ValueError("not an item map: its arrays must be 1-D int64")
    if not len(ids) == len(leaves) == len(rows):
        raise ValueError(f"not an item map: {len(ids)} ids, {len(leaves)} leaves, {len(rows)} rows")
    if len(ids) and (bool((ids[1:] < ids[:-1]).any()) or int(leaves.min()) < 0 or int(rows.min()) < 0):
        raise ValueError("not an item map: ids out of order or a negative leaf or row")
    return ids, leaves, rows
