"""The small documents of an index on an object store kept in the cache folder, each with the
stamp its store listed for it, and answered only while a listing made in this process gives the
same stamp (model/storage/remote_stamps.py).

A key below a top folder (``lvl_3/node_5/item_ids/zarr.json``) is checked against one listing of
that whole folder, made once per opened store when documents of LIST_AFTER of its nodes have been
asked for: about a thousand objects per request instead of a request per document (a ``locate``
that reads a few nodes lists nothing, and keeps nothing of them). A folder's listing of
names is taken from that listing too. Keys nearer the root are always asked for (they are the
fingerprint's, read anyway). A document whose listing gives no validators is not kept; a
listing that fails answers nothing from the cache.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import struct
from collections.abc import Callable

from ecpfs_viewer.model.storage.disk_cache import _ABSENT, DOCUMENTS, DocumentCache, StoreCache
from ecpfs_viewer.model.storage.remote_stamps import Lister, Row

_STAMP = struct.Struct("<q")
#: Nodes of a top folder whose documents are asked for before the folder is listed to check them.
LIST_AFTER = 16  # the digest of a document's row in front of its bytes


def _digest(row: Row) -> int:
    raw = hashlib.blake2b(repr(row).encode(), digest_size=8).digest()
    return int.from_bytes(raw, "little", signed=True)


def _keys_below(ordered: list[str], prefix: str) -> list[str]:
    """The keys of a sorted list that start with prefix (a bisection)."""
    at = bisect.bisect_left(ordered, prefix)
    stop = at
    while stop < len(ordered) and ordered[stop].startswith(prefix):
        stop += 1
    return ordered[at:stop]


def top_folder(key: str) -> str | None:
    """The folder whose listing stamps key; None for a key too near the root to be kept."""
    parts = key.split("/")
    return parts[0] if len(parts) >= 3 else None


class StampedDocuments(DocumentCache):
    """A DocumentCache whose every kept document carries its object's listed stamp."""

    def __init__(self, cache: StoreCache, keeps: Callable[[str], bool], lister: Lister) -> None:
        super().__init__(cache, keeps)
        self.lister = lister
        self._rows: dict[str, dict[str, int] | None] = {}  # top folder -> key -> row digest (None: failed)
        self._ordered: dict[str, list[str]] = {}  # top folder -> its listed keys, sorted
        self._locks: dict[str, asyncio.Lock] = {}
        self._asked: dict[str, set[str]] = {}  # top folder -> the nodes whose documents were asked for

    def relist(self) -> None:
        """Check every document against a new listing from now on (a refresh: F5 asks the server)."""
        self._rows = {}
        self._ordered = {}
        self._locks = {}
        self._asked = {}

    async def prepare(self, key: str) -> None:
        """List the top folder of key once documents of LIST_AFTER of its nodes were asked for
        (the one asked for then waits for it): a locate that reads a few nodes lists nothing, a
        check that reads them all lists each level once."""
        folder = top_folder(key)
        if folder is None or folder in self._rows:
            return
        asked = self._asked.setdefault(folder, set())
        asked.add(key.split("/", 2)[1])
        if len(asked) >= LIST_AFTER:
            await self.prepare_folder(folder)

    async def prepare_folder(self, folder: str | None) -> None:
        if folder is None or folder in self._rows:
            return
        lock = self._locks.setdefault(folder, asyncio.Lock())
        async with lock:
            if folder in self._rows:
                return
            try:
                listed = await self.lister.below(folder)
            except Exception:  # a listing that fails proves nothing: every document is asked for
                self._rows[folder] = None
                return
            self._ordered[folder] = sorted(listed)
            self._rows[folder] = {k: 0 if row is None else _digest(row) for k, row in listed.items()}

    def _listed(self, key: str) -> dict[str, int] | None:
        """The listing made now of key's top folder (key -> row digest, 0 for an object listed
        without validators); None when there is none yet or it failed."""
        folder = top_folder(key)
        return None if folder is None else self._rows.get(folder)

    def _has_below(self, key: str) -> bool:
        return bool(_keys_below(self._ordered.get(key.split("/", 1)[0], []), key + "/"))

    def get(self, key: str) -> tuple[bool, bytes | None]:
        known = self._seeded_answer(key)
        if known is not None:
            return known
        rows = self._listed(key)
        if self.cache is None or rows is None or not self.keeps(key):
            return False, None
        documents = self.cache.pack(DOCUMENTS)
        row = rows.get(key)
        if row:
            kept = documents.get(key)
            if kept is not None and len(kept) >= _STAMP.size and _STAMP.unpack_from(kept)[0] == row:
                self.hits += 1
                return True, kept[_STAMP.size:]
            return False, None
        if row is None and _ABSENT + key in documents and not self._has_below(key):
            self.hits += 1
            return True, None  # absent when kept, and no object of that name listed now
        return False, None

    def put(self, key: str, value: bytes | None) -> None:
        rows = self._listed(key)
        if self.cache is None or rows is None or not self.keeps(key) or key in self.seeded or key in self.absent:
            return
        row = rows.get(key)
        if value is None and row is None and not self._has_below(key):
            self.cache.add_later(DOCUMENTS, _ABSENT + key, b"")
        elif value is not None and row:  # stamped as listed before this read: a change since makes it stale
            self.cache.add_later(DOCUMENTS, key, _STAMP.pack(row) + value)

    def listing(self, prefix: str) -> list[str] | None:
        """The names directly below prefix, from its top folder's listing when this process made
        it (no request); None otherwise."""
        folder = prefix.strip("/")
        top = folder.split("/", 1)[0]
        if not folder or self._rows.get(top) is None:
            return None
        below = folder + "/"
        names = {k[len(below):].split("/", 1)[0] for k in _keys_below(self._ordered.get(top, []), below)}
        self.hits += 1
        return sorted(names)

    def keep_listing(self, prefix: str, names: list[str]) -> None:
        return None
