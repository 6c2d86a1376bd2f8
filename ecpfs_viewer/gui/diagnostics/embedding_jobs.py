"""The embedding map panel's work done in workers (BackgroundRunner jobs): placing the items, the
colour sums, the representatives' marks and a box selection, and :class:`MapData`, what the
placement job hands over. Qt-free; the GUI never imports zarr."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ecpfs_viewer.model.diagnostics.embedding_map import (
    ColourSums,
    DensityIndex,
    ItemColours,
    Placement,
    Selection,
    ViewRect,
    cached_placement,
    colour_sums,
    fit_projection,
    keep_placement,
    leaf_stamps,
    place_items,
    representatives,
    select_box,
)
from ecpfs_viewer.model.diagnostics.index_map import IndexMap, shared_layout
from ecpfs_viewer.model.search.reader import NodeReader
from ecpfs_viewer.model.tasks import ProgressCallback


@dataclass(frozen=True)
class MapData:
    """What the placement job hands over: the layout, the placement and its density index."""

    index_map: IndexMap
    placement: Placement
    density: DensityIndex
    label: str = ""  # the index's name, for the exported picture's title


def placement_job(reader_of: Callable[[], NodeReader], progress: ProgressCallback | None = None,
                   cancel: threading.Event | None = None) -> MapData:
    reader = reader_of()
    index_map = shared_layout(reader, progress, cancel)
    kept = cached_placement(reader, index_map)
    if kept is not None:
        return MapData(index_map, kept, DensityIndex(kept), reader.label)
    stamps = leaf_stamps(reader.opened.cache, index_map, reader.levels)  # before reading
    first = fit_projection(reader, index_map, cancel=cancel)
    if progress is not None:
        progress(MapData(index_map, first, DensityIndex(first), reader.label))  # type: ignore[arg-type]  # the first picture, through the same channel
    placement = place_items(reader, index_map, first.projection, progress, cancel, first=first)
    keep_placement(reader, placement, stamps)
    return MapData(index_map, placement, DensityIndex(placement), reader.label)


def sums_job(density: DensityIndex, colours: ItemColours) -> tuple[DensityIndex, ColourSums, np.ndarray]:
    return density, colour_sums(density, colours), colours.leaf_rgb()


def marks_job(reader_of: Callable[[], NodeReader], placement: Placement, level: int) -> tuple[int, np.ndarray]:
    return level, representatives(reader_of(), placement.projection, level)[1]


def box_job(density: DensityIndex, index_map: IndexMap, rect: ViewRect) -> Selection:
    return select_box(density, index_map, rect)
