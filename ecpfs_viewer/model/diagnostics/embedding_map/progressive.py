"""The embedding map made progressively: a first picture from a sample, then refined in blocks.

:func:`progressive_placement` reads only what the first picture needs: each level's node ids (one
listing each) and the internal nodes' ``node_ids`` (the tree above the leaves, few and small), never
the leaves' metadata; then whole leaves in a seeded random order until about ``fit_items`` items are
read. The PCA is fitted on them and that sample, placed, is the first picture (``on_picture``). The
other leaves are read in blocks in the same random order, so every picture on the way is a uniform
sample of leaves (not one side of the tree); a picture of what is placed so far is handed over each
time the placed items have grown :data:`PICTURE_GROWTH` times (up to :data:`PICTURE_MOST_ITEMS`, and
while the answer is that many times larger still),
with progress and the one cancel type between blocks. Pictures on the way are laid on the tree as
listed (:attr:`MapPicture.index_map`, leaves of unknown size); the answer's map is
:func:`complete_map`, the same layout as ``layout_index`` with each leaf as wide as the items read
from it, and the answer's items are ordered by its leaf band (the :class:`Placement` contract).

The answer is kept in the index's cache with the stamps of the leaf level's folder (taken first)
and of each block's leaves (taken before that block is read), and answered from there while they
hold. Same index, ``fit_items`` and ``seed``: same sample, same axes.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ecpfs_viewer import process_memory
from ecpfs_viewer.model.diagnostics.embedding_map.density import RETURN_FROM_ITEMS
from ecpfs_viewer.model.diagnostics.embedding_map.placement import (
    DEFAULT_SEED,
    FIT_ITEMS,
    MapProjection,
    Placement,
    _read,
    _starts,
)
from ecpfs_viewer.model.diagnostics.embedding_map.placement_cache import placement_writer, read_placement
from ecpfs_viewer.model.diagnostics.index_map import BROKEN, IndexMap
from ecpfs_viewer.model.diagnostics.index_map_layout import LevelInput, map_layout, tree_inputs
from ecpfs_viewer.model.ecpfs.paths import level_path, node_array_path, node_path
from ecpfs_viewer.model.search.reader import NodeReader
from ecpfs_viewer.model.storage.stamps import ALWAYS, Stamps
from ecpfs_viewer.model.tasks import Counted, ProgressCallback, checkpoint
from ecpfs_viewer.model.views.projection import pca_2d
from ecpfs_viewer.model.zarrtree.array_batch import BeforeChunks

#: a picture of what is placed so far each time the placed items have grown this many times, while at
#: most this share of the leaves is read (the answer, about as many times larger, is not near): at
#: 200,000 items one of 95,000 came half a second before the answer and took a tenth of its time
PICTURE_GROWTH = 4
#: items a picture on the way holds at most: past them a picture (a copy of everything read, with its
#: density index) shows what the last one did, a little denser, and it is held while the rest is read:
#: at 10M items one of 1.6M items (130 MB with its index and colours) set the map's peak
PICTURE_MOST_ITEMS = 500_000
#: leaves read in the sample's first batch and at most in each of the next (sized by the items a
#: leaf holds so far); leaves read per block while the rest is placed
SAMPLE_START, SAMPLE_BATCH = 4, 128
BLOCK_LEAVES = 512
#: a kept placement's leaves whose stamps are checked before its first picture, then per block: at
#: 10M items the stamps of all 1.2 million files took 11 s to check, and the map stayed blank meanwhile
KEPT_FIRST_LEAVES, KEPT_BLOCK_LEAVES = 2048, 16384
ENTRY = "embedding_map_v2_pca_f{fit}_s{seed}.npz"


@dataclass(frozen=True, eq=False)
class MapPicture:
    """A placement and the map its leaf positions follow: on the way (``placement.sample``) or complete."""

    index_map: IndexMap
    placement: Placement
    placed_leaves: int  # leaves read so far (all of them in the answer)
    leaves: int  # leaves the index lists
    #: '' when this is the placement asked for; else what it is instead, in words (a picture shown
    #: while the one asked for is made)
    stand_in: str = ""

    @property
    def complete(self) -> bool:
        return not self.placement.sample


def entry_name(fit_items: int = FIT_ITEMS, seed: int = DEFAULT_SEED) -> str:
    return ENTRY.format(fit=fit_items, seed=seed)


def complete_map(label: str, inputs: list[LevelInput], leaf_ids: np.ndarray, counts: np.ndarray,
                 unreadable: np.ndarray | None = None) -> IndexMap:
    """The layout with each leaf (of ``leaf_ids``, any order) as wide as ``counts`` says; leaves not
    named keep unknown rows, and ``unreadable`` ones (a bool per ``leaf_ids``) are BROKEN."""
    leaves = inputs[-1]
    rows = leaves.rows.copy()
    state = leaves.state.copy()
    order = np.argsort(leaves.node_ids, kind="stable")
    at = order[np.searchsorted(leaves.node_ids[order], leaf_ids)] if leaf_ids.size else np.zeros(0, np.int64)
    rows[at] = counts
    if unreadable is not None and unreadable.any():
        rows[at[unreadable]] = -1
        state[at[unreadable]] = BROKEN
    return map_layout(label, [*inputs[:-1], LevelInput(leaves.node_ids, rows, leaves.children, state)])


def reordered(placement: Placement, leaf_ids: np.ndarray) -> Placement:
    """The same placement with its leaves in the order of ``leaf_ids`` (each of its leaves once)."""
    if np.array_equal(placement.leaf_ids, leaf_ids):
        return placement
    order = np.argsort(placement.leaf_ids, kind="stable")
    source = order[np.searchsorted(placement.leaf_ids[order], leaf_ids)]  # old position of each new one
    counts = np.diff(placement.leaf_start)[source]
    starts = _starts(counts)
    gather = np.repeat(placement.leaf_start[source] - starts[:-1], counts) + np.arange(int(starts[-1]))
    return replace(placement, leaf_ids=np.asarray(leaf_ids, np.int64), leaf_start=starts,
                   coords=placement.coords[gather], item_ids=placement.item_ids[gather])


_RELEASED = np.zeros(0)
#: leaves copied into the answer between two returns of the freed blocks' pages to the system
RELEASE_LEAVES = 8192


def _narrowest_ids(ids: np.ndarray) -> np.ndarray:
    """Item ids as uint32 (their stored type) when they fit: a quarter of the blocks' memory at 10M
    items (12 bytes an item instead of 16), and the answer holds them so when every leaf's did."""
    if not ids.size or (int(ids.min()) >= 0 and int(ids.max()) <= np.iinfo(np.uint32).max):
        return ids.astype(np.uint32, copy=False)
    return ids


class _Blocks:
    """The leaves read so far, in reading order, and how to lay them out as a placement."""

    def __init__(self, n_leaves: int) -> None:
        self.coords: list[np.ndarray] = []
        self.ids: list[np.ndarray] = []
        self.position: list[int] = []  # node id of each leaf read, in reading order
        self.count: list[int] = []
        self.unplaced: list[tuple[int, str]] = []
        self.unreadable = np.zeros(n_leaves, bool)
        self.items = 0

    def add(self, position: int, coords: np.ndarray, ids: np.ndarray) -> None:
        self.coords.append(coords)
        self.ids.append(ids)
        self.position.append(position)
        self.count.append(int(ids.size))
        self.items += int(ids.size)

    def read(self, reader: NodeReader, listed: np.ndarray, part: np.ndarray,
             before_chunks: BeforeChunks | None = None) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """(listing position, vectors, ids) of each leaf of ``part`` that could be read; a leaf that
        could not be read is named in ``unplaced`` and marked in ``unreadable``."""
        out = []
        for p, node, why in _read(reader, listed[part], part, keep_documents=False, before_chunks=before_chunks):
            if node is None:
                self.unplaced.append((int(listed[p]), why))
                self.unreadable[p] = True
            else:
                out.append((p, node.vectors, node.ids))
        return out

    def add_projected(self, projection: MapProjection, listed: np.ndarray,
                      got: list[tuple[int, np.ndarray, np.ndarray]]) -> None:
        """Add the leaves of one block read (listing position, vectors, ids), projected at once."""
        if not got:
            return
        xy = projection.project(np.concatenate([vectors for _, vectors, _ in got]))
        ids = _narrowest_ids(np.concatenate([leaf_ids for _, _, leaf_ids in got]))  # one block, like xy: a
        at = 0  # small array kept per leaf among the freed vectors pinned the heap (hundreds of MB at 2M)
        for p, _vectors, leaf_ids in got:
            self.add(int(listed[p]), xy[at:at + leaf_ids.size], ids[at:at + leaf_ids.size])
            at += leaf_ids.size

    def placement(self, projection: MapProjection, leaf_ids: np.ndarray, *, sample: bool) -> Placement:
        """What was read, as a placement over ``leaf_ids`` (the listing's leaves in a map's order):
        each leaf's rows copied once into place (no concatenated copy, no gather index). The answer
        (not a sample) releases each leaf's rows once copied, so they are not held twice."""
        read_ids = np.asarray(self.position, np.int64)
        by_id = np.argsort(leaf_ids, kind="stable")
        at_map = by_id[np.searchsorted(leaf_ids[by_id], read_ids)]  # map position of each leaf read
        counts = np.zeros(leaf_ids.size, np.int64)
        counts[at_map] = self.count
        starts = _starts(counts)
        coords = np.empty((int(starts[-1]), 2), np.float32)
        narrow = all(leaf.dtype == np.uint32 for leaf in self.ids)
        ids = np.empty(int(starts[-1]), np.uint32 if narrow and self.ids else np.int64)
        for i, at in enumerate(starts[at_map].tolist()):  # in reading order: a block at a time
            n = self.count[i]
            coords[at:at + n] = self.coords[i]
            ids[at:at + n] = self.ids[i]
            if not sample:
                self.coords[i] = self.ids[i] = _RELEASED
                if i % RELEASE_LEAVES == RELEASE_LEAVES - 1:  # the blocks copied so far: their pages go
                    process_memory.return_freed_memory()  # back while the answer's pages fill
        return Placement(projection, np.asarray(leaf_ids, np.int64).copy(), starts, coords, ids,
                         tuple(self.unplaced), sample=sample)


def progressive_placement(reader: NodeReader, *, fit_items: int = FIT_ITEMS, seed: int = DEFAULT_SEED,
                          block_leaves: int = BLOCK_LEAVES, on_picture: Callable[[MapPicture], None] | None = None,
                          progress: ProgressCallback | None = None, cancel: threading.Event | None = None,
                          use_cache: bool = True) -> MapPicture:
    """Every item placed, from the cache when it still holds, else a sample first (module docstring).
    ``on_picture`` gets the pictures on the way (never the answer), in the calling thread."""
    inputs = tree_inputs(reader, cancel)
    listed = inputs[-1].node_ids  # leaf node ids, ascending
    cache = reader.opened.cache
    name = entry_name(fit_items, seed)
    if use_cache:
        kept = _kept(reader, inputs, name, seed, on_picture, progress, cancel)
        if kept is not None:
            return kept
    stamps: list[Stamps | None] = [cache.stamp([(level_path(reader.levels), ALWAYS)], walk=False)]
    order = np.random.default_rng(seed).permutation(listed.size)
    blocks = _Blocks(listed.size)
    sketch = map_layout(reader.label, inputs)  # the tree as listed, for the pictures on the way
    sketch_leaves = sketch.band(reader.levels).node_ids
    sample: list[tuple[int, np.ndarray, np.ndarray]] = []  # whole leaves in the seeded order until fit_items
    extra: list[tuple[int, np.ndarray, np.ndarray]] = []  # read with the sample's last batch, placed after the fit
    have, read, batch = 0, 0, SAMPLE_START
    while read < order.size and have < fit_items:
        checkpoint(cancel)
        part = order[read:read + batch]
        read += part.size
        for leaf in _read_block(reader, listed, part, stamps, blocks):
            if have < fit_items:
                sample.append(leaf)
                have += leaf[2].size
            else:
                extra.append(leaf)
        mean = have / max(len(sample), 1)  # items a leaf: read about as many leaves as the sample still lacks
        batch = int(np.clip(np.ceil((fit_items - have) / max(mean, 1.0)) + 1, 1, SAMPLE_BATCH))
    data = np.concatenate([v for _, v, _ in sample]) if sample else np.zeros((0, reader.dim), np.float32)
    pca = pca_2d(data)
    projection = MapProjection(pca.mean, pca.axes, pca.explained, int(data.shape[0]), seed)
    at = 0
    for p, _vectors, ids in sample:
        blocks.add(int(listed[p]), pca.coords[at:at + ids.size], _narrowest_ids(ids))
        at += ids.size
    for p, vectors, ids in extra:
        blocks.add(int(listed[p]), projection.project(vectors), _narrowest_ids(ids))
    del sample, extra, data
    shown = blocks.items
    # freed pages go back to the system when the answer (the leaves left as full as those read) holds
    # RETURN_FROM_ITEMS, as the density index's do; below, the next block takes a block's pages (and a
    # return after each was a twentieth of a 200,000-item placement)
    large = blocks.items * order.size >= RETURN_FROM_ITEMS * max(read, 1)
    if on_picture is not None:  # even when the sample is every leaf: the first picture comes at once
        on_picture(MapPicture(sketch, blocks.placement(projection, sketch_leaves, sample=True), read, listed.size))
    while read < order.size:
        checkpoint(cancel)
        part = order[read:read + block_leaves]
        read += part.size
        got = _read_block(reader, listed, part, stamps, blocks)
        blocks.add_projected(projection, listed, got)  # one projection per block
        del got
        if large:
            process_memory.return_freed_memory()  # the block's vectors: their pages go back now, not at exit
        if progress is not None:
            progress(Counted(read, order.size, "leaves"))
        if (on_picture is not None and read < order.size and blocks.items >= PICTURE_GROWTH * max(shown, 1)
                and blocks.items <= PICTURE_MOST_ITEMS and PICTURE_GROWTH * read <= order.size):
            shown = blocks.items
            on_picture(MapPicture(sketch, blocks.placement(projection, sketch_leaves, sample=True), read,
                                  listed.size))
    counts = np.zeros(listed.size, np.int64)
    counts[np.searchsorted(listed, np.asarray(blocks.position, np.int64))] = blocks.count
    final_map = complete_map(reader.label, inputs, listed, counts, blocks.unreadable)
    placement = blocks.placement(projection, final_map.band(reader.levels).node_ids, sample=False)
    joinable = Stamps.joinable(stamps)
    del stamps, blocks  # the placement holds the blocks' items now
    large = placement.count >= RETURN_FROM_ITEMS
    if large:
        process_memory.return_freed_memory()  # the blocks' arrays, freed as they were copied into place
    if joinable is not None and not placement.unplaced:
        cache.save(name, placement_writer(placement), joinable)  # joined as they are written
    del joinable
    if large:
        process_memory.return_freed_memory()  # the stamps of every block: 110 MB at 10M items
    return MapPicture(final_map, placement, read, listed.size)


def _read_block(reader: NodeReader, listed: np.ndarray, part: np.ndarray, stamps: list[Stamps | None],
                blocks: _Blocks) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(listing position, vectors, ids) of each leaf of ``part`` that could be read, its files stamped
    as they are read; a leaf that could not be read is named in ``blocks.unplaced``.

    In a local folder the files read are stamped: each leaf's two array documents, then, once they
    are read, the chunks they name (a chunk not stored is stamped absent) and the folder of an array
    read another way (a legacy layout), each right before it is read; elsewhere each leaf's folder, every file
    below it, first."""
    leaves = [int(n) for n in listed[part]]
    with reader.opened.cache.stamped_reads(
            [(node_array_path(reader.levels, n, name), n) for n in leaves for name in ("embeddings", "item_ids")],
            stamps, folders=[(node_path(reader.levels, n), n) for n in leaves]) as before_chunks:
        return blocks.read(reader, listed, part, before_chunks)


def _kept(reader: NodeReader, inputs: list[LevelInput], name: str, seed: int = DEFAULT_SEED,
          on_picture: Callable[[MapPicture], None] | None = None, progress: ProgressCallback | None = None,
          cancel: threading.Event | None = None) -> MapPicture | None:
    """The kept placement over the map of what it read, when every file it came from is unchanged.

    The stamps are checked a block of leaves at a time in the seeded order of a first placement:
    once the first KEPT_FIRST_LEAVES hold, their items are a first picture (a uniform sample, each
    leaf of it checked), then the rest are checked with progress and the one cancel type. One
    changed file and the kept placement is not used (None)."""
    cache = reader.opened.cache
    found = cache.open_entry(name)
    if found is None:
        return None
    with found[0] as handle:
        placement, stamps = read_placement(handle), found[1]
    listed = inputs[-1].node_ids
    if placement is None or not np.array_equal(np.sort(placement.leaf_ids), listed):
        return None
    order = listed[np.random.default_rng(seed).permutation(listed.size)]
    bounds = sorted({0, min(KEPT_FIRST_LEAVES, order.size), *range(KEPT_BLOCK_LEAVES, order.size, KEPT_BLOCK_LEAVES),
                     order.size})
    for start, stop in itertools.pairwise(bounds):
        checkpoint(cancel)
        if not cache.unchanged(stamps, order[start:stop].tolist()):
            return None
        if start == 0 and on_picture is not None and stop < order.size:
            sketch = map_layout(reader.label, inputs)
            first = reordered(_only(placement, order[:stop]), sketch.band(reader.levels).node_ids)
            on_picture(MapPicture(sketch, first, stop, listed.size))
        if progress is not None:
            progress(Counted(stop, order.size, "leaves checked"))
    if not cache.unchanged(stamps, []):  # what every answer depends on (the leaf level's folder), last too
        return None
    final_map = complete_map(reader.label, inputs, placement.leaf_ids, np.diff(placement.leaf_start))
    kept = reordered(placement, final_map.band(reader.levels).node_ids)
    return MapPicture(final_map, kept, listed.size, listed.size)


def _only(placement: Placement, leaves: np.ndarray) -> Placement:
    """The placement with the items of ``leaves`` only (the other leaves kept, empty): a sample."""
    counts = np.diff(placement.leaf_start)
    keep = np.isin(placement.leaf_ids, leaves)
    items = np.repeat(keep, counts)
    return replace(placement, leaf_start=_starts(np.where(keep, counts, 0)), coords=placement.coords[items],
                   item_ids=placement.item_ids[items], sample=True)
