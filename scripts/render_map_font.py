#!/usr/bin/env python3
"""Render the bitmap font the embedding map's PNG export writes its title and legend with.

``ecpfs-viewer map --png`` draws its picture with numpy alone (no Qt, no imaging library), so its
text comes from a small glyph atlas committed as ecpfs_viewer/resources/map_font.npz: printable
ASCII drawn once by Qt (offscreen) in DejaVu Sans (Bitstream Vera licence: free to embed) as 8-bit
coverage, one row of glyphs with their advance widths. Run it again only to change the font:
    python3 scripts/render_map_font.py
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "ecpfs_viewer" / "resources" / "map_font.npz"
PIXEL_SIZE = 12
FIRST, LAST = 32, 126


def main() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QColor, QFont, QFontDatabase, QFontMetrics, QGuiApplication, QImage, QPainter

    _app = QGuiApplication.instance() or QGuiApplication([])
    families = QFontDatabase.families()
    fallback = QFontDatabase.systemFont(QFontDatabase.GeneralFont).family()
    family = "DejaVu Sans" if "DejaVu Sans" in families else fallback
    font = QFont(family)
    font.setPixelSize(PIXEL_SIZE)
    font.setHintingPreference(QFont.PreferFullHinting)
    metrics = QFontMetrics(font)
    height = metrics.height()
    chars = [chr(c) for c in range(FIRST, LAST + 1)]
    widths = np.array([max(1, metrics.horizontalAdvance(c)) for c in chars], np.int16)
    atlas = np.zeros((height, int(widths.sum())), np.uint8)
    x = 0
    for c, w in zip(chars, widths, strict=True):
        image = QImage(int(w), height, QImage.Format_Grayscale8)
        image.fill(QColor(0, 0, 0))
        painter = QPainter(image)
        painter.setFont(font)
        painter.setPen(QColor(255, 255, 255))
        painter.drawText(0, 0, int(w), height, Qt.AlignLeft | Qt.AlignTop, c)
        painter.end()
        ptr = image.constBits()
        rows = np.frombuffer(ptr, np.uint8).reshape(height, image.bytesPerLine())[:, :w]
        atlas[:, x:x + w] = rows
        x += int(w)
    np.savez_compressed(OUT, atlas=atlas, widths=widths, first=np.array([FIRST], np.int16),
                        family=np.frombuffer(family.encode(), np.uint8))
    print(f"{OUT}: {family} {PIXEL_SIZE}px, {len(chars)} glyphs, atlas {atlas.shape}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
