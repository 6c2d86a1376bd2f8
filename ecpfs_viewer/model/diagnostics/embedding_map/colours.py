"""What the embedding map colours its items by: the tree (a level's clusters, the leaf), and every
per-node colouring of the index map's registry (model/diagnostics/colourings.py) taken at the leaf
an item is in.

:data:`MAP_COLOURINGS` is the one table of the map's colour-by choices (the CLI's ``--colour`` and
the window's menu read it): the categorical ones are the map's own, the others name a registry
colouring and take its title, meaning and need from there. Values are kept per leaf position
(:class:`ItemColours`: one number per leaf, never one per item); an item takes its leaf's.

The registry colourings come from the overlays the rest of the app makes: ``size_colours(index_map)``;
``from_overlay(index_map, miss_map.overlay(search_exp), along_path=True)`` for the last sweep's misses
(counted where the search turned away, often above the leaf, so summed along each item's path);
``from_overlay(index_map, overlay_from_nodes(index_map, "workload", visits_by_node(work), VISITS_LEGEND))``
and the same with ``"strays"``/``stray_share_by_node`` (model/diagnostics/overlays.py);
``from_overlay(index_map, boundary_report.overlay())``. cli/embedding_map.py's ``map_colours`` does each.

Categorical colours come from one palette of up to 20 colours (:data:`PALETTE`); with more
categories than colours they repeat and :attr:`ItemColours.note` says so. Continuous values are
drawn through :func:`lut` (a 256-step viridis for sequential and flag values, blue-white-red for
diverging ones), the same for the PNG export and the window.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ecpfs_viewer.model.diagnostics.colourings import Need, colouring
from ecpfs_viewer.model.diagnostics.embedding_map.placement import Placement
from ecpfs_viewer.model.diagnostics.index_map import IndexMap, MapOverlay, leaf_ancestors, size_overlay
from ecpfs_viewer.model.ecpfs.paths import node_path

ColourKind = Literal["categorical", "sequential", "diverging", "flag"]

#: 20 colours told apart on light and dark backgrounds (Tableau 20's order: strong, then light)
PALETTE = np.array([
    (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189), (140, 86, 75),
    (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207), (174, 199, 232), (255, 187, 120),
    (152, 223, 138), (255, 152, 150), (197, 176, 213), (196, 156, 148), (247, 182, 210), (199, 199, 199),
    (219, 219, 141), (158, 218, 229)], np.uint8)


@dataclass(frozen=True)
class MapColouring:
    """One colour-by choice of the map: its id (the CLI's ``--colour``), title, meaning and input."""

    id: str
    title: str
    meaning: str
    needs: Need
    kind: ColourKind


def _registry(colouring_id: str) -> MapColouring:
    c = colouring(colouring_id)
    return MapColouring(c.id, c.title, c.meaning, c.needs, c.kind)


MAP_COLOURINGS: tuple[MapColouring, ...] = (
    MapColouring("level1", "level-1 cluster", "the level-1 node an item is beneath", Need.MAP, "categorical"),
    MapColouring("leaf", "leaf", "the leaf an item is in", Need.MAP, "categorical"),
    MapColouring("level", "level N node", "the node of a chosen level an item is beneath", Need.MAP, "categorical"),
    *(_registry(i) for i in ("size", "misses", "workload", "strays", "boundary")),
)
_BY_ID = {c.id: c for c in MAP_COLOURINGS}


def map_colouring(colouring_id: str) -> MapColouring:
    """The map colouring of that id (KeyError names the ids there are)."""
    try:
        return _BY_ID[colouring_id]
    except KeyError:
        raise KeyError(f"no embedding-map colouring {colouring_id!r}; there are {', '.join(_BY_ID)}") from None


@dataclass(frozen=True, eq=False)
class ItemColours:
    """Per-leaf categories or values of one colouring, aligned with a placement's leaf positions."""

    id: str
    title: str  # what the legend heads with
    meaning: str  # one line: what a colour says
    kind: ColourKind
    leaf_codes: np.ndarray | None = None  # int32 per leaf position: a category (-1: none) [categorical]
    names: tuple[str, ...] = ()  # the categories' names (a node path each)
    leaf_values: np.ndarray | None = None  # float64 per leaf position, NaN: no value [continuous]
    low: float = 0.0  # value drawn at the bottom of the scale
    high: float = 1.0  # ... and at its top
    formatter: Callable[[float], str] | None = None

    @property
    def categorical(self) -> bool:
        return self.kind == "categorical"

    @property
    def note(self) -> str:
        """'57 categories on 20 colours: colours repeat (1 and 21 look alike)', else ''."""
        n = len(self.names)
        if self.categorical and n > len(PALETTE):
            return (f"{n:,} {self.title} categories on {len(PALETTE)} colours: colours repeat "
                    f"(every {len(PALETTE)}th category looks alike)")
        return ""

    def format(self, value: float) -> str:
        if self.formatter is not None:
            return self.formatter(value)
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:.3g}"

    def leaf_rgb(self) -> np.ndarray:
        """(leaves, 3) uint8 colour per leaf position, and what has none drawn grey."""
        if self.categorical:
            assert self.leaf_codes is not None
            codes = self.leaf_codes
            out: np.ndarray = PALETTE[np.maximum(codes, 0) % len(PALETTE)].copy()
            out[codes < 0] = NO_VALUE
            return out
        assert self.leaf_values is not None
        return values_rgb(self.leaf_values, self.kind, self.low, self.high)

    def legend(self, top: int = 20) -> list[tuple[tuple[int, int, int], str]]:
        """(colour, text) rows: the first ``top`` categories, or the scale's ends and middle."""
        if self.categorical:
            rows = [(_rgb(PALETTE[i % len(PALETTE)]), name) for i, name in enumerate(self.names[:top])]
            if len(self.names) > top:
                rows.append(((128, 128, 128), f"... {len(self.names) - top:,} more"))
            return rows
        table = lut(self.kind)
        stops = (0.0, 0.5, 1.0)
        return [(_rgb(table[round(s * 255)]), self.format(self.low + s * (self.high - self.low))) for s in stops]


NO_VALUE = np.array((150, 150, 150), np.uint8)


def _rgb(colour: np.ndarray) -> tuple[int, int, int]:
    return int(colour[0]), int(colour[1]), int(colour[2])


_VIRIDIS = ((68, 1, 84), (72, 40, 120), (62, 74, 137), (49, 104, 142), (38, 130, 142), (31, 158, 137),
            (53, 183, 121), (109, 205, 89), (180, 222, 44), (253, 231, 37))
#: blue, a mid grey (seen on light and dark backgrounds alike), red
_DIVERGING = ((33, 102, 172), (90, 150, 200), (150, 175, 195), (170, 170, 170), (200, 160, 150), (220, 100, 80),
              (178, 24, 43))


def lut(kind: ColourKind) -> np.ndarray:
    """(256, 3) uint8 colours from the bottom of the scale to its top."""
    stops = np.asarray(_DIVERGING if kind == "diverging" else _VIRIDIS, np.float64)
    at = np.linspace(0.0, 1.0, len(stops))
    x = np.linspace(0.0, 1.0, 256)
    return np.stack([np.interp(x, at, stops[:, c]) for c in range(3)], axis=1).round().astype(np.uint8)


def values_rgb(values: np.ndarray, kind: ColourKind, low: float, high: float) -> np.ndarray:
    """(n, 3) uint8 of values through :func:`lut` between low and high; NaN grey."""
    v = np.asarray(values, np.float64)
    span = high - low if high > low else 1.0
    with np.errstate(invalid="ignore"):
        steps = np.clip(np.nan_to_num((v - low) / span * 255.0, nan=0.0), 0, 255).astype(np.int64)
    out = lut(kind)[steps]
    out[np.isnan(v)] = NO_VALUE
    return out


# -- the colourings -----------------------------------------------------------------------------

def by_level(index_map: IndexMap, level: int) -> ItemColours:
    """Each item coloured by its ancestor at ``level`` (the leaf itself at the leaf level)."""
    n_levels = len(index_map.levels)
    if not 1 <= level <= n_levels:
        raise ValueError(f"level {level} is not one of the index's levels 1..{n_levels}")
    codes = leaf_ancestors(index_map)[level - 1].astype(np.int32)
    band = index_map.band(level)
    names = tuple(node_path(level, int(n)) for n in band.node_ids)
    if level == 1:
        c = map_colouring("level1")
    elif level == n_levels:
        c = map_colouring("leaf")
    else:
        c = MapColouring("level", f"lvl_{level} node", f"the lvl_{level} node an item is beneath", Need.MAP,
                         "categorical")
    return ItemColours(c.id, c.title, c.meaning, "categorical", leaf_codes=codes, names=names)


def from_overlay(index_map: IndexMap, overlay: MapOverlay, level: int | None = None, *,
                 along_path: bool = False) -> ItemColours:
    """Each item takes the overlay's value at its ancestor of ``level`` (its leaf by default): the
    miss map, workload visits, strays, boundary items, size (any :class:`MapOverlay`). With
    ``along_path`` it takes the sum of the values of every node on its path, level 1 to the leaf
    (the miss map counts a miss at the node where the search turned away, often above the leaf)."""
    n_levels = len(index_map.levels)
    level = n_levels if level is None else level
    if not 1 <= level <= n_levels:
        raise ValueError(f"level {level} is not one of the index's levels 1..{n_levels}")
    ancestors = leaf_ancestors(index_map)
    values = np.full(ancestors[-1].size, math.nan)
    for at in range(1, n_levels + 1) if along_path else (level,):
        up = ancestors[at - 1]
        per_node = np.asarray(overlay.values.get(at, np.zeros(0)), np.float64)
        ok = (up >= 0) & (up < per_node.size)
        got = np.full(up.size, math.nan)
        got[ok] = per_node[up[ok]]
        values = np.where(np.isnan(values), got, values + np.nan_to_num(got)) if along_path else got
    kind = overlay.kind
    if along_path:
        low, high = 0.0, float(np.nanmax(values)) if (~np.isnan(values)).any() else 1.0
        high = high or 1.0
    elif kind == "diverging":
        top = overlay.scale_top()
        low, high = overlay.centre - top, overlay.centre + top
    else:
        low, high = 0.0, overlay.scale_top()
    where = " (summed along the path)" if along_path else "" if level == n_levels else f" (at lvl_{level})"
    meaning = overlay.legend + ("; summed over the item's path from lvl_1 to its leaf" if along_path else "")
    return ItemColours(overlay.id, overlay.name + where, meaning, kind, leaf_values=values, low=low,
                       high=high, formatter=overlay.formatter)


def size_colours(index_map: IndexMap) -> ItemColours:
    """The leaf's items against the median leaf (log2), the registry's ``size``."""
    return from_overlay(index_map, size_overlay(index_map))


def item_rgb(placement: Placement, colours: ItemColours) -> np.ndarray:
    """(n, 3) uint8 per item (memory: 3 bytes an item; the density frames need no such array)."""
    rgb: np.ndarray = colours.leaf_rgb()[placement.leaf_pos]
    return rgb
