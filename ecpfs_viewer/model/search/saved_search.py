"""``search --item`` in a later process, answered from the cache folder without importing zarr
(its import alone is most of such an answer's time, and the search itself reads a few nodes).

A first process that searched with a stored item keeps its answer (what it printed, text and
JSON) under the search's parameters, with the stamps of everything the answer was derived from:
the item's leaf (its vector), index_root and every node the search popped or found missing. A
later process with the same parameters answers from it only when the index's fingerprint and
those stamps are unchanged (the same check as ``locate``'s: model/search/saved_locate.py); any
change, or anything missing or damaged, means "not answered here" and the index is opened.

The stamps are taken after the search read the nodes (which ones it reads is known only then),
so an answer is kept only when no file it stamps changed since the search began: a file written
after that carries a later change time (the kernel's coarse clock lags by a tick at most; the
margin covers it). Only local folders are answered here, like ``locate``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ecpfs_viewer.model.ecpfs.paths import INDEX_ROOT, node_path
from ecpfs_viewer.model.guarded_json import parse_json
from ecpfs_viewer.model.search.saved_locate import read_entry, saved_facts
from ecpfs_viewer.model.storage.stamps import ALWAYS, Stamps

if TYPE_CHECKING:
    from ecpfs_viewer.model.ecpfs.index_cache import IndexCache

#: A change time this close before the search began may belong to a write the search did not see.
CHANGE_MARGIN_NS = 200_000_000


@dataclass(frozen=True)
class SearchKey:
    """What a ``search --item`` answer depends on besides the index: its parameters."""

    item: int
    k: int
    search_exp: int
    max_increments: int
    exclude: tuple[int, ...]

    @classmethod
    def of(cls, item: int, k: int, search_exp: int, max_increments: int, exclude: Iterable[int]) -> SearchKey:
        return cls(int(item), int(k), int(search_exp), int(max_increments), tuple(sorted(int(i) for i in exclude)))

    def to_dict(self) -> dict[str, Any]:
        return {"item": self.item, "k": self.k, "search_exp": self.search_exp,
                "max_increments": self.max_increments, "exclude": list(self.exclude)}

    def entry_name(self) -> str:
        digest = hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:24]
        return f"search_item_{digest}.json"


@dataclass(frozen=True)
class SavedSearch:
    """What the first process printed: the JSON report and the text lines."""

    report: dict[str, Any]
    text: tuple[str, ...]


def saved_search(location: str, key: SearchKey) -> SavedSearch | None:
    """The answer kept for this search of the local index at location as it is now; None when
    there is none or anything it was derived from changed."""
    folder, cache, facts = saved_facts(location)  # the index's fingerprint, checked
    if folder is None or cache is None or facts is None:
        return None
    found = read_entry(cache, key.entry_name())
    if found is None or not found[1].unchanged(folder):
        return None
    try:
        saved = parse_json(found[0], "a saved search")
        if saved["key"] != key.to_dict() or not isinstance(saved["report"], dict):
            return None
        return SavedSearch(saved["report"], tuple(str(line) for line in saved["text"]))
    except (ValueError, TypeError, KeyError):
        return None


def search_sources(levels: int, leaf: int, visited: Iterable[tuple[int, int]]) -> list[tuple[str, int]]:
    """(path, owner) of what a search's answer was derived from: index_root, the query item's
    leaf, and the (level, node) pairs the search popped (read, or found missing)."""
    nodes = {(levels, leaf), *visited}
    return [(INDEX_ROOT, ALWAYS), *((node_path(level, node), ALWAYS) for level, node in sorted(nodes))]


def changed_since(stamps: Stamps, started_ns: int) -> bool:
    """Whether a stamped file may have changed after started_ns (a change or modification time
    from then on, or within the clock's margin before)."""
    values = stamps.values
    if not len(values):
        return False
    latest = int(max(values[:, 3].max(), values[:, 4].max()))
    return latest >= started_ns - CHANGE_MARGIN_NS


def save_search(cache: IndexCache, key: SearchKey, answer: SavedSearch, sources: Sequence[tuple[str, int]],
                started_ns: int) -> bool:
    """Keep a search's answer for later processes; False when it may not be kept (not a local
    folder, no cache folder, or a file it depends on changed since the search began)."""
    if cache.store.kind != "local":
        return False
    stamps = cache.stamp(sources)
    if stamps is None or changed_since(stamps, started_ns):
        return False
    data = json.dumps({"key": key.to_dict(), "report": answer.report, "text": list(answer.text)}).encode()
    cache.save(key.entry_name(), data, stamps)
    return True


def now_ns() -> int:
    """The wall clock a search's start is taken from (file change times are on it)."""
    return time.time_ns()
