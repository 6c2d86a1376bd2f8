"""The colour theme: the system's, or Light or Dark whatever the desktop says (View > Theme).

Light and Dark use the Fusion style with a palette of our own, the one way to get the same
colours on every platform (native styles ignore a palette, or draw with the desktop's). System
puts back the style and palette the application started with. Views that colour things
themselves (pyqtgraph plots, the chunk map) restyle from the palette on ``PaletteChange``, so a
change applies live. The choice is remembered in QSettings and applied at start-up.

Fusion draws an unchecked check box as the base colour with an outline a shade darker than the
window: 1.4:1 against the dark window, 1.65:1 against the light one, nearly invisible. Our Fusion
(:class:`ThemeStyle`) outlines check boxes and radio buttons in a blend of text and window colours
(above 3:1, WCAG's bar for the parts of controls).
"""

from __future__ import annotations

from enum import Enum

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPalette, QPen
from PySide6.QtWidgets import QApplication, QProxyStyle, QStyle, QStyleOption, QWidget

from ecpfs_viewer.gui.runtime.settings import settings

_THEME_KEY = "view/theme"


class Theme(Enum):
    SYSTEM = "system"
    LIGHT = "light"
    DARK = "dark"

    @property
    def title(self) -> str:
        return {"system": "&System", "light": "&Light", "dark": "&Dark"}[self.value]


_started_with: tuple[str, QPalette] | None = None  # the style name and palette before any theme


def dark_palette() -> QPalette:
    """Fusion's colours for a dark desktop: light text on dark grey, a blue selection."""
    palette = QPalette()
    role, group = QPalette.ColorRole, QPalette.ColorGroup
    for r, color in ((role.Window, "#2b2b2b"), (role.WindowText, "#e6e6e6"), (role.Base, "#1e1e1e"),
                     (role.AlternateBase, "#262626"), (role.ToolTipBase, "#3a3a3a"), (role.ToolTipText, "#f0f0f0"),
                     (role.PlaceholderText, "#8c8c8c"), (role.Text, "#e6e6e6"), (role.Button, "#353535"),
                     (role.ButtonText, "#e6e6e6"), (role.BrightText, "#ff6b6b"), (role.Light, "#4a4a4a"),
                     (role.Midlight, "#3e3e3e"), (role.Mid, "#2f2f2f"), (role.Dark, "#1a1a1a"),
                     (role.Shadow, "#0d0d0d"), (role.Highlight, "#3d7fd9"), (role.HighlightedText, "#ffffff"),
                     (role.Link, "#6ab0ff"), (role.LinkVisited, "#b48cff")):
        palette.setColor(r, QColor(color))
    for r, color in ((role.WindowText, "#7a7a7a"), (role.Text, "#7a7a7a"), (role.ButtonText, "#7a7a7a"),
                     (role.Highlight, "#4a4a4a"), (role.HighlightedText, "#a0a0a0")):
        palette.setColor(group.Disabled, r, QColor(color))
    return palette


def outline_color(palette: QPalette) -> QColor:
    """The outline of check boxes and radio buttons: 60% of the way from the window to the text colour."""
    window, text = palette.color(QPalette.ColorRole.Window), palette.color(QPalette.ColorRole.WindowText)
    return QColor.fromRgbF(*(w + 0.6 * (t - w) for w, t in ((window.redF(), text.redF()),
                                                              (window.greenF(), text.greenF()),
                                                              (window.blueF(), text.blueF()))))


_OUTLINED = {
    QStyle.PrimitiveElement.PE_IndicatorCheckBox: False,  # element: round
    QStyle.PrimitiveElement.PE_IndicatorItemViewItemCheck: False,
    QStyle.PrimitiveElement.PE_IndicatorRadioButton: True,
}


class ThemeStyle(QProxyStyle):
    """Fusion, with check boxes and radio buttons outlined so they read on Light and Dark."""

    def __init__(self) -> None:
        super().__init__("Fusion")

    def drawPrimitive(self, element: QStyle.PrimitiveElement, option: QStyleOption, painter: QPainter,
                      widget: QWidget | None = None) -> None:
        super().drawPrimitive(element, option, painter, widget)
        if element not in _OUTLINED:
            return
        rect = QRectF(option.rect).adjusted(0.5, 0.5, -0.5, -0.5)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, _OUTLINED[element])
        painter.setPen(QPen(outline_color(option.palette), 1))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        if _OUTLINED[element]:
            painter.drawEllipse(rect)
        else:
            painter.drawRect(rect)
        painter.restore()


def saved_theme() -> Theme:
    """The theme chosen last (System when none was, or the settings file names no theme)."""
    value = str(settings().value(_THEME_KEY, Theme.SYSTEM.value) or "")
    try:
        return Theme(value)
    except ValueError:
        return Theme.SYSTEM


def save_theme(theme: Theme) -> None:
    store = settings()
    store.setValue(_THEME_KEY, theme.value)
    store.sync()


def apply_theme(theme: Theme, app: QApplication | None = None) -> None:
    """Give the whole application this theme's style and palette (every window, at once)."""
    global _started_with
    app = app if app is not None else QApplication.instance()  # type: ignore[assignment]
    if app is None:
        return
    if _started_with is None:
        _started_with = (app.style().name(), QPalette(app.palette()))
    if theme is Theme.SYSTEM:
        style, palette = _started_with
        if app.style().name() != style:
            QApplication.setStyle(style)
        app.setPalette(palette)
        return
    if not isinstance(app.style(), ThemeStyle):
        QApplication.setStyle(ThemeStyle())
    app.setPalette(dark_palette() if theme is Theme.DARK else app.style().standardPalette())
