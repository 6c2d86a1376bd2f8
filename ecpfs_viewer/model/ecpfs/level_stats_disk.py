"""A remote index's level statistics kept in the cache folder, so that a later process's ``check``
(or level page) neither asks for nor parses the 80,000 node documents of a 2,000,000-item index.

Statistics are computed from the documents the cache folder keeps (model/ecpfs/index_cache.py),
which are trusted while the index's fingerprint is unchanged; the statistics made from them are
kept under that same fingerprint (an entry made before the index changed is never read), and
only while the store reads from the cache folder (a refresh asks the server). Only complete
statistics are kept. Each entry names the version of the viewer that wrote it: the findings are
its words.
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from ecpfs_viewer import __version__
from ecpfs_viewer.model.ecpfs.findings import Finding, Severity
from ecpfs_viewer.model.ecpfs.index_cache import attach_cache
from ecpfs_viewer.model.guarded_json import parse_json
from ecpfs_viewer.model.storage.disk_cache import StoreCache
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

#: The cache entry of one level's statistics.
ENTRY = "level_stats_{level}.npz"
_FORMAT = 1
_Stats = TypeVar("_Stats")


def _kept_cache(h: Hierarchy) -> StoreCache | None:
    """The cache entries of h's index when its store reads its documents from the cache folder (a
    remote index, not refreshed), else None."""
    if h.store.kind != "remote" or h.store.zarr_store.documents is None:
        return None
    return attach_cache(h)


def load_level_stats(h: Hierarchy, level: int, key: tuple[Any, ...], kind: Callable[..., _Stats]) -> _Stats | None:
    """The statistics of `level` kept for this index as it is now and computed for `key`, else None."""
    cache = _kept_cache(h)
    data = None if cache is None else cache.read(ENTRY.format(level=level))
    if data is None:
        return None
    try:
        return _from_bytes(data, kind, key)
    except (ValueError, KeyError, TypeError, OSError):  # not an entry this version can read: computed again
        return None


def save_level_stats(h: Hierarchy, level: int, key: tuple[Any, ...], stats: Any) -> None:
    """Keep complete statistics of `level` for later processes (nothing when the store keeps nothing)."""
    cache = _kept_cache(h)
    if cache is not None:
        cache.write(ENTRY.format(level=level), _to_bytes(stats, key))


def _encode(value: Any) -> Any:
    if isinstance(value, Finding):
        return {"finding": [value.severity.value, value.path, value.message, value.sampled]}
    if isinstance(value, frozenset):
        return {"frozenset": sorted(value)}
    if isinstance(value, tuple):
        return {"tuple": [_encode(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[k, _encode(v)] for k, v in value.items()]}
    if isinstance(value, np.integer | np.floating | np.bool_):
        return value.item()
    return value  # int, float, str, bool, None


def _decode(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    (tag, inner), = value.items()
    if tag == "finding":
        severity, path, message, sampled = inner
        return Finding(Severity(severity), path, message, sampled)
    if tag == "frozenset":
        return frozenset(inner)
    if tag == "tuple":
        return tuple(_decode(v) for v in inner)
    if tag == "dict":
        return {k: _decode(v) for k, v in inner}
    raise ValueError(f"unknown tag {tag!r}")


def _to_bytes(stats: Any, key: tuple[Any, ...]) -> bytes:
    arrays: dict[str, np.ndarray] = {}
    fields: dict[str, Any] = {}
    for field in dataclasses.fields(stats):
        value = getattr(stats, field.name)
        if isinstance(value, np.ndarray):
            arrays[field.name] = value
        else:
            fields[field.name] = _encode(value)
    header = {"format": _FORMAT, "version": __version__, "key": _encode(tuple(key)), "fields": fields}
    buffer = io.BytesIO()
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), np.uint8)
    np.savez(buffer, **arrays)  # type: ignore[arg-type]  # numpy types the keyword arrays as allow_pickle
    return buffer.getvalue()


def _from_bytes(data: bytes, kind: Callable[..., _Stats], key: tuple[Any, ...]) -> _Stats | None:
    with np.load(io.BytesIO(data), allow_pickle=False) as saved:
        header = parse_json(saved["header"].tobytes(), "saved level statistics")
        if header.get("format") != _FORMAT or header.get("version") != __version__:
            return None
        if header.get("key") != json.loads(json.dumps(_encode(tuple(key)))):
            return None
        values = {name: _decode(value) for name, value in header["fields"].items()}
        values.update({name: saved[name] for name in saved.files if name != "header"})
    return kind(**values)
