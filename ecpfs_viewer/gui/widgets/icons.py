"""Icons for node kinds, taken from the style so they follow the platform and the palette."""

from __future__ import annotations

from functools import cache

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QStyle

from ecpfs_viewer.model.zarrtree.nodes import NodeKind

_STANDARD = {
    NodeKind.GROUP: QStyle.StandardPixmap.SP_DirIcon,
    NodeKind.IMPLICIT_GROUP: QStyle.StandardPixmap.SP_DirLinkIcon,
    NodeKind.ARRAY: QStyle.StandardPixmap.SP_FileIcon,
    NodeKind.ERROR: QStyle.StandardPixmap.SP_MessageBoxCritical,
}


@cache
def kind_icon(kind: NodeKind) -> QIcon:
    """The tree icon for a node kind."""
    return QApplication.style().standardIcon(_STANDARD[kind])


@cache
def standard_icon(name: str) -> QIcon:
    """A style icon by its QStyle.StandardPixmap name, e.g. 'SP_BrowserReload'."""
    return QApplication.style().standardIcon(getattr(QStyle.StandardPixmap, name))
