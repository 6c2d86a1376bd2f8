"""The index map: an icicle layout of the whole tree, and per-node overlays to colour it by.

Layout (:func:`map_layout`, :func:`layout_index`): the root spans the top; level N is band N; each
node is as wide as the items beneath it, children side by side under their parent in the order of
its ``node_ids``. Coordinates are item counts (x from 0 to the items beneath the root), so a
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
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from threading import Event, Lock

import numpy as np

from ecpfs_viewer.model.diagnostics.colourings import OverlayKind, colouring
from ecpfs_viewer.model.ecpfs.findings import Finding
from ecpfs_viewer.model.ecpfs.paths import node_array_path, node_path, parse_node_name
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.search.reader import NodeReader
from ecpfs_viewer.model.tasks import Counted, ProgressCallback, checkpoint

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


# -- layout -------------------------------------------------------------------------------------

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
