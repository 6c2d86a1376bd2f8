"""Reading an index's metadata cheaply: array documents parsed with plain JSON, scalars, listings.

Every lookup goes through the Hierarchy's cached directory listings; problems are collected as
findings on the reader, so a broken store still gives a summary.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.findings import Finding
from ecpfs_viewer.model.errors import MetadataError, describe_exception, transport_failure
from ecpfs_viewer.model.zarrtree.documents import load_json_object
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import Node, NodeKind


@dataclass(frozen=True)
class ArrayMeta:
    """Shape, data type and chunk rows of an array, parsed straight from its stored document.

    ``Hierarchy.details`` builds zarr's full metadata object; for thousands of node arrays a
    plain ``json.loads`` of the cached bytes is much cheaper (benchmarks/bench_design.py).
    """

    path: str
    shape: tuple[int, ...]
    data_type: str  # Zarr v3 name ('float32', 'string', 'uint32'...) or numpy name for v2
    chunk_shape: tuple[int, ...]
    attributes: dict[str, Any]

    @property
    def rows(self) -> int:
        return self.shape[0] if self.shape else 1

    @property
    def chunk_rows(self) -> int | None:
        return self.chunk_shape[0] if self.chunk_shape else None


#: Parsed documents kept by their bytes (a level's leaves share a few hundred documents that
#: differ only in shape); at most this many, of at most _PARSED_BYTES bytes each.
_PARSED_KEPT = 4096
_PARSED_BYTES = 4096
_parsed: dict[tuple[bytes, int | None], ArrayMeta] = {}


def parse_array_meta(path: str, raw: bytes, zarr_format: int | None = 3) -> ArrayMeta | str:
    """ArrayMeta from a stored ``zarr.json`` (or v2 ``.zarray``); an error message otherwise.

    A document parsed before (the same bytes) is not parsed again: reading every leaf's metadata
    is then mostly reading the files."""
    key = (raw, zarr_format)
    known = _parsed.get(key) if len(raw) <= _PARSED_BYTES else None
    if known is not None:
        return ArrayMeta(path, known.shape, known.data_type, known.chunk_shape, dict(known.attributes))
    parsed = _parse_array_meta(path, raw, zarr_format)
    if isinstance(parsed, ArrayMeta) and len(raw) <= _PARSED_BYTES:
        if len(_parsed) >= _PARSED_KEPT:
            _parsed.clear()
        _parsed[key] = ArrayMeta("", parsed.shape, parsed.data_type, parsed.chunk_shape, dict(parsed.attributes))
    return parsed


def _parse_array_meta(path: str, raw: bytes, zarr_format: int | None) -> ArrayMeta | str:
    where = f"{path}/{'zarr.json' if zarr_format != 2 else '.zarray'}"
    doc = load_json_object(raw, where)
    if isinstance(doc, str):
        return doc
    try:
        shape = dimensions(doc["shape"], "shape", minimum=0)
        if zarr_format == 2:
            data_type = np.dtype(doc["dtype"]).name if isinstance(doc["dtype"], str) else json.dumps(doc["dtype"])
            chunks = dimensions(doc.get("chunks") or shape, "chunks", minimum=1)
        else:
            stored = doc["data_type"]
            data_type = stored if isinstance(stored, str) else str(stored.get("name", stored))
            grid = doc.get("chunk_grid") or {}
            chunks = dimensions((grid.get("configuration") or {}).get("chunk_shape", shape), "chunk_shape", minimum=1)
    except KeyError as exc:
        return f"{where}: invalid array metadata (no {exc} field)"
    except (TypeError, ValueError, AttributeError, OverflowError, RecursionError) as exc:
        return f"{where}: invalid array metadata ({describe_exception(exc)})"
    stored_attributes = doc.get("attributes")
    attributes: dict[str, Any] = stored_attributes if isinstance(stored_attributes, dict) else {}
    return ArrayMeta(path, shape, data_type, chunks, attributes)


#: Largest dimension accepted in a shape (zarr-python and numpy index with int64).
MAX_DIMENSION = 2**63 - 1


def dimensions(value: Any, field: str, *, minimum: int) -> tuple[int, ...]:
    """A shape-like list of JSON integers, checked: whole numbers from minimum to 2^63-1.

    ``int(1e400)`` raises OverflowError and ``int(2.5)`` silently truncates, so values are checked
    before they are used, and the error names the field and the value.
    """
    if not isinstance(value, (list, tuple)):
        raise MetadataError(f"{field} must be a list of integers, found {_short(value)}")
    if len(value) > 32:
        raise MetadataError(f"{field} has {len(value)} dimensions (at most 32 are supported)")
    result: list[int] = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int):
            raise MetadataError(f"{field} must hold whole numbers, found {_short(item)}")
        if not minimum <= item <= MAX_DIMENSION:
            raise MetadataError(f"{field} value {_short(item)} is out of range ({minimum} to 2^63-1)")
        result.append(item)
    return tuple(result)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class MetadataReader:
    """Looks paths up through directory listings (cached by Hierarchy) and collects findings."""

    def __init__(self, h: Hierarchy) -> None:
        self.h = h
        self.findings: list[Finding] = []
        self._maps: dict[str, dict[str, Node] | None] = {}
        self._unlisted: set[str] = set()  # containers that exist but could not be listed
        self._metas: dict[str, ArrayMeta | None] = {}

    def children(self, path: str) -> dict[str, Node] | None:
        """Children of a container path by name, or None when it does not exist or cannot be listed."""
        if path in self._maps:
            return self._maps[path]
        result: dict[str, Node] | None = None
        parent, _, name = path.rpartition("/")
        if path:
            above = self.children(parent)
            node = None if above is None else above.get(name)
            if node is None or not node.kind.is_container:
                if node is not None and node.kind is NodeKind.ERROR:
                    what = "unreadable" if node.raw is None else "unreadable metadata"
                    self.findings.append(Finding(fc.UNREADABLE_METADATA, path, f"{what}: {node.error}"))
                    self._unlisted.add(path)  # its children may still be readable one by one
                self._maps[path] = None
                return None
        try:
            result = {n.name: n for n in self.h.children(path)}
        except OSError as exc:
            if transport_failure(exc) is not None:
                raise  # not read: no fact about what is there (summarize says so)
            self.findings.append(Finding(fc.CANNOT_LIST, path, f"cannot list: {describe_exception(exc)}"))
            self._unlisted.add(path)
        self._maps[path] = result
        return result

    def node(self, path: str) -> Node | None:
        """The node at path; below a container that cannot be listed, probed directly.

        A folder that refuses listing (permission denied, a symlink loop) may still give its
        children's documents; what cannot be read becomes an error node, never 'missing'.
        """
        parent, _, name = path.rpartition("/")
        above = self.children(parent)
        if above is None and parent in self._unlisted:
            return self.h.probe(path)
        return None if above is None else above.get(name)

    def exists(self, path: str) -> bool:
        return self.node(path) is not None

    def unread(self, path: str) -> str | None:
        """Why path could not be read: its own document or a folder above it could not be read
        (so its absence is no fact); None when it was read, or is truly absent."""
        node = self.node(path)
        if node is not None:
            return node.error if node.kind is NodeKind.ERROR else None
        parts = path.split("/")
        for end in range(len(parts) - 1, -1, -1):
            above = "/".join(parts[:end])
            container = self.h.root() if not above else self.node(above)
            if container is not None and container.kind is NodeKind.ERROR:
                return container.error or f"{above or '/'}: could not be read"
        return None

    def array(self, path: str) -> ArrayMeta | None:
        """Metadata of the array at path; None (with a finding when broken) if it is not a usable array."""
        if path in self._metas:
            return self._metas[path]
        node = self.node(path)
        meta: ArrayMeta | None = None
        if node is None:
            pass
        elif node.kind is NodeKind.ERROR:
            self.findings.append(Finding(fc.UNREADABLE_METADATA, path, f"unreadable metadata: {node.error}"))
        elif node.kind is not NodeKind.ARRAY or node.raw is None:
            self.findings.append(Finding(fc.NOT_AN_ARRAY, path, f"expected an array, found {node.kind.value}"))
        else:
            parsed = parse_array_meta(path, node.raw, node.zarr_format)
            if isinstance(parsed, str):
                self.findings.append(Finding(fc.BAD_ARRAY_METADATA, path, parsed))
            else:
                meta = parsed
        self._metas[path] = meta
        return meta

    def scalar(self, path: str) -> Any:
        """The value of a scalar array, or None with an error finding naming the path."""
        if self.array(path) is None:
            return None
        try:
            value = self.h.read_scalar(path)
        except Exception as exc:  # ArrayReadError, or zarr refusing the metadata
            self.findings.append(Finding(fc.UNREADABLE_VALUE, path, f"unreadable value: {describe_exception(exc)}"))
            return None
        if isinstance(value, np.ndarray):
            self.findings.append(Finding(fc.WRONG_VALUE, path, f"expected a single value, found shape {value.shape}"))
            return None
        self._check_scalar_chunk(path)
        return value

    def _check_scalar_chunk(self, path: str) -> None:
        """Say so when a scalar's chunk is a folder: zarr then silently gives the fill value.

        An absent chunk is legitimate (writers skip chunks equal to the fill value).
        """
        if self.h.store.local_path is None:  # only a file system has folders; elsewhere a listing costs a request
            return
        node = self.node(path)
        meta = self._metas.get(path)
        if node is None or meta is None or meta.shape != ():
            return
        name = "0" if node.zarr_format == 2 or b'"v2"' in (node.raw or b"") else "c"
        try:
            listed = dict(self.h.store.list_dir(path))
        except OSError as exc:
            self.findings.append(Finding(fc.UNREADABLE_VALUE,
                                         path, f"cannot list the stored value ({describe_exception(exc)})"))
            return
        if listed.get(name) is True:
            self.findings.append(Finding(fc.VALUE_IS_FOLDER, path,
                                         f"{path}/{name} is a folder, not a stored value; the fill value is shown"))

    def integer(self, path: str) -> int | None:
        value = self.scalar(path)
        if value is None:
            return None
        try:
            return int(value)
        except (TypeError, ValueError, OverflowError):
            self.findings.append(Finding(fc.WRONG_VALUE, path, f"expected an integer, found {value!r}"))
            return None
