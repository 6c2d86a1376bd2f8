"""One row of the tree (a node of the hierarchy, or a placeholder) and how far it is listed."""

from __future__ import annotations

from enum import Enum

from ecpfs_viewer.model.zarrtree.nodes import NodeKind


class LoadState(Enum):
    UNLISTED = "unlisted"
    LISTING = "listing"
    LISTED = "listed"


class TreeItem:
    """One row: a node of the hierarchy, or a placeholder ("Loading…", "Opening …")."""

    __slots__ = (
        "children",
        "detail",
        "error",
        "is_container",
        "kind",
        "name",
        "parent",
        "path",
        "placeholder",
        "ranged",
        "row",
        "state",
        "version",
    )

    def __init__(self, path: str, name: str, kind: NodeKind | None, parent: TreeItem | None,
                 row: int = 0, *, placeholder: bool = False, error: str | None = None) -> None:
        self.path = path
        self.name = name
        self.kind = kind
        self.parent = parent
        self.children: list[TreeItem] = []
        self.row = row
        self.state = LoadState.UNLISTED
        self.detail = ""
        self.error = error
        self.placeholder = placeholder
        self.ranged = False  # a range of a large group's children (gui/tree/ranges.py); path: the group's
        self.version = 0
        self.is_container = kind is not None and kind.is_container and not placeholder

    def set_kind(self, kind: NodeKind | None) -> None:
        self.kind = kind
        self.is_container = kind is not None and kind.is_container and not self.placeholder
