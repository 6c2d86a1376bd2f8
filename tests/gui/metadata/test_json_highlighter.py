"""The raw zarr.json colours: every token legible on light and dark bases."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor, QPalette, QTextDocument

from ecpfs_viewer.gui.metadata.json_highlighter import JsonHighlighter


def _luminance(color: QColor) -> float:
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    return 0.2126 * channel(color.redF()) + 0.7152 * channel(color.greenF()) + 0.0722 * channel(color.blueF())


def _contrast(a: QColor, b: QColor) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def token_colors(document: QTextDocument) -> dict[str, QColor]:
    """The colour each highlighted token is drawn in (the formats laid out on the first line)."""
    block = document.firstBlock()
    return {block.text()[r.start:r.start + r.length]: r.format.foreground().color() for r in block.layout().formats()}


def test_colours_follow_a_palette_change(qapp) -> None:
    document = QTextDocument('{"a": 1}')
    highlighter = JsonHighlighter(document)
    light, dark = QPalette(), QPalette()
    light.setColor(QPalette.ColorRole.Base, QColor("#ffffff"))
    dark.setColor(QPalette.ColorRole.Base, QColor("#1e1e1e"))
    highlighter.update_palette(light)
    on_light = token_colors(document)
    highlighter.update_palette(dark)
    on_dark = token_colors(document)
    assert on_light['"a"'].lightness() < 128 < on_dark['"a"'].lightness()  # the rendered text was re-coloured


@pytest.mark.parametrize("base, link", [("#ffffff", "#0000ff"), ("#1e1e1e", "#5aa9ff"), ("#f5f5f5", "#2a76c6")])
def test_every_token_colour_reads_on_the_base(qapp, base: str, link: str) -> None:
    palette = QPalette()
    palette.setColor(QPalette.ColorRole.Base, QColor(base))
    palette.setColor(QPalette.ColorRole.Link, QColor(link))
    document = QTextDocument('{"a": "b", "c": 1, "d": null}')
    highlighter = JsonHighlighter(document)
    highlighter.update_palette(palette)
    colors = token_colors(document)
    assert set(colors) == {'"a"', '"b"', '"c"', "1", '"d"', "null"}
    assert colors['"a"'] == colors['"c"'] == colors['"d"']  # every key alike
    colors = {kind: colors[token] for kind, token in
              (("key", '"a"'), ("string", '"b"'), ("number", "1"), ("literal", "null"))}
    for kind, color in colors.items():
        assert _contrast(color, QColor(base)) >= 3.0, (kind, color.name())
    assert len({c.name() for c in colors.values()}) == 4  # four distinct colours
