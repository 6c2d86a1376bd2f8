"""`ecpfs-viewer map`: the embedding map of an index as a PNG (issue 39), headless.

Every item placed by the model (model/diagnostics/embedding_map/: the PCA placement, or with
``--placement tsne`` a t-SNE layout of the representatives; from the index's cache when it still
holds), aggregated on the picture's pixels and coloured by one of the map's colourings; the
diagnostics a colouring needs (a recall sweep for misses, a workload replay, the self-reachability
check, boundary items) are run here by the same model functions the window runs.
Drawn with numpy (no Qt), written atomically; one line on stdout says what was drawn.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ecpfs_viewer.cli.contract import EXIT_OK, UsageError
from ecpfs_viewer.cli.numbers import AtLeast, add_search_exp
from ecpfs_viewer.cli.search import add_query_source, load_queries, open_index, run_body, subcommand

if TYPE_CHECKING:
    from ecpfs_viewer.cli.progress import TerminalProgress
    from ecpfs_viewer.model.diagnostics.embedding_map import ItemColours
    from ecpfs_viewer.model.diagnostics.index_map import IndexMap
    from ecpfs_viewer.model.search.index import IndexReader

COLOURS = ("level1", "leaf", "level", "size", "misses", "workload", "strays", "boundary")
PLACEMENTS = ("pca", "tsne")  # model/diagnostics/embedding_map/placements.py's MAP_PLACEMENTS


def add_map_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    """Register `map INDEX --png OUT.png [--colour level1|leaf|size|misses|workload|strays|boundary]
    [--placement pca|tsne]` and `map A --against B --png OUT.png` (both on A's axes, by leaf, the items
    that moved marked)."""
    p = subcommand(subparsers, "map")
    p.add_argument("--png", required=True, metavar="OUT.png", help="the picture to write (replaced if it exists)")
    p.add_argument("--against", metavar="B", default=None,
                   help="a second index (folder, .zip or URL) drawn beside INDEX on INDEX's axes, both coloured "
                        "by leaf, the items that moved between their leaves marked (not with --colour)")
    p.add_argument("--colour", "--color", choices=COLOURS, default=None,
                   help="what colours the items (default level1: their level-1 cluster)")
    p.add_argument("--placement", choices=PLACEMENTS, default="pca",
                   help="how the items are placed: pca (default: the principal axes of a sample) or tsne (a "
                        "t-SNE layout of the representatives, each leaf's items around its own; needs the layout "
                        "extra: pip install 'ecpfs-viewer[layout]')")
    p.add_argument("--level", action=AtLeast, least=1, default=None, metavar="N",
                   help="the level whose nodes --colour level uses (default: 2, or the leaves)")
    p.add_argument("--width", action=AtLeast, least=64, default=900, help="map width in pixels (default 900)")
    p.add_argument("--height", action=AtLeast, least=64, default=700, help="map height in pixels (default 700)")
    src = add_query_source(p, count_help="sample N stored items as queries for misses and workload (default 100)")
    del src
    add_search_exp(p, 4, least=1, help_text="search_exp of the sweep or replay (misses, workload; default 4)")
    p.add_argument("--k", action=AtLeast, least=1, default=10, help="results per query (misses, workload; default 10)")
    p.add_argument("--quiet", action="store_true", help="no progress bar (it is drawn only on a terminal anyway)")
    p.set_defaults(func=lambda args: run_body(_map, args))
    return p


def _map(args: argparse.Namespace) -> int:
    from ecpfs_viewer.cli.progress import TerminalProgress
    from ecpfs_viewer.model.diagnostics.embedding_map import DensityIndex, colour_sums, density_frame
    from ecpfs_viewer.model.diagnostics.embedding_map.placements import map_placement, placed_map
    from ecpfs_viewer.model.diagnostics.embedding_map.render import render_map, write_png

    refused = map_placement(args.placement).refusal()
    if refused:
        raise UsageError(refused)
    if args.against is not None:
        if args.placement != "pca":
            raise UsageError("--against places both indexes on INDEX's principal axes; it takes no --placement")
        return _map_pair(args)
    args.colour = args.colour or "level1"
    reader = open_index(args)
    with TerminalProgress(enabled=not args.quiet) as bar:
        placed = placed_map(reader, args.placement, progress=bar)  # every item: the complete picture
        index_map, placement = placed.index_map, placed.placement
        colours = map_colours(args, reader, index_map, bar)
    density = DensityIndex(placement)
    view = _square_view(density.bounds, args.width, args.height)
    frame = density_frame(density, colour_sums(density, colours), view, args.width, args.height)
    how = placement.projection.describe + (" (kept in the cache)" if placement.from_cache else "")
    subtitle = f"{placement.count:,} items in {placement.leaf_ids.size:,} leaves; {how}"
    notes = tuple(n for n in (placement.note,) if n)
    image = render_map(frame, colours, title=f"{reader.label}: embedding map by {colours.title}", subtitle=subtitle,
                       notes=notes)
    write_png(args.png, image)
    method = "" if args.placement == "pca" else f", placed by {map_placement(args.placement).title}"
    print(f"{args.png}: {placement.count:,} items coloured by {colours.title} ({image.shape[1]} x {image.shape[0]} px"
          f"{method}{', placement from the cache' if placement.from_cache else ''})")
    return EXIT_OK


def _map_pair(args: argparse.Namespace) -> int:
    """`map A --against B`: both indexes side by side on A's axes (two_indexes.py, render_pair.py)."""
    from ecpfs_viewer.cli.progress import TerminalProgress
    from ecpfs_viewer.model.diagnostics.embedding_map.render import write_png
    from ecpfs_viewer.model.diagnostics.embedding_map.render_pair import render_pair
    from ecpfs_viewer.model.diagnostics.embedding_map.two_indexes import place_both

    if args.colour is not None:
        raise UsageError(f"--colour {args.colour}: with --against both maps are coloured by leaf")
    a = open_index(args)
    b = open_index(args, args.against)
    with TerminalProgress(enabled=not args.quiet) as bar:
        two = place_both(a, b, progress=bar)
    width = max(64, args.width // 2)
    image = render_pair(two, width, args.height,
                        title=f"{a.label} (A) against {b.label} (B): embedding map by leaf, on A's axes")
    write_png(args.png, image)
    m = two.moved
    print(f"{args.png}: {m.describe} ({image.shape[1]} x {image.shape[0]} px)")
    return EXIT_OK


def map_colours(args: argparse.Namespace, reader: IndexReader, index_map: IndexMap,
                bar: TerminalProgress) -> ItemColours:
    """The colouring --colour names, computed by the model function the window runs for it."""
    from ecpfs_viewer.model.diagnostics.embedding_map import by_level, from_overlay, size_colours
    from ecpfs_viewer.model.diagnostics.index_map import overlay_from_nodes

    levels = len(index_map.levels)
    if args.colour == "level1":
        return by_level(index_map, 1)
    if args.colour == "leaf":
        return by_level(index_map, levels)
    if args.colour == "level":
        level = args.level if args.level is not None else min(2, levels)
        if level > levels:
            raise UsageError(f"--level {level}: the index has {levels} levels")
        return by_level(index_map, level)
    if args.colour == "size":
        return size_colours(index_map)
    if args.colour == "boundary":
        from ecpfs_viewer.model.diagnostics.boundary import boundary_items

        return from_overlay(index_map, boundary_items(reader, index_map, progress=bar).overlay())
    if args.colour == "strays":
        from ecpfs_viewer.model.diagnostics.overlays import STRAYS_LEGEND, stray_share_by_node
        from ecpfs_viewer.model.diagnostics.reachability import self_reachability

        report = self_reachability(reader, progress=bar)
        return from_overlay(index_map, overlay_from_nodes(index_map, "strays", stray_share_by_node(report),
                                                          STRAYS_LEGEND, high=1.0))
    from ecpfs_viewer.model.search import SearchParams, queries_from_array, sample_items

    queries = (queries_from_array(reader, load_queries(args.queries), args.queries) if args.queries
               else sample_items(reader, args.sample or 100, args.seed))
    if args.colour == "workload":
        from ecpfs_viewer.model.diagnostics.overlays import VISITS_LEGEND, visits_by_node
        from ecpfs_viewer.model.diagnostics.workload import replay

        work = replay(reader, queries, SearchParams(k=args.k, search_exp=args.search_exp), progress=bar)
        return from_overlay(index_map, overlay_from_nodes(index_map, "workload", visits_by_node(work), VISITS_LEGEND))
    from ecpfs_viewer.model.diagnostics.miss_map import MissMapCollector
    from ecpfs_viewer.model.search.recall import recall_sweep

    collector = MissMapCollector(index_map)
    recall_sweep(reader, queries, args.k, [args.search_exp], progress=bar, observe=collector.observe)
    miss_map = collector.result(reader.locator.complete_map())
    return from_overlay(index_map, miss_map.overlay(args.search_exp), along_path=True)


def _square_view(bounds, width: int, height: int):  # type: ignore[no-untyped-def]
    """The bounds widened on one axis so that a placement unit is as long across as up (no stretch)."""
    from ecpfs_viewer.model.diagnostics.embedding_map import ViewRect

    per_px = max(bounds.width / width, bounds.height / height)
    cx, cy = (bounds.x0 + bounds.x1) / 2, (bounds.y0 + bounds.y1) / 2
    return ViewRect(cx - per_px * width / 2, cx + per_px * width / 2, cy - per_px * height / 2,
                    cy + per_px * height / 2)
