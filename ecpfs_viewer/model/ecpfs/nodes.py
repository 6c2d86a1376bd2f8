"""Where a node of an ecpfs index sits and what it holds: the model of the node page.

A node ``lvl_N/node_M`` (N >= 2) is led by one row of a node at level N-1, the row whose
``node_ids`` value is M; at level 1 it is row M of ``index_root/embeddings`` (format §1.4). The
parent of a node is found from a per-Hierarchy map of each level built by decoding the level
above's ``node_ids`` once (kept in the index's cache for later processes: model/ecpfs/parent_links.py),
or, for one node while no map is held, from those node_ids read in order up to the first that
names it; never by comparing embeddings. Everything a page shows is a frozen
value; problems are :class:`Finding` values placed next to what they concern, and only the
reads a user asks for (children, items, spread) decode chunks.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ecpfs_viewer.model.ecpfs import (
    Finding,
    IndexSummary,
    summarize,
)
from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.index_cache import index_cache
from ecpfs_viewer.model.ecpfs.levels import MAX_NODE_ID
from ecpfs_viewer.model.ecpfs.parent_links import PARENT_LINKS, links_bytes, read_links
from ecpfs_viewer.model.ecpfs.paths import (
    INDEX_ROOT,
    is_inside_root,
    level_path,
    node_array_path,
    node_containing,
    node_path,
    parse_node_name,
)
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.storage.stamps import ALWAYS, Stamps
from ecpfs_viewer.model.tasks import Counted, ProgressCallback, checkpoint
from ecpfs_viewer.model.zarrtree.array_batch import read_whole_arrays
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

#: Concurrent array reads (overlaps requests on remote stores; local reads are cheap anyway).
READ_BATCH = 64  # arrays per batch: the progress and cancel step


class NodeError(UserError):
    """A node page cannot be computed (no such node, unreadable array); the message says why."""


@dataclass(frozen=True, order=True)
class NodeRef:
    """A node of the tree: level 0 is ``index_root`` (node id 0), levels 1..L are ``lvl_N``."""

    level: int
    node_id: int

    @property
    def is_root(self) -> bool:
        return self.level == 0

    @property
    def path(self) -> str:
        return INDEX_ROOT if self.is_root else node_path(self.level, self.node_id)

    @property
    def label(self) -> str:
        return "index" if self.is_root else self.path

    @classmethod
    def parse(cls, text: str) -> NodeRef:
        """'lvl_3/node_812' (or a path inside it, or 'index_root') as a NodeRef; NodeError otherwise."""
        ref = node_ref_of(text)
        if ref is None:
            raise NodeError(f"{text!r} is not a node path (expected lvl_N/node_M or index_root)")
        return ref


ROOT = NodeRef(0, 0)


def node_ref_of(path: str) -> NodeRef | None:
    """The node a store path belongs to ('lvl_2/node_5/embeddings' -> lvl_2/node_5), else None."""
    text = path.strip()
    if is_inside_root(text):
        return ROOT
    found = node_containing(text)
    if found is None or found[0] < 1:
        return None
    return NodeRef(*found)


def _finding(code: str, ref: NodeRef | str, message: str) -> Finding:
    return Finding(code, ref if isinstance(ref, str) else ref.path, message)


# -- concurrent reads ---------------------------------------------------------------------------


def read_arrays(h: Hierarchy, paths: Sequence[str], *, progress: ProgressCallback | None = None,
                cancel: threading.Event | None = None) -> list[np.ndarray | str]:
    """Read whole arrays in batches (``array_batch.read_whole_arrays``: every request of a batch in
    flight together); each result is the array or the message why it failed.

    Reports the arrays read after each batch and stops before the next one when cancel is set.
    """
    results: list[np.ndarray | str] = []
    checkpoint(cancel)
    for start in range(0, len(paths), READ_BATCH):
        batch = paths[start:start + READ_BATCH]
        results += [value if isinstance(value, np.ndarray) else str(value) for value in read_whole_arrays(h, batch)]
        if progress is not None:
            progress(Counted(len(results), len(paths), "arrays read"))
        checkpoint(cancel)
    return results


# -- per-Hierarchy caches -----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ParentMap:
    """Which parent row leads each node of one level (from the level above's ``node_ids``).

    Level 1 holds no arrays: node M is row M of ``index_root/embeddings`` for M below root_rows (an
    arange of the declared row count allocated 8 GB for a declared 10^9 rows)."""

    level: int  # the child level; its parents are at level - 1 (0 = index_root)
    child_ids: np.ndarray  # int64, ascending
    parent_ids: np.ndarray  # int64, node id of the parent of each child
    rows: np.ndarray  # int64, row in the parent's embeddings
    parents_read: int
    parents_total: int
    findings: tuple[Finding, ...] = ()
    root_rows: int | None = None  # level 1: the rows of index_root/embeddings, each leading node M = row M
    #: every link as read, sorted by child, a repeated child's in parent order (what the cache keeps)
    saved: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def lookup(self, node_id: int) -> tuple[NodeRef, int] | None:
        """(parent, row) of node node_id, or None when no parent row references it."""
        if self.root_rows is not None:
            return (ROOT, node_id) if 0 <= node_id < self.root_rows else None
        at = int(np.searchsorted(self.child_ids, node_id))
        if at >= self.child_ids.size or self.child_ids[at] != node_id:
            return None
        return NodeRef(self.level - 1, int(self.parent_ids[at])), int(self.rows[at])


class _Cache:
    """What one Hierarchy computed once: its summary and parent maps, valid while the listings
    they came from are the Hierarchy's current ones (``Hierarchy.refresh`` replaces those)."""

    def __init__(self) -> None:
        self.summary: tuple[object, IndexSummary] | None = None
        self.maps: dict[int, tuple[object, ParentMap]] = {}
        #: single parents found by a partial read, while no map of their level is held
        self.links: dict[NodeRef, tuple[object, tuple[NodeRef, int]]] = {}
        #: levels whose kept links were missing or stale for the listing in the value (not asked again)
        self.unsaved: dict[int, object] = {}


#: Single parents kept per Hierarchy (a page visited again, its breadcrumb after its facts).
_KEPT_LINKS = 256


_CACHES: weakref.WeakKeyDictionary[Hierarchy, _Cache] = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.RLock()  # held while computing, so a second caller waits and reuses


def _listing_token(h: Hierarchy, path: str) -> object:
    """The cached listing object of path (its identity changes when the Hierarchy re-lists)."""
    return h.children(path)


def index_summary(h: Hierarchy) -> IndexSummary:
    """``ecpfs.summarize`` of h, computed once per root listing."""
    with _CACHE_LOCK:
        cache = _CACHES.setdefault(h, _Cache())
        token = _listing_token(h, "")
        if cache.summary is None or cache.summary[0] is not token:
            cache.summary = (token, summarize(h))
        return cache.summary[1]


def forget_node_caches(h: Hierarchy, path: str = "") -> None:
    """Drop parent maps and the summary that a refresh of path (and below) makes stale."""
    path = path.strip("/")
    ref = node_ref_of(path)
    with _CACHE_LOCK:
        cache = _CACHES.get(h)
        if cache is None:
            return
        if not path or ref is None:
            _CACHES.pop(h, None)
        else:  # a node's node_ids define the parents of the level below it
            cache.maps.pop(ref.level + 1, None)
            cache.unsaved.pop(ref.level + 1, None)
            cache.links = {child: link for child, link in cache.links.items() if child.level != ref.level + 1}


def parent_map(h: Hierarchy, level: int, *, progress: ProgressCallback | None = None,
               cancel: threading.Event | None = None) -> ParentMap:
    """The parent map of ``lvl_{level}``, cached per Hierarchy: the links the index's cache keeps
    while every node_ids of level-1 is unchanged, else from decoding them all (then kept there)."""
    if level < 1:
        raise NodeError(f"level {level} has no parents (levels are numbered from 1)")
    with _CACHE_LOCK:
        held = _held_map(h, level)
        if held is not None:
            return held
        built = _scan_level(h, level, None, progress, cancel)
        assert isinstance(built, ParentMap)
        return built


def _held_map(h: Hierarchy, level: int) -> ParentMap | None:
    """The level's map computed already (this Hierarchy, or a process before it), else None."""
    with _CACHE_LOCK:
        cache = _CACHES.setdefault(h, _Cache())
        token = _listing_token(h, "" if level == 1 else level_path(level - 1))
        cached = cache.maps.get(level)
        if cached is not None and cached[0] is token:
            return cached[1]
        found: ParentMap | None
        if level == 1:
            empty = np.zeros(0, dtype=np.int64)
            found = ParentMap(1, empty, empty, empty, 1, 1, root_rows=max(0, index_summary(h).fan_out or 0))
        elif cache.unsaved.get(level) is token:
            return None
        else:
            found = _saved_map(h, level)
        if found is not None:
            cache.maps[level] = (token, found)
        else:
            cache.unsaved[level] = token
        return found


def _partial_parent(h: Hierarchy, ref: NodeRef, progress: ProgressCallback | None,
                    cancel: threading.Event | None) -> tuple[NodeRef, int] | None:
    """ref's parent read only as far as the first node_ids that names it (kept while the listing
    of level-1 is this Hierarchy's current one)."""
    token = _listing_token(h, level_path(ref.level - 1))
    with _CACHE_LOCK:
        kept = _CACHES.setdefault(h, _Cache()).links.get(ref)
    if kept is not None and kept[0] is token:
        return kept[1]
    found = _scan_level(h, ref.level, ref.node_id, progress, cancel)
    assert not isinstance(found, ParentMap)
    if found is not None:
        with _CACHE_LOCK:
            links = _CACHES.setdefault(h, _Cache()).links
            if len(links) >= _KEPT_LINKS:
                links.pop(next(iter(links)))
            links[ref] = (token, found)
    return found


def _listed_parents(h: Hierarchy, level: int) -> list[int]:
    """The node ids listed at ``lvl_{level}``, ascending: the nodes whose node_ids lead level+1."""
    found = {parse_node_name(child.name) for child in h.children(level_path(level))}
    return sorted(i for i in found if i is not None and i <= MAX_NODE_ID)


def _listed_now(h: Hierarchy, level: int, parents: list[int]) -> bool:
    """Whether the level's folder lists the same nodes now (a plain listing) as parents says."""
    try:
        names = [name for name, is_dir in h.store.list_dir(level_path(level)) if is_dir is not False]
    except OSError:
        return False
    now = {parse_node_name(name) for name in names}
    return sorted(i for i in now if i is not None and i <= MAX_NODE_ID) == parents


def _saved_map(h: Hierarchy, level: int) -> ParentMap | None:
    """The links an earlier read of the whole level kept (this page or ``locate``), while every
    node_ids of level-1 and the level's listing are as they were stamped."""
    data = index_cache(h).load_checked(PARENT_LINKS.format(level=level))
    if data is None:
        return None
    try:
        children, owners, rows = read_links(data)
    except ValueError:
        return None
    total = len(_listed_parents(h, level - 1))
    return _without_repeats(level, children, owners, rows, total, total, [])


def _scan_level(h: Hierarchy, level: int, want: int | None, progress: ProgressCallback | None,
                cancel: threading.Event | None) -> ParentMap | tuple[NodeRef, int] | None:
    """Read level-1's node_ids in ascending parent order. With want, stop at the first parent that
    names it before the last batch: (parent, row), or None when none does; the first parent in
    that order is the one the whole map keeps. Having read them all, the map is kept (in memory,
    and in the index's cache with the stamps of what it was made from, each taken before its read)
    and returned, or (want given) its answer."""
    parents = _listed_parents(h, level - 1)
    cache = index_cache(h)
    remote = h.store.kind == "remote"  # stamped by listing: once, up front, and only for a whole map
    stamps = [None if remote and want is not None else cache.stamp([(level_path(level - 1), ALWAYS)], walk=False)]
    if stamps[0] is not None and not _listed_now(h, level - 1, parents):
        stamps[0] = None  # the Hierarchy's listing is older than the folder's stamp: nothing is kept
    paths = [node_array_path(level - 1, p, "node_ids") for p in parents]
    if remote and want is None:
        stamps.append(cache.stamp(list(zip(paths, parents, strict=True))))
    found: list[np.ndarray | str] = []
    checkpoint(cancel)
    for start in range(0, len(parents), READ_BATCH):
        batch = slice(start, start + READ_BATCH)
        if not remote:
            stamps.append(cache.stamp(list(zip(paths[batch], parents[batch], strict=True))))
        values = [v if isinstance(v, np.ndarray) else str(v) for v in read_whole_arrays(h, paths[batch])]
        found += values
        if want is not None and start + READ_BATCH < len(parents):  # the last batch: the whole map, kept
            for parent, ids in zip(parents[batch], values, strict=True):
                if not isinstance(ids, str) and (rows := np.flatnonzero(np.asarray(ids).ravel() == want)).size:
                    return NodeRef(level - 1, parent), int(rows[0])
        if progress is not None:
            progress(Counted(len(found), len(parents), "arrays read"))
        checkpoint(cancel)
    built = _assemble(level, parents, found)
    with _CACHE_LOCK:
        _CACHES.setdefault(h, _Cache()).maps[level] = (_listing_token(h, level_path(level - 1)), built)
    joined = Stamps.joined(stamps)
    if built.parents_read == built.parents_total and joined is not None and built.saved is not None:
        cache.save(PARENT_LINKS.format(level=level), links_bytes(*built.saved), joined)
    return built if want is None else built.lookup(want)


def _assemble(level: int, parents: list[int], found: list[np.ndarray | str]) -> ParentMap:
    findings: list[Finding] = []
    children: list[np.ndarray] = []
    owners: list[np.ndarray] = []
    positions: list[np.ndarray] = []
    for parent, values in zip(parents, found, strict=True):
        if isinstance(values, str):
            findings.append(_finding(fc.UNREADABLE_DATA,
                                     node_array_path(level - 1, parent, "node_ids"), f"unreadable: {values}"))
            continue
        ids = np.asarray(values).astype(np.int64, copy=False).ravel()
        children.append(ids)
        owners.append(np.full(ids.size, parent, dtype=np.int64))
        positions.append(np.arange(ids.size, dtype=np.int64))
    child = np.concatenate(children) if children else np.zeros(0, dtype=np.int64)
    owner = np.concatenate(owners) if owners else np.zeros(0, dtype=np.int64)
    row = np.concatenate(positions) if positions else np.zeros(0, dtype=np.int64)
    order = np.argsort(child, kind="stable")  # parents ascending within one child id
    return _without_repeats(level, child[order], owner[order], row[order], len(children), len(parents), findings)


def _without_repeats(level: int, child: np.ndarray, owner: np.ndarray, row: np.ndarray, read: int, total: int,
                     findings: list[Finding]) -> ParentMap:
    """The map of links sorted by child (a repeated child's in parent order): the first is used."""
    repeated = np.flatnonzero(child[1:] == child[:-1]) + 1
    for at in repeated[:10]:
        findings.append(_finding(
            fc.LED_TWICE, NodeRef(level, int(child[at])),
            f"led by two rows: {node_path(level - 1, owner[at - 1])} row {row[at - 1]} and "
            f"{node_path(level - 1, owner[at])} row {row[at]}; the first is used"))
    keep = np.ones(child.size, dtype=bool)
    keep[repeated] = False
    return ParentMap(level, child[keep], owner[keep], row[keep], read, total, tuple(findings),
                     saved=(child, owner, row))


# -- parent, breadcrumb -------------------------------------------------------------------------


@dataclass(frozen=True)
class ParentLink:
    """The row that leads a node: parent None (with a finding) when nothing references it."""

    child: NodeRef
    parent: NodeRef | None
    row: int | None
    finding: Finding | None = None


def parent_of(h: Hierarchy, ref: NodeRef, *, progress: ProgressCallback | None = None,
              cancel: threading.Event | None = None) -> ParentLink:
    """The parent node and row of ref (index_root has none): from the level's map when one is held
    (this Hierarchy's, or the links the index's cache kept), else from the node_ids of level-1 read
    in ascending order up to the first that names ref (all of them, and the map kept, when none does)."""
    if ref.is_root:
        return ParentLink(ref, None, None)
    held = _held_map(h, ref.level)
    found = held.lookup(ref.node_id) if held is not None else _partial_parent(h, ref, progress, cancel)
    if found is None:
        where = "index_root/embeddings has no such row" if ref.level == 1 else \
            f"no row of {level_path(ref.level - 1)} references node id {ref.node_id}"
        return ParentLink(ref, None, None, _finding(fc.NO_PARENT, ref, f"no parent: {where}"))
    return ParentLink(ref, found[0], found[1])


@dataclass(frozen=True)
class Crumb:
    """One step of a breadcrumb; ref None stands for levels whose node is unknown."""

    ref: NodeRef | None
    label: str
    row: int | None = None  # the row of the previous crumb's node that leads here
    finding: Finding | None = None


@dataclass(frozen=True)
class Breadcrumb:
    crumbs: tuple[Crumb, ...]

    @property
    def text(self) -> str:
        return " > ".join(c.label for c in self.crumbs)

    @property
    def complete(self) -> bool:
        return all(c.ref is not None for c in self.crumbs)


def breadcrumb(h: Hierarchy, ref: NodeRef, *, progress: ProgressCallback | None = None,
               cancel: threading.Event | None = None) -> Breadcrumb:
    """index > lvl_1/node_3 > lvl_2/node_50 > lvl_3/node_812, following parent maps upward."""
    crumbs: list[Crumb] = []
    current: NodeRef | None = ref
    while current is not None and not current.is_root:
        link = parent_of(h, current, progress=progress, cancel=cancel)
        crumbs.append(Crumb(current, current.label, link.row, link.finding))
        if link.parent is None:
            if current.level > 1:
                crumbs.append(Crumb(None, "?", None, link.finding))
            break
        current = link.parent
    crumbs.append(Crumb(ROOT, ROOT.label))
    return Breadcrumb(tuple(reversed(crumbs)))
