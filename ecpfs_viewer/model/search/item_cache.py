"""The item -> (leaf, row) map of an index kept in the cache folder, with each level's child ->
parent links and the few facts a location needs, so that the next process answers ``locate`` and
``search --item`` without reading a leaf or the node_ids of the levels above it (``locate`` of a
local index even without zarr: model/search/saved_locate.py).

Keyed by the store's identity and fingerprint (model/ecpfs/index_cache.py): a map saved before
the index changed is never loaded. A saved map that does not read back as one is ignored.
"""

from __future__ import annotations

from ecpfs_viewer.model.ecpfs.index_cache import attach_cache
from ecpfs_viewer.model.search.locate import ItemMap
from ecpfs_viewer.model.search.saved_locate import ITEM_MAP, LOCATE_FACTS, PARENT_LINKS, LocateFacts, read_item_map
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def _saved(h: Hierarchy, name: str) -> ItemMap | None:
    cache = attach_cache(h)
    return None if cache is None else read_item_map(cache, name)


def _save(h: Hierarchy, name: str, data: bytes) -> None:
    cache = attach_cache(h)
    if cache is not None:
        cache.write(name, data)


def saved_item_map(h: Hierarchy) -> ItemMap | None:
    """The map saved for this index as it is now, or None."""
    return _saved(h, ITEM_MAP)


def save_item_map(h: Hierarchy, item_map: ItemMap, facts: LocateFacts) -> None:
    """Keep the complete map of this index, and what a location needs besides, for later
    processes (nothing when it has no fingerprint)."""
    _save(h, ITEM_MAP, item_map.to_bytes())
    _save(h, LOCATE_FACTS, facts.to_bytes())


class CachedParentLinks:
    """A locator's LinkCache in the cache folder, keyed like the item map."""

    def __init__(self, h: Hierarchy) -> None:
        self.hierarchy = h

    def load(self, level: int) -> ItemMap | None:
        return _saved(self.hierarchy, PARENT_LINKS.format(level=level))

    def save(self, level: int, links: ItemMap) -> None:
        _save(self.hierarchy, PARENT_LINKS.format(level=level), links.to_bytes())
