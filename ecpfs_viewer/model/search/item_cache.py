"""The item -> (leaf, row) map of an index kept in the cache folder, so that the next process
answers ``locate`` and ``search --item`` without reading a leaf.

Keyed by the store's identity and fingerprint (model/ecpfs/index_cache.py): a map saved before
the index changed is never loaded. A saved map that does not read back as one is ignored.
"""

from __future__ import annotations

from ecpfs_viewer.model.ecpfs.index_cache import attach_cache
from ecpfs_viewer.model.search.locate import ItemMap
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

#: The cache entry's name (its format is ItemMap.to_bytes).
ITEM_MAP = "item_map.npz"


def saved_item_map(h: Hierarchy) -> ItemMap | None:
    """The map saved for this index as it is now, or None."""
    cache = attach_cache(h)
    data = None if cache is None else cache.read(ITEM_MAP)
    if data is None:
        return None
    try:
        return ItemMap.from_bytes(data)
    except ValueError:
        return None


def save_item_map(h: Hierarchy, item_map: ItemMap) -> None:
    """Keep the complete map of this index for later processes (nothing when it has no fingerprint)."""
    cache = attach_cache(h)
    if cache is not None:
        cache.write(ITEM_MAP, item_map.to_bytes())
