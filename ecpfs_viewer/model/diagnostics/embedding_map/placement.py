"""Where every item of an index lies on the embedding map: a PCA fitted on a sample, applied to every leaf.

:func:`fit_projection` reads a seeded sample of leaves (whole leaves, about ``fit_items`` items)
and fits two principal axes on them (model/views/projection.py's ``pca_2d``); its result carries
the sample's own coordinates, a first picture to draw while the rest is placed.
:func:`place_items` then streams every leaf through the reader's batch read (``NodeReader.read_nodes``,
``leaf_batch`` leaves at a time, so memory holds one batch of vectors and the float32 coordinates),
with progress and the one cancel type, and returns a :class:`Placement`.

A placement orders its items by leaf, in the order of the index map's leaf band
(``index_map.band(levels)``): the items of leaf position ``p`` are ``leaf_start[p]:leaf_start[p + 1]``
and ``leaf_pos`` names each item's leaf position (made on each use; ``leaves_of`` for some items:
what colourings and hover index by). A leaf that cannot be read is left out and named in
``unplaced`` with the reason, never drawn as nothing.

:func:`open_placement` answers from the index's cache (model/ecpfs/index_cache.py) when every leaf
it was made from is unchanged, else places and keeps the result (placement_cache.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ecpfs_viewer.model.diagnostics.index_map import IndexMap
from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.search.reader import NodeData, NodeReader
from ecpfs_viewer.model.tasks import Counted, ProgressCallback, checkpoint
from ecpfs_viewer.model.views.projection import pca_2d
from ecpfs_viewer.model.zarrtree.array_batch import BeforeChunks

#: items the PCA is fitted on (whole leaves drawn with a seeded generator until this many)
FIT_ITEMS = 20_000
#: leaves read per batch while placing
LEAF_BATCH = 256
DEFAULT_SEED = 0
#: items whose bounds are taken at once
BOUNDS_BLOCK = 1 << 20


@dataclass(frozen=True, eq=False)
class MapProjection:
    """The two axes items are placed on, and how they were found."""

    mean: np.ndarray  # (dim,) float64
    axes: np.ndarray  # (2, dim) float64, unit rows
    explained: tuple[float, float]  # share of the sample's variance along each axis
    fitted_on: int  # items of the sample
    seed: int
    method: str = "pca"

    def project(self, vectors: np.ndarray, leaves: np.ndarray | None = None) -> np.ndarray:
        """(n, 2) float32 coordinates of (n, dim) vectors (a query, representatives); ``leaves`` (the
        leaf each one belongs with, -1: none) matters to a layout placed around the leaves (tsne.py)."""
        del leaves
        data = np.asarray(vectors, np.float64).reshape(-1, self.mean.size)
        with np.errstate(over="ignore", invalid="ignore"):
            out: np.ndarray = ((data - self.mean) @ self.axes.T).astype(np.float32)
        return out

    @property
    def describe(self) -> str:
        return (f"PCA fitted on {self.fitted_on:,} items (seed {self.seed}); axes explain "
                f"{self.explained[0]:.0%} and {self.explained[1]:.0%} of their variance")


@dataclass(frozen=True, eq=False)
class Placement:
    """Every placed item's 2-D coordinates, id and leaf (see the module docstring)."""

    projection: MapProjection
    leaf_ids: np.ndarray  # int64 node id per leaf position (the map's leaf band order)
    leaf_start: np.ndarray  # int64 (leaves + 1,): items of leaf position p are leaf_start[p]:leaf_start[p+1]
    coords: np.ndarray  # (n, 2) float32
    item_ids: np.ndarray  # (n,) int64, or uint32 when every id fits (a placed index's: 40 MB less at 10M items)
    unplaced: tuple[tuple[int, str], ...] = ()  # (leaf id, why) of leaves that could not be read
    sample: bool = False  # only the fit's sample (a first picture), not every item
    from_cache: bool = False

    @property
    def count(self) -> int:
        return int(self.item_ids.size)

    @property
    def leaf_pos(self) -> np.ndarray:
        """(n,) int32: each item's leaf position, made anew on each use (kept, it was 40 MB of a 10M-item
        map's peak; made, a few ms): for some items, :meth:`leaves_of`."""
        counts = np.diff(self.leaf_start)
        return np.repeat(np.arange(counts.size, dtype=np.int32), counts)

    def leaves_of(self, positions: np.ndarray) -> np.ndarray:
        """(k,) int64: the leaf position of each of the items at ``positions``."""
        return np.searchsorted(self.leaf_start, positions, side="right") - 1

    def leaf_items(self, position: int) -> slice:
        return slice(int(self.leaf_start[position]), int(self.leaf_start[position + 1]))

    def leaf_position(self, leaf_id: int) -> int | None:
        at = np.flatnonzero(self.leaf_ids == leaf_id)
        return int(at[0]) if at.size else None

    def bounds(self) -> tuple[float, float, float, float]:
        """(x0, x1, y0, y1) of the finite coordinates; a unit square around 0 when there are none."""
        lo = np.full(2, np.inf)
        hi = np.full(2, -np.inf)
        for start in range(0, self.count, BOUNDS_BLOCK):  # a copy of the finite ones: 80 MB at 10M items
            block = self.coords[start:start + BOUNDS_BLOCK]
            finite = block[np.isfinite(block).all(axis=1)]
            if finite.size:
                lo = np.minimum(lo, finite.min(axis=0))
                hi = np.maximum(hi, finite.max(axis=0))
        if not np.isfinite(lo).all():
            return -1.0, 1.0, -1.0, 1.0
        return float(lo[0]), float(hi[0]), float(lo[1]), float(hi[1])

    @property
    def note(self) -> str:
        """What the picture holds besides every item ('' when it is all of them)."""
        parts = []
        if self.sample:
            parts.append(f"a first picture of {self.count:,} sampled items")
        if self.unplaced:
            parts.append(f"{len(self.unplaced):,} leaves could not be read and are not drawn "
                         f"(first: leaf node_{self.unplaced[0][0]}: {self.unplaced[0][1]})")
        return "; ".join(parts)


def fit_projection(reader: NodeReader, index_map: IndexMap, *, fit_items: int = FIT_ITEMS, seed: int = DEFAULT_SEED,
                   cancel: threading.Event | None = None) -> Placement:
    """Fit the axes on a seeded sample of whole leaves; a sample :class:`Placement` of those leaves.

    Deterministic: the same index, ``fit_items`` and ``seed`` give the same axes (signs fixed by
    ``pca_2d``), so a placement kept in the cache and one made now agree."""
    leaves = index_map.band(reader.levels)
    readable = np.flatnonzero(leaves.rows != 0)  # -1: rows unknown (metadata unread), read to see
    order = np.random.default_rng(seed).permutation(readable)
    take = np.searchsorted(np.cumsum(np.maximum(leaves.rows[order], 1)), fit_items, side="left") + 1
    chosen = np.sort(order[:take])
    vectors: list[np.ndarray] = []
    ids: list[np.ndarray] = []
    counts = np.zeros(len(leaves), np.int64)
    unplaced: list[tuple[int, str]] = []
    for start in range(0, chosen.size, LEAF_BATCH):
        checkpoint(cancel)
        part = chosen[start:start + LEAF_BATCH]
        for p, node, why in _read(reader, leaves.node_ids[part], part):
            if node is None:
                unplaced.append((int(leaves.node_ids[p]), why))
                continue
            vectors.append(node.vectors)
            ids.append(node.ids)
            counts[p] = node.ids.size
    data = np.concatenate(vectors) if vectors else np.zeros((0, reader.dim), np.float32)
    pca = pca_2d(data)
    projection = MapProjection(pca.mean, pca.axes, pca.explained, int(data.shape[0]), seed)
    return Placement(projection, leaves.node_ids.copy(), _starts(counts), pca.coords,
                     np.concatenate(ids) if ids else np.zeros(0, np.int64), tuple(unplaced), sample=True)


def place_items(reader: NodeReader, index_map: IndexMap, projection: MapProjection,
                progress: ProgressCallback | None = None, cancel: threading.Event | None = None,
                leaf_batch: int = LEAF_BATCH, first: Placement | None = None) -> Placement:
    """Every item of every leaf on the projection's axes, read ``leaf_batch`` leaves at a time; the
    leaves of ``first`` (the fit's sample placement, same map) are taken from it, not read again."""
    leaves = index_map.band(reader.levels)
    readable = np.flatnonzero(leaves.rows != 0)  # -1: rows unknown, read to see
    known = np.zeros(len(leaves), bool)
    if first is not None and np.array_equal(first.leaf_ids, leaves.node_ids):
        known = np.diff(first.leaf_start) > 0
    expected = int(np.maximum(leaves.rows[readable], 0).sum())
    coords = np.empty((expected, 2), np.float32)
    item_ids = np.empty(expected, np.int64)
    counts = np.zeros(len(leaves), np.int64)
    unplaced: list[tuple[int, str]] = []
    filled = 0
    for start in range(0, readable.size, leaf_batch):
        checkpoint(cancel)
        part = readable[start:start + leaf_batch]
        kept: list[tuple[int, NodeData]] = []
        wanted = part[~known[part]]
        read = {p: (node, why) for p, node, why in _read(reader, leaves.node_ids[wanted], wanted)} \
            if wanted.size else {}
        for p in part.tolist():
            if p not in read:  # from the sample: its rows, already projected
                assert first is not None
                rows = first.leaf_items(p)
                kept.append((p, NodeData(first.coords[rows], None, first.item_ids[rows])))
                continue
            node, why = read[p]
            if node is None:
                unplaced.append((int(leaves.node_ids[p]), why))
            else:
                kept.append((p, node))
        n = sum(node.ids.size for _, node in kept)
        if filled + n > coords.shape[0]:  # more rows than the metadata said: grow (rare)
            grow = max(filled + n, 2 * coords.shape[0])
            coords = np.resize(coords, (grow, 2))
            item_ids = np.resize(item_ids, grow)
        at = filled
        for p, node in kept:  # a sampled leaf's "vectors" are its coordinates already
            m = node.ids.size
            coords[at:at + m] = node.vectors if known[p] else projection.project(node.vectors)
            item_ids[at:at + m] = node.ids
            counts[p] = m
            at += m
        filled += n
        if progress is not None:
            progress(Counted(min(start + leaf_batch, readable.size), readable.size, "leaves placed"))
    return Placement(projection, leaves.node_ids.copy(), _starts(counts), coords[:filled].copy()
                     if filled < coords.shape[0] else coords, item_ids[:filled].copy()
                     if filled < item_ids.size else item_ids, tuple(unplaced))


def _read(reader: NodeReader, node_ids: np.ndarray, positions: np.ndarray, *, keep_documents: bool = True,
          level: int | None = None, before_chunks: BeforeChunks | None = None,
          ) -> list[tuple[int, NodeData | None, str]]:
    """(position, node or None, why) per node of one batch of ``level`` (default: the leaves); a batch
    that fails is read node by node, so one bad node spoils only itself. Without ``keep_documents``
    the nodes' array documents are not kept by the reader (a pass over every leaf); ``before_chunks``
    as :meth:`NodeReader.read_nodes` takes it."""
    level = reader.levels if level is None else level
    try:
        nodes = reader.read_nodes(level, [int(n) for n in node_ids], keep_documents=keep_documents,
                                  before_chunks=before_chunks)
        return [(int(p), node, "" if node is not None else "not stored")
                for p, node in zip(positions, nodes, strict=True)]
    except Exception:  # one leaf of the batch is bad: find which
        out: list[tuple[int, NodeData | None, str]] = []
        for p, n in zip(positions, node_ids, strict=True):
            try:
                node = reader.read_nodes(level, [int(n)], keep_documents=keep_documents, before_chunks=before_chunks)[0]
                out.append((int(p), node, "" if node is not None else "not stored"))
            except Exception as exc:
                out.append((int(p), None, describe_exception(exc)))
        return out


def representatives(reader: NodeReader, projection: MapProjection, level: int) -> tuple[np.ndarray, np.ndarray]:
    """(node ids, (n, 2) float32 coordinates) of the representatives of ``level``'s nodes, placed like
    the items: index_root's rows for level 1, the rows of each node one level up below it (the marks
    a front-end switches on per level). Parents that cannot be read give no marks."""
    if not 1 <= level <= reader.levels:
        raise ValueError(f"level {level} is not one of the index's levels 1..{reader.levels}")
    if level == 1:
        return reader.root.ids.copy(), projection.project(reader.root.vectors, reader.root.ids)
    parents = [n for n in reader.nodes(level - 1, reader.level_node_ids(level - 1)) if n is not None]
    if not parents:
        return np.zeros(0, np.int64), np.zeros((0, 2), np.float32)
    ids = np.concatenate([n.ids for n in parents])  # a representative leads the leaf of its id, if there is one
    return ids, projection.project(np.concatenate([n.vectors for n in parents]), ids)


def _starts(counts: np.ndarray) -> np.ndarray:
    starts = np.zeros(counts.size + 1, np.int64)
    np.cumsum(counts, out=starts[1:])
    return starts
