"""The group/array hierarchy of a store, listed lazily one level at a time.

Children are found with the store's directory listing (never ``Group.members()``), each child's
metadata document is read once, kept as raw bytes, and parsed only when someone asks for details.
A child whose metadata cannot be read or parsed becomes an error node; its siblings are unaffected.
"""

from __future__ import annotations

import json
import math
import re
import sys
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeVar

import numpy as np
import zarr
from zarr.storage import MemoryStore, StorePath

from ecpfs_viewer.model.errors import MetadataError, TransportError, UserError, describe_exception, transport_failure
from ecpfs_viewer.model.foreground import give_way
from ecpfs_viewer.model.formatting import format_shape
from ecpfs_viewer.model.storage import event_loop
from ecpfs_viewer.model.storage.opening import METADATA_KEYS, OpenedStore, join_key
from ecpfs_viewer.model.storage.read_scope import drained_reads
from ecpfs_viewer.model.zarrtree.read_guard import ReadTooLarge, check_read


class NodeKind(StrEnum):
    GROUP = "group"
    ARRAY = "array"
    IMPLICIT_GROUP = "implicit group"
    ERROR = "error"

    @property
    def is_container(self) -> bool:
        return self in (NodeKind.GROUP, NodeKind.IMPLICIT_GROUP)


_NODE_TYPE_RE = re.compile(rb'"node_type"\s*:\s*"(group|array)"')
_NATURAL_RE = re.compile(r"(\d+)")
_NAME_NUMBER_RE = re.compile(r"(\D*)(\d+)$")


def natural_key(name: str) -> tuple[Any, ...]:
    """Sort key that puts node_2 before node_10 and lvl_2 before lvl_10."""
    simple = _NAME_NUMBER_RE.match(name)
    if simple:  # fast path for the common 'node_123': same key the general split gives
        return (simple.group(1).lower(), int(simple.group(2)), "")
    return tuple(int(part) if part.isdigit() else part.lower() for part in _NATURAL_RE.split(name))




def parent_path(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def base_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Node:
    """One entry of the hierarchy as the listing found it (kind known, details parsed later)."""

    path: str  # relative to the Zarr root; '' is the root
    kind: NodeKind
    zarr_format: int | None  # 3, 2, or None for an implicit group / unreadable node
    raw: bytes | None = None  # the metadata document exactly as stored (zarr.json or .zarray/.zgroup)
    raw_attrs: bytes | None = None  # v2 .zattrs, if any
    error: str | None = None
    #: the metadata could not be read on the way (no answer, a dropped connection): the node is
    #: "could not be read", never missing or invalid, and is not kept (asked again next time)
    unread: bool = False

    @property
    def name(self) -> str:
        return base_name(self.path) if self.path else "/"

    @property
    def metadata_key(self) -> str | None:
        if self.zarr_format == 3:
            return "zarr.json"
        if self.zarr_format == 2:
            return ".zarray" if self.kind is NodeKind.ARRAY else ".zgroup"
        return None


@dataclass(frozen=True)
class ArrayDetails:
    """What the metadata says about an array, decoded without reading any chunk."""

    shape: tuple[int, ...]
    dtype: str  # numpy-style name, or the Zarr data type name when numpy has none
    chunk_shape: tuple[int, ...]  # the read chunk (inner chunk of a shard)
    shard_shape: tuple[int, ...] | None
    fill_value: Any
    codecs: list[dict[str, Any]]  # as stored: name + configuration
    dimension_names: tuple[str | None, ...] | None
    chunk_key_encoding: dict[str, Any]
    zarr_format: int
    itemsize: int | None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # exact (numpy's int64 product wraps on a declared 10^10 x 10^10)

    @property
    def logical_bytes(self) -> int | None:
        return None if self.itemsize is None else self.size * self.itemsize

    def describe_shape(self) -> str:
        return format_shape(self.shape)


@dataclass(frozen=True)
class NodeDetails:
    """A node with its parsed metadata; for arrays, ArrayDetails; error set when parsing failed."""

    node: Node
    document: dict[str, Any] | None
    attributes: dict[str, Any] = field(default_factory=dict)
    array: ArrayDetails | None = None
    error: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def writer(self) -> str | None:
        """The library that wrote the node, from its attributes, e.g. 'zarrs 0.23.14'."""
        return writer_of(self.attributes) if isinstance(self.attributes, dict) else None


def writer_of(attributes: dict[str, Any]) -> str | None:
    """The library that wrote an array, from its attributes ('zarrs 0.23.14', 'ecpfs-viewer 0.1')."""
    for key, name in (("_zarrs", "zarrs"), ("_ecpfs_viewer", "ecpfs-viewer")):
        info = attributes.get(key)
        if isinstance(info, dict):
            return f"{name} {info.get('version', '?')}"
    return None


class Lister(Protocol):
    """Children of a group found without listing it, for a store that cannot list folders (a
    static web server): e.g. derived from what an index's own arrays say (model/ecpfs)."""

    def __call__(self, h: Hierarchy, path: str, /) -> list[Node]: ...


class PathCache(Protocol):
    """What others derive from a hierarchy and keep beside it (see :meth:`Hierarchy.cache`)."""

    def forget(self, path: str, /) -> None:
        """Drop what a refresh of path (and below) makes stale."""


_Cache = TypeVar("_Cache", bound=PathCache)


class Hierarchy:
    """Lazy, cached view of the nodes of one opened store.

    ``lister`` gives the children of a group when the store cannot list folders; whoever opens
    the store knows what it holds and passes one (an ecpfs index derives its tree)."""

    def __init__(self, store: OpenedStore, lister: Lister | None = None) -> None:
        self.store = store
        self.lister = lister
        self._lock = threading.RLock()
        self._children: dict[str, list[Node]] = {}
        self._nodes: dict[str, Node] = {}
        self._details: dict[str, NodeDetails] = {}
        self._arrays: dict[str, zarr.AsyncArray[Any]] = {}
        self._unread_until: dict[str, float] = {}  # listings holding unanswered children: kept until then
        self._caches: dict[type[PathCache], PathCache] = {}  # kept beside the nodes, dropped by refresh

    # -- listing --------------------------------------------------------------------------------
    def root(self) -> Node:
        with self._lock:
            if "" not in self._nodes:
                self._nodes[""] = self._probe("", is_dir=True) or Node("", NodeKind.IMPLICIT_GROUP, None)
            return self._nodes[""]

    def node(self, path: str) -> Node:
        """The node at path, probing the store if its parent was never listed."""
        path = path.strip("/")
        with self._lock:
            if path in self._nodes:
                return self._nodes[path]
        if not path:
            return self.root()
        found = self._probe(path, is_dir=None)
        if found is not None and found.kind is NodeKind.IMPLICIT_GROUP and not self._has_entries(path):
            found = None  # nothing is stored there: a path that does not exist is not an implicit group
        if found is None:
            found = Node(path, NodeKind.ERROR, None, error=f"{path}: no such node")
        if found.unread:
            return found
        with self._lock:
            self._nodes.setdefault(path, found)
            return self._nodes[path]

    def probe(self, path: str) -> Node | None:
        """The node at path read directly (its parent could not be listed); None if nothing is there.

        Unlike :meth:`node` this does not cache a 'no such node' error, so a folder that refuses
        listing still gives the children whose documents can be read, and error nodes for the rest.
        """
        path = path.strip("/")
        with self._lock:
            if path in self._nodes:
                return self._nodes[path]
        found = self._probe(path, is_dir=True)
        if found is None or (found.kind is NodeKind.IMPLICIT_GROUP and not self._has_entries(path)):
            return None
        if found.unread:
            return found
        with self._lock:
            return self._nodes.setdefault(path, found)

    def _has_entries(self, path: str) -> bool:
        try:
            return bool(self.store.list_dir(path))
        except OSError:
            return False

    def held(self, path: str) -> Node | None:
        """The node at path if its metadata was already read (no I/O)."""
        with self._lock:
            return self._nodes.get(path.strip("/"))

    def prefetch(self, paths: Sequence[str]) -> dict[str, Node]:
        """Read the metadata of the paths not held yet in one batch (concurrent on remote stores).

        Paths with no metadata are not kept, so :meth:`node` still explains them; nor are those that
        could not be read on the way: they are returned (path -> node), so a caller need not wait
        for them a second time.
        """
        with self._lock:
            wanted = [p for p in dict.fromkeys(p.strip("/") for p in paths) if p not in self._nodes]
        if not wanted:
            return {}
        found = self._probe_many(wanted, [False] * len(wanted))
        with self._lock:
            for node in found:
                if node.kind is not NodeKind.IMPLICIT_GROUP and not node.unread:
                    self._nodes.setdefault(node.path, node)
        return {node.path: node for node in found if node.unread}

    def is_listed(self, path: str) -> bool:
        with self._lock:
            return path.strip("/") in self._children

    def children(self, path: str = "") -> list[Node]:
        """The child nodes of a group, in natural order; listed once, then cached. A listing with
        children that could not be read on the way is kept for one store timeout only (the same
        command does not wait for them twice; after that, or on refresh, they are asked again)."""
        path = path.strip("/")
        with self._lock:
            cached = self._children.get(path)
            if cached is not None and time.monotonic() >= self._unread_until.get(path, float("inf")):
                del self._children[path], self._unread_until[path]
                cached = None
        if cached is not None:
            return cached
        if self.lister is not None:  # a store that cannot list (static HTTP): found another way
            derived = self.lister(self, path)
            with self._lock:
                self._keep_listing(path, derived)
                self._nodes.update((n.path, n) for n in derived if n.raw is not None and not n.unread)
            return derived
        try:
            entries = self.store.list_dir(path)
        except FileNotFoundError:
            entries = []
        except OSError as exc:
            if transport_failure(exc) is not None:
                raise Unanswered(f"{path or '/'}: could not be listed ({describe_exception(exc)})") from exc
            raise OSError(f"{path or '/'}: cannot list ({exc.strerror or exc})") from exc
        candidates = sorted(((n, d) for n, d in entries if n not in METADATA_KEYS and d is not False),
                            key=lambda e: natural_key(e[0]))
        nodes = self._probe_many([join_key(path, n) for n, _ in candidates], [d for _, d in candidates])
        with self._lock:
            self._keep_listing(path, nodes)
            for node in nodes:
                if not node.unread:
                    self._nodes[node.path] = node
        return nodes

    def retry(self) -> None:
        """Ask again for what could not be read on the way (Retry): the server, and every listing
        that lacks unanswered children; what was read stays."""
        with self._lock:
            for path in list(self._unread_until):
                self._children.pop(path, None)
            self._unread_until.clear()
        self.store.retry()

    def _keep_listing(self, path: str, nodes: list[Node]) -> None:
        """Keep a listing (the lock held); one missing what was not answered only for a timeout."""
        self._children[path] = nodes
        self._unread_until.pop(path, None)
        if any(n.unread for n in nodes):
            server = self.store.waits_on()
            self._unread_until[path] = time.monotonic() + (server[1] if server else 0.0)

    def loaded_paths(self) -> list[str]:
        """Every path already known (listed), for a filter that must not list the whole store."""
        with self._lock:
            return sorted(self._nodes, key=natural_key)

    def refresh(self, path: str = "") -> None:
        """Forget everything cached at and below path so the next call re-reads the store."""
        path = path.strip("/")
        prefix = path + "/" if path else ""
        with self._lock:
            for cache in (self._children, self._nodes, self._details, self._arrays, self._unread_until):
                for key in [k for k in cache if k == path or k.startswith(prefix)]:
                    del cache[key]
            for derived in self._caches.values():
                derived.forget(path)
        self.store.retry()  # a server taken for not answering is asked again

    def cache(self, kind: type[_Cache]) -> _Cache:
        """The one ``kind()`` kept beside this hierarchy (made on first use), so what others derive
        from its nodes (level statistics, a derived tree) lives and is refreshed with them."""
        with self._lock:
            found = self._caches.get(kind)
            if found is None:
                found = self._caches[kind] = kind()
            assert isinstance(found, kind)
            return found

    def _probe(self, path: str, is_dir: bool | None) -> Node | None:
        found = self._probe_many([path], [is_dir])
        return found[0] if found else None

    def _probe_many(self, paths: list[str], is_dirs: list[bool | None]) -> list[Node]:
        """Read the metadata of several paths at once and classify each; files are left out.

        A path whose metadata cannot be read (permission denied, I/O error) becomes an error node;
        the others are unaffected.
        """
        root = self.store.root
        bases = [f"{root}/{p}/" if root and p else (f"{p}/" if p else (f"{root}/" if root else ""))
                 for p in paths]
        v3 = self.store.read_many_or_errors([base + "zarr.json" for base in bases])
        nodes: list[Node | None] = [None] * len(paths)
        missing: list[int] = []
        for i, raw in enumerate(v3):
            if i % 64 == 0:
                give_way()
            if raw is None:
                missing.append(i)
            elif isinstance(raw, Exception):
                nodes[i] = _unreadable(paths[i], "zarr.json", raw)
            else:
                nodes[i] = _classify_v3(paths[i], raw)
        if missing:
            keys = [bases[i] + name for i in missing for name in (".zarray", ".zgroup", ".zattrs")]
            found = self.store.read_many_or_errors(keys)
            unknown: list[int] = []
            for n, i in enumerate(missing):
                zarray, zgroup, zattrs = found[3 * n: 3 * n + 3]
                failed = next((v for v in (zarray, zgroup, zattrs) if isinstance(v, Exception)), None)
                if failed is not None:
                    nodes[i] = _unreadable(paths[i], "metadata", failed)
                elif zarray is not None:
                    nodes[i] = _classify_v2(paths[i], zarray, zattrs, NodeKind.ARRAY)  # type: ignore[arg-type]
                elif zgroup is not None:
                    nodes[i] = _classify_v2(paths[i], zgroup, zattrs, NodeKind.GROUP)  # type: ignore[arg-type]
                elif is_dirs[i] is None and paths[i]:
                    unknown.append(i)
                else:
                    nodes[i] = Node(paths[i], NodeKind.IMPLICIT_GROUP, None)
            if unknown:
                # A name without metadata is a directory unless it is itself a stored key (a file).
                values = self.store.read_many_or_errors([bases[i].rstrip("/") for i in unknown])
                for i, value in zip(unknown, values, strict=False):
                    if value is None:
                        nodes[i] = Node(paths[i], NodeKind.IMPLICIT_GROUP, None)
        return [n for n in nodes if n is not None]

    # -- details --------------------------------------------------------------------------------
    def details(self, path: str) -> NodeDetails:
        """Parse a node's metadata (cached); never raises, errors are carried in the result."""
        path = path.strip("/")
        with self._lock:
            cached = self._details.get(path)
        if cached is not None:
            return cached
        node = self.node(path)
        result = parse_details(node)
        if not node.unread:
            with self._lock:
                self._details[path] = result
        return result

    def array_details(self, path: str, error: type[Exception] = MetadataError) -> ArrayDetails:
        """The ArrayDetails of path, or `error` raised with a message saying why there are none (by
        default a MetadataError: a user error, a ValueError as before)."""
        path = path.strip("/")
        info = self.details(path)
        if info.node.unread:
            raise Unanswered(info.error or f"{path or '/'}: could not be read")
        if info.error:
            raise error(info.error)
        if info.array is None or info.document is None:
            raise error(f"{path or '/'} is not an array")
        return info.array

    def open_async_array(self, path: str) -> zarr.AsyncArray[Any]:
        """A zarr AsyncArray built from the metadata already read (no second metadata read).

        Its reads are awaited on the model's loop (``event_loop.run``), never through zarr's
        synchronous Array, so every request to this store is made from one event loop."""
        path = path.strip("/")
        with self._lock:
            if path in self._arrays:
                return self._arrays[path]
        self.array_details(path)  # raises with the reason when path is no readable array
        info = self.details(path)
        document = dict(info.document or {})
        if info.node.zarr_format == 2 and info.attributes:
            document["attributes"] = info.attributes
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            array = zarr.AsyncArray.from_dict(StorePath(self.store.zarr_store, self.store.key(path)), document)
        with self._lock:
            self._arrays[path] = array
        return array

    def read_array(self, path: str, selection: Any = ...) -> np.ndarray:
        """Read a selection of an array; raises with the path in the message on failure.

        A selection whose declared size is over the read caps (``read_guard``, ``limits``) is refused before
        anything is allocated or fetched.
        """
        try:
            check_read(path or "/", self.array_details(path), selection)  # refuses what metadata makes too costly
            with drained_reads():  # a chunk that fails stops the read's other chunks at once
                return np.asarray(event_loop.run(self.open_async_array(path).getitem(selection)))
        except ReadTooLarge as exc:
            raise ArrayReadError(str(exc)) from exc
        except Exception as exc:
            raise array_read_error(path, exc) from exc

    def read_scalar(self, path: str) -> Any:
        """The value of a rank-0 (or 1-element) array as a Python object."""
        value = self.read_array(path, ...)
        return value.item() if isinstance(value, np.ndarray) and value.size == 1 else value


class ArrayReadError(UserError):
    """Reading array data failed (corrupt chunk, unknown codec...); the message names the path."""


class Unanswered(TransportError):
    """What a read needed could not be read on the way (the server did not answer); not a fact about
    the index: asked again on a retry."""


class ArrayUnanswered(ArrayReadError, Unanswered):
    """Array data that could not be read on the way (no answer, a dropped connection)."""


def array_read_error(path: str, exc: BaseException) -> ArrayReadError:
    """The ArrayReadError for a failed read of path: ArrayUnanswered when it failed on the way."""
    unanswered = transport_failure(exc)
    if unanswered is not None:
        reason = describe_exception(unanswered)
        said = reason if "could not be read" in reason else f"could not be read ({reason})"
        return ArrayUnanswered(f"{path or '/'}: {said}")
    return ArrayReadError(f"{path or '/'}: {describe_exception(exc)}")


def _unreadable(path: str, what: str, exc: Exception) -> Node:
    where = join_key(path, what) or what
    if transport_failure(exc) is not None:
        return Node(path, NodeKind.ERROR, None, error=f"{where}: could not be read ({describe_exception(exc)})",
                    unread=True)
    reason = getattr(exc, "strerror", None) or describe_exception(exc)
    return Node(path, NodeKind.ERROR, None, error=f"{where}: cannot read ({reason})")


_KIND_OF_DOCUMENT: dict[bytes, NodeKind] = {}  # small documents seen before (sibling groups repeat)


def _classify_v3(path: str, raw: bytes) -> Node:
    known = _KIND_OF_DOCUMENT.get(raw)
    if known is not None:
        return Node(path, known, 3, raw=raw)
    node = _classify_v3_document(path, raw)
    if node.kind is not NodeKind.ERROR and len(raw) <= 256 and len(_KIND_OF_DOCUMENT) < 4096:
        _KIND_OF_DOCUMENT[raw] = node.kind
    return node


def _classify_v3_document(path: str, raw: bytes) -> Node:
    first = raw.find(b'"node_type"')
    if first >= 0 and raw.find(b'"node_type"', first + 11) < 0:
        # The common case, one node_type field: decide without parsing the whole document.
        value = raw[first + 11: first + 48].lstrip(b" \t\r\n")
        if value.startswith(b":"):
            value = value[1:].lstrip(b" \t\r\n")
            if value.startswith(b'"group"'):
                return Node(path, NodeKind.GROUP, 3, raw=raw)
            if value.startswith(b'"array"'):
                return Node(path, NodeKind.ARRAY, 3, raw=raw)
    matches = _NODE_TYPE_RE.findall(raw)
    if matches:  # nested documents (consolidated metadata): only the top-level field counts
        try:
            top = json.loads(raw).get("node_type")
        except (ValueError, AttributeError, UnicodeDecodeError, RecursionError):
            top = None
        if top in ("group", "array"):
            return Node(path, NodeKind.GROUP if top == "group" else NodeKind.ARRAY, 3, raw=raw)
    error = _document_error(path, raw, "zarr.json")
    return Node(path, NodeKind.ERROR, 3, raw=raw, error=error)


def _classify_v2(path: str, raw: bytes, attrs: bytes | None, kind: NodeKind) -> Node:
    return Node(path, kind, 2, raw=raw, raw_attrs=attrs)


def load_json_object(raw: bytes, where: str) -> dict[str, Any] | str:
    """A stored metadata document as a dict, or the message saying why it is not one."""
    try:
        document = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return f"{where}: not valid JSON ({exc})"
    except RecursionError:
        return f"{where}: nested too deeply to read (more than about {sys.getrecursionlimit()} levels)"
    if not isinstance(document, dict):
        return f"{where}: metadata must be a JSON object"
    return document


def _document_error(path: str, raw: bytes, key: str) -> str:
    document = load_json_object(raw, join_key(path, key) or key)
    if isinstance(document, str):
        return document
    where = join_key(path, key) or key
    node_type = document.get("node_type")
    if node_type is None:
        return f"{where}: no node_type field"
    return f"{where}: unknown node_type {node_type!r} (expected 'group' or 'array')"


def parse_details(node: Node) -> NodeDetails:
    """Decode a node's stored metadata; failures become an error value, never an exception."""
    if node.kind is NodeKind.IMPLICIT_GROUP:
        return NodeDetails(node, None)
    if node.raw is None:
        return NodeDetails(node, None, error=node.error or f"{node.path or '/'}: no metadata")
    key = node.metadata_key or "zarr.json"
    where = join_key(node.path, key) or key
    document = load_json_object(node.raw, where)
    if isinstance(document, str):
        return NodeDetails(node, None, error=document)
    if node.kind is NodeKind.ERROR:
        return NodeDetails(node, document, error=node.error)
    attributes: dict[str, Any] = {}
    if node.zarr_format == 3:
        attributes = document.get("attributes") or {}
        if document.get("zarr_format") != 3:
            return NodeDetails(node, document, attributes,
                               error=f"{where}: zarr_format is {document.get('zarr_format')!r}, expected 3")
    elif node.raw_attrs:
        try:
            attributes = json.loads(node.raw_attrs)
        except (ValueError, RecursionError) as exc:
            return NodeDetails(node, document, error=f"{join_key(node.path, '.zattrs')}: not valid JSON ({exc})")
    if not isinstance(attributes, dict):
        return NodeDetails(node, document, error=f"{where}: attributes must be a JSON object")
    if node.kind is not NodeKind.ARRAY:
        return NodeDetails(node, document, attributes)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            array = _array_details(document, node.zarr_format or 3)
        except Exception as exc:  # zarr raises many types for bad metadata; all become an error node
            return NodeDetails(node, document, attributes, error=f"{where}: {describe_exception(exc)}")
    return NodeDetails(node, document, attributes, array, warnings=tuple(str(w.message) for w in caught))


# A parsed metadata object of each format, from a minimal document: its from_dict (the public
# zarr.abc.metadata.Metadata contract) parses and refuses documents. The metadata classes live in
# zarr.core, which is internal; AsyncArray.from_dict would do too, but it also builds a codec
# pipeline and a config, 15 % (zarr 3.1) to 50 % (zarr 3.4) more time for each of a level's
# 8,000 documents.
_MINIMAL_ARRAYS: dict[int, dict[str, Any]] = {
    3: {"zarr_format": 3, "node_type": "array", "shape": [1], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]},
    2: {"zarr_format": 2, "shape": [1], "chunks": [1], "dtype": "|u1", "compressor": None, "fill_value": 0,
        "order": "C", "filters": None},
}
_METADATA_PARSERS: dict[int, Any] = {}


def _parse_metadata(document: dict[str, Any], zarr_format: int) -> Any:
    """zarr's parsed metadata of an array document of zarr_format (2 or 3); raises for a bad one."""
    if document.get("zarr_format") != zarr_format:
        raise ValueError(f"zarr_format is {document.get('zarr_format')!r}, expected {zarr_format}")
    parser = _METADATA_PARSERS.get(zarr_format)
    if parser is None:
        nowhere = StorePath(MemoryStore(), "")
        parser = _METADATA_PARSERS[zarr_format] = zarr.AsyncArray.from_dict(
            nowhere, dict(_MINIMAL_ARRAYS[zarr_format])).metadata
    return parser.from_dict(dict(document))


def _array_details(document: dict[str, Any], zarr_format: int) -> ArrayDetails:
    give_way()  # zarr's parse is slow Python (a 4,000-node level parses 8,000 of these)
    if zarr_format == 3:
        meta = _parse_metadata(document, 3)
        codecs: list[dict[str, Any]] = [c if isinstance(c, dict) else {"name": str(c)}
                                        for c in document.get("codecs", [])]
        chunk_shape = tuple(int(c) for c in meta.chunk_grid.chunk_shape)
        shard_shape = None
        for codec in codecs:
            if codec.get("name") == "sharding_indexed":
                shard_shape = chunk_shape
                chunk_shape = tuple(int(c) for c in codec.get("configuration", {}).get("chunk_shape", chunk_shape))
        dtype = _dtype_name(meta.data_type, document.get("data_type"))
        itemsize = _itemsize(meta.data_type)
        encoding = document.get("chunk_key_encoding", {"name": "default"})
        names = meta.dimension_names
        fill = document.get("fill_value")
    else:
        meta2 = _parse_metadata(document, 2)
        codecs = []
        for f in document.get("filters") or []:
            codecs.append({"name": f.get("id", "?"), "configuration": {k: v for k, v in f.items() if k != "id"}})
        if document.get("compressor"):
            comp = document["compressor"]
            codecs.append({"name": comp.get("id", "?"), "configuration": {k: v for k, v in comp.items() if k != "id"}})
        chunk_shape = tuple(int(c) for c in meta2.chunks)
        shard_shape = None
        dtype = _dtype_name(meta2.dtype, document.get("dtype"))
        itemsize = _itemsize(meta2.dtype)
        encoding = {"name": "v2", "configuration": {"separator": document.get("dimension_separator", ".")}}
        names = None
        fill = document.get("fill_value")
        meta = meta2
    shape = tuple(int(s) for s in meta.shape)
    return ArrayDetails(shape, dtype, chunk_shape, shard_shape, fill, codecs, names, encoding, zarr_format, itemsize)


def _dtype_name(data_type: Any, stored: Any) -> str:
    try:
        native = data_type.to_native_dtype()
        if native.kind == "T":
            return "string"
        return str(native.name if native.kind != "U" and native.kind != "S" else native.str)
    except Exception:
        return stored if isinstance(stored, str) else json.dumps(stored)


def _itemsize(data_type: Any) -> int | None:
    try:
        native = data_type.to_native_dtype()
        return None if native.kind in "TO" else int(native.itemsize)
    except Exception:
        return None
