"""``locate`` in a later process, answered from what an earlier one kept in the cache folder,
without importing zarr (its import alone is most of a cached answer's time).

Only a local folder is answered here: its identity and fingerprint are its resolved path and the
stamps of the documents that stand for the index (model/ecpfs/paths.fingerprint_keys), taken
exactly as the opened store takes them (model/storage/fingerprint.py); and each entry is checked
against the stamps of the documents it was made from, as the reader checks them
(model/storage/stamps.py): a present item's leaf, every leaf for an absent one, every node_ids
of a level for its links. The item map is memory-mapped (model/search/item_lookup.py): one item
reads a few pages of it, not the whole map. Anything missing, unreadable or changed means "not answered here": the
caller opens the index and locates as the first process did (and saves fresh entries).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ecpfs_viewer.model.ecpfs.parent_links import PARENT_LINKS
from ecpfs_viewer.model.ecpfs.paths import MAX_FINGERPRINT_LEVELS, fingerprint_keys
from ecpfs_viewer.model.guarded_json import parse_json
from ecpfs_viewer.model.search.item_lookup import MappedLookup
from ecpfs_viewer.model.search.item_map import ItemMap
from ecpfs_viewer.model.search.locate import ItemIdRange, ItemLocation, ancestor_path, not_in_index
from ecpfs_viewer.model.search.results import ItemIdRangeError
from ecpfs_viewer.model.storage.disk_cache import StoreCache
from ecpfs_viewer.model.storage.fingerprint import local_fingerprint, local_identity
from ecpfs_viewer.model.storage.stamps import Stamps, unframe_entry

#: The cache entries' names (the item map a lookup file of model/search/item_lookup.py; the facts
#: as JSON; the links' PARENT_LINKS in model/ecpfs/parent_links.py).
ITEM_MAP = "item_lookup.bin"
LOCATE_FACTS = "locate_facts.json"


@dataclass(frozen=True)
class LocateFacts:
    """What a location needs besides the maps: the level count, index_root's rows and the ids'
    range (for the same refusal of an id the item_ids cannot hold)."""

    levels: int
    root_rows: int
    id_range: ItemIdRange

    def to_bytes(self) -> bytes:
        return json.dumps({"levels": self.levels, "root_rows": self.root_rows, "id_dtype": self.id_range.dtype,
                           "id_low": self.id_range.low, "id_high": self.id_range.high}).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> LocateFacts | None:
        """The facts saved by :meth:`to_bytes`, None for anything else."""
        try:
            saved = parse_json(data, "saved locate facts")
            facts = cls(int(saved["levels"]), int(saved["root_rows"]),
                        ItemIdRange(str(saved["id_dtype"]), int(saved["id_low"]), int(saved["id_high"])))
        except (ValueError, TypeError, KeyError):
            return None
        return facts if 1 <= facts.levels <= MAX_FINGERPRINT_LEVELS and facts.root_rows >= 0 else None


def item_map_of(data: bytes) -> ItemMap | None:
    """A saved map, None when it does not read back as one."""
    try:
        return ItemMap.from_bytes(data)
    except ValueError:
        return None


def read_entry(cache: StoreCache, name: str) -> tuple[bytes, Stamps] | None:
    raw = cache.read(name)
    return None if raw is None else unframe_entry(raw)


def saved_location(location: str, item_id: int) -> ItemLocation | None:
    """Where item_id is, from the entries saved for the local index at `location` as it is now;
    None when they cannot answer. Raises what the reader would: ItemIdRangeError, UnknownItemError."""
    folder, cache, facts = saved_facts(location)
    if folder is None or cache is None or facts is None:
        return None
    refusal = facts.id_range.refusal(item_id)
    if refusal is not None:
        raise ItemIdRangeError(refusal)
    lookup = MappedLookup.open(cache.path(ITEM_MAP))
    if lookup is None:
        return None
    place = lookup.place(item_id)
    if not lookup.unchanged(folder, None if place is None else [place[0]]):
        return None  # what the answer depends on changed: the reader reads it afresh
    if place is None:
        raise not_in_index(item_id)
    parents: dict[int, ItemMap] = {}
    for level in range(2, facts.levels + 1):
        kept = read_entry(cache, PARENT_LINKS.format(level=level))
        links = None if kept is None else item_map_of(kept[0])
        if kept is None or links is None or not kept[1].unchanged(folder):
            return None  # saved once a location needed them (the first one of a present item), or stale
        parents[level] = links
    path, complete = ancestor_path(facts.levels, facts.root_rows, place[0], parents.__getitem__)
    return ItemLocation(item_id, place[0], place[1], path, complete)


def saved_facts(location: str) -> tuple[str | None, StoreCache | None, LocateFacts | None]:
    """The local folder at location, its cache entries and its saved facts, when an entry's
    fingerprint is the folder's now and the documents the facts came from are unchanged."""
    if "://" in location or "\0" in location:
        return None, None, None
    folder = Path(location).expanduser()
    try:
        if not folder.is_dir():
            return None, None, None
        folder = folder.resolve()
    except (OSError, RuntimeError):
        return None, None, None
    identity = local_identity(folder)
    probe = StoreCache.folder_of(identity)
    suffix = "." + LOCATE_FACTS
    try:
        names = [name for name in os.listdir(probe) if name.endswith(suffix)]
    except OSError:
        return None, None, None
    for name in names:
        try:
            entry = unframe_entry((probe / name).read_bytes())
        except OSError:
            continue
        facts = None if entry is None else LocateFacts.from_bytes(entry[0])
        if entry is None or facts is None:
            continue
        fingerprint = local_fingerprint(folder, fingerprint_keys(facts.levels))
        if StoreCache.tag_of(fingerprint) == name[:-len(suffix)]:
            if not entry[1].unchanged(str(folder)):
                return None, None, None
            return str(folder), StoreCache(identity, fingerprint), facts
    return None, None, None
