"""The index map's icicle layout: the tree read from an opened index (:func:`layout_index`, once per
reader with :func:`shared_layout`; :func:`tree_inputs`, the tree as listed) and laid out by
:func:`map_layout` into the :class:`~ecpfs_viewer.model.diagnostics.index_map.IndexMap` it draws."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from threading import Event, Lock

import numpy as np

from ecpfs_viewer.model.diagnostics.index_map import BROKEN, OK, UNREAD, IndexMap, MapLevel
from ecpfs_viewer.model.ecpfs.paths import node_array_path
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.search.reader import NodeReader
from ecpfs_viewer.model.tasks import Counted, ProgressCallback, checkpoint


@dataclass(frozen=True)
class LevelInput:
    """What the layout needs of one level: its node ids, each node's rows and children, its state."""

    node_ids: np.ndarray  # int64
    rows: np.ndarray  # int64 rows per node (-1 unknown); leaf rows are its items
    children: Sequence[np.ndarray | None]  # per node: node_ids of the level below (None: leaf or unread)
    state: np.ndarray  # int8 per node


def map_layout(label: str, inputs: Sequence[LevelInput], chunk_rows: Mapping[int, int | None] | None = None,
               cancel: Event | None = None, sketch: bool = False) -> IndexMap:
    """The icicle layout from per-level inputs (level 1 first, the leaves last); numpy throughout.
    ``sketch``: leaves of unknown rows are drawn one unit wide (:attr:`IndexMap.sketch`), not 0."""
    n_levels = len(inputs)
    parents: list[np.ndarray] = []
    child_rank: list[np.ndarray] = []
    for depth, lin in enumerate(inputs):
        ids = np.asarray(lin.node_ids, np.int64)
        par = np.full(ids.size, -1, np.int64)
        rank = np.zeros(ids.size, np.int64)
        if depth > 0:
            above = inputs[depth - 1]
            lists = [np.asarray(c, np.int64).reshape(-1) if c is not None else np.zeros(0, np.int64)
                     for c in above.children]
            counts = np.fromiter((c.size for c in lists), np.int64, len(lists))
            if counts.sum():
                child = np.concatenate(lists)
                owner = np.repeat(np.arange(len(lists), dtype=np.int64), counts)
                row = np.arange(child.size, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
                first = np.unique(child, return_index=True)[1]  # the first parent listing a child owns it
                child, owner, row = child[first], owner[first], row[first]
                order = np.argsort(ids, kind="stable")
                at = np.minimum(np.searchsorted(ids[order], child), max(ids.size - 1, 0))
                hit = ids[order][at] == child if ids.size else np.zeros(0, bool)
                par[order[at[hit]]] = owner[hit]
                rank[order[at[hit]]] = row[hit]
        parents.append(par)
        child_rank.append(rank)
    # widths bottom-up: a leaf is its rows, an internal node the sum of its linked children
    widths: list[np.ndarray] = [np.zeros(0)] * n_levels
    for depth in range(n_levels - 1, -1, -1):
        lin = inputs[depth]
        own = np.where(np.asarray(lin.rows) > 0, np.asarray(lin.rows), 0).astype(np.float64)
        if depth == n_levels - 1:
            w = np.where(np.asarray(lin.rows) < 0, 1.0, own) if sketch else own
        else:
            below_par = parents[depth + 1]
            linked = below_par >= 0
            w = np.bincount(below_par[linked], weights=widths[depth + 1][linked], minlength=len(lin.node_ids))
            w = w.astype(np.float64)
        widths[depth] = w
        checkpoint(cancel)
    # places top-down: level 1 in id order; children under their parent in node_ids order, unlinked after
    bands: list[MapLevel] = []
    total = 0.0
    prev_x0 = np.zeros(0)
    for depth, lin in enumerate(inputs):
        ids = np.asarray(lin.node_ids, np.int64)
        par, w = parents[depth], widths[depth]
        x0 = np.zeros(ids.size, np.float64)
        linked = par >= 0
        if depth == 0:
            order = np.argsort(ids, kind="stable")
            x0[order] = np.cumsum(w[order]) - w[order]
            end = float(w.sum())
        else:
            idx = np.flatnonzero(linked)
            order = idx[np.lexsort((child_rank[depth][idx], par[idx]))]
            starts = np.cumsum(w[order]) - w[order]
            # offset within the parent: cumulative width minus the cumulative width at the parent's first child
            p = par[order]
            first = np.concatenate(([True], p[1:] != p[:-1])) if p.size else np.zeros(0, bool)
            group_start = np.maximum.accumulate(np.where(first, starts, 0.0)) if p.size else starts
            x0[order] = prev_x0[p] + (starts - group_start)
            end = float(bands[-1].x1.max()) if len(bands[-1]) else 0.0
            loose = np.flatnonzero(~linked)
            loose = loose[np.argsort(ids[loose], kind="stable")]
            x0[loose] = end + np.cumsum(w[loose]) - w[loose]
            end += float(w[loose].sum())
        total = max(total, end)
        x1 = x0 + w
        sort = np.argsort(x0, kind="stable")
        remap = np.empty(ids.size, np.int64)
        remap[sort] = np.arange(ids.size)
        if depth + 1 < n_levels:  # children's parent indices follow the new order
            below = parents[depth + 1]
            parents[depth + 1] = np.where(below >= 0, remap[np.maximum(below, 0)], -1)
        bands.append(MapLevel(depth + 1, ids[sort], x0[sort], x1[sort], np.asarray(lin.rows, np.int64)[sort],
                              par[sort], np.asarray(lin.state, np.int8)[sort]))
        prev_x0 = x0[sort]
    return IndexMap(label, tuple(bands), total, dict(chunk_rows or {}), sketch)


_LAYOUTS: weakref.WeakKeyDictionary[NodeReader, IndexMap] = weakref.WeakKeyDictionary()
_LAYOUTS_LOCK = Lock()


class IndexMapError(UserError, ValueError):
    """The map cannot be drawn for this index; the message says why."""


def shared_layout(reader: NodeReader, progress: ProgressCallback | None = None,
                  cancel: Event | None = None, on_sketch: Callable[[IndexMap], None] | None = None) -> IndexMap:
    """:func:`layout_index`, once per reader (a reader keeps what it decoded, so does its map): the
    map panel and every recall sweep's miss map of one opened index share it."""
    with _LAYOUTS_LOCK:
        held = _LAYOUTS.get(reader)
    if held is not None:
        return held
    index_map = layout_index(reader, progress, cancel, on_sketch)
    complete = all((band.state != UNREAD).all() for band in index_map.levels)
    if complete:  # a map that lacks what could not be read is asked again next time
        with _LAYOUTS_LOCK:
            index_map = _LAYOUTS.setdefault(reader, index_map)
    return index_map


def layout_index(reader: NodeReader, progress: ProgressCallback | None = None, cancel: Event | None = None,
                 on_sketch: Callable[[IndexMap], None] | None = None) -> IndexMap:
    """The map of an opened index: each level's node ids (one listing), every internal node's
    ``node_ids`` (few and small) and the leaves' rows from their ``embeddings`` metadata.

    ``on_sketch`` gets a first picture (:attr:`IndexMap.sketch`, in the calling thread) once the tree
    is listed and before the leaves' metadata is read: at 10M items a fresh map reads 200,000
    leaves' documents, and the tree alone is 3,600 small arrays and a listing per level."""
    from ecpfs_viewer.model.ecpfs.levels import MAX_LISTED_LEVELS, level_plan
    from ecpfs_viewer.model.ecpfs.shared_levels import shared_level_stats
    from ecpfs_viewer.model.ecpfs.summary import summarize

    summary = summarize(reader.hierarchy)  # once, for the plan and every level's statistics
    plan = level_plan(summary)
    if plan.missing_count > MAX_LISTED_LEVELS:  # info/levels is what the store declares, not what it holds
        raise IndexMapError(f"info/levels declares {reader.levels:,} levels but {len(plan.stored):,} are stored: "
                            "the map of a tree that deep cannot be drawn (`check` lists what is missing)")
    tree = tree_inputs(reader, cancel)
    if on_sketch is not None:
        on_sketch(map_layout(reader.label, tree, sketch=True))
    inputs: list[LevelInput] = []
    chunk_rows: dict[int, int | None] = {}
    for level in range(1, reader.levels + 1):
        checkpoint(cancel)
        stats = shared_level_stats(reader.hierarchy, level, summary)
        chunk_rows[level] = stats.chunk_rows
        present = stats.present_ids()
        listed = tree[level - 1].node_ids
        ids = np.union1d(np.union1d(present, listed), np.fromiter(stats.unread_ids, np.int64, len(stats.unread_ids)))
        rows = np.full(ids.size, -1, np.int64)
        rows[np.searchsorted(ids, stats.node_ids)] = stats.sizes
        state = np.zeros(ids.size, np.int8)
        for group, value in ((stats.broken_ids, BROKEN), (stats.unread_ids, UNREAD)):
            if group:
                state[np.searchsorted(ids, np.fromiter(group, np.int64, len(group)))] = value
        if not stats.complete and not stats.unread_ids:
            state[:] = UNREAD
        children: list[np.ndarray | None] = [None] * ids.size
        if level < reader.levels and ids.size:
            children = _children(reader, level, ids, tree[level - 1], state)
        inputs.append(LevelInput(ids, rows, children, state))
        if progress is not None:
            progress(Counted(level, reader.levels, "levels laid out"))
    return map_layout(reader.label, inputs, chunk_rows, cancel)


def _children(reader: NodeReader, level: int, ids: np.ndarray, listed: LevelInput,
              state: np.ndarray) -> list[np.ndarray | None]:
    """Each internal node's ``node_ids``: from the tree as listed (read once for the sketch), the
    nodes it did not list read now; a node whose ``node_ids`` cannot be read is marked BROKEN."""
    at = np.minimum(np.searchsorted(listed.node_ids, ids), max(listed.node_ids.size - 1, 0))
    known = listed.node_ids[at] == ids if listed.node_ids.size else np.zeros(ids.size, bool)
    children: list[np.ndarray | None] = [listed.children[k] if hit else None
                                         for k, hit in zip(at.tolist(), known.tolist(), strict=True)]
    rest = np.flatnonzero(~known)
    if rest.size:
        arrays = reader.arrays.read([node_array_path(level, int(ids[j]), "node_ids") for j in rest])
        for j, arr in zip(rest.tolist(), arrays, strict=True):
            children[j] = None if arr is None else np.asarray(arr, np.int64).reshape(-1)
    for j, child in enumerate(children):
        if child is None and state[j] == OK:
            state[j] = BROKEN
    return children


def tree_inputs(reader: NodeReader, cancel: Event | None = None) -> list[LevelInput]:
    """Per level its listed node ids, and each internal node's ``node_ids``; the leaves' rows unknown (-1).
    An internal node whose ``node_ids`` cannot be read is kept, BROKEN, with no children."""
    from ecpfs_viewer.model.ecpfs.levels import MAX_LISTED_LEVELS

    inputs: list[LevelInput] = []
    empty = 0
    for level in range(1, reader.levels + 1):
        checkpoint(cancel)
        ids = np.asarray(reader.level_node_ids(level), np.int64)
        empty = empty + 1 if not ids.size else 0
        if empty > MAX_LISTED_LEVELS:  # info/levels is what the store declares, not what it holds
            raise IndexMapError(f"info/levels declares {reader.levels:,} levels but lvl_{level - empty + 1} to "
                                f"lvl_{level} hold no nodes: the map of a tree that deep cannot be drawn "
                                "(`check` lists what is missing)")
        rows = np.full(ids.size, -1, np.int64)
        state = np.full(ids.size, OK, np.int8)
        children: list[np.ndarray | None] = [None] * ids.size
        if level < reader.levels and ids.size:
            found = reader.arrays.read_each([node_array_path(level, int(n), "node_ids") for n in ids],
                                            lambda: checkpoint(cancel))
            for j, arr in enumerate(found):
                if isinstance(arr, np.ndarray):
                    children[j] = np.asarray(arr, np.int64).reshape(-1)
                    rows[j] = children[j].size  # type: ignore[union-attr]
                else:
                    state[j] = BROKEN
        inputs.append(LevelInput(ids, rows, children, state))
    return inputs
