"""The group/array hierarchy of a store, listed lazily one level at a time.

Children are found with the store's directory listing (never ``Group.members()``), each child's
metadata document is read once, kept as raw bytes, and parsed only when someone asks for details.
A child whose metadata cannot be read or parsed becomes an error node; its siblings are unaffected.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import numpy as np
import zarr
from zarr.storage import StorePath

from ecpfs_viewer.model.errors import MetadataError, TransportError, UserError, describe_exception, transport_failure
from ecpfs_viewer.model.storage import event_loop
from ecpfs_viewer.model.storage.opening import METADATA_KEYS, OpenedStore, join_key
from ecpfs_viewer.model.storage.read_scope import drained_reads
from ecpfs_viewer.model.zarrtree.documents import classify_v2, classify_v3, parse_details
from ecpfs_viewer.model.zarrtree.guarded_codecs import array_stored_bound, bound_array, install
from ecpfs_viewer.model.zarrtree.nodes import ArrayDetails, Node, NodeDetails, NodeKind, sorted_naturally
from ecpfs_viewer.model.zarrtree.read_guard import ReadTooLarge, check_read, row_blocks


class Lister(Protocol):
    """Children of a group found without listing it, for a store that cannot list folders (a
    static web server): e.g. derived from what an index's own arrays say (model/ecpfs)."""

    def __call__(self, h: Hierarchy, path: str, /) -> list[Node]: ...


class PathCache(Protocol):
    """What others derive from a hierarchy and keep beside it (see :meth:`Hierarchy.cache`)."""

    def forget(self, path: str, /) -> None:
        """Drop what a refresh of path (and below) makes stale."""


_Cache = TypeVar("_Cache", bound=PathCache)

install()  # every chunk zarr-python decodes for the app is bounded, every shard index checked


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
        self._parsing: dict[str, threading.Lock] = {}  # paths whose details a thread is parsing now
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
            found = Node(path, NodeKind.ERROR, None, error=f"{path}: no such node", missing=True)
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

    def prefetch(self, paths: Sequence[str], *, keep: bool = True) -> dict[str, Node]:
        """Read the metadata of the paths not held yet in one batch (concurrent on remote stores).

        Paths with no metadata are not kept, so :meth:`node` still explains them; nor are those that
        could not be read on the way: they are returned (path -> node), so a caller need not wait
        for them a second time. Without ``keep`` nothing read is kept and every node read is
        returned: a pass over every leaf (exact search, sampling) holds no document per leaf.
        """
        with self._lock:
            wanted = [p for p in dict.fromkeys(p.strip("/") for p in paths) if p not in self._nodes]
        if not wanted:
            return {}
        found = self._probe_many(wanted, [False] * len(wanted))
        if not keep:
            return {node.path: node for node in found}
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
        candidates = sorted_naturally(((n, d) for n, d in entries if n not in METADATA_KEYS and d is not False),
                                      name=lambda e: e[0])
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
            return sorted_naturally(self._nodes, name=str)

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
            if raw is None:
                missing.append(i)
            elif isinstance(raw, Exception):
                nodes[i] = _unreadable(paths[i], "zarr.json", raw)
            else:
                nodes[i] = classify_v3(paths[i], raw)
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
                    nodes[i] = classify_v2(paths[i], zarray, zattrs, NodeKind.ARRAY)  # type: ignore[arg-type]
                elif zgroup is not None:
                    nodes[i] = classify_v2(paths[i], zgroup, zattrs, NodeKind.GROUP)  # type: ignore[arg-type]
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
            parsing = self._parsing.setdefault(path, threading.Lock())
        with parsing:  # the panels that show a node ask at once: one parse (a huge document costs its size again)
            with self._lock:
                cached = self._details.get(path)
            if cached is not None:
                return cached
            node = self.node(path)
            result = parse_details(node)
            with self._lock:
                if not node.unread:
                    result = self._details.setdefault(path, result)
                self._parsing.pop(path, None)
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
            array = bound_array(zarr.AsyncArray.from_dict(StorePath(self.store.zarr_store, self.store.key(path)),
                                                          document))
        self.store.zarr_store.bound_chunks(self.store.key(path), array_stored_bound(array))
        with self._lock:
            self._arrays[path] = array
        return array

    def read_array(self, path: str, selection: Any = ...) -> np.ndarray:
        """Read a selection of an array; raises with the path in the message on failure.

        A selection whose declared size is over the read caps (``read_guard``, ``limits``) is refused before
        anything is allocated or fetched.
        """
        try:
            details = self.array_details(path)
            check_read(path or "/", details, selection)  # refuses what metadata makes too costly
            array = self.open_async_array(path)
            with drained_reads():  # a chunk that fails stops the read's other chunks at once
                blocks = row_blocks(details, selection)
                if not blocks:
                    return np.asarray(event_loop.run(array.getitem(selection)))
                return _read_in_blocks(array, blocks)
        except ReadTooLarge as exc:
            raise ArrayReadError(str(exc)) from exc
        except Exception as exc:
            raise array_read_error(path, exc) from exc

    def read_scalar(self, path: str) -> Any:
        """The value of a rank-0 (or 1-element) array as a Python object."""
        value = self.read_array(path, ...)
        return value.item() if isinstance(value, np.ndarray) and value.size == 1 else value


def _read_in_blocks(array: Any, blocks: list[tuple[int | slice, ...]]) -> np.ndarray:
    """The blocks (consecutive row ranges, see row_blocks) read one after another into one output."""
    first = np.asarray(event_loop.run(array.getitem(blocks[0])))
    rows = sum(block[0].stop - block[0].start for block in blocks)  # type: ignore[union-attr]
    out = np.empty((rows, *first.shape[1:]), dtype=first.dtype)
    out[:len(first)] = first
    at = len(first)
    for block in blocks[1:]:
        part = np.asarray(event_loop.run(array.getitem(block)))
        out[at:at + len(part)] = part
        at += len(part)
    return out


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
