"""The index map: an icicle layout of the whole tree, and per-node overlays to colour it by.

Layout (made in model/diagnostics/index_map_layout.py): the root spans the top; level N is band N;
each node is as wide as the items beneath it, children side by side under their parent in the order
of its ``node_ids``. Coordinates are item counts (x from 0 to the items beneath the root), so a
drawing scales them to its width. Nodes no parent lists (unlinked: search cannot reach them) are
laid out after the linked ones, their subtrees under them. A node whose arrays could not be read
is kept, with width 0 and its ``state`` saying so (never silently left out).

Overlays: a :class:`MapOverlay` is a colouring of the registry (model/diagnostics/colourings.py: its
``id``, and through it its kind), a display name, one float array per level aligned with that level's
:class:`MapLevel` arrays (NaN: no value for that node), a legend text that says what the values
and their scale mean; the registry's kind tells a drawing how to colour them:

- ``"sequential"``: 0 .. ``high`` (e.g. misses beneath a node, a share of boundary items);
- ``"diverging"``: centred on ``centre`` (e.g. log2 of size against the level's median);
- ``"flag"``: 0 = nothing, > 0 = something to see (e.g. findings).

Build one from values keyed by node with :func:`overlay_from_nodes`; the overlays defined here
are :func:`size_overlay`, :func:`fill_overlay` and :func:`findings_overlay` (the miss map and
boundary items add theirs in their modules; workload and self-reachability the same way).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ecpfs_viewer.model.diagnostics.colourings import OverlayKind, colouring
from ecpfs_viewer.model.ecpfs.findings import Finding
from ecpfs_viewer.model.ecpfs.paths import node_path, parse_node_name

#: ``MapLevel.state`` values
OK, UNREAD, BROKEN = 0, 1, 2
STATE_NAMES = {OK: "", UNREAD: "could not be read", BROKEN: "broken (no usable arrays)"}


@dataclass(frozen=True, eq=False)
class MapLevel:
    """One band of the map: the nodes of ``lvl_{level}`` with their place, in ascending x."""

    level: int
    node_ids: np.ndarray  # int64
    x0: np.ndarray  # float64, items before the node's left edge
    x1: np.ndarray  # float64, x0 + items beneath it
    rows: np.ndarray  # int64 rows the node holds (children or items); -1 when unknown
    parents: np.ndarray  # int64 index into the level above's arrays; -1 for level 1 and unlinked nodes
    state: np.ndarray  # int8: OK, UNREAD or BROKEN

    def __len__(self) -> int:
        return int(self.node_ids.size)

    @property
    def sizes(self) -> np.ndarray:
        """Items beneath each node (width in the map)."""
        widths: np.ndarray = self.x1 - self.x0
        return widths

    def index_of(self, node_id: int) -> int | None:
        """Position of a node in this band's arrays, or None when the level has no such node."""
        at = np.flatnonzero(self.node_ids == node_id)
        return int(at[0]) if at.size else None

    def at(self, x: float) -> int | None:
        """Position of the node under x (ascending x0, so a binary search), or None."""
        i = int(np.searchsorted(self.x0, x, side="right")) - 1
        if i < 0 or x >= self.x1[i]:
            return None
        return i


@dataclass(frozen=True, eq=False)
class IndexMap:
    """The icicle layout of an index: bands 1..L and the width of the whole (items beneath the root)."""

    label: str
    levels: tuple[MapLevel, ...]
    total: float  # right edge of the widest band
    chunk_rows: Mapping[int, int | None] = field(default_factory=dict)  # level -> node chunk rows
    #: the tree as listed, before the leaves' sizes are read: every leaf one unit wide, a node as wide
    #: as the leaves beneath it (a first picture; ``sizes`` count leaves, not items)
    sketch: bool = False

    @property
    def node_count(self) -> int:
        return sum(len(band) for band in self.levels)

    def band(self, level: int) -> MapLevel:
        return self.levels[level - 1]

    def node_at(self, x: float, y: float) -> tuple[int, int] | None:
        """(level, node_id) of the node drawn at (x, y); band N spans y in [N-1, N)."""
        level = math.floor(y) + 1
        if not 1 <= level <= len(self.levels):
            return None
        band = self.band(level)
        i = band.at(x)
        return None if i is None else (level, int(band.node_ids[i]))

    def path_of(self, level: int, node_id: int) -> str:
        return node_path(level, node_id)

    def facts(self, level: int, node_id: int, overlays: Sequence[MapOverlay] = ()) -> list[str]:
        """What hover says about a node: path, items beneath, rows, state, the overlays' values."""
        band = self.band(level)
        i = band.index_of(node_id)
        if i is None:
            return [f"{node_path(level, node_id)}: not in the map"]
        if not self.sketch:
            beneath = f"{int(band.sizes[i]):,} items beneath"
        elif level < len(self.levels):
            beneath = f"{int(band.sizes[i]):,} leaves beneath (their items not read yet)"
        else:
            beneath = "items not read yet"
        lines = [node_path(level, node_id), beneath]
        if band.rows[i] >= 0:
            lines.append(f"{int(band.rows[i]):,} rows")
        if band.state[i] != OK:
            lines.append(STATE_NAMES[int(band.state[i])])
        if band.parents[i] < 0 and level > 1:
            lines.append("unlinked: no node one level up lists it (search cannot reach it)")
        for overlay in overlays:
            value = overlay.value(level, i)
            if value is not None:
                lines.append(f"{overlay.name}: {overlay.format(value)}")
        return lines


@dataclass(frozen=True, eq=False)
class MapOverlay:
    """Per-node values of one registry colouring to colour the map by (see the module docstring)."""

    id: str  # a colouring of the registry (model/diagnostics/colourings.py)
    name: str  # its display text, which may carry a parameter: "misses (search_exp 4)"
    values: Mapping[int, np.ndarray]  # level -> float64 per node of that MapLevel (NaN: no value)
    legend: str  # what the values mean and their scale, shown beside the map
    high: float | None = None  # top of the scale; None: the largest value
    centre: float = 0.0  # for "diverging"
    formatter: Callable[[float], str] | None = None
    variant: str = ""  # the parameter that sets it apart from others of its colouring ("4": search_exp 4)

    def __post_init__(self) -> None:
        colouring(self.id)  # an overlay of no registered colouring is refused where it is made

    @property
    def kind(self) -> OverlayKind:
        return colouring(self.id).kind

    @property
    def key(self) -> str:
        """What identifies it among the overlays offered: the colouring's id, and the variant if any."""
        return f"{self.id}:{self.variant}" if self.variant else self.id

    def value(self, level: int, index: int) -> float | None:
        arr = self.values.get(level)
        if arr is None or index >= arr.size or np.isnan(arr[index]):
            return None
        return float(arr[index])

    def format(self, value: float) -> str:
        if self.formatter is not None:
            return self.formatter(value)
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:.3g}"

    def scale_top(self) -> float:
        """The value drawn at the top of the scale (at least something above 0)."""
        if self.high is not None:
            return self.high
        tops = [float(np.nanmax(np.abs(a - self.centre))) for a in self.values.values()
                if a.size and not np.isnan(a).all()]
        return max(tops, default=0.0) or 1.0


def overlay_from_nodes(index_map: IndexMap, colouring_id: str, by_node: Mapping[tuple[int, int], float], legend: str,
                       default: float = math.nan, **extra: object) -> MapOverlay:
    """An overlay from values keyed by (level, node_id); nodes not named get ``default``."""
    grouped: dict[int, tuple[list[int], list[float]]] = {}
    for (level, node_id), value in by_node.items():
        ids, vals = grouped.setdefault(level, ([], []))
        ids.append(node_id)
        vals.append(value)
    arrays = {level: (np.asarray(ids, np.int64), np.asarray(vals, np.float64))
              for level, (ids, vals) in grouped.items()}
    return overlay_from_arrays(index_map, colouring_id, arrays, legend, default, **extra)


def overlay_from_arrays(index_map: IndexMap, colouring_id: str,
                        level_ids: Mapping[int, tuple[np.ndarray, np.ndarray]], legend: str, default: float = math.nan,
                        **extra: object) -> MapOverlay:
    """An overlay from, per level, (node_ids, values) arrays (vectorised :func:`overlay_from_nodes`)."""
    values: dict[int, np.ndarray] = {}
    for band in index_map.levels:
        out = np.full(len(band), default, np.float64)
        if band.level in level_ids and len(band):
            ids, vals = level_ids[band.level]
            order = np.argsort(band.node_ids, kind="stable")
            at = np.searchsorted(band.node_ids[order], ids)
            at = np.minimum(at, len(band) - 1)
            hit = band.node_ids[order][at] == ids
            out[order[at[hit]]] = np.asarray(vals, np.float64)[hit]
        values[band.level] = out
    name = str(extra.pop("name", colouring(colouring_id).title))
    return MapOverlay(colouring_id, name, values, legend, **extra)  # type: ignore[arg-type]


def leaf_ancestors(index_map: IndexMap) -> list[np.ndarray]:
    """Per level (index 0 = lvl_1), each leaf's ancestor position in that band (-1 above a break); the
    last entry is the leaves' own positions. What boundary items and the embedding map colour by."""
    n_levels = len(index_map.levels)
    leaves = index_map.band(n_levels)
    out: list[np.ndarray] = [np.zeros(0, np.int64)] * n_levels
    out[n_levels - 1] = np.arange(len(leaves), dtype=np.int64)
    for depth in range(n_levels - 1, 0, -1):
        below = out[depth]
        parents = index_map.levels[depth].parents
        out[depth - 1] = np.where(below >= 0, parents[np.maximum(below, 0)], -1)
    return out


# -- overlays of what the index stores ----------------------------------------------------------

def size_overlay(index_map: IndexMap) -> MapOverlay:
    """log2 of the items beneath each node against its level's median: 0 typical, +1 twice, -1 half."""
    values: dict[int, np.ndarray] = {}
    for band in index_map.levels:
        sizes = band.sizes
        known = sizes > 0
        median = float(np.median(sizes[known])) if known.any() else 1.0
        out = np.full(len(band), np.nan)
        out[known] = np.log2(sizes[known] / median)
        out[(band.rows == 0) | ((sizes == 0) & (band.state == OK))] = -3.0  # empty: the bottom of the scale
        values[band.level] = out
    return MapOverlay("size", colouring("size").title, values,
                      "items beneath against the level's median, log2: 0 = median, +1 = twice, -1 = half",
                      high=3.0, formatter=lambda v: f"{2.0 ** v:.2f} x median")


def fill_overlay(index_map: IndexMap) -> MapOverlay:
    """Share of the node's last chunk that holds rows (1 = full chunks, low = a mostly empty chunk)."""
    values: dict[int, np.ndarray] = {}
    for band in index_map.levels:
        chunk = index_map.chunk_rows.get(band.level)
        out = np.full(len(band), np.nan)
        if chunk:
            rows = band.rows.astype(np.float64)
            known = rows > 0
            out[known] = rows[known] / (np.ceil(rows[known] / chunk) * chunk)
        values[band.level] = out
    return MapOverlay("fill", colouring("fill").title, values,
                      "rows / (chunks x chunk rows): 1 = every chunk full, 0 = empty", high=1.0,
                      formatter=lambda v: f"{v:.0%}")


def findings_overlay(index_map: IndexMap, findings: Iterable[Finding]) -> MapOverlay:
    """Findings (validation report) per node: 2 for errors, 1 for warnings only, 0 for none."""
    worst: dict[tuple[int, int], float] = {}
    for finding in findings:
        parts = finding.path.split("/")
        if len(parts) < 2 or not parts[0].startswith("lvl_") or not parts[0][4:].isdigit():
            continue
        node_id = parse_node_name(parts[1])
        if node_id is None:
            continue
        key = (int(parts[0][4:]), node_id)
        rank = 2.0 if finding.severity.value == "error" else 1.0 if finding.severity.value == "warning" else 0.5
        worst[key] = max(worst.get(key, 0.0), rank)
    for band in index_map.levels:  # unreadable nodes are findings too
        for i in np.flatnonzero(band.state != OK):
            worst[(band.level, int(band.node_ids[i]))] = 2.0
    return overlay_from_nodes(index_map, "findings", worst,
                              "worst finding on the node, from none to note, warning, error",
                              default=0.0, high=2.0,
                              formatter=lambda v: {2.0: "error", 1.0: "warning", 0.5: "note"}.get(v, "none"))
