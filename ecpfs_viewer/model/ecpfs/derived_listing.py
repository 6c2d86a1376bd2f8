"""Children of a group when the store cannot list folders (a static web server, a CDN).

An ecpfs index describes its own tree: level 1 has one node per row of
``index_root/embeddings``, level N+1 the nodes named in the ``node_ids`` of level N, and each
node holds ``embeddings`` plus ``node_ids`` (or ``item_ids`` at the leaves). A plain Zarr store
shows what its metadata reaches (consolidated metadata, if any). Nodes found this way are
marked derived, so the UI can say the tree was derived rather than listed.
"""

from __future__ import annotations

import threading

import numpy as np

from ecpfs_viewer.model.ecpfs.index_cache import attach_cache, seed_consolidated
from ecpfs_viewer.model.ecpfs.paths import level_path, node_path, parse_level, parse_node_path
from ecpfs_viewer.model.errors import transport_failure
from ecpfs_viewer.model.guarded_json import parse_json
from ecpfs_viewer.model.storage.opening import OpenedStore, listing_unavailable
from ecpfs_viewer.model.zarrtree.array_batch import read_whole_arrays
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import Node, NodeKind, sorted_naturally
from ecpfs_viewer.model.zarrtree.read_guard import ReadTooLarge, check_allocation

DERIVED_NOTE = "tree derived from the index (index_root rows, node_ids), not listed: the server lists no folders"
UNREACHED_NOTE = "listing unavailable: the server lists no folders; showing what the metadata reaches"

_ROOT_NAMES = ("info", "index_root", "rep_embeddings", "rep_item_ids")
_INFO_NAMES = ("format_version", "levels", "metric", "is_normalized", "total_items", "next_item_id")

def index_hierarchy(store: OpenedStore) -> Hierarchy:
    """The Hierarchy of a store opened as an ecpfs index: its tree derived where it cannot be listed,
    a remote store's small documents kept in the cache folder or taken from its consolidated
    metadata (model/ecpfs/index_cache.py)."""
    h = Hierarchy(store, lister=derived_children if listing_unavailable(store) else None)
    if store.kind == "remote":
        attach_cache(h)
        seed_consolidated(h)
    return h


class DerivedState:
    """What was derived for one hierarchy (kept beside it, see :func:`derived_state`): the paths whose
    children were derived, and whether the store holds an index (read once from info/levels)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._paths: set[str] = set()
        self.levels: int | None = None
        self.index: bool | None = None

    def add(self, path: str) -> None:
        with self._lock:
            self._paths.add(path)

    def __contains__(self, path: object) -> bool:
        with self._lock:
            return path in self._paths

    def forget(self, path: str = "") -> None:
        """Drop what a refresh of path makes stale (the whole state for the root or info/)."""
        prefix = f"{path}/" if path else ""
        with self._lock:
            self._paths = {p for p in self._paths if p != path and not p.startswith(prefix)} if path else set()
            if not path or path == "info" or path.startswith("info/"):
                self.levels, self.index = None, None


def derived_state(h: Hierarchy) -> DerivedState:
    """What was derived for h, dropped with its nodes by ``Hierarchy.refresh``."""
    return h.cache(DerivedState)


def is_derived(h: Hierarchy, path: str = "") -> bool:
    """True when the children of path were derived, not listed."""
    return path.strip("/") in derived_state(h)


def listing_note(h: Hierarchy) -> str | None:
    """What the UI should say about the tree of h: None when the store lists folders."""
    if not listing_unavailable(h.store):
        return None
    return DERIVED_NOTE if derived_state(h).index else UNREACHED_NOTE


def derived_children(h: Hierarchy, path: str) -> list[Node]:
    """The children of path found from the index's own metadata and arrays, in natural order."""
    return sorted_naturally(_derive(h, path), name=lambda node: node.name)


def _derive(h: Hierarchy, path: str) -> list[Node]:
    state = derived_state(h)
    state.add(path)
    if path == "":
        return _root_children(h, state)
    if path == "info":
        return _probed_arrays(h, [f"info/{name}" for name in _INFO_NAMES])
    if path == "index_root":
        return _probed_arrays(h, ["index_root/embeddings"])
    levels = _levels(h, state)
    level = parse_level(path)
    if level is not None and levels is not None and 1 <= level <= levels:
        return _level_children(h, level)
    node = parse_node_path(path)
    if node is not None and levels is not None:
        leaf = node[0] == levels
        first, second = ("item_ids", "node_ids") if leaf else ("node_ids", "item_ids")
        found = _probed_arrays(h, [f"{path}/{name}" for name in ("border", "embeddings", first)])
        if not any(n.name == first for n in found):
            found += _probed_arrays(h, [f"{path}/{second}"])
        return found
    return _consolidated_children(h, path)


#: Level groups probed for the root of an index that cannot be listed: info/levels may declare
#: 4 billion (a list of 4 billion names); an index has a handful.
MAX_DERIVED_LEVELS = 64


def _levels(h: Hierarchy, state: DerivedState) -> int | None:
    if state.index is None:
        try:
            levels = int(h.read_scalar("info/levels"))
        except Exception as exc:  # no readable info/levels: not an index, or a broken one
            if transport_failure(exc) is not None or _refused(exc):  # says nothing, kept for nothing
                raise
            state.index = False
        else:
            state.index, state.levels = True, levels
    return state.levels


def _refused(exc: BaseException | None) -> bool:
    """True when a read failed because the store refused it (a 403, a permission denied), which says
    nothing about whether the array is there: the listing "could not be read", never "not an index"."""
    for _ in range(8):
        if exc is None:
            return False
        if isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _probed_arrays(h: Hierarchy, paths: list[str]) -> list[Node]:
    """Paths probed concurrently; those with no metadata at all are left out."""
    nodes = h._probe_many(paths, [False] * len(paths))
    return [n for n in nodes if n.kind is not NodeKind.IMPLICIT_GROUP]


def _root_children(h: Hierarchy, state: DerivedState) -> list[Node]:
    levels = _levels(h, state)
    if levels is None:
        return _consolidated_children(h, "")
    names = [*_ROOT_NAMES, *(level_path(n) for n in range(1, min(levels, MAX_DERIVED_LEVELS) + 1))]
    found = {n.path: n for n in h._probe_many(names, [True] * len(names))}
    nodes: list[Node] = []
    for name in names:
        node = found.get(name)
        if node is None:
            continue
        if node.kind is NodeKind.IMPLICIT_GROUP and name in ("rep_embeddings", "rep_item_ids"):
            continue  # an optional array that is absent
        nodes.append(node if node.kind is not NodeKind.IMPLICIT_GROUP else Node(name, NodeKind.IMPLICIT_GROUP, None))
    return nodes


#: What one derived node row holds in memory, about: its set entry, name and Node.
_NODE_ROW_BYTES = 256


def _level_children(h: Hierarchy, level: int) -> list[Node]:
    """Node groups of a level, from index_root's rows (level 1) or the node_ids of the level above.

    The node groups themselves are not read here (4,000 requests); selecting one reads it.
    """
    if level == 1:
        rows = h.array_details("index_root/embeddings").shape[0]
        try:  # one node per row the root declares: a declared 10^9 is refused, not made into a set
            check_allocation("index_root/embeddings", rows, "rows (level-1 nodes)", _NODE_ROW_BYTES)
        except ReadTooLarge as exc:
            raise OSError(f"{level_path(1)}: cannot derive the nodes: {exc}") from exc
        ids = set(range(rows))
    else:
        parents = [n.path for n in h.children(level_path(level - 1)) if parse_node_path(n.path) is not None]
        ids = _referenced_ids(h, parents)
    return [Node(node_path(level, i), NodeKind.GROUP, None) for i in sorted(ids)]


def _referenced_ids(h: Hierarchy, parents: list[str]) -> set[int]:
    """Union of the parents' node_ids, read as one batch; an unreadable parent contributes none.
    A parent that could not be read on the way (no answer) makes the listing fail instead: a
    level missing its nodes would read as a fact about the index.

    The node_ids documents read here stay in the Hierarchy, so level statistics do not ask again.
    """
    if not parents:
        return set()
    found = read_whole_arrays(h, [f"{p}/node_ids" for p in parents])
    unanswered = [a for a in found if not isinstance(a, np.ndarray) and transport_failure(a) is not None]
    if unanswered:
        raise unanswered[0]  # an Unanswered (OSError): the level "could not be listed"
    # reported by check / level statistics, which read the same arrays
    arrays = [np.asarray(a).astype(np.int64).ravel() for a in found if isinstance(a, np.ndarray)]
    return set(np.unique(np.concatenate(arrays)).tolist()) if arrays else set()


def _consolidated_children(h: Hierarchy, path: str) -> list[Node]:
    """Children named by the root's consolidated metadata (a plain Zarr store), probed for real."""
    root = h.root()
    if root.raw is None or b"consolidated_metadata" not in root.raw:
        return []
    try:
        document = parse_json(root.raw, "zarr.json")
        entries = (document.get("consolidated_metadata") or {}).get("metadata") or {}
    except (ValueError, AttributeError):
        return []
    prefix = f"{path}/" if path else ""
    names = sorted({key for key in entries if key.startswith(prefix) and "/" not in key[len(prefix):]})
    return h._probe_many(names, [None] * len(names)) if names else []
