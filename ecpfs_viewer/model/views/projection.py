"""2-D pictures of an ecpfs tree: PCA projections of a node, a leaf, or a whole level.

PCA is numpy's SVD of the covariance matrix (accumulated in float64 blocks), so no new
dependency is needed. Above ``max_points`` (default 50,000) a seeded sample is projected and the
result says so. Every point carries an id (item id or node id) and a class (the child or parent
it belongs to) for labels and colours; representatives can be marked.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from ecpfs_viewer.model.ecpfs import ROOT_EMBEDDINGS, Finding, shared_level_stats
from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.nodes import (
    ROOT,
    NodeError,
    NodeRef,
    index_summary,
    parent_of,
    read_arrays,
)
from ecpfs_viewer.model.ecpfs.paths import level_path
from ecpfs_viewer.model.tasks import ProgressCallback
from ecpfs_viewer.model.views.node_info import rep_item_id
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

DEFAULT_MAX_POINTS = 50_000
_BLOCK_ROWS = 8192


@dataclass(frozen=True, eq=False)
class Pca2:
    """The first two principal axes of a point cloud and the points' coordinates on them."""

    coords: np.ndarray  # (n, 2) float32
    explained: tuple[float, float]  # fraction of the total variance along each axis
    mean: np.ndarray  # (dim,) float64
    axes: np.ndarray  # (2, dim) float64, unit rows (zero rows when dim < 2)


def pca_2d(points: np.ndarray) -> Pca2:
    """Project points (n, dim) on their first two principal axes; signs fixed so the largest
    loading of each axis is positive (the same data always gives the same picture)."""
    data = np.asarray(points)
    n = data.shape[0] if data.ndim else 0
    data = data.reshape(n, -1) if n else data.reshape(0, data.shape[1] if data.ndim > 1 else 0)
    dim = data.shape[1]
    mean = data.mean(axis=0, dtype=np.float64) if n else np.zeros(dim)
    cov = np.zeros((dim, dim))
    for start in range(0, n, _BLOCK_ROWS):
        block = data[start:start + _BLOCK_ROWS].astype(np.float64) - mean
        cov += block.T @ block
    axes = np.zeros((2, dim))
    variances = np.zeros(2)
    if n and dim:
        _, singular, vt = np.linalg.svd(cov)  # cov is symmetric PSD: singular values = eigenvalues
        kept = min(2, dim)
        axes[:kept] = vt[:kept]
        variances[:kept] = singular[:kept]
        for axis in axes:
            if axis.size and axis[np.argmax(np.abs(axis))] < 0:
                axis *= -1
    total = float(np.trace(cov))
    explained = (float(variances[0] / total), float(variances[1] / total)) if total > 0 else (0.0, 0.0)
    coords = np.empty((n, 2), dtype=np.float32)
    for start in range(0, n, _BLOCK_ROWS):
        coords[start:start + _BLOCK_ROWS] = (data[start:start + _BLOCK_ROWS].astype(np.float64) - mean) @ axes.T
    return Pca2(coords, explained, mean, axes)


class ProjectionKind(StrEnum):
    NODE_ROWS = "node rows"  # an internal node's rows (its children's representatives), by child
    NODE_MEMBERS = "node members"  # plus a sample of the rows of each child, by child
    LEAF = "leaf members"  # a leaf's items with its representative marked
    LEVEL = "level representatives"  # the representatives of a level's nodes, by parent


@dataclass(frozen=True, eq=False)
class Projection:
    """Points on two PCA axes with an id, a class and a mark per point."""

    kind: ProjectionKind
    title: str
    coords: np.ndarray  # (n, 2) float32
    ids: np.ndarray  # int64, item id or node id per point
    id_is_item: np.ndarray  # bool per point: ids[i] is an item id (else a node id)
    classes: np.ndarray  # int32 per point, index into class_names
    class_names: tuple[str, ...]
    marked: np.ndarray  # bool per point: a representative drawn larger
    explained: tuple[float, float]
    total_points: int  # points before sampling
    seed: int
    findings: tuple[Finding, ...] = ()

    @property
    def count(self) -> int:
        return int(self.coords.shape[0])

    @property
    def sampled(self) -> bool:
        return self.count < self.total_points

    @property
    def note(self) -> str:
        """What the picture shows when it is a sample ('' otherwise)."""
        if not self.sampled:
            return ""
        return f"showing a seeded sample of {self.count:,} of {self.total_points:,} points (seed {self.seed})"

    def label(self, i: int) -> str:
        """'item 4 (node_2)' or 'node 50 (lvl_1/node_3)': the id and class of point i."""
        what = "item" if self.id_is_item[i] else "node"
        return f"{what} {int(self.ids[i])} ({self.class_names[int(self.classes[i])]})"


@dataclass
class _Points:
    """Points gathered before projecting."""

    vectors: list[np.ndarray] = field(default_factory=list)
    ids: list[np.ndarray] = field(default_factory=list)
    is_item: list[np.ndarray] = field(default_factory=list)
    classes: list[np.ndarray] = field(default_factory=list)
    marked: list[np.ndarray] = field(default_factory=list)
    class_names: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    total: int = 0

    def add(self, vectors: np.ndarray, ids: np.ndarray, *, items: bool, cls: int | np.ndarray,
            marked: bool = False, total: int | None = None) -> None:
        n = len(vectors)
        self.vectors.append(np.asarray(vectors, dtype=np.float32).reshape(n, -1))
        self.ids.append(np.asarray(ids, dtype=np.int64).ravel()[:n])
        self.is_item.append(np.full(n, items))
        self.classes.append(np.broadcast_to(np.asarray(cls, dtype=np.int32), (n,)).copy())
        self.marked.append(np.full(n, marked))
        self.total += n if total is None else total


def _finish(points: _Points, kind: ProjectionKind, title: str, max_points: int, seed: int) -> Projection:
    if not points.vectors:
        why = f" ({points.findings[0].message})" if points.findings else ""
        raise NodeError(f"{title}: nothing to project{why}")
    vectors = np.concatenate(points.vectors)
    ids, is_item = np.concatenate(points.ids), np.concatenate(points.is_item)
    classes, marked = np.concatenate(points.classes), np.concatenate(points.marked)
    if len(vectors) > max_points:  # keep every marked point, sample the rest
        rng = np.random.default_rng(seed)
        rest = np.flatnonzero(~marked)
        wanted = max(0, max_points - int(marked.sum()))
        picked = rng.choice(rest, min(wanted, rest.size), replace=False)
        keep = np.sort(np.concatenate([np.flatnonzero(marked), picked]))
        vectors, ids, is_item, classes, marked = vectors[keep], ids[keep], is_item[keep], classes[keep], marked[keep]
    pca = pca_2d(vectors)
    return Projection(kind, title, pca.coords, ids, is_item, classes, tuple(points.class_names), marked,
                      pca.explained, max(points.total, len(vectors)), seed, tuple(points.findings))


def _read_pairs(h: Hierarchy, paths: list[tuple[str, str]], progress: ProgressCallback | None,
                cancel: threading.Event | None) -> list[tuple[np.ndarray, np.ndarray] | str]:
    """(embeddings, ids) of several nodes read concurrently; a message for a node that failed."""
    flat = read_arrays(h, [p for pair in paths for p in pair], progress=progress, cancel=cancel)
    found: list[tuple[np.ndarray, np.ndarray] | str] = []
    for (emb_path, _), emb, ids in zip(paths, flat[0::2], flat[1::2], strict=True):
        if isinstance(emb, str) or isinstance(ids, str):
            found.append(emb if isinstance(emb, str) else ids)  # type: ignore[arg-type]
        elif emb.ndim != 2 or len(emb) != ids.size:
            found.append(f"{emb_path}: {len(emb)} rows but {ids.size} ids")
        else:
            found.append((emb, ids))
    return found


def _node_pair(ref: NodeRef, leaf: bool) -> tuple[str, str]:
    return f"{ref.path}/embeddings", f"{ref.path}/{'item_ids' if leaf else 'node_ids'}"


def _read_node(h: Hierarchy, ref: NodeRef, leaf: bool, progress: ProgressCallback | None,
               cancel: threading.Event | None) -> tuple[np.ndarray, np.ndarray] | str:
    """(embeddings, ids) of one node; index_root's ids are its row numbers (= lvl_1 node ids)."""
    if not ref.is_root:
        return _read_pairs(h, [_node_pair(ref, leaf)], progress, cancel)[0]
    emb = read_arrays(h, [ROOT_EMBEDDINGS], progress=progress, cancel=cancel)[0]
    return emb if isinstance(emb, str) else (emb, np.arange(len(emb)))


def project_node(h: Hierarchy, ref: NodeRef, *, members: bool = False, max_points: int = DEFAULT_MAX_POINTS,
                 seed: int = 0, progress: ProgressCallback | None = None, cancel: threading.Event | None = None
                 ) -> Projection:
    """A node's rows coloured by the child each leads (with members: plus a sample of each child's
    rows, coloured by child, representatives marked); a leaf's items with its representative marked."""
    summary = index_summary(h)
    leaf = summary.levels is not None and ref.level == summary.levels
    own = _read_node(h, ref, leaf, None, cancel)
    if isinstance(own, str):
        raise NodeError(own)
    vectors, ids = own
    points = _Points()
    if leaf:
        return _leaf_projection(h, ref, vectors, ids, points, max_points, seed, summary.representatives)
    points.class_names = [NodeRef(ref.level + 1, int(i)).label for i in ids]
    points.add(vectors, ids, items=False, cls=np.arange(len(ids)), marked=members)
    if not members:
        return _finish(points, ProjectionKind.NODE_ROWS, f"{ref.label}: rows by child", max_points, seed)
    child_leaf = summary.levels is not None and ref.level + 1 == summary.levels
    stats = shared_level_stats(h, ref.level + 1, summary)
    present = set(stats.node_ids.tolist())
    rows = [(row, NodeRef(ref.level + 1, int(i))) for row, i in enumerate(ids) if int(i) in present]
    for i in sorted(set(ids.tolist()) - present):
        points.findings.append(Finding(fc.CHILD_MISSING, NodeRef(ref.level + 1, i).path, "does not exist"))
    found = _read_pairs(h, [_node_pair(child, child_leaf) for _, child in rows], progress, cancel)
    quota = max(1, (max_points - len(ids)) // max(1, len(rows)))
    rng = np.random.default_rng(seed)
    for (row, child), got in zip(rows, found, strict=True):
        if isinstance(got, str):
            points.findings.append(Finding(fc.UNREADABLE_DATA, child.path, got))
            continue
        child_vectors, child_ids = got
        pick = np.sort(rng.choice(len(child_ids), quota, replace=False)) if len(child_ids) > quota else slice(None)
        points.add(child_vectors[pick], child_ids[pick], items=child_leaf, cls=row, total=len(child_ids))
    return _finish(points, ProjectionKind.NODE_MEMBERS, f"{ref.label}: members by child", max_points, seed)


def _leaf_projection(h: Hierarchy, ref: NodeRef, vectors: np.ndarray, ids: np.ndarray, points: _Points,
                     max_points: int, seed: int, representatives: int | None) -> Projection:
    points.class_names = ["members", "representative"]
    points.add(vectors, ids, items=True, cls=0)
    link = parent_of(h, ref)
    if link.parent is None or link.row is None:
        points.findings.append(link.finding or Finding(fc.NO_PARENT, ref.path, "no representative"))
    else:
        path = ROOT_EMBEDDINGS if link.parent.is_root else f"{link.parent.path}/embeddings"
        centre = read_arrays(h, [path])[0]
        item_id, _ = rep_item_id(h, ref.node_id, representatives)
        if isinstance(centre, str):
            points.findings.append(Finding(fc.UNREADABLE_DATA, path, centre))
        else:
            points.add(centre[link.row:link.row + 1], np.array([ref.node_id if item_id is None else item_id]),
                       items=item_id is not None, cls=1, marked=True)
    return _finish(points, ProjectionKind.LEAF, f"{ref.label}: members and representative", max_points, seed)


def project_level(h: Hierarchy, level: int, *, max_points: int = DEFAULT_MAX_POINTS, seed: int = 0,
                  progress: ProgressCallback | None = None, cancel: threading.Event | None = None) -> Projection:
    """The representatives of every node of lvl_{level} (rows of the level above), coloured by the
    parent holding them; when there are more than max_points, a seeded choice of parents is read."""
    summary = index_summary(h)
    if level < 1 or (summary.levels is not None and level > summary.levels):
        raise NodeError(f"{level_path(level)} is not a level of this index (1..{summary.levels})")
    if level == 1:
        parents, sizes = [ROOT], np.array([summary.fan_out or 0])
    else:
        stats = shared_level_stats(h, level - 1, summary)
        parents, sizes = [NodeRef(level - 1, int(i)) for i in stats.node_ids], stats.sizes
    chosen = np.arange(len(parents))
    total = int(sizes.sum())
    if total > max_points:  # read whole parents in a seeded order until enough rows are in
        order = np.random.default_rng(seed).permutation(len(parents))
        enough = int(np.searchsorted(np.cumsum(sizes[order]), max_points)) + 1
        chosen = np.sort(order[:enough])
    points = _Points()
    points.class_names = [parents[i].label for i in chosen]
    if level == 1:
        found = [_read_node(h, ROOT, False, progress, cancel)]
    else:
        found = _read_pairs(h, [_node_pair(parents[i], False) for i in chosen], progress, cancel)
    for cls, (i, got) in enumerate(zip(chosen.tolist(), found, strict=True)):
        if isinstance(got, str):
            points.findings.append(Finding(fc.UNREADABLE_DATA, parents[i].path, got))
            continue
        points.add(got[0], got[1], items=False, cls=cls)
    points.total = max(points.total, total)
    return _finish(points, ProjectionKind.LEVEL, f"{level_path(level)}: representatives by parent", max_points, seed)
