"""The tree filter: which loaded rows match what the user typed, and how many.

Exact names (``=node_15`` or ``"node_15"``), globs (``node_1?``, ``*embeddings``) and plain
substrings are understood; only rows already listed are searched, and the count says how many
groups were not listed yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import cast

from PySide6.QtCore import QModelIndex, QObject, QPersistentModelIndex, QSortFilterProxyModel, Qt

from ecpfs_viewer.gui.tree.item_model import HierarchyTreeModel
from ecpfs_viewer.gui.tree.tree_item import LoadState, TreeItem
from ecpfs_viewer.model.formatting import count_noun

_Index = QModelIndex | QPersistentModelIndex


@dataclass(frozen=True)
class NameFilter:
    """What the tree filter matches, parsed from what the user typed (case-insensitive).

    ``=node_15`` or ``"node_15"`` matches that exact name (or path); text with ``*`` or ``?`` is a
    glob over the whole name (or path); anything else matches names and paths containing it.
    """

    mode: str  # "", "substring", "exact" or "glob"
    needle: str

    @classmethod
    def parse(cls, text: str) -> NameFilter:
        text = text.strip()
        quoted = len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'"
        if quoted or text.startswith("="):
            needle = (text[1:-1] if quoted else text[1:]).strip().lower().strip("/")
            return cls("exact" if needle else "", needle)
        needle = text.lower().strip("/")
        if not needle:
            return cls("", "")
        return cls("glob" if any(c in needle for c in "*?[") else "substring", needle)

    def matches(self, item: TreeItem) -> bool:
        if item.placeholder or item.ranged:  # a range shows when a row in it matches
            return False
        if not self.mode:
            return True
        name, path = item.name.lower(), item.path.lower()
        if self.mode == "exact":
            return self.needle in (name, path)
        if self.mode == "glob":
            return fnmatchcase(name, self.needle) or fnmatchcase(path, self.needle)
        return self.needle in name or self.needle in path

    def describe(self) -> str:
        """How the text is read, for the count line ('exact name', 'glob', 'contains')."""
        return {"exact": "exact name", "glob": "glob", "substring": "name contains"}.get(self.mode, "")


@dataclass(frozen=True)
class FilterCount:
    """How many loaded rows a filter matches, and how many groups it could not look into."""

    matches: int
    unlisted_groups: int

    def text(self, name_filter: NameFilter) -> str:
        found = f"{count_noun(self.matches, 'match', 'matches')} ({name_filter.describe()})"
        if self.unlisted_groups:
            found += (f"; the contents of {count_noun(self.unlisted_groups, 'group')} not listed yet "
                      "are not searched (expand to include them)")
        return found


def count_filter_matches(model: HierarchyTreeModel, name_filter: NameFilter) -> FilterCount:
    """Matches among the loaded rows, and the groups never listed (whose children are not searched)."""
    matches = unlisted = 0
    for item in model.loaded_items():
        if name_filter.matches(item):
            matches += 1
        if item.is_container and item.state is LoadState.UNLISTED:
            unlisted += 1
    return FilterCount(matches, unlisted)


class TreeFilterProxy(QSortFilterProxyModel):
    """Shows loaded rows that match the filter (see :class:`NameFilter`), with their ancestors.

    Only rows already in the source model are matched: filtering never lists the store.
    """

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setRecursiveFilteringEnabled(True)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.name_filter = NameFilter("", "")

    def set_filter_text(self, text: str) -> None:
        self.beginFilterChange()
        self.name_filter = NameFilter.parse(text)
        self.endFilterChange(QSortFilterProxyModel.Direction.Rows)

    @property
    def filter_text(self) -> str:
        return self.name_filter.needle

    def filterAcceptsRow(self, source_row: int, source_parent: _Index) -> bool:
        if not self.name_filter.mode:
            return True
        model = cast("HierarchyTreeModel", self.sourceModel())
        owner = model.item(source_parent)
        if not 0 <= source_row < len(owner.children):
            return False
        return self.name_filter.matches(owner.children[source_row])
