"""The embedding map as a PNG for reports: the density picture with a title, a legend and what its
colours mean, drawn with numpy alone (no Qt, no imaging library) so ``ecpfs-viewer map --png`` runs
headless anywhere.

Text uses the bitmap font committed in ecpfs_viewer/resources/map_font.npz (scripts/render_map_font.py
made it from DejaVu Sans); characters outside printable ASCII are drawn as '?'. The PNG is written
by :func:`write_png` (zlib, one IDAT), atomically.
"""

from __future__ import annotations

import importlib.resources
import io
import os
import secrets
import struct
import zlib
from functools import cache
from pathlib import Path

import numpy as np

from ecpfs_viewer.model.diagnostics.embedding_map.colours import ItemColours
from ecpfs_viewer.model.diagnostics.embedding_map.density import DensityFrame

BACKGROUND = (255, 255, 255)
INK = (20, 20, 20)
MUTED = (90, 90, 90)
LEGEND_WIDTH = 260
MARGIN = 12


@cache
def _font() -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(atlas, glyph widths, x offsets, first code) of the committed bitmap font."""
    data = importlib.resources.files("ecpfs_viewer.resources").joinpath("map_font.npz").read_bytes()
    with np.load(io.BytesIO(data), allow_pickle=False) as saved:
        atlas, widths, first = saved["atlas"], saved["widths"].astype(np.int64), int(saved["first"][0])
    offsets = np.concatenate(([0], np.cumsum(widths)[:-1]))
    return atlas, widths, offsets, first


def line_height() -> int:
    return int(_font()[0].shape[0])


def text_width(text: str) -> int:
    _, widths, _, first = _font()
    return int(sum(widths[_code(c, first, widths.size)] for c in text))


def _code(c: str, first: int, n: int) -> int:
    i = ord(c) - first
    return i if 0 <= i < n else ord("?") - first


def draw_text(image: np.ndarray, x: int, y: int, text: str, colour: tuple[int, int, int] = INK) -> int:
    """Draw one line with its top left at (x, y), clipped to the image; the x where it ends."""
    atlas, widths, offsets, first = _font()
    h = atlas.shape[0]
    ink = np.asarray(colour, np.float32)
    for c in text:
        i = _code(c, first, widths.size)
        w = int(widths[i])
        glyph = atlas[:, offsets[i]:offsets[i] + w].astype(np.float32)[..., None] / 255.0
        y0, y1, x0, x1 = max(y, 0), min(y + h, image.shape[0]), max(x, 0), min(x + w, image.shape[1])
        if y0 < y1 and x0 < x1:
            g = glyph[y0 - y:y1 - y, x0 - x:x1 - x]
            region = image[y0:y1, x0:x1, :3].astype(np.float32)
            image[y0:y1, x0:x1, :3] = (region * (1 - g) + ink * g).round().astype(np.uint8)
        x += w
    return x


def wrap(text: str, width: int) -> list[str]:
    """Words of text in lines no wider than ``width`` pixels (a word wider than that alone on its line)."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        candidate = f"{current} {word}" if current else word
        if current and text_width(candidate) > width:
            lines.append(current)
            current = word
        else:
            current = candidate
    return [*lines, current] if current or not lines else lines


def draw_wrapped(image: np.ndarray, x: int, y: int, text: str, width: int, colour: tuple[int, int, int] = INK) -> int:
    """Draw text wrapped to ``width`` pixels; the y below its last line."""
    for line in wrap(text, width):
        draw_text(image, x, y, line, colour)
        y += line_height() + 2
    return y


def render_map(frame: DensityFrame, colours: ItemColours | None, *, title: str, subtitle: str = "",
               notes: tuple[str, ...] = ()) -> np.ndarray:
    """(height, width, 3) uint8: the frame's picture with a title above, the legend beside it and
    the colours' meaning and any notes below."""
    picture = frame.rgba(BACKGROUND)[..., :3]
    if frame.pixel_scale > 1:  # a coarser frame than asked (past the item budget): stretched
        picture = picture.repeat(frame.pixel_scale, axis=0).repeat(frame.pixel_scale, axis=1)
    ph, pw = picture.shape[:2]
    lh = line_height() + 2
    head = MARGIN + lh + (lh if subtitle else 0) + MARGIN // 2
    width = MARGIN + pw + MARGIN + LEGEND_WIDTH + MARGIN
    foot_text = [t for t in ((colours.meaning if colours else ""), *notes) if t]
    foot_lines = sum(len(wrap(t, width - 2 * MARGIN)) for t in foot_text)
    height = head + ph + MARGIN + foot_lines * lh + MARGIN
    image = np.empty((height, width, 3), np.uint8)
    image[:] = BACKGROUND
    draw_text(image, MARGIN, MARGIN, _clip(title, width - 2 * MARGIN), INK)
    if subtitle:
        draw_text(image, MARGIN, MARGIN + lh, _clip(subtitle, width - 2 * MARGIN), MUTED)
    image[head:head + ph, MARGIN:MARGIN + pw] = picture
    _frame_border(image, head, MARGIN, ph, pw)
    x = MARGIN + pw + MARGIN
    y = head
    if colours is not None:
        y = draw_wrapped(image, x, y, f"colour: {colours.title}", LEGEND_WIDTH) + 4
        for rgb, label in colours.legend():
            image[y + 2:y + lh - 2, x:x + 14] = rgb
            draw_text(image, x + 20, y, _clip(label, LEGEND_WIDTH - 20), INK)
            y += lh
        if colours.note:
            y = draw_wrapped(image, x, y + 4, colours.note, LEGEND_WIDTH, MUTED)
    y = max(y, head) + 6
    draw_text(image, x, y, f"{frame.total:,} items in view", MUTED)
    draw_text(image, x, y + lh, "darker: more items per pixel", MUTED)
    y = head + ph + MARGIN
    for t in foot_text:
        y = draw_wrapped(image, MARGIN, y, t, width - 2 * MARGIN, INK if t is foot_text[0] else MUTED)
    return image


def _clip(text: str, width: int) -> str:
    """The text cut to fit ``width`` pixels, ending in '...' when cut."""
    if text_width(text) <= width:
        return text
    while text and text_width(text + "...") > width:
        text = text[:-1]
    return text + "..."


def _frame_border(image: np.ndarray, top: int, left: int, h: int, w: int) -> None:
    grey = (200, 200, 200)
    image[top - 1, left - 1:left + w + 1] = grey
    image[top + h, left - 1:left + w + 1] = grey
    image[top - 1:top + h + 1, left - 1] = grey
    image[top - 1:top + h + 1, left + w] = grey


def png_bytes(image: np.ndarray) -> bytes:
    """An (h, w, 3) uint8 image as PNG bytes (8-bit RGB, no interlace)."""
    h, w = image.shape[:2]
    raw = np.empty((h, 1 + 3 * w), np.uint8)
    raw[:, 0] = 0  # filter: none
    raw[:, 1:] = np.ascontiguousarray(image[..., :3]).reshape(h, 3 * w)

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw.tobytes(), 6))
            + chunk(b"IEND", b""))


def write_png(path: str | os.PathLike[str], image: np.ndarray) -> None:
    """Write the image as a PNG at path, atomically (a temporary file beside it, then a rename); the
    file gets the permissions any new file of the user gets (0666 less the umask)."""
    target = Path(path)
    temporary = target.parent / f".tmp-{os.getpid()}-{secrets.token_hex(6)}.png"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(png_bytes(image))
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
