"""The raw zarr.json colours: every token legible on light and dark bases."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor, QPalette, QTextDocument

from ecpfs_viewer.gui.json_highlighter import JsonHighlighter


def _luminance(color: QColor) -> float:
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    return 0.2126 * channel(color.redF()) + 0.7152 * channel(color.greenF()) + 0.0722 * channel(color.blueF())


def _contrast(a: QColor, b: QColor) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("base, link", [("#ffffff", "#0000ff"), ("#1e1e1e", "#5aa9ff"), ("#f5f5f5", "#2a76c6")])
def test_every_token_colour_reads_on_the_base(qapp, base: str, link: str) -> None:
    palette = QPalette()
    palette.setColor(QPalette.ColorRole.Base, QColor(base))
    palette.setColor(QPalette.ColorRole.Link, QColor(link))
    document = QTextDocument('{"a": "b", "c": 1, "d": null}')
    highlighter = JsonHighlighter(document)
    highlighter.update_palette(palette)
    colors = {kind: fmt.foreground().color() for kind, fmt in highlighter._formats.items()}
    assert set(colors) == {"key", "string", "number", "literal"}
    for kind, color in colors.items():
        assert _contrast(color, QColor(base)) >= 3.0, (kind, color.name())
    assert len({c.name() for c in colors.values()}) == 4  # four distinct colours
