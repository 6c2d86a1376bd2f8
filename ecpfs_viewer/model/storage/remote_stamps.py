"""Stamps of a remote index's objects, from listings: what a cache entry of an object store was
derived from, and whether it still is (model/storage/stamps.py holds the local kind).

An object store (S3, GCS, Azure through obstore) lists each object with its ETag, Last-Modified
and size, about a thousand per request: stamping or checking the documents of N leaves costs
about N x 5 / 1000 listing requests, not N requests. A stamp row is (the ETag's hash in two
halves, size, Last-Modified in ns, 0). A folder whose set of children is stamped (a level's,
``walk=False``) is kept under its key with a trailing ``/`` and the hash of its children's names.
A re-uploaded object has a new ETag and Last-Modified, so a swapped or rewritten leaf is stale at
its first check.

A server that cannot list (plain HTTP) is stamped by asking for the objects themselves
(model/ecpfs/http_stamps.py). Kept nothing of: an fsspec store, and any object that comes with
neither an ETag nor a Last-Modified.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ecpfs_viewer.model.storage.stamps import _ABSENT, _FIELDS, Stamps, digest_pair

if TYPE_CHECKING:
    from ecpfs_viewer.model.storage.opening import OpenedStore

#: Separate prefixes listed one by one (in parallel) at most; more are listed by their common folder.
MAX_PREFIXES = 4
#: Objects one listing request answers (S3 and GCS give at most 1,000 per page; counted so).
PAGE = 1000
_FOLDER = 1  # last field of a folder's row
#: Timeouts a folder's listing of children may take in all (its pages come in one call).
CHILD_PAGES = 20

Row = tuple[int, ...]


def lists_validators(opened: OpenedStore) -> bool:
    """Whether the store's listings give each object's ETag / Last-Modified (obstore's object stores)."""
    bounded = opened.zarr_store.wrapped
    inner = getattr(bounded, "object_store", None)
    return (opened.kind == "remote" and bool(getattr(bounded, "lists", False)) and inner is not None
            and type(inner).__module__.startswith("obstore"))


def validator_row(tag: str | None, modified: Any, size: int) -> Row | None:
    """An object's stamp row, None when it has neither an ETag nor a Last-Modified."""
    stamp = int(modified.timestamp() * 1_000_000) * 1000 if modified is not None and modified.timestamp() else 0
    if not tag and not stamp:
        return None
    return (*_hash(tag or ""), int(size), stamp, 0)


def _hash(text: str) -> tuple[int, int]:
    return digest_pair(text.encode("utf-8", "surrogatepass"))


def _folder_row(names: Sequence[str]) -> Row:
    return (*_hash("\n".join(sorted(names))), len(names), 0, _FOLDER)


class Lister:
    """Listings of one remote store, with their stamp rows; counted as requests on its counter."""

    def __init__(self, opened: OpenedStore) -> None:
        self.opened = opened
        bounded = opened.zarr_store.wrapped
        self._bounded: Any = bounded
        self._inner = bounded.object_store  # type: ignore[attr-defined]  # checked by lists_validators

    def objects(self, prefixes: Sequence[str]) -> list[dict[str, Row | None]]:
        """Every object below each prefix (a folder key, '' for the store) with its row, the
        prefixes listed in parallel; a failed listing raises."""
        return self._run([lambda p=p: self.below(p) for p in prefixes])

    async def below(self, prefix: str) -> dict[str, Row | None]:
        """Every object below prefix with its row (on the model's event loop). Each page has the
        store's timeout (a level of 40,000 nodes is 200 pages; the client retries a page)."""
        import obstore

        stream = obstore.list(self._inner, prefix or None, chunk_size=PAGE)
        found: dict[str, Row | None] = {}
        while True:
            try:
                page = await asyncio.wait_for(anext(stream), self._bounded.options.timeout_s)
            except StopAsyncIteration:
                break
            except Exception as exc:
                raise self._bounded.translate(exc, prefix) from exc
            self.opened.counter.add_listing()
            for meta in page:
                found[str(meta["path"])] = validator_row(meta.get("e_tag"), meta.get("last_modified"), meta["size"])
        return found

    def children(self, folders: Sequence[str]) -> list[Row]:
        """The stamp row of each folder's set of children (names of objects and folders below it)."""
        import obstore

        async def one(folder: str) -> Row:
            # one call for every page (the client bounds and retries each); a level of 40,000
            # nodes is 40 pages, so the store's timeout bounds about a page's worth each
            try:
                found = await asyncio.wait_for(obstore.list_with_delimiter_async(self._inner, folder or None),
                                               self._bounded.options.timeout_s * CHILD_PAGES)
            except Exception as exc:
                raise self._bounded.translate(exc, folder) from exc
            names = [p.rstrip("/").rsplit("/", 1)[-1] + "/" for p in found["common_prefixes"]]
            names += [str(meta["path"]).rsplit("/", 1)[-1] for meta in found["objects"]]
            self._count(len(names))
            return _folder_row(names)

        return self._run([lambda f=f: one(f) for f in folders])

    def _count(self, listed: int) -> None:
        for _ in range(max(1, -(-listed // PAGE))):
            self.opened.counter.add_listing()

    def _run(self, calls: Sequence[Any]) -> list[Any]:
        found = self.opened.run_bounded(calls)
        failed = next((f for f in found if isinstance(f, Exception)), None)
        if failed is not None:
            raise failed
        return found


def listing_prefixes(keys: Sequence[str]) -> list[str]:
    """The prefixes whose listings hold every key: each key's node folder (its first two
    segments) when there are few, else the folder the keys have in common."""
    stems = sorted({"/".join(key.split("/")[:2]) for key in keys})
    if len(stems) <= MAX_PREFIXES:
        return stems
    common = stems[0]
    for stem in stems[1:]:
        while common and not (stem == common or stem.startswith(common + "/")):
            common = common.rsplit("/", 1)[0] if "/" in common else ""
    return [common]


def _below(listed: dict[str, Row | None], key: str, ordered: list[str] | None = None) -> list[str]:
    """The listed keys that are key or below it (with ordered, the listed keys sorted: a bisection)."""
    inside = key + "/"
    if ordered is None:
        return sorted(k for k in listed if k == key or k.startswith(inside))
    found = [key] if key in listed else []
    at = bisect.bisect_left(ordered, inside)
    while at < len(ordered) and ordered[at].startswith(inside):
        found.append(ordered[at])
        at += 1
    return found


class RemoteStamper:
    """Stamps a remote store's documents by listing, and checks them by listing again.

    Listings made to stamp are kept for the stamper's life (one per opened index): a stamp older
    than the read makes its entry stale at the first check, never wrongly fresh. A check always
    lists afresh."""

    def __init__(self, opened: OpenedStore) -> None:
        self.lister = Lister(opened)
        self._listed: dict[str, dict[str, Row | None]] = {}
        self._merged: dict[str, Row | None] = {}
        self._ordered: list[str] = []

    def _listing(self, keys: Sequence[str]) -> tuple[dict[str, Row | None], list[str]]:
        prefixes = listing_prefixes(keys)
        covered = [p for p in prefixes if not any(_inside(p, k) for k in self._listed)]
        if covered:
            for prefix, found in zip(covered, self.lister.objects(covered), strict=True):
                self._listed[prefix] = found
                self._merged.update(found)
            self._ordered = sorted(self._merged)
        return self._merged, self._ordered

    def stamp(self, groups: Sequence[tuple[str, int]], *, walk: bool = True) -> Stamps | None:
        """Stamps of (key, owner) pairs: with walk each key stands for every object below it,
        else for the set of its children; None when an object has no validators."""
        paths: list[str] = []
        owners: list[int] = []
        rows: list[Row] = []
        if walk:
            listed, ordered = self._listing([key for key, _ in groups])
            for key, owner in groups:
                below = _below(listed, key, ordered)
                for found in below or [key]:
                    row = listed.get(found) if below else _ABSENT
                    if row is None:
                        return None
                    paths.append(found)
                    owners.append(owner)
                    rows.append(row)
        else:
            folders = [key for key, _ in groups]
            for (key, owner), row in zip(groups, self.lister.children(folders), strict=True):
                paths.append(key + "/")
                owners.append(owner)
                rows.append(row)
        return Stamps("remote", tuple(paths), np.asarray(owners, np.int64),
                      np.asarray(rows, np.int64).reshape(len(rows), _FIELDS))

    def unchanged(self, stamps: Stamps, owners: Sequence[int] | None = None) -> bool:
        """Whether every stamped object of the owners (all when None; those every answer depends
        on always) has its stamp now, by listing afresh; False when a listing fails."""
        picked = stamps.subset(owners) if owners is not None else stamps
        objects = [(p, tuple(row)) for p, row in zip(picked.paths, picked.values.tolist(), strict=True)
                   if not p.endswith("/")]
        folders = [(p, tuple(row)) for p, row in zip(picked.paths, picked.values.tolist(), strict=True)
                   if p.endswith("/")]
        try:
            listed: dict[str, Row | None] = {}
            prefixes = listing_prefixes([p for p, _ in objects]) if objects else []
            for found in self.lister.objects(prefixes):
                listed.update(found)
            now = self.lister.children([p[:-1] for p, _ in folders]) if folders else []
        except Exception:  # a listing that fails proves nothing: the entry is not answered
            return False
        for path, row in objects:
            if row == _ABSENT:
                if _below(listed, path):
                    return False
            elif listed.get(path) != row:
                return False
        return all(tuple(found) == row for (_, row), found in zip(folders, now, strict=True))


def _inside(prefix: str, listed: str) -> bool:
    return listed == "" or prefix == listed or prefix.startswith(listed + "/")
