"""The embedding map panel's work done in workers (BackgroundRunner jobs): placing the items, the
colour sums, the representatives' marks, a box or lasso selection and the PNG export, and :class:`MapData`, what the
placement job hands over; and two helpers of the panel that need no Qt (the legend's text, whether two
layouts hold the same nodes). Qt-free; the GUI never imports zarr."""

from __future__ import annotations

import html
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
    colour_sums,
    density_frame,
    representatives,
    select_box,
    select_polygon,
)
from ecpfs_viewer.model.diagnostics.embedding_map.placements import placed_map
from ecpfs_viewer.model.diagnostics.embedding_map.progressive import MapPicture
from ecpfs_viewer.model.diagnostics.embedding_map.render import render_map, write_png
from ecpfs_viewer.model.diagnostics.index_map import IndexMap
from ecpfs_viewer.model.search.reader import NodeReader
from ecpfs_viewer.model.tasks import ProgressCallback


@dataclass(frozen=True)
class MapData:
    """What the placement job hands over: the layout, the placement and its density index."""

    index_map: IndexMap
    placement: Placement
    density: DensityIndex
    label: str = ""  # the index's name, for the exported picture's title
    placed_leaves: int = 0  # leaves placed so far (a picture on the way) of ``leaves``
    leaves: int = 0
    stand_in: str = ""  # what the picture is instead of the placement asked for ('' it is that one)


def placement_job(reader_of: Callable[[], NodeReader], method: str, fit_items: int, block_leaves: int,
                  progress: ProgressCallback | None = None, cancel: threading.Event | None = None) -> MapData:
    """Every item placed by ``method`` (model/diagnostics/embedding_map/placements.py); the pictures on
    the way are handed over as MapData through the progress channel, each with its density index made here."""
    reader = reader_of()

    def picture(shown: MapPicture) -> None:
        if progress is not None:
            progress(MapData(shown.index_map, shown.placement, DensityIndex(shown.placement),  # type: ignore[arg-type]
                             reader.label, shown.placed_leaves, shown.leaves, shown.stand_in))

    done = placed_map(reader, method, fit_items=fit_items, block_leaves=block_leaves, on_picture=picture,
                      progress=progress, cancel=cancel)
    return MapData(done.index_map, done.placement, DensityIndex(done.placement), reader.label, done.placed_leaves,
                   done.leaves)


def sums_job(density: DensityIndex, colours: ItemColours) -> tuple[DensityIndex, ColourSums, np.ndarray]:
    return density, colour_sums(density, colours), colours.leaf_rgb()


def marks_job(reader_of: Callable[[], NodeReader], placement: Placement, level: int) -> tuple[int, np.ndarray]:
    return level, representatives(reader_of(), placement.projection, level)[1]


def box_job(density: DensityIndex, index_map: IndexMap, rect: ViewRect) -> Selection:
    return select_box(density, index_map, rect)


def lasso_job(density: DensityIndex, index_map: IndexMap, vertices: np.ndarray) -> Selection:
    return select_polygon(density, index_map, vertices)


def export_job(data: MapData, colours: ItemColours | None, view: ViewRect, path: str) -> str:
    """The view drawn as the CLI draws it (title, legend, the colour's meaning) and written to path."""
    width = 900
    height = min(max(64, round(width * view.height / view.width)), 1400) if view.width > 0 else 700
    sums = None if colours is None else colour_sums(data.density, colours)
    frame = density_frame(data.density, sums, view, width, height)
    p = data.placement
    title = f"{data.label}: embedding map by {colours.title if colours else 'density'}"
    subtitle = f"{p.count:,} items in {p.leaf_ids.size:,} leaves; {p.projection.describe}"
    write_png(path, render_map(frame, colours, title=title, subtitle=subtitle, notes=tuple(n for n in (p.note,) if n)))
    return path


def legend_html(colours: ItemColours | None) -> str:
    """The legend beside the map: the colouring's title and meaning, its swatches and note."""
    if colours is None:
        return "No colouring: its input is not there."
    rows = "".join(f"<tr><td style='background-color:rgb{rgb}'>&nbsp;&nbsp;&nbsp;&nbsp;</td>"
                   f"<td>&nbsp;{html.escape(text)}</td></tr>" for rgb, text in colours.legend(12))
    note = f"<p><i>{html.escape(colours.note)}</i></p>" if colours.note else ""
    return (f"<b>{html.escape(colours.title)}</b>: {html.escape(colours.meaning)}"
            f"<table cellspacing='1'>{rows}</table>{note}"
            "<p>Denser: more opaque. Items show one by one when few are in view.</p>")


def same_nodes(a: IndexMap, b: IndexMap) -> bool:
    """Whether two layouts hold the same nodes in the same order (an overlay of one fits the other)."""
    return a is b or (len(a.levels) == len(b.levels) and all(
        np.array_equal(x.node_ids, y.node_ids) for x, y in zip(a.levels, b.levels, strict=True)))
