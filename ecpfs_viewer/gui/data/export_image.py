"""A title band on exported pictures: which array and which subset the picture shows."""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter


def add_title(path: str, title: str) -> bool:
    """Put title above the picture saved at path (rewritten in place); False if it cannot be read."""
    image = QImage(path)
    if image.isNull():
        return False
    font = QFont()
    font.setPointSizeF(max(font.pointSizeF(), 10.0))
    font.setBold(True)
    metrics = QFontMetrics(font)
    band = metrics.height() + 12
    titled = QImage(image.width(), image.height() + band, QImage.Format.Format_ARGB32)
    titled.fill(QColor("white"))
    painter = QPainter(titled)
    try:
        painter.setFont(font)
        painter.setPen(QColor("black"))
        text = metrics.elidedText(title, Qt.TextElideMode.ElideMiddle, image.width() - 16)
        painter.drawText(QRect(8, 0, image.width() - 16, band), Qt.AlignmentFlag.AlignVCenter, text)
        painter.drawImage(0, band, image)
    finally:
        painter.end()
    return titled.save(path)
