#!/usr/bin/env python3
"""Render the PNG icons from the scalable one, for the desktop's hicolor theme.

The SVG (ecpfs_viewer/resources/<app id>.svg) is the one source: this script draws it with Qt's
QSvgRenderer (offscreen, no display needed) into icons/<size>x<size>/<app id>.png at each size a
desktop looks for, and the PNGs are committed. Run it after editing the SVG:
    python3 scripts/render_icons.py           # rewrite the PNGs
    python3 scripts/render_icons.py --check   # exit 1 when a PNG is missing or differs from a fresh render
tests/test_packaging.py runs the check.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESOURCES = ROOT / "ecpfs_viewer" / "resources"
APP_ID = "io.github.ecpfs_viewer.ecpfs_viewer"
SIZES = (48, 128, 256)
#: the mean difference per channel (0-255) a render may show against the committed PNG: another Qt
#: release anti-aliases edges a little differently; a changed drawing differs by far more
TOLERANCE = 2.0


def png_path(size: int) -> Path:
    return RESOURCES / "icons" / f"{size}x{size}" / f"{APP_ID}.png"


def render(size: int):  # -> QImage; Qt is imported here so the module imports without it
    """The SVG drawn at size × size pixels on a transparent ARGB image."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    if QGuiApplication.instance() is None:
        render.app = QGuiApplication([])  # type: ignore[attr-defined]  # kept alive with the function
    renderer = QSvgRenderer(str(RESOURCES / f"{APP_ID}.svg"))
    if not renderer.isValid():
        raise ValueError(f"{APP_ID}.svg: Qt cannot read it as an SVG")
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    return image


def mean_difference(a, b) -> float:
    """Mean absolute difference per channel of two equally sized ARGB32 images (inf when sizes differ)."""
    from PySide6.QtGui import QImage

    a = a.convertToFormat(QImage.Format.Format_ARGB32)
    b = b.convertToFormat(QImage.Format.Format_ARGB32)
    if a.size() != b.size():
        return float("inf")
    left, right = bytes(a.constBits()), bytes(b.constBits())
    return sum(abs(x - y) for x, y in zip(left, right, strict=True)) / len(left)


def differences() -> dict[int, str]:
    """Size -> what is wrong with its committed PNG (missing, another size, another drawing)."""
    from PySide6.QtGui import QImage

    problems: dict[int, str] = {}
    for size in SIZES:
        path = png_path(size)
        committed = QImage(str(path))
        if committed.isNull():
            problems[size] = f"{path.relative_to(ROOT)}: missing or not a PNG"
            continue
        if (committed.width(), committed.height()) != (size, size):
            problems[size] = f"{path.relative_to(ROOT)}: {committed.width()}x{committed.height()}, not {size}x{size}"
            continue
        diff = mean_difference(committed, render(size))
        if diff > TOLERANCE:
            problems[size] = f"{path.relative_to(ROOT)}: differs from the SVG (mean difference {diff:.1f})"
    return problems


def main(argv: list[str]) -> int:
    if "--check" in argv:
        problems = differences()
        for problem in problems.values():
            print(problem, "- run python3 scripts/render_icons.py", file=sys.stderr)
        return 1 if problems else 0
    for size in SIZES:
        path = png_path(size)
        path.parent.mkdir(parents=True, exist_ok=True)
        if not render(size).save(str(path), "PNG"):
            print(f"could not write {path}", file=sys.stderr)
            return 1
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
