"""Two indexes on one embedding map (Compare ▸ Map, ``ecpfs-viewer map A --against B``).

:func:`place_both` places index A as the map always does (:func:`progressive_placement`: the PCA
fitted on a seeded sample of A's leaves, from A's cache when it holds) and then every leaf of B on
**the same** :class:`MapProjection` (:func:`place_with`), so one point of the plane is one place in
the data for both; items are matched by item id.

**Which items moved.** On the item ids both hold, each leaf of A has a *main* leaf in B: the B leaf
that took most of its items (ties: the lowest B node id). An item **moved** when the B leaf it is
in is not the main B leaf of its A leaf. This is the rule of Compare's Migration tab
(model/tuning/migration.py: ``Migration.moved_items`` is the same count), and it ignores
renumbering: the same index against itself, or a build whose leaves only have other node ids,
moves nothing; an A leaf split in two moves the items of its smaller part; two A leaves merged into
one B leaf move nothing (the merged leaf is the main B leaf of both). Duplicated item ids take the
leaf of their first row in each index (as a lookup answers).

Items held by only one of the indexes are counted (``only_a``, ``only_b``) and their positions
kept (``only_in_a``, ``only_in_b``), drawn apart by the front-ends; leaves that could not be read
are named in each placement's ``unplaced`` and its ``note``. Nothing is left out silently.

Colours: A's items by the leaf they are in (:func:`by_level` at the leaf level); B's by the leaf they
are in, each B leaf drawn in the colour of the A leaf most of its items came from (grey when none of
its items is in A), so leaves that match look alike side by side and a moved item changes colour.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ecpfs_viewer.model.diagnostics.embedding_map.colours import ItemColours, by_level
from ecpfs_viewer.model.diagnostics.embedding_map.placement import FIT_ITEMS, MapProjection, Placement
from ecpfs_viewer.model.diagnostics.embedding_map.progressive import (
    MapPicture,
    _Blocks,
    complete_map,
    progressive_placement,
)
from ecpfs_viewer.model.diagnostics.index_map_layout import tree_inputs
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.search.reader import NodeReader
from ecpfs_viewer.model.tasks import Counted, ProgressCallback, checkpoint

#: leaves of B read per block while it is placed on A's axes
BLOCK_LEAVES = 512


class DifferentSpaces(UserError, ValueError):
    """The two indexes' vectors do not live in one space (their dimensions differ)."""


@dataclass(frozen=True, eq=False)
class Moved:
    """Which items moved between the leaves of A and B (module docstring), per placement position."""

    moved_a: np.ndarray  # int64 positions into A's placement of the items that moved
    moved_b: np.ndarray  # ... and into B's placement
    only_in_a: np.ndarray  # positions into A's placement of items B does not hold
    only_in_b: np.ndarray  # positions into B's placement of items A does not hold
    common: int  # item ids both hold
    moved: int  # of them, the ids that moved
    only_a: int  # item ids only A holds
    only_b: int
    b_leaf_from_a: np.ndarray  # int64 per B leaf position: the A leaf position most of its items came from, -1

    @property
    def share(self) -> float:
        return self.moved / self.common if self.common else 0.0

    @property
    def describe(self) -> str:
        if not self.common:
            return (f"the indexes hold no item id in common ({self.only_a:,} items only in A, {self.only_b:,} "
                    "only in B): nothing can have moved")
        return (f"{self.moved:,} of the {self.common:,} items both hold moved ({self.share:.1%}: outside the B "
                f"leaf most of their A leaf went to); {self.only_a:,} only in A, {self.only_b:,} only in B")


@dataclass(frozen=True, eq=False)
class TwoMaps:
    """A and B placed on A's axes, coloured by leaf, and what moved."""

    a: MapPicture
    b: MapPicture
    colours_a: ItemColours
    colours_b: ItemColours
    moved: Moved
    label_a: str
    label_b: str

    @property
    def projection(self) -> MapProjection:
        return self.a.placement.projection

    def bounds(self) -> tuple[float, float, float, float]:
        """(x0, x1, y0, y1) around the items of both (one view shows the same place in each)."""
        a, b = self.a.placement.bounds(), self.b.placement.bounds()
        return min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3])

    @property
    def notes(self) -> tuple[str, ...]:
        """What the pictures leave out (leaves that could not be read), per index."""
        return tuple(f"{name}: {p.note}" for name, p in (("A", self.a.placement), ("B", self.b.placement)) if p.note)


def place_with(reader: NodeReader, projection: MapProjection, *, block_leaves: int = BLOCK_LEAVES,
               progress: ProgressCallback | None = None, cancel: threading.Event | None = None) -> MapPicture:
    """Every item of ``reader`` placed on ``projection`` (fitted on another index), read in blocks of
    leaves with progress and the one cancel type; the answer follows its own map's leaf band (the
    :class:`Placement` contract). Not kept in the cache: it belongs to the pair, not to the index."""
    if reader.dim != projection.mean.size:
        raise DifferentSpaces(f"{reader.label} holds {reader.dim}-dimensional vectors and the map's axes are "
                              f"{projection.mean.size}-dimensional: one map cannot place both")
    inputs = tree_inputs(reader, cancel)
    listed = inputs[-1].node_ids
    blocks = _Blocks(listed.size)
    for start in range(0, listed.size, block_leaves):
        checkpoint(cancel)
        part = np.arange(start, min(start + block_leaves, listed.size))
        # no stamps taken (nothing is kept): a remote index is asked for the leaves alone
        blocks.add_projected(projection, listed, blocks.read(reader, listed, part))
        if progress is not None:
            progress(Counted(int(part[-1]) + 1, listed.size, "leaves"))
    counts = np.zeros(listed.size, np.int64)
    counts[np.searchsorted(listed, np.asarray(blocks.position, np.int64))] = blocks.count
    final_map = complete_map(reader.label, inputs, listed, counts, blocks.unreadable)
    placement = blocks.placement(projection, final_map.band(reader.levels).node_ids, sample=False)
    return MapPicture(final_map, placement, listed.size, listed.size)


def moved_items(a: Placement, b: Placement) -> Moved:
    """Which items moved from their leaf of A to another leaf in B, and which only one holds (module
    docstring: the main B leaf of each A leaf, ties to the lowest B node id), in numpy over the ids."""
    ids_a, first_a = np.unique(a.item_ids, return_index=True)  # a duplicated id: its first row
    ids_b, first_b = np.unique(b.item_ids, return_index=True)
    common, at_a, at_b = np.intersect1d(ids_a, ids_b, assume_unique=True, return_indices=True)
    leaf_a = a.leaf_pos[first_a[at_a]].astype(np.int64)  # A leaf position of each common id
    leaf_b = b.leaf_pos[first_b[at_b]].astype(np.int64)
    n_a, n_b = a.leaf_ids.size, b.leaf_ids.size
    main_b = _main(leaf_a, leaf_b, n_a, n_b, b.leaf_ids)  # per A leaf position: its main B leaf position
    main_a = _main(leaf_b, leaf_a, n_b, n_a, a.leaf_ids)  # per B leaf position: the A leaf most came from
    moved_common = leaf_b != main_b[leaf_a] if common.size else np.zeros(0, bool)

    def per_row(item_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(positions that moved, positions the other index does not hold) of one placement's rows."""
        at = np.searchsorted(common, item_ids)
        held = at < common.size
        held[held] = common[at[held]] == item_ids[held]
        moved = np.zeros(item_ids.size, bool)
        moved[held] = moved_common[at[held]]
        return np.flatnonzero(moved), np.flatnonzero(~held)

    moved_a, only_in_a = per_row(a.item_ids)
    moved_b, only_in_b = per_row(b.item_ids)
    return Moved(moved_a, moved_b, only_in_a, only_in_b, int(common.size), int(moved_common.sum()),
                 int(ids_a.size - common.size), int(ids_b.size - common.size), main_a)


def _main(rows: np.ndarray, cols: np.ndarray, n_rows: int, n_cols: int, col_ids: np.ndarray) -> np.ndarray:
    """Per row position, the column position holding most of its items (ties: the lowest column node
    id; -1 for a row with none): one count of (row, column) pairs."""
    out = np.full(n_rows, -1, np.int64)
    if not rows.size:
        return out
    cells, counts = np.unique(rows * n_cols + cols, return_counts=True)
    row, col = cells // n_cols, cells % n_cols
    order = np.lexsort((col_ids[col], -counts, row))  # per row: most items first, then the lowest node id
    first = order[np.concatenate(([True], row[order][1:] != row[order][:-1]))]
    out[row[first]] = col[first]
    return out


def pair_colours(a: MapPicture, moved: Moved) -> tuple[ItemColours, ItemColours]:
    """A's items by their leaf; B's by their leaf in the colour of the A leaf most of its items came
    from (grey: none of them is in A). Both legends name A's leaves, the categories of both pictures."""
    own = by_level(a.index_map, len(a.index_map.levels))
    own = ItemColours(own.id, "leaf in A", "the leaf of A an item is in", "categorical",
                      leaf_codes=own.leaf_codes, names=own.names)
    codes_b = moved.b_leaf_from_a.astype(np.int32)
    theirs = ItemColours("leaf", "leaf in B, in the colour of its A leaf",
                         "the leaf of B an item is in, drawn in the colour of the A leaf most of that B leaf's "
                         "items came from (grey: none of them is in A)", "categorical", leaf_codes=codes_b,
                         names=own.names)
    return own, theirs


def place_both(a: NodeReader, b: NodeReader, *, fit_items: int = FIT_ITEMS, block_leaves: int = BLOCK_LEAVES,
               progress: ProgressCallback | None = None, cancel: threading.Event | None = None) -> TwoMaps:
    """A placed as its own map (from its cache when it holds), B on A's axes, their leaf colours and
    what moved (module docstring). Progress in two phases, "A: leaves" and "B: leaves"."""
    if a.dim != b.dim:
        raise DifferentSpaces(f"A holds {a.dim}-dimensional vectors and B {b.dim}-dimensional ones: one map "
                              "cannot place both")

    def phased(name: str) -> ProgressCallback | None:
        if progress is None:
            return None
        return lambda report: progress(Counted(report.done, report.total, f"{name}: leaves")
                                       if isinstance(report, Counted) else report)

    first = progressive_placement(a, fit_items=fit_items, progress=phased("A"), cancel=cancel)
    second = place_with(b, first.placement.projection, block_leaves=block_leaves, progress=phased("B"),
                        cancel=cancel)
    moved = moved_items(first.placement, second.placement)
    colours_a, colours_b = pair_colours(first, moved)
    return TwoMaps(first, second, colours_a, colours_b, moved, a.label, b.label)
