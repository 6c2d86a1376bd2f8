"""The item -> (leaf, row) map of an index kept in its cache (model/ecpfs/index_cache.py), with
each level's child -> parent links and the few facts a location needs, so that the next process
answers ``locate`` and ``search --item`` without reading a leaf or the node_ids of the levels
above it (``locate`` of a local index even without zarr: model/search/saved_locate.py).

Each entry carries the stamps of the item_ids or node_ids it was made from: a map is answered
only for leaves whose documents are unchanged (model/search/locate.py checks on each lookup),
links only while every node_ids of their level is. A saved entry that does not read back as one
is ignored.
"""

from __future__ import annotations

import contextlib

from ecpfs_viewer.model.ecpfs.index_cache import IndexCache
from ecpfs_viewer.model.ecpfs.parent_links import PARENT_LINKS
from ecpfs_viewer.model.search.item_lookup import MappedLookup, lookup_parts
from ecpfs_viewer.model.search.item_map import ItemMap
from ecpfs_viewer.model.search.saved_locate import ITEM_MAP, LOCATE_FACTS, LocateFacts, item_map_of
from ecpfs_viewer.model.storage.stamps import Stamps

#: The name an earlier version kept the map under (a whole .npz, read at once).
_EARLIER_MAP = "item_map.npz"


def saved_item_map(cache: IndexCache) -> tuple[ItemMap, Stamps] | None:
    """The map saved for this index and what it was made from (checked on use), or None."""
    disk = cache.disk
    lookup = None if disk is None else MappedLookup.open(disk.path(ITEM_MAP))
    item_map = None if lookup is None else lookup.item_map()
    return None if lookup is None or item_map is None else (item_map, lookup.stamps())


def save_item_map(cache: IndexCache, item_map: ItemMap, stamps: Stamps, facts: LocateFacts,
                  facts_stamps: Stamps) -> None:
    """Keep the complete map of this index, and what a location needs besides, for later
    processes (nothing when it cannot be stamped or has no fingerprint)."""
    disk = cache.disk
    if disk is None:
        return
    disk.write(ITEM_MAP, *lookup_parts(item_map, stamps))
    with contextlib.suppress(OSError):
        disk.path(_EARLIER_MAP).unlink(missing_ok=True)  # an earlier version's, never read now
    cache.save(LOCATE_FACTS, facts.to_bytes(), facts_stamps)


class CachedParentLinks:
    """A locator's LinkCache in the index's cache: a level's links while their node_ids are unchanged."""

    def __init__(self, cache: IndexCache) -> None:
        self.cache = cache

    def load(self, level: int) -> ItemMap | None:
        data = self.cache.load_checked(PARENT_LINKS.format(level=level))
        return None if data is None else item_map_of(data)

    def save(self, level: int, links: ItemMap, stamps: Stamps) -> None:
        self.cache.save(PARENT_LINKS.format(level=level), links.to_bytes(), stamps)
