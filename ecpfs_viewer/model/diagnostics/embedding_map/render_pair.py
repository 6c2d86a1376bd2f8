"""Two indexes' embedding maps side by side as one PNG (``ecpfs-viewer map A --against B``), numpy only.

Both pictures show one view (:func:`pair_view`: the bounds of both, no stretch) on A's axes, so a
place is the same place in each. Items are coloured by leaf (two_indexes.py's ``pair_colours``);
the items that moved are dotted in ink and the items only that index holds crossed, at most
:data:`MARKS_SHOWN` of each (evenly spaced among them; the footer says so when thinned). A title,
the moved count, a legend and the colours', dots' and crosses' meaning go around them.
"""

from __future__ import annotations

import numpy as np

from ecpfs_viewer.model.diagnostics.embedding_map.density import DensityIndex, ViewRect, colour_sums, density_frame
from ecpfs_viewer.model.diagnostics.embedding_map.placement import Placement
from ecpfs_viewer.model.diagnostics.embedding_map.render import (
    BACKGROUND,
    INK,
    LEGEND_WIDTH,
    MARGIN,
    MUTED,
    _clip,
    _frame_border,
    draw_text,
    draw_wrapped,
    line_height,
    wrap,
)
from ecpfs_viewer.model.diagnostics.embedding_map.two_indexes import TwoMaps

#: dots (or crosses) drawn at most per picture, evenly spaced among the items they mark
MARKS_SHOWN = 20_000
ONLY_HERE = (200, 30, 30)
_DOT = [(0, 0), (1, 0), (0, 1), (1, 1)]  # a moved item: a 2 x 2 dot in ink over its leaf's colour
_CROSS = [(d, d) for d in range(-2, 3)] + [(d, -d) for d in range(-2, 3) if d]


def pair_view(two: TwoMaps, width: int, height: int) -> ViewRect:
    """The bounds of both placements (a little margin), widened on one axis so that a placement unit
    is as long across as up in a ``width`` x ``height`` picture."""
    x0, x1, y0, y1 = two.bounds()
    pad_x, pad_y = max((x1 - x0) * 0.03, 1e-6), max((y1 - y0) * 0.03, 1e-6)
    x0, x1, y0, y1 = x0 - pad_x, x1 + pad_x, y0 - pad_y, y1 + pad_y
    per_px = max((x1 - x0) / width, (y1 - y0) / height)
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    half_w, half_h = per_px * width / 2, per_px * height / 2
    return ViewRect(cx - half_w, cx + half_w, cy - half_h, cy + half_h)


def thinned(positions: np.ndarray, limit: int = MARKS_SHOWN) -> np.ndarray:
    """At most ``limit`` of the positions, evenly spaced among them."""
    return positions[::max(1, -(-positions.size // limit))] if limit > 0 else positions[:0]


def _mark(picture: np.ndarray, placement: Placement, positions: np.ndarray, view: ViewRect,
          shape: list[tuple[int, int]], colour: tuple[int, int, int]) -> None:
    h, w = picture.shape[:2]
    xy = placement.coords[thinned(positions)].astype(np.float64)
    px = np.floor((xy[:, 0] - view.x0) / view.width * w).astype(np.int64)
    py = np.floor((view.y1 - xy[:, 1]) / view.height * h).astype(np.int64)
    for dx, dy in shape:
        x, y = px + dx, py + dy
        ok = (x >= 0) & (x < w) & (y >= 0) & (y < h)
        picture[y[ok], x[ok]] = colour


def pair_picture(two: TwoMaps, side: str, view: ViewRect, width: int, height: int) -> np.ndarray:
    """(height, width, 3) uint8: one index's density picture over ``view``, its moved items dotted and
    the items only it holds crossed."""
    placement = (two.a if side == "a" else two.b).placement
    colours = two.colours_a if side == "a" else two.colours_b
    density = DensityIndex(placement)
    frame = density_frame(density, colour_sums(density, colours), view, width, height)
    picture = frame.rgba(BACKGROUND)[..., :3].copy()
    if frame.pixel_scale > 1:
        picture = picture.repeat(frame.pixel_scale, axis=0).repeat(frame.pixel_scale, axis=1)[:height, :width]
    m = two.moved
    _mark(picture, placement, m.moved_a if side == "a" else m.moved_b, view, _DOT, INK)
    _mark(picture, placement, m.only_in_a if side == "a" else m.only_in_b, view, _CROSS, ONLY_HERE)
    return picture


def render_pair(two: TwoMaps, width: int, height: int, *, title: str) -> np.ndarray:
    """(h, w, 3) uint8: A and B side by side (each ``width`` x ``height``), a title, the moved count,
    the legend and what the colours, dots and crosses mean."""
    view = pair_view(two, width, height)
    pictures = [pair_picture(two, side, view, width, height) for side in ("a", "b")]
    lh = line_height() + 2
    full = MARGIN + width + MARGIN + width + MARGIN + LEGEND_WIDTH + MARGIN
    m = two.moved
    thin = [f"{name}: dots on {MARKS_SHOWN:,} of its {n:,} moved items, evenly spaced"
            for name, n in (("A", m.moved_a.size), ("B", m.moved_b.size)) if n > MARKS_SHOWN]
    foot = (two.colours_b.meaning,
            "Dark dots: items that moved (the B leaf they are in is not the one most of their A leaf went to). "
            "Red crosses: items only that index holds.", *thin, *two.notes,
            two.projection.describe + " (A's axes, for both)")
    foot_lines = sum(len(wrap(t, full - 2 * MARGIN)) for t in foot)
    said = wrap(m.describe, full - 2 * MARGIN)
    head = MARGIN + (1 + len(said)) * lh + MARGIN // 2
    top = head + lh  # each picture's caption above it
    legend = two.colours_a.legend()
    legend_h = ((len(wrap(f"colour: {two.colours_a.title}", LEGEND_WIDTH)) + len(legend) + 2) * lh + 10
                + (len(wrap(two.colours_a.note, LEGEND_WIDTH)) * lh + 4 if two.colours_a.note else 0))
    body = max(height, legend_h)  # a short picture: the legend runs below its bottom edge
    image = np.empty((top + body + MARGIN + foot_lines * lh + MARGIN, full, 3), np.uint8)
    image[:] = BACKGROUND
    draw_text(image, MARGIN, MARGIN, _clip(title, full - 2 * MARGIN), INK)
    draw_wrapped(image, MARGIN, MARGIN + lh, m.describe, full - 2 * MARGIN, MUTED)
    for i, (name, label, placement) in enumerate((("A", two.label_a, two.a.placement),
                                                  ("B", two.label_b, two.b.placement))):
        x = MARGIN + i * (width + MARGIN)
        draw_text(image, x, head, _clip(f"{name}: {label} ({placement.count:,} items)", width), INK)
        image[top:top + height, x:x + width] = pictures[i]
        _frame_border(image, top, x, height, width)
    x = MARGIN + 2 * (width + MARGIN)
    y = draw_wrapped(image, x, top, f"colour: {two.colours_a.title}", LEGEND_WIDTH) + 4
    for rgb, label in legend:
        image[y + 2:y + lh - 2, x:x + 14] = rgb
        draw_text(image, x + 20, y, _clip(label, LEGEND_WIDTH - 20), INK)
        y += lh
    if two.colours_a.note:
        y = draw_wrapped(image, x, y + 4, two.colours_a.note, LEGEND_WIDTH, MUTED)
    y += 6
    for shape, colour, text in ((_DOT, INK, f"moved: {m.moved:,}"), (_CROSS, ONLY_HERE,
                                f"only in A: {m.only_a:,}, in B: {m.only_b:,}")):
        for dx, dy in shape:
            image[y + lh // 2 + dy, x + 7 + dx] = colour
        draw_text(image, x + 20, y, _clip(text, LEGEND_WIDTH - 20), INK)
        y += lh
    y = top + body + MARGIN
    for i, text in enumerate(foot):
        y = draw_wrapped(image, MARGIN, y, text, full - 2 * MARGIN, INK if i == 0 else MUTED)
    return image
