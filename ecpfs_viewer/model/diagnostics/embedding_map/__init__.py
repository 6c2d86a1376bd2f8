"""The embedding map (issue 39): every item of an index placed in 2-D, drawn as a density image with
level of detail and coloured by the tree and the diagnostics. Qt-free; the window's View ▸ Embedding
Map and ``ecpfs-viewer map`` are two front-ends of these calls.

How a front-end uses it (each step off the GUI thread except the frames, which are made for it)::

    reader = IndexReader(path)                       # or the window's opened index's reader
    done = placed_map(reader, "pca", on_picture=draw, progress=..., cancel=token)  # placements.py: pca | tsne
    # from the cache when it still holds; else only the tree above the leaves and a seeded sample of
    # leaves are read, the PCA fitted on it and that sample handed to draw() as a first picture, then
    # the other leaves in blocks (draw() again each time the items placed have grown 4 times)
    index_map, placement = done.index_map, done.placement   # the map its leaf positions follow
    # (fit_projection / place_items / open_placement do the same over a layout already made, in one go)
    density = DensityIndex(placement)                # once per placement
    colours = by_level(index_map, 1)                 # or from_overlay(index_map, miss_map.overlay()) ...
    sums = colour_sums(density, colours)             # once per colouring
    frame = density_frame(density, sums, view_rect, width_px, height_px)   # per pan/zoom
    image = frame.rgba(background)                   # (h, w, 4) uint8; frame.points when few in view
    leaves_under(density, small_rect)                # hover: the leaves most present there
    select_box(density, index_map, rect)             # box: items and the nodes above them
    select_polygon(density, index_map, vertices)     # lasso: the same for a polygon
    items_beneath(placement, index_map, level, node_id)   # the tree's selection: the items under a node
    query_overlay(placement, query, search_result, missed)  # a search's path, results and misses
    representatives(reader, placement.projection, level)     # the marks of a level's representatives
    write_png(path, render_map(frame, colours, title=...))  # render.py: the CLI's picture

Modules: ``placements`` (what the window and the CLI call: the table of placements, PCA or a t-SNE
layout of the representatives), ``progressive`` (the PCA: a sample first, then refined in
blocks, kept in the cache), ``tsne`` (the t-SNE layout of the representatives, every item around its
leaf's; the optional ``layout`` extra), ``placement`` (PCA fit and streaming placement over a layout),
``placement_cache`` (its cache entry), ``colours`` (the colour-by table, palette, scales),
``density`` (aggregation and level of detail), ``picking`` (hover, box, lasso, query), ``render`` (the
PNG with title, legend and meaning).
"""

from __future__ import annotations

from ecpfs_viewer.model.diagnostics.embedding_map.colours import (
    MAP_COLOURINGS,
    PALETTE,
    ItemColours,
    MapColouring,
    by_level,
    from_overlay,
    lut,
    map_colouring,
    size_colours,
)
from ecpfs_viewer.model.diagnostics.embedding_map.density import (
    ColourSums,
    DensityFrame,
    DensityIndex,
    ViewRect,
    colour_sums,
    density_frame,
)
from ecpfs_viewer.model.diagnostics.embedding_map.picking import (
    LeafShare,
    QueryOverlay,
    Selection,
    items_beneath,
    leaves_under,
    positions_of,
    query_overlay,
    select_box,
    select_polygon,
)
from ecpfs_viewer.model.diagnostics.embedding_map.placement import (
    MapProjection,
    Placement,
    fit_projection,
    place_items,
    representatives,
)
from ecpfs_viewer.model.diagnostics.embedding_map.placement_cache import (
    cached_placement,
    keep_placement,
    leaf_stamps,
    open_placement,
)
from ecpfs_viewer.model.diagnostics.embedding_map.placements import (
    MAP_PLACEMENTS,
    MapPlacementMethod,
    map_placement,
    placed_map,
)
from ecpfs_viewer.model.diagnostics.embedding_map.progressive import MapPicture, progressive_placement

__all__ = [
    "MAP_COLOURINGS", "MAP_PLACEMENTS", "PALETTE", "ColourSums", "DensityFrame", "DensityIndex", "ItemColours",
    "LeafShare", "MapColouring", "MapPicture", "MapPlacementMethod", "MapProjection", "Placement", "QueryOverlay",
    "Selection", "ViewRect", "by_level", "cached_placement", "colour_sums", "density_frame", "fit_projection",
    "from_overlay", "items_beneath", "keep_placement", "leaf_stamps", "leaves_under", "lut", "map_colouring",
    "map_placement", "open_placement", "place_items", "placed_map", "positions_of", "progressive_placement",
    "query_overlay", "representatives", "select_box", "select_polygon",
    "size_colours",
]
