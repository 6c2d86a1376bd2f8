"""The embedding map drawn as a density image with level of detail: numpy aggregation on the pixel
grid of the current view, never one object per point.

:class:`DensityIndex` is built once per placement: every item's cell on a fine ``grid`` x ``grid``
raster over the placement's bounds, the items sorted by cell (``order``, ``cell_start``) and a
pyramid of cell counts (the grid, then halved until 1 cell). :func:`colour_sums` adds, once per
colouring, the matching pyramids of what a pixel's colour is made of (the sum of the items' RGB
for categories, blended; the sum and count of values for continuous colourings, a mean).

:func:`density_frame` aggregates one view (a :class:`ViewRect` in placement units and a pixel
size): zoomed out, the coarsest pyramid level whose cells are no larger than a pixel is binned
onto the pixels (each cell goes to the pixel of its centre); zoomed in past the fine grid, only
the items of the cells under the view are read (``order`` gives them row by row) and binned
exactly, unless more than ``item_budget`` are in view: then the fine cells are binned on pixels
``pixel_scale`` times coarser (the frame says so; a front-end stretches it over the view). When at
most ``point_limit`` items are in view the frame also lists them
(:attr:`DensityFrame.points`, positions into the placement) for a front-end to draw as points.
Counts always add up to the items in view; :attr:`DensityFrame.source` says how it was made.

On a map of :data:`RETURN_FROM_ITEMS` items or more, the index and the colour sums hand their
temporaries back to the system when they end (:func:`~ecpfs_viewer.process_memory.return_freed_memory`),
and a frame does once the process has grown by :data:`FRAME_GROWTH` since (freed, they stayed
resident, and a frame after another at a new zoom took fresh pages beside them: at 10M items the
frames of a few pans and zooms grew the process by about 90 MB and set the map's peak).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from ecpfs_viewer import process_memory
from ecpfs_viewer.model.diagnostics.embedding_map.colours import NO_VALUE, ItemColours, lut
from ecpfs_viewer.model.diagnostics.embedding_map.placement import Placement

DEFAULT_GRID = 2048
#: the finest raster of a picture on the way (``placement.sample``): such a picture holds at most
#: PICTURE_MOST_ITEMS (progressive.py), fewer than ITEM_BUDGET, so a frame bins its items one by one
#: where pixels are finer than cells, and a quarter of the grid-sized arrays (80 MB less at 2048) is
#: what the window holds while the rest is read
SAMPLE_GRID = 1024
#: items in view at most for the frame to list them as points (a front-end draws each as a symbol on
#: its GUI thread: pyqtgraph took about 5 ms a thousand)
POINT_LIMIT = 6_000
#: items a frame bins one by one at most; past it, the fine cells are binned on coarser pixels
ITEM_BUDGET = 1_000_000
#: items whose cells are computed at once (each step's float64 temporaries: 8 MB a million)
CELL_BLOCK = 1 << 20
#: items (or cells) a frame bins at once, a band of cell rows at a time: binned all at once, a
#: 1200 x 800 frame of a 10M-item map took 90 MB of temporaries, the map's peak
FRAME_BLOCK = 1 << 18
#: items colour_sums bins at once, taken in cell order (their cells a short run, what bincount
#: returns): bincount widens their weights and cell numbers to 8 bytes each, and binned over the
#: whole grid each block's sums were as large as the grid's (64 MB at 2048 x 2048, with their total)
SUM_BLOCK = 1 << 19
#: items from which the index, the colour sums and each frame return their freed temporaries when
#: they end (module docstring); below, the temporaries are small and the pages faulted in again cost
#: a frame more than they hold (a 200k-item map's median frame: 17 ms without, 24 ms with)
RETURN_FROM_ITEMS = 1_000_000
#: growth of the process past which a frame returns the freed memory (each frame returning it cost
#: a 10M-item map's frames about 4 ms at the median, faulting their pages in again)
FRAME_GROWTH = 16 << 20


@dataclass(frozen=True)
class ViewRect:
    """A view in placement units: x from x0 to x1, y from y0 (bottom) to y1 (top)."""

    x0: float
    x1: float
    y0: float
    y1: float

    @property
    def width(self) -> float:
        return self.x1 - self.x0

    @property
    def height(self) -> float:
        return self.y1 - self.y0

    def zoomed(self, factor: float, cx: float | None = None, cy: float | None = None) -> ViewRect:
        """The view ``factor`` times closer (> 1 zooms in) around (cx, cy), its centre by default."""
        cx = (self.x0 + self.x1) / 2 if cx is None else cx
        cy = (self.y0 + self.y1) / 2 if cy is None else cy
        return ViewRect(cx - (cx - self.x0) / factor, cx + (self.x1 - cx) / factor,
                        cy - (cy - self.y0) / factor, cy + (self.y1 - cy) / factor)


class DensityIndex:
    """Items sorted by the cell of a fine raster over the placement, and counts per cell at every
    power-of-two coarsening (see the module docstring)."""

    def __init__(self, placement: Placement, grid: int | None = None) -> None:
        self.placement = placement
        if grid is None:  # about 4 items a cell where they are spread evenly, at most DEFAULT_GRID (SAMPLE_GRID)
            grid = int(np.clip(2 * np.sqrt(max(placement.count, 1)), 16,
                               SAMPLE_GRID if placement.sample else DEFAULT_GRID))
        self.grid = grid = 1 << max(0, int(grid - 1).bit_length())  # a power of two
        x0, x1, y0, y1 = placement.bounds()
        pad_x, pad_y = max((x1 - x0) * 0.02, 1e-6), max((y1 - y0) * 0.02, 1e-6)
        self.bounds = ViewRect(x0 - pad_x, x1 + pad_x, y0 - pad_y, y1 + pad_y)
        # each item's fine cell, int32 (grid * grid < 2**31), while the order is made: not kept (40 MB
        # at 10M items), an item's cell is where the order puts it (item_cells)
        cells = np.empty(placement.count, np.int32)
        for start in range(0, placement.count, CELL_BLOCK):  # float64 temporaries a block at a time
            cells[start:start + CELL_BLOCK] = self._cells(placement.coords[start:start + CELL_BLOCK])
        self.order = np.argsort(cells, kind="stable").astype(np.int64 if cells.size >= 2**31 else np.int32)
        counts = np.bincount(cells, minlength=grid * grid)
        del cells
        self.cell_start = np.zeros(grid * grid + 1, self.order.dtype)  # int32 below 2**31 items: 16 MB less
        np.cumsum(counts, out=self.cell_start[1:])
        self.pyramid = _pyramid(counts.reshape(grid, grid).astype(np.int32))
        del counts
        _return_freed(self)  # the cells and the sort's int64 order (module docstring)

    @property
    def count(self) -> int:
        return int(self.order.size)

    def sorted_cells(self, start: int, stop: int) -> np.ndarray:
        """The fine cell (int64) of the items at ``order[start:stop]``: the items are sorted by cell,
        so these are runs of each cell, as long as it holds items."""
        if start >= stop:
            return np.zeros(0, np.int64)
        lo = int(np.searchsorted(self.cell_start, start, side="right")) - 1
        hi = int(np.searchsorted(self.cell_start, stop - 1, side="right"))
        runs = np.repeat(np.arange(lo, hi, dtype=np.int64), np.diff(self.cell_start[lo:hi + 1]))
        first = int(self.cell_start[lo])
        return runs[start - first:stop - first]

    def item_cells(self) -> np.ndarray:
        """Every item's fine cell (int32), in the placement's order."""
        cells = np.empty(self.count, np.int32)
        cells[self.order] = self.sorted_cells(0, self.count)
        return cells

    def _cells(self, coords: np.ndarray) -> np.ndarray:
        """Cell (row-major, row 0 at the bottom) of each point; points that are not finite go to cell 0
        of a column past the raster, i.e. are left out of every view."""
        g, b = self.grid, self.bounds
        with np.errstate(invalid="ignore"):
            cx = np.floor((coords[:, 0].astype(np.float64) - b.x0) / b.width * g)
            cy = np.floor((coords[:, 1].astype(np.float64) - b.y0) / b.height * g)
        cx = np.clip(np.nan_to_num(cx, nan=0.0), 0, g - 1).astype(np.int64)
        cy = np.clip(np.nan_to_num(cy, nan=0.0), 0, g - 1).astype(np.int64)
        return cy * g + cx

    def cell_size(self, level: int = 0) -> tuple[float, float]:
        """(width, height) of a cell of pyramid level ``level`` (0 = the fine grid)."""
        g = self.grid >> level
        return self.bounds.width / g, self.bounds.height / g

    def cell_range(self, rect: ViewRect, level: int = 0) -> tuple[int, int, int, int]:
        """(cx0, cx1, cy0, cy1): the cells of a level that the view touches (half-open, clipped)."""
        g = self.grid >> level
        b = self.bounds

        def span(lo: float, hi: float, base: float, size: float) -> tuple[int, int]:
            a = int(np.clip(np.floor((lo - base) / size * g), 0, g))
            z = int(np.clip(np.ceil((hi - base) / size * g), 0, g))
            return a, z

        cx0, cx1 = span(rect.x0, rect.x1, b.x0, b.width)
        cy0, cy1 = span(rect.y0, rect.y1, b.y0, b.height)
        return cx0, cx1, cy0, cy1

    def items_in(self, rect: ViewRect, *, ascending: bool = True,
                 cell_rows: tuple[int, int] | None = None) -> np.ndarray:
        """Positions (into the placement) of the items inside the view, exactly; ascending unless
        the caller only counts them (binning needs no order, and the sort was most of its time).
        With ``cell_rows``, only those of the fine cell rows ``cell_rows[0]:cell_rows[1]``."""
        cx0, cx1, cy0, cy1 = self.cell_range(rect)
        if cell_rows is not None:
            cy0, cy1 = max(cy0, cell_rows[0]), min(cy1, cell_rows[1])
        if cx0 >= cx1 or cy0 >= cy1:
            return np.zeros(0, np.int64)
        g = self.grid
        rows = np.arange(cy0, cy1, dtype=np.int64) * g
        starts, ends = self.cell_start[rows + cx0], self.cell_start[rows + cx1]
        lengths = ends - starts
        total = int(lengths.sum())
        if not total:
            return np.zeros(0, np.int64)
        # one gather of every row's run of items: positions start..end per row, concatenated
        offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        picked = self.order[np.arange(total, dtype=np.int64) + offsets].astype(np.int64)
        xy = self.placement.coords[picked]
        inside = (xy[:, 0] >= rect.x0) & (xy[:, 0] < rect.x1) & (xy[:, 1] >= rect.y0) & (xy[:, 1] < rect.y1)
        return np.sort(picked[inside]) if ascending else picked[inside]

    def row_bands(self, rect: ViewRect, most: int) -> list[tuple[int, int]]:
        """The fine cell rows under the view in bands of about ``most`` items (a row holding more is
        a band of its own)."""
        cx0, cx1, cy0, cy1 = self.cell_range(rect)
        if cx0 >= cx1 or cy0 >= cy1:
            return []
        held = self.pyramid[0][cy0:cy1, cx0:cx1].sum(axis=1, dtype=np.int64)
        band = np.cumsum(held) // max(most, 1)
        cuts = np.flatnonzero(np.diff(band)) + 1
        edges = [cy0, *(cuts + cy0).tolist(), cy1]
        return list(itertools.pairwise(edges))

    def count_in(self, rect: ViewRect) -> int:
        """Items in the cells the view touches (at least the items in view; exact on cell edges)."""
        cx0, cx1, cy0, cy1 = self.cell_range(rect)
        return int(self.pyramid[0][cy0:cy1, cx0:cx1].sum(dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return int(self.order.nbytes + self.cell_start.nbytes + sum(p.nbytes for p in self.pyramid))


def _pyramid(base: np.ndarray) -> list[np.ndarray]:
    levels = [base]
    while levels[-1].shape[0] > 1:
        a = levels[-1]
        h = a.shape[0] // 2
        levels.append(a.reshape(h, 2, h, 2).sum(axis=(1, 3), dtype=a.dtype))
    return levels


@dataclass(frozen=True, eq=False)
class ColourSums:
    """Per-cell pyramids of one colouring over a :class:`DensityIndex` (see :func:`colour_sums`)."""

    colours: ItemColours
    leaf_channels: np.ndarray  # (leaves, c) float32: what one item of each leaf adds per channel
    pyramids: tuple[list[np.ndarray], ...]  # one pyramid per channel


def colour_sums(index: DensityIndex, colours: ItemColours) -> ColourSums:
    """The channels a pixel's colour is made of, summed per cell at every level: R, G, B of the
    palette colour (categories, blended) or 1 and the value (continuous: a mean of what has one)."""
    found = _colour_sums(index, colours)
    _return_freed(index)  # the blocks' temporaries (module docstring)
    return found


def _colour_sums(index: DensityIndex, colours: ItemColours) -> ColourSums:
    if colours.categorical:
        channels = colours.leaf_rgb().astype(np.float32)
    else:
        assert colours.leaf_values is not None
        v = colours.leaf_values
        has = ~np.isnan(v)
        channels = np.stack([has.astype(np.float32), np.where(has, v, 0.0).astype(np.float32)], axis=1)
    g = index.grid
    leaf_pos = index.placement.leaf_pos
    totals = np.zeros((channels.shape[1], g * g), np.float32)
    for start in range(0, index.count, SUM_BLOCK):  # in cell order: a block's cells are one short run
        items = index.order[start:start + SUM_BLOCK]
        cells = index.sorted_cells(start, start + items.size)
        lo, hi = int(cells[0]), int(cells[-1]) + 1
        cells -= lo
        leaves = leaf_pos[items]
        for c in range(channels.shape[1]):
            totals[c, lo:hi] += np.bincount(cells, weights=channels[leaves, c], minlength=hi - lo)
    return ColourSums(colours, channels, tuple(_pyramid(total.reshape(g, g)) for total in totals))


Source = Literal["cells", "items"]


@dataclass(frozen=True, eq=False)
class DensityFrame:
    """One view aggregated on its pixel grid: row 0 is the top of the view (y1)."""

    rect: ViewRect
    counts: np.ndarray  # (height, width) int64 items per pixel
    rgb: np.ndarray  # (height, width, 3) uint8 colour per pixel (meaningless where counts == 0)
    points: np.ndarray | None  # positions into the placement of the items in view, when few enough
    source: Source  # "cells": binned from a pyramid level's cells; "items": from the items in view
    cell_level: int = 0  # the pyramid level used for "cells"
    #: screen pixels per frame pixel along each axis: > 1 when the view held more than the item budget
    #: zoomed in past the fine grid (the frame is then coarser than asked; draw it stretched over the view)
    pixel_scale: int = 1
    #: for "cells": how many cells each pixel was given (1 to 4: a pixel is up to twice a cell along
    #: each axis); the picture's opacity follows the items per cell, so that grid shows no stripes
    cells_per_pixel: np.ndarray | None = None

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def rgba(self, background: tuple[int, int, int] = (255, 255, 255), gamma: float = 0.5) -> np.ndarray:
        """(height, width, 4) uint8 picture: each pixel's colour, its opacity rising with its count
        (relative to the frame's largest, ``gamma`` < 1 lifts sparse pixels), over ``background``.
        When few pixels hold items only theirs are computed; else the whole frame at once."""
        counts = self.counts
        h, w = counts.shape
        out = np.empty((h, w, 4), np.uint8)
        out[..., :3] = background
        out[..., 3] = 255
        flat = counts.reshape(-1)
        occupied = np.flatnonzero(flat)
        if not occupied.size:
            return out
        shade = self._shade().reshape(-1)
        top = np.float32(shade[occupied].max())
        if occupied.size * 4 < flat.size:  # few pixels hold items: only theirs are computed
            lifted = _lift(shade[occupied] / top, gamma)
            alpha = (np.float32(0.45) + np.float32(0.55) * lifted)[:, None]
            colour = self.rgb.reshape(-1, 3)[occupied].astype(np.float32)
            mixed = colour * alpha + np.asarray(background, np.float32) * (1 - alpha)
            out.reshape(-1, 4)[occupied, :3] = (mixed + 0.5).astype(np.uint8)
            return out
        # most pixels hold items: the whole frame at once (an empty pixel's opacity is 0)
        lifted = _lift(shade.reshape(h, w) / top, gamma)
        alpha = np.where(counts > 0, np.float32(0.45) + np.float32(0.55) * lifted, np.float32(0))[..., None]
        mixed = self.rgb * alpha + np.asarray(background, np.float32) * (1 - alpha)
        np.add(mixed, 0.5, out=mixed)
        out[..., :3] = mixed.astype(np.uint8)
        return out

    def _shade(self) -> np.ndarray:
        """(height, width) float32 what a pixel's opacity follows: its count, or for a cells frame its
        items per cell (pixels given two cells would otherwise stand out as a grid of darker lines)."""
        if self.cells_per_pixel is None:
            return self.counts.astype(np.float32)
        per_cell: np.ndarray = self.counts / np.maximum(self.cells_per_pixel, 1)
        return per_cell.astype(np.float32)


def _lift(share: np.ndarray, gamma: float) -> np.ndarray:
    """share ** gamma (float32; the square root for the default gamma, many times faster)."""
    return np.sqrt(share) if gamma == 0.5 else share ** np.float32(gamma)


def density_frame(index: DensityIndex, sums: ColourSums | None, rect: ViewRect, width: int, height: int, *,
                  point_limit: int = POINT_LIMIT, item_budget: int = ITEM_BUDGET) -> DensityFrame:
    """Aggregate the items inside ``rect`` on a ``width`` x ``height`` pixel grid (module docstring)."""
    frame = _frame(index, sums, rect, width, height, point_limit, item_budget)
    if index.count >= RETURN_FROM_ITEMS:  # the frames' temporaries, bounded (module docstring)
        process_memory.return_freed_memory_past(FRAME_GROWTH)
    return frame


def _return_freed(index: DensityIndex) -> None:
    if index.count >= RETURN_FROM_ITEMS:
        process_memory.return_freed_memory()


def _frame(index: DensityIndex, sums: ColourSums | None, rect: ViewRect, width: int, height: int,
           point_limit: int, item_budget: int) -> DensityFrame:
    if width < 1 or height < 1 or rect.width <= 0 or rect.height <= 0:
        raise ValueError(f"a view needs a positive size, got {width} x {height} pixels over {rect}")
    pixel_w, pixel_h = rect.width / width, rect.height / height
    level = 0
    while level + 1 < len(index.pyramid):
        cw, ch = index.cell_size(level + 1)
        if cw > pixel_w or ch > pixel_h:
            break
        level += 1
    cw, ch = index.cell_size(level)
    in_view = index.count_in(rect)
    finer = cw > pixel_w or ch > pixel_h  # the view asks for more detail than the fine grid holds
    if in_view <= point_limit or (finer and in_view <= item_budget):
        binner = _Binner(width, height, sums)
        listed = in_view <= point_limit
        bands: list[tuple[int, int] | None] = [None] if listed else list(index.row_bands(rect, FRAME_BLOCK))
        for rows in bands:
            positions = index.items_in(rect, ascending=listed, cell_rows=rows)
            xy = index.placement.coords[positions].astype(np.float64)
            binner.add(_pixels(xy[:, 0], xy[:, 1], rect, width, height), None, _item_channels(index, sums, positions))
        counts, rgb = binner.finish()
        return DensityFrame(rect, counts, rgb, positions if listed and positions.size <= point_limit else None, "items")
    if finer:  # too many items to bin one by one: the fine cells on pixels as large as a cell
        scale = math.ceil(max(cw / pixel_w, ch / pixel_h))
        frame = _cells_frame(index, sums, rect, math.ceil(width / scale), math.ceil(height / scale), 0)
        return replace(frame, pixel_scale=scale)
    return _cells_frame(index, sums, rect, width, height, level)


def _cells_frame(index: DensityIndex, sums: ColourSums | None, rect: ViewRect, width: int, height: int,
                 level: int) -> DensityFrame:
    """Each cell of a pyramid level under the view binned onto the pixel of its centre. A cell's
    pixel column depends on its column only (its row on its row), so the pixel of every cell is
    one outer sum of two short vectors, not a coordinate computed per cell."""
    cw, ch = index.cell_size(level)
    cx0, cx1, cy0, cy1 = index.cell_range(rect, level)
    b = index.bounds
    columns = _inside(np.floor((b.x0 + (np.arange(cx0, cx1) + 0.5) * cw - rect.x0) / rect.width * width), width)
    rows = _inside(np.floor((rect.y1 - (b.y0 + (np.arange(cy0, cy1) + 0.5) * ch)) / rect.height * height), height)
    if columns is None or rows is None:
        n = width * height
        counts, rgb = np.zeros(n, np.int64), np.zeros((n, 3), np.uint8)
        return DensityFrame(rect, counts.reshape(height, width), rgb.reshape(height, width, 3), None, "cells", level)
    (c_lo, c_hi, c_pixel), (r_lo, r_hi, r_pixel) = columns, rows
    binner = _Binner(width, height, sums)
    across = c_hi - c_lo
    step = max(1, FRAME_BLOCK // across)
    for band in range(r_lo, r_hi, step):  # a band of cell rows at a time: bounded temporaries
        stop = min(band + step, r_hi)
        cells = np.s_[cy0 + band:cy0 + stop, cx0 + c_lo:cx0 + c_hi]
        weights = index.pyramid[level][cells].ravel()
        held = np.flatnonzero(weights)  # only the cells that hold items are binned (a map is mostly empty)
        pixel = r_pixel[band - r_lo + held // across] * width + c_pixel[held % across]
        channels = None if sums is None else [p[level][cells].ravel()[held] for p in sums.pyramids]
        binner.add(pixel, weights[held], channels)
    counts, rgb = binner.finish()
    given = np.bincount(r_pixel, minlength=height)[:, None] * np.bincount(c_pixel, minlength=width)[None, :]
    return DensityFrame(rect, counts, rgb, None, "cells", level, cells_per_pixel=given)


def _inside(pixel: np.ndarray, size: int) -> tuple[int, int, np.ndarray] | None:
    """For a monotonic pixel coordinate per cell along one axis: the cells inside the view
    (``lo:hi``, contiguous) and their pixels; None when no cell is inside."""
    inside = np.flatnonzero((pixel >= 0) & (pixel < size))
    if not inside.size:
        return None
    lo, hi = int(inside[0]), int(inside[-1]) + 1
    return lo, hi, pixel[lo:hi].astype(np.int64)


def _pixels(x: np.ndarray, y: np.ndarray, rect: ViewRect, width: int, height: int) -> np.ndarray:
    """Flat pixel index (row 0 at the top) of points known to be in the view (rounding at its right
    or bottom edge keeps them in the last pixel)."""
    px = np.clip(np.floor((x - rect.x0) / rect.width * width), 0, width - 1)
    py = np.clip(np.floor((rect.y1 - y) / rect.height * height), 0, height - 1)
    return (py * width + px).astype(np.int64)


def _item_channels(index: DensityIndex, sums: ColourSums | None, positions: np.ndarray) -> list[np.ndarray] | None:
    if sums is None:
        return None
    leaf = index.placement.leaves_of(positions)
    return [sums.leaf_channels[leaf, c] for c in range(sums.leaf_channels.shape[1])]


class _Binner:
    """Counts per pixel and each occupied pixel's colour (blended categories, or the mean value
    through the scale), from pixels added a block at a time (each block's flat pixel indices inside
    the frame, and the weights and channels of each); empty pixels stay black, their count 0 says so."""

    def __init__(self, width: int, height: int, sums: ColourSums | None) -> None:
        self.width, self.height, self.sums = width, height, sums
        n = width * height
        self.counts = np.zeros(n, np.int64)
        channels = 0 if sums is None else sums.leaf_channels.shape[1]
        self.channels = np.zeros((channels, n), np.float32)  # a colour's sums: float32 is ample, and half

    def add(self, pixel: np.ndarray, weights: np.ndarray | None, channels: list[np.ndarray] | None) -> None:
        if not pixel.size:
            return
        lo, hi = int(pixel.min()), int(pixel.max()) + 1  # a band's pixels: a few rows of the frame
        local = pixel - lo
        if weights is None:
            self.counts[lo:hi] += np.bincount(local, minlength=hi - lo)
        else:  # whole counts of cells, summed as float64 by bincount
            self.counts[lo:hi] += (np.bincount(local, weights=weights, minlength=hi - lo) + 0.5).astype(np.int64)
        for c, values in enumerate(channels or ()):
            self.channels[c, lo:hi] += np.bincount(local, weights=values, minlength=hi - lo)

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        """(counts (height, width) int64, rgb (height, width, 3) uint8)."""
        width, height, sums = self.width, self.height, self.sums
        counts = self.counts
        rgb = np.zeros((counts.size, 3), np.uint8)
        occupied = np.flatnonzero(counts)
        if sums is None:
            rgb[occupied] = (60, 60, 60)
            return counts.reshape(height, width), rgb.reshape(height, width, 3)
        binned = [channel[occupied].astype(np.float64) for channel in self.channels]
        colours = sums.colours
        if colours.categorical:
            here = counts[occupied].astype(np.float64)
            for c, total in enumerate(binned):
                rgb[occupied, c] = np.clip(total / here + 0.5, 0, 255).astype(np.uint8)
        else:
            has, total = binned
            valued = has > 0
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = total / np.where(valued, has, 1.0)
            span = colours.high - colours.low if colours.high > colours.low else 1.0
            steps = np.clip((mean - colours.low) / span * 255, 0, 255).astype(np.int64)
            rgb[occupied] = np.where(valued[:, None], lut(colours.kind)[steps], NO_VALUE)
        return counts.reshape(height, width), rgb.reshape(height, width, 3)
