"""The embedding map's neighbour-preserving placement: a t-SNE layout of the representatives, with
every item placed around its leaf's representative (the optional ``layout`` extra: openTSNE).

:func:`lay_out` reads the tree above the leaves (never a leaf) and lays out, with openTSNE (seeded,
one thread: the same index gives the same layout), the representatives of the deepest level that
has at most ``cap`` nodes: the leaves' own representatives (rows of the leaves' parents) when there
are few enough leaves, else their parents' (and so on up). A node's representative is the row of its
parent that names it (``index_root`` for level 1; format §1.4). Below that level each node's
representative is placed around its parent's: at the parent's position plus its offset from the
parent's representative along the map's two PCA axes, scaled so that the parent's children lie, by
root mean square, :data:`REACH` of the way to the nearest other node of the parent's level.

:func:`apply_layout` does the same to the items of a PCA placement (their PCA coordinates are their
offsets once the leaf's representative's are taken away): each leaf's items stay around its
representative, as far out as :data:`REACH` of the distance to the nearest other leaf, by root mean
square. A leaf the layout has no place for (its parent could not be read, or names no such child)
is left out and named. The result's projection is a :class:`LayoutProjection`: ``project`` places a
vector around the leaf named for it (a query: the first leaf its search scanned; a representative:
the leaf it leads), or the leaf whose representative is nearest along the PCA axes.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ecpfs_viewer.model.diagnostics.embedding_map.placement import MapProjection, Placement, _read, _starts
from ecpfs_viewer.model.ecpfs.paths import ROOT_EMBEDDINGS, node_path
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.search.reader import NodeData, NodeReader
from ecpfs_viewer.model.storage.stamps import ALWAYS, Stamps
from ecpfs_viewer.model.tasks import Cancelled, Counted, ProgressCallback, checkpoint

#: the extra that brings openTSNE, and the one sentence that says so when it is not installed
LAYOUT_EXTRA = "layout"
MISSING = ("The t-SNE placement needs openTSNE, which is not installed: install the layout extra "
           "(pip install 'ecpfs-viewer[layout]').")
#: representatives laid out by t-SNE at most (the deepest level with at most this many nodes is chosen)
TSNE_CAP = 10_000
#: children of a node (a leaf's items) reach, by root mean square, this share of the way to the nearest other node
REACH = 0.25
PERPLEXITY = 30.0
#: fewer representatives than this are placed on the PCA axes, not laid out (t-SNE needs neighbours)
FEWEST = 8
NODE_BATCH = 256
#: offsets shorter than this share of the coordinates they were taken from are rounding, not spread
NOISE = 1e-5


class LayoutUnavailable(UserError):
    """The t-SNE placement cannot be made here (openTSNE is missing, or the tree is too wide at its top)."""


def tsne_available() -> bool:
    """Whether openTSNE can be imported (without importing it)."""
    import importlib.util

    try:
        return importlib.util.find_spec("openTSNE") is not None
    except (ImportError, ValueError):  # ValueError: blocked in sys.modules (None) or a broken spec
        return False


def _open_tsne() -> Any:
    try:
        import openTSNE
    except ImportError:
        raise LayoutUnavailable(MISSING) from None
    return openTSNE


@dataclass(frozen=True, eq=False, kw_only=True)
class LayoutProjection(MapProjection):
    """The PCA axes (offsets around a representative) and where the layout put each leaf's representative."""

    method: str = "tsne"
    anchor_level: int = 0  # the level whose representatives t-SNE laid out
    anchored: int = 0  # how many
    below: int = 0  # nodes of the level under it (0: it is the leaf level), more than ``cap``
    cap: int = TSNE_CAP
    leaf_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # ascending
    origin: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.float64))  # each leaf's representative
    centre: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.float64))  # its PCA coordinates
    scale: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))  # items' offset scale, NaN: unknown

    def project(self, vectors: np.ndarray, leaves: np.ndarray | None = None) -> np.ndarray:
        """(n, 2) float32: each vector around the leaf named for it (-1 or absent: the leaf whose
        representative is nearest along the PCA axes), scaled like that leaf's items."""
        xy = MapProjection.project(self, vectors).astype(np.float64)
        if not self.leaf_ids.size:
            return np.full(xy.shape, np.nan, np.float32)
        at = self._leaf_index(np.full(len(xy), -1, np.int64) if leaves is None else np.asarray(leaves, np.int64))
        for i in np.flatnonzero(at < 0).tolist():  # nearest representative along the axes
            at[i] = int(np.argmin(((self.centre - xy[i]) ** 2).sum(axis=1)))
        known = self.scale[np.isfinite(self.scale)]
        scale = np.where(np.isfinite(self.scale[at]), self.scale[at], np.median(known) if known.size else 0.0)
        out: np.ndarray = (self.origin[at] + scale[:, None] * (xy - self.centre[at])).astype(np.float32)
        return out

    def _leaf_index(self, leaves: np.ndarray) -> np.ndarray:
        """Position in ``leaf_ids`` of each leaf, -1 where the layout has none."""
        at = np.minimum(np.searchsorted(self.leaf_ids, leaves), self.leaf_ids.size - 1)
        return np.where(self.leaf_ids[at] == leaves, at, -1).astype(np.int64)

    @property
    def describe(self) -> str:
        what = (f"the representatives of the {self.anchored:,} " + ("leaves" if not self.below else
                                                                     f"nodes of lvl_{self.anchor_level}"))
        how = (f"t-SNE of {what} (seed {self.seed})" if self.anchored >= FEWEST else
               f"{what} on the PCA axes (too few for t-SNE)")
        capped = (f"; lvl_{self.anchor_level + 1} has {self.below:,} nodes, more than the {self.cap:,} laid out at "
                  "most, so they are placed around their parents'" if self.below else "")
        return (f"{how}{capped}; each leaf's items around its representative by their offsets along a PCA "
                f"of {self.fitted_on:,} items")


def lay_out(reader: NodeReader, projection: MapProjection, *, cap: int = TSNE_CAP,
            progress: ProgressCallback | None = None, cancel: threading.Event | None = None
            ) -> tuple[LayoutProjection, Stamps | None]:
    """Lay out the representatives and place every leaf's (module docstring); the stamps of the
    nodes read (taken before reading them). Raises :class:`LayoutUnavailable` without openTSNE."""
    tsne = _open_tsne()
    levels = reader.levels
    listed = [np.asarray(reader.level_node_ids(level), np.int64) for level in range(1, levels + 1)]
    fits = [level for level in range(1, levels + 1) if listed[level - 1].size <= cap]
    if not fits:
        raise LayoutUnavailable(f"t-SNE lays out at most {cap:,} representatives and lvl_1 of {reader.label} has "
                                f"{listed[0].size:,} nodes (no level has so few): use the PCA placement")
    anchor = max(fits)
    stamps = [reader.opened.cache.stamp([(ROOT_EMBEDDINGS, ALWAYS)] + [
        (node_path(level, int(n)), ALWAYS) for level in range(max(anchor - 1, 1), levels) for n in listed[level - 1]])]
    ids, vectors, _parent = _children(reader, anchor, None, listed, cancel)
    anchored = int(ids.size)
    centre = projection.project(vectors).astype(np.float64)
    origin = _tsne(tsne, vectors, centre, reader.metric, projection.seed, progress, cancel)
    for level in range(anchor + 1, levels + 1):
        checkpoint(cancel)
        spacing = _nearest_distance(origin)
        kids, kid_vectors, parent = _children(reader, level, ids, listed, cancel)
        kid_centre = projection.project(kid_vectors).astype(np.float64)
        offset = kid_centre - centre[parent]
        scale = REACH * spacing / _rms_by(offset, parent, ids.size, kid_centre)
        ids, centre = kids, kid_centre
        origin = origin[parent] + scale[parent, None] * offset
        if progress is not None:
            progress(Counted(level - anchor, levels - anchor, "levels placed below the layout"))
    order = np.argsort(ids, kind="stable")
    below = int(listed[anchor].size) if anchor < levels else 0
    layout = LayoutProjection(projection.mean, projection.axes, projection.explained, projection.fitted_on,
                              projection.seed, anchor_level=anchor, anchored=anchored,
                              below=below, cap=cap, leaf_ids=ids[order], origin=origin[order], centre=centre[order],
                              scale=np.full(ids.size, np.nan))
    return layout, Stamps.joined(stamps)


def apply_layout(layout: LayoutProjection, pca: Placement) -> Placement:
    """The items of a PCA placement (made on ``layout``'s axes) around their leaves' representatives;
    leaves without a place are left out and named in ``unplaced``. The scales of the leaves it holds
    are noted in ``layout.scale`` (each leaf's the same every time), so every picture keeps ``layout``."""
    at = layout._leaf_index(pca.leaf_ids) if pca.leaf_ids.size else np.zeros(0, np.int64)
    counts = np.diff(pca.leaf_start)
    placed = at >= 0
    leaf_pos = pca.leaf_pos
    keep = placed[leaf_pos]
    offset = pca.coords[keep].astype(np.float64) - layout.centre[at[leaf_pos[keep]]]
    kept_pos = leaf_pos[keep]
    spacing = _nearest_distance(layout.origin)
    scale_by_leaf = REACH * spacing[at[placed]] / _rms_by(offset, np.cumsum(placed)[kept_pos] - 1, int(placed.sum()),
                                                          pca.coords[keep])
    layout.scale[at[placed & (counts > 0)]] = scale_by_leaf[counts[placed] > 0]  # the same per leaf each time
    item_scale = np.zeros(pca.leaf_ids.size)
    item_scale[placed] = scale_by_leaf
    coords = (layout.origin[at[kept_pos]] + item_scale[kept_pos, None] * offset).astype(np.float32)
    missing = tuple((int(leaf), "no place in the layout: its parent could not be read or does not name it")
                    for leaf in pca.leaf_ids[~placed & (counts > 0)])
    return Placement(layout, pca.leaf_ids.copy(), _starts(np.where(placed, counts, 0)), coords,
                     pca.item_ids[keep], pca.unplaced + missing, sample=pca.sample)


def _children(reader: NodeReader, level: int, parent_ids: np.ndarray | None, listed: list[np.ndarray],
              cancel: threading.Event | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(node ids, representatives' vectors, index into ``parent_ids`` of each one's parent) of the
    nodes of ``level`` that exist, from their parents' rows (every level-1 node from index_root; with
    ``parent_ids`` None, every parent of the level). A node named twice keeps its first row."""
    exists = listed[level - 1]
    if level == 1:
        parents: list[tuple[int, np.ndarray, np.ndarray]] = [(0, reader.root.ids, reader.root.vectors)]
    else:
        wanted = listed[level - 2] if parent_ids is None else parent_ids
        parents = []
        for start in range(0, wanted.size, NODE_BATCH):
            checkpoint(cancel)
            part = wanted[start:start + NODE_BATCH]
            parents += [(start + j, node.ids, node.vectors) for j, node in enumerate(_nodes(reader, level - 1, part))
                        if node is not None]
    ids = np.concatenate([p[1] for p in parents]) if parents else np.zeros(0, np.int64)
    vectors = np.concatenate([p[2] for p in parents]) if parents else np.zeros((0, reader.dim), np.float32)
    parent = np.repeat(np.asarray([p[0] for p in parents], np.int64), [p[1].size for p in parents])
    _, first = np.unique(ids, return_index=True)
    keep = np.sort(first[np.isin(ids[first], exists)])
    return ids[keep].astype(np.int64), vectors[keep], parent[keep]


def _nodes(reader: NodeReader, level: int, node_ids: np.ndarray) -> list[NodeData | None]:
    """The nodes of one batch of ``level``, one that cannot be read as None (its children then have
    no place, and their leaves are named as left out): placement's batch read, reasons dropped."""
    return [node for _, node, _ in _read(reader, node_ids, np.arange(node_ids.size), keep_documents=False,
                                         level=level)]


def _tsne(tsne: Any, vectors: np.ndarray, centre: np.ndarray, metric: str, seed: int,
          progress: ProgressCallback | None, cancel: threading.Event | None) -> np.ndarray:
    """(n, 2) float64: the t-SNE layout of ``vectors``, on the PCA scale; too few: their PCA coordinates."""
    n = vectors.shape[0]
    if n < FEWEST:
        return centre.copy()
    total = 750  # openTSNE's 250 early exaggeration and 500 more iterations

    def step(iteration: int, _error: float, _embedding: Any) -> bool:
        if progress is not None:
            progress(Counted(min(iteration, total), total, f"t-SNE of {n:,} representatives"))
        return cancel is not None and cancel.is_set()

    model = tsne.TSNE(n_components=2, perplexity=min(PERPLEXITY, (n - 1) / 3), metric="cosine" if metric == "IP"
                      else "euclidean", random_state=seed, n_jobs=1, verbose=False, callbacks=step,
                      callbacks_every_iters=25)
    try:
        embedding = np.asarray(model.fit(np.asarray(vectors, np.float64)), np.float64)
    except tsne.tsne.OptimizationInterrupt:
        raise Cancelled() from None
    checkpoint(cancel)
    # on the PCA's scale, so that offsets along the axes and the layout are drawn alike
    spread = float(np.sqrt(((centre - centre.mean(axis=0)) ** 2).sum(axis=1).mean()))
    own = float(np.sqrt(((embedding - embedding.mean(axis=0)) ** 2).sum(axis=1).mean()))
    out: np.ndarray = (embedding - embedding.mean(axis=0)) * (spread / own if own > 0 and spread > 0 else 1.0)
    return out


def _nearest_distance(points: np.ndarray) -> np.ndarray:
    """Each point's distance to the nearest other (0 when alone or on top of another)."""
    if points.shape[0] < 2:
        return np.zeros(points.shape[0])
    from scipy.spatial import cKDTree  # scipy comes with openTSNE

    distance, _ = cKDTree(points).query(points, k=2)
    return np.asarray(distance[:, 1], np.float64)


def _rms_by(offset: np.ndarray, group: np.ndarray, groups: int, xy: np.ndarray) -> np.ndarray:
    """Root mean square length of the offsets per group; inf (scaled to nothing) where there are none
    or they are rounding noise against the coordinates ``xy`` they were taken from (a leaf whose one
    item is its representative, its PCA coordinates computed in another batch)."""
    count = np.bincount(group, minlength=groups).astype(np.float64)
    total = np.bincount(group, weights=(offset ** 2).sum(axis=1), minlength=groups)
    size = np.bincount(group, weights=(np.asarray(xy, np.float64) ** 2).sum(axis=1), minlength=groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        rms, level = np.sqrt(total / count), np.sqrt(size / count)
    return np.where(rms > NOISE * level, rms, np.inf)
