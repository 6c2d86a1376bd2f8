"""The embedding map's placement kept in the index's cache (model/ecpfs/index_cache.py), so that the
second opening of an index draws at once.

One entry per (fit items, seed): the leaves' node ids and item counts, every item's float32
coordinates and id, and the projection (a t-SNE layout's too: where it put each leaf's
representative; its own entry, placements.py). It carries the stamps of the leaf level's folder (a leaf
added or removed) and of every file below each leaf, taken before the leaves are read, and is
answered only while all of them are unchanged and its leaves are the map's leaves; an entry that
does not read back as one is ignored. A remote index keeps nothing (IndexCache says why).
"""

from __future__ import annotations

import threading
import zipfile
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

from ecpfs_viewer.model.diagnostics.embedding_map.placement import (
    DEFAULT_SEED,
    FIT_ITEMS,
    MapProjection,
    Placement,
    fit_projection,
    place_items,
)
from ecpfs_viewer.model.diagnostics.embedding_map.tsne import LayoutProjection
from ecpfs_viewer.model.diagnostics.index_map import IndexMap
from ecpfs_viewer.model.ecpfs.index_cache import IndexCache
from ecpfs_viewer.model.ecpfs.paths import level_path, node_path
from ecpfs_viewer.model.search.reader import NodeReader
from ecpfs_viewer.model.storage.stamps import ALWAYS, Stamps
from ecpfs_viewer.model.tasks import ProgressCallback

ENTRY = "embedding_map_pca_f{fit}_s{seed}.npz"


def entry_name(fit_items: int = FIT_ITEMS, seed: int = DEFAULT_SEED) -> str:
    return ENTRY.format(fit=fit_items, seed=seed)


def cached_placement(reader: NodeReader, index_map: IndexMap, *, fit_items: int = FIT_ITEMS,
                     seed: int = DEFAULT_SEED) -> Placement | None:
    """The kept placement when every leaf it came from is unchanged and the map has the same leaves, else None."""
    cache = reader.opened.cache
    found = cache.open_entry(entry_name(fit_items, seed))
    if found is None:
        return None
    with found[0] as handle:
        if not cache.unchanged(found[1]):
            return None
        placement = read_placement(handle)
    if placement is None or not np.array_equal(placement.leaf_ids, index_map.band(reader.levels).node_ids):
        return None
    return placement


def open_placement(reader: NodeReader, index_map: IndexMap, *, fit_items: int = FIT_ITEMS, seed: int = DEFAULT_SEED,
                   progress: ProgressCallback | None = None, cancel: threading.Event | None = None) -> Placement:
    """The placement of every item: from the cache when it is still true, else fitted, placed and kept
    (only when every leaf was read). A GUI that draws the fit's sample first calls
    :func:`cached_placement`, then :func:`fit_projection`, :func:`place_items` and :func:`keep_placement`."""
    kept = cached_placement(reader, index_map, fit_items=fit_items, seed=seed)
    if kept is not None:
        return kept
    stamps = leaf_stamps(reader.opened.cache, index_map, reader.levels)  # before reading: a change meanwhile is stale
    first = fit_projection(reader, index_map, fit_items=fit_items, seed=seed, cancel=cancel)
    placement = place_items(reader, index_map, first.projection, progress, cancel, first=first)
    keep_placement(reader, placement, stamps, fit_items=fit_items, seed=seed)
    return placement


def keep_placement(reader: NodeReader, placement: Placement, stamps: Stamps | None, *, fit_items: int = FIT_ITEMS,
                   seed: int = DEFAULT_SEED) -> None:
    """Keep a complete placement with the stamps taken (:func:`leaf_stamps`) before its leaves were read."""
    if stamps is not None and not placement.unplaced and not placement.sample:
        reader.opened.cache.save(entry_name(fit_items, seed), placement_writer(placement), stamps)


def leaf_stamps(cache: IndexCache, index_map: IndexMap, levels: int) -> Stamps | None:
    """The leaf level's folder (its entries) and every file below each leaf, owned by the leaf."""
    leaves = index_map.band(levels).node_ids.tolist()
    return Stamps.joined([cache.stamp([(level_path(levels), ALWAYS)], walk=False),
                          cache.stamp([(node_path(levels, n), n) for n in leaves])])


def placement_writer(placement: Placement) -> Callable[[BinaryIO], None]:
    """What writes the placement as an .npz into the cache entry's file, as the entry is written
    (made in memory first, it was 160 MB more at the peak of a 10M-item map)."""
    p = placement.projection
    arrays: dict[str, Any] = {
        "leaf_ids": placement.leaf_ids, "leaf_start": placement.leaf_start, "coords": placement.coords,
        "item_ids": placement.item_ids, "mean": p.mean, "axes": p.axes,
        "explained": np.asarray(p.explained, np.float64), "fit": np.asarray([p.fitted_on, p.seed], np.int64)}
    if isinstance(p, LayoutProjection):  # where the layout put each leaf's representative
        arrays.update(layout=np.asarray([p.anchor_level, p.anchored, p.below, p.cap], np.int64),
                      layout_leaf_ids=p.leaf_ids, layout_origin=p.origin, layout_centre=p.centre, layout_scale=p.scale)

    def write(handle: BinaryIO) -> None:
        np.savez(handle, **arrays)

    return write


def read_placement(source: BinaryIO) -> Placement | None:
    """The placement kept in a cache entry's file (read from where it stands), None for anything else."""
    try:
        with np.load(source, allow_pickle=False) as saved:
            leaf_ids, leaf_start = saved["leaf_ids"], saved["leaf_start"]
            coords, item_ids = saved["coords"], saved["item_ids"]
            mean, axes, explained, fit = saved["mean"], saved["axes"], saved["explained"], saved["fit"]
            layout = ({k: saved[k] for k in ("layout", "layout_leaf_ids", "layout_origin", "layout_centre",
                                             "layout_scale")} if "layout" in saved.files else None)
    except (OSError, EOFError, KeyError, ValueError, zipfile.BadZipFile):
        return None
    n = item_ids.shape[0] if item_ids.ndim == 1 else -1
    if (leaf_ids.ndim != 1 or leaf_start.shape != (leaf_ids.size + 1,) or coords.shape != (n, 2)
            or coords.dtype != np.float32 or item_ids.dtype not in (np.int64, np.uint32) or int(leaf_start[-1]) != n
            or (np.diff(leaf_start) < 0).any() or axes.shape != (2, mean.size) or explained.shape != (2,)
            or fit.shape != (2,)):
        return None
    projection = MapProjection(mean, axes, (float(explained[0]), float(explained[1])), int(fit[0]), int(fit[1]))
    if layout is not None:
        info, ids = layout["layout"], layout["layout_leaf_ids"]
        if (info.shape != (4,) or ids.ndim != 1 or layout["layout_origin"].shape != (ids.size, 2)
                or layout["layout_centre"].shape != (ids.size, 2) or layout["layout_scale"].shape != (ids.size,)):
            return None
        projection = LayoutProjection(mean, axes, projection.explained, int(fit[0]), int(fit[1]),
                                      anchor_level=int(info[0]), anchored=int(info[1]), below=int(info[2]),
                                      cap=int(info[3]), leaf_ids=ids.astype(np.int64),
                                      origin=layout["layout_origin"].astype(np.float64),
                                      centre=layout["layout_centre"].astype(np.float64),
                                      scale=layout["layout_scale"].astype(np.float64))
    return Placement(projection, leaf_ids.astype(np.int64), leaf_start.astype(np.int64), coords, item_ids,
                     from_cache=True)
