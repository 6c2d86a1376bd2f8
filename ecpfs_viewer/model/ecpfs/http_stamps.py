"""Stamps of a plain HTTP index's objects: what a cache entry was derived from, and whether it
still is, proven by asking for exactly the objects an answer depends on.

A static web server (or a CDN) lists no folders, so the objects a stamp stands for are named
from the index itself: an array's ``zarr.json`` and the chunks its chunk grid holds; a level's
set of nodes is what the server derives it from (model/ecpfs/derived_listing.py): its group
document and, for level 1, ``index_root/embeddings``' document, else the set of the level above
and every ``node_ids`` array of it. A later ``locate`` thus asks for the internal levels'
``node_ids`` and the answering leaf's ``item_ids``, never the other leaves.

Each object is asked for whole (the id arrays and documents stamped are small: a GET costs the
same one request as a HEAD) and its row is a hash of its bytes and of the validators the server
sends (ETag, Last-Modified, size): a swap of two leaves whose files kept their modification time
and size (a rename within one second, which ``Last-Modified`` cannot tell apart) still changes
it. An object whose server sends neither ETag nor Last-Modified is never stamped, so nothing
derived from it is kept (its store has no fingerprint either: model/storage/fingerprint.py).
Requests go through the store's bounded path (timeout, retries, caps) and are counted.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ecpfs_viewer.model.ecpfs.paths import level_path, node_array_path, parse_level
from ecpfs_viewer.model.guarded_json import parse_json
from ecpfs_viewer.model.storage.remote_stamps import lists_validators
from ecpfs_viewer.model.storage.stamps import _ABSENT, _FIELDS, Stamps, digest_pair

if TYPE_CHECKING:
    from ecpfs_viewer.model.storage.opening import OpenedStore

#: The Stamps kind of rows made here.
KIND = "http"
#: Chunks of one array stamped at most; an array of more is not stamped (nothing derived from it kept).
MAX_CHUNKS = 64
#: Levels a level's set of nodes is derived through at most (an index has a handful).
MAX_LEVELS = 64

Row = tuple[int, ...]
#: What asking for an object gave: its row (None: the server sent no validators) and its bytes.
Fetched = tuple[Row | None, bytes | None]


def reads_validators(opened: OpenedStore) -> bool:
    """Whether the store is an obstore client that cannot list but answers each object with its
    validators (plain HTTP): its entries are stamped here."""
    bounded = opened.zarr_store.wrapped
    inner = getattr(bounded, "object_store", None)
    return (opened.kind == "remote" and not lists_validators(opened) and inner is not None
            and type(inner).__module__.startswith("obstore")
            and getattr(bounded, "read_with_validators", None) is not None)


def object_row(data: bytes | None, validators: str | None) -> Row | None:
    """The row of an object as asked for: absent, None without validators, else a hash of its
    validators and bytes, and its size."""
    if data is None:
        return _ABSENT if validators == "absent" else None
    if not validators:
        return None
    return (*digest_pair(validators.encode("utf-8", "surrogatepass") + b"\0", data), len(data), 0, 0)


def chunk_keys(document: Any) -> list[str] | None:
    """The keys (relative to the array's folder) of every chunk a Zarr v3 array document's regular
    chunk grid holds; None for a group, another grid or encoding, or more than MAX_CHUNKS."""
    try:
        if document.get("node_type") != "array" or document.get("zarr_format") != 3:
            return None
        shape = [int(n) for n in document["shape"]]
        grid = document["chunk_grid"]
        chunks = [int(n) for n in grid["configuration"]["chunk_shape"]]
        encoding = document.get("chunk_key_encoding") or {"name": "default"}
        name = encoding.get("name")
        separator = (encoding.get("configuration") or {}).get("separator", "/" if name == "default" else ".")
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    if (grid.get("name") != "regular" or name not in ("default", "v2") or separator not in ("/", ".")
            or len(shape) != len(chunks) or any(n < 0 for n in shape) or any(c <= 0 for c in chunks)):
        return None
    counts = [math.ceil(n / c) for n, c in zip(shape, chunks, strict=True)]
    if math.prod(counts) > MAX_CHUNKS:
        return None
    keys: list[str] = []
    for place in np.ndindex(*counts) if counts else [()]:
        parts = [str(i) for i in place]
        if name == "default":
            keys.append(separator.join(["c", *parts]))
        else:
            keys.append(separator.join(parts) if parts else "0")
    return keys


def _chunk_names(data: bytes, where: str) -> list[str] | None:
    try:
        return chunk_keys(parse_json(data, where))
    except ValueError:  # not a document (JsonRefused, MetadataError): not stamped
        return None


class HttpStamper:
    """Stamps a plain HTTP store's objects by asking for them, and checks them by asking again.

    Each object is asked for once in the stamper's life (one per opened index, made anew by a
    refresh: F5 asks the server), as the hierarchy reads each document once: a process answers
    for the index as it first saw it, and a later process asks afresh (the entries of an earlier
    one are stale at their first check after a change, never wrongly fresh). ``level_nodes(level)``
    gives the node ids of a level as the hierarchy derived them."""

    def __init__(self, opened: OpenedStore, level_nodes: Callable[[int], list[int]],
                 hand_over: Callable[[str, bytes], None] = lambda key, data: None) -> None:
        self.opened = opened
        self._reader: Any = opened.zarr_store.wrapped.read_with_validators  # type: ignore[attr-defined]
        self._level_nodes = level_nodes
        self._hand_over = hand_over
        self._rows: dict[str, Row | None] = {}  # each object as first asked for in this stamper's life
        self._names: dict[str, list[str] | None] = {}  # an array document's chunk keys, by its key
        self._arrays: dict[str, list[tuple[str, Row]] | None] = {}
        self._levels: dict[int, list[tuple[str, Row]] | None] = {}

    def _fetch(self, keys: Sequence[str]) -> dict[str, Fetched]:
        """Each object not asked for yet in this stamper's life asked for once (in parallel,
        bounded); a failed request raises. Its row is kept and its bytes handed over to be what
        the read that follows is answered with (a stamp then describes exactly what was read, at
        no second request); an object asked for before gives its row and no bytes."""
        wanted = list(dict.fromkeys(k for k in keys if k not in self._rows))
        found = self.opened.run_bounded([functools.partial(self._reader, key) for key in wanted])
        failed = next((f for f in found if isinstance(f, Exception)), None)
        if failed is not None:
            raise failed
        answers: dict[str, Fetched] = {}
        size = 0
        for key, (data, validators) in zip(wanted, found, strict=True):  # type: ignore[misc]
            row = object_row(data, validators)
            answers[key] = (row, data)
            size += len(data) if data is not None else 0
            self._rows[key] = row
            if data is not None and row is not None:
                self._hand_over(key, data)
                if key.endswith("zarr.json"):
                    self._names[key] = _chunk_names(data, key)
        if wanted:
            self.opened.counter.add_read(size, requests=len(wanted))
        return {key: answers.get(key) or (self._rows[key], None) for key in keys}

    def _array_rows(self, paths: Sequence[str]) -> dict[str, list[tuple[str, Row]] | None]:
        """The (key, row) of each array's document and chunks; None for an array that cannot be
        stamped (absent, a group, no validators, too many chunks)."""
        todo = [p for p in dict.fromkeys(paths) if p not in self._arrays]
        documents = self._fetch([self.opened.key(p, "zarr.json") for p in todo])
        chunked: dict[str, list[str]] = {}
        for path in todo:
            key = self.opened.key(path, "zarr.json")
            names = self._names.get(key) if documents[key][0] not in (None, _ABSENT) else None
            if names is None:
                self._arrays[path] = None
            else:
                chunked[path] = [self.opened.key(path, name) for name in names]
        rows = self._fetch([k for keys in chunked.values() for k in keys])
        for path, keys in chunked.items():
            document = self.opened.key(path, "zarr.json")
            found = [(document, documents[document][0]), *((k, rows[k][0]) for k in keys)]
            self._arrays[path] = [(k, r) for k, r in found if r is not None] if all(r for _, r in found) else None
        return {p: self._arrays[p] for p in paths}

    def _level_rows(self, level: int) -> list[tuple[str, Row]] | None:
        """The (key, row) of what a level's set of nodes is derived from."""
        if level in self._levels:
            return self._levels[level]
        found: list[tuple[str, Row]] | None
        if not 1 <= level <= MAX_LEVELS:
            found = None
        else:
            group = self.opened.key(level_path(level), "zarr.json")
            row = self._fetch([group])[group][0]
            found = None if row is None else [(group, row)]
            if found is not None and level == 1:
                root = self.opened.key("index_root/embeddings", "zarr.json")
                root_row = self._fetch([root])[root][0]
                found = None if root_row is None or root_row == _ABSENT else [*found, (root, root_row)]
            elif found is not None:
                above = self._level_rows(level - 1)
                arrays = self._array_rows([node_array_path(level - 1, n, "node_ids")
                                           for n in self._level_nodes(level - 1)])
                if above is None or any(rows is None for rows in arrays.values()):
                    found = None
                else:
                    found = [*found, *above, *(pair for rows in arrays.values() for pair in rows or [])]
        self._levels[level] = found
        return found

    def stamp(self, groups: Sequence[tuple[str, int]], *, walk: bool = True) -> Stamps | None:
        """Stamps of (Zarr path, owner) pairs: with walk each path is an array (its document and
        chunks), else a level folder (what its set of nodes is derived from); None when any
        cannot be stamped. A failed request raises."""
        pairs: list[tuple[str, Row, int]] = []
        if walk:
            arrays = self._array_rows([path for path, _ in groups])
            for path, owner in groups:
                rows = arrays[path]
                if rows is None:
                    return None
                pairs += [(key, row, owner) for key, row in rows]
        else:
            for path, owner in groups:
                level = parse_level(path)
                rows = None if level is None else self._level_rows(level)
                if rows is None:
                    return None
                pairs += [(key, row, owner) for key, row in rows]
        return Stamps(KIND, tuple(k for k, _, _ in pairs), np.asarray([o for _, _, o in pairs], np.int64),
                      np.asarray([r for _, r, _ in pairs], np.int64).reshape(len(pairs), _FIELDS))

    def unchanged(self, stamps: Stamps, owners: Sequence[int] | None = None) -> bool:
        """Whether every object of the owners (all when None; those every answer depends on
        always) answers as stamped, each asked for once in this stamper's life; False when a
        request fails."""
        picked = stamps.subset(owners) if owners is not None else stamps
        expected = [(key, tuple(row)) for key, row in zip(picked.paths, picked.values.tolist(), strict=True)]
        try:
            now = self._fetch([key for key, _ in expected])
        except Exception:  # a request that fails proves nothing: the entry is not answered
            return False
        return all(now[key][0] == row for key, row in expected)
