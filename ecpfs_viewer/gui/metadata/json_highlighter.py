"""JSON syntax colouring for the raw zarr.json view, derived from the current palette.

Colours are picked from the palette's link / text roles and a hue shift of them, so the same
code reads well in light and dark themes.
"""

from __future__ import annotations

import re

from PySide6.QtGui import QColor, QFont, QPalette, QSyntaxHighlighter, QTextCharFormat, QTextDocument
from PySide6.QtWidgets import QApplication

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"(?P<key>\s*:)?|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|\b(?:true|false|null)\b|'
                    r"\bNaN\b|-?\bInfinity\b")


def _shift(color: QColor, hue: int, dark: bool) -> QColor:
    """The colour's hue turned by `hue` degrees, at a lightness that reads on the background.

    Fixed lightness per theme (dark text on light bases, light text on dark ones) keeps every
    token legible: a pure hue such as (0, 255, 0) is unreadable on white.
    """
    return QColor.fromHsl((max(color.hslHue(), 0) + hue) % 360, 170 if dark else 200, 175 if dark else 85,
                          color.alpha())


class JsonHighlighter(QSyntaxHighlighter):
    """Keys, strings, numbers and literals in distinct palette-derived colours."""

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self._formats: dict[str, QTextCharFormat] = {}
        self.update_palette(QApplication.palette())

    def update_palette(self, palette: QPalette) -> None:
        """Recompute colours (call again when the palette changes)."""
        link = palette.color(QPalette.ColorRole.Link)
        dark = palette.color(QPalette.ColorRole.Base).lightness() < 128
        key = QTextCharFormat()
        key.setForeground(_shift(link, 0, dark))
        key.setFontWeight(QFont.Weight.Bold)
        string = QTextCharFormat()
        string.setForeground(_shift(link, 150, dark))
        number = QTextCharFormat()
        number.setForeground(_shift(link, 240, dark))
        literal = QTextCharFormat()
        literal.setForeground(_shift(link, 300, dark))
        literal.setFontItalic(True)
        self._formats = {"key": key, "string": string, "number": number, "literal": literal}
        self.rehighlight()

    def highlightBlock(self, text: str) -> None:
        for match in _TOKEN.finditer(text):
            token = match.group(0)
            if token.startswith('"'):
                kind = "key" if match.group("key") else "string"
                end = match.start() + len(token.rstrip().rstrip(":").rstrip()) if kind == "key" else match.end()
                self.setFormat(match.start(), end - match.start(), self._formats[kind])
            elif token[0].isdigit() or (token[0] == "-" and token[1:2].isdigit()):
                self.setFormat(match.start(), len(token), self._formats["number"])
            else:
                self.setFormat(match.start(), len(token), self._formats["literal"])
