"""How evenly a level's nodes share its rows: the figures that say whether a build is lopsided.

Node sizes come from the level statistics (metadata only, no chunk reads); the figures are the
ones a reader of faiss or of a cluster-tree paper expects: max / median, the coefficient of
variation, and faiss's imbalance factor ``n * sum(size^2) / (sum size)^2`` (1.0 when all equal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ecpfs_viewer.model.ecpfs.shared_levels import shared_level_stats
from ecpfs_viewer.model.ecpfs.summary import IndexSummary
from ecpfs_viewer.model.histogram import figures
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


@dataclass(frozen=True)
class LevelBalance:
    """One level's node sizes and how unequal they are."""

    level: int
    is_leaf: bool
    sizes: np.ndarray  # int64 rows per node, in node id order
    chunk_rows: int | None
    chunk_fill: float | None  # mean share of a node's first chunk its rows use

    @property
    def nodes(self) -> int:
        return int(self.sizes.size)

    @property
    def rows(self) -> int:
        return int(self.sizes.sum())

    @property
    def max_over_median(self) -> float | None:
        if not self.sizes.size:
            return None
        median = float(np.median(self.sizes))
        return float(self.sizes.max()) / median if median > 0 else None

    @property
    def coefficient_of_variation(self) -> float | None:
        if not self.sizes.size or self.sizes.mean() == 0:
            return None
        return float(self.sizes.std() / self.sizes.mean())

    @property
    def imbalance_factor(self) -> float | None:
        return imbalance_factor(self.sizes)

    def to_dict(self) -> dict[str, Any]:
        sizes = figures(self.sizes)
        return {"level": self.level, "is_leaf": self.is_leaf, "nodes": self.nodes, "rows": self.rows,
                "size_min": sizes.minimum, "size_median": sizes.median, "size_max": sizes.maximum,
                "max_over_median": self.max_over_median, "coefficient_of_variation": self.coefficient_of_variation,
                "imbalance_factor": self.imbalance_factor, "chunk_rows": self.chunk_rows,
                "chunk_fill": self.chunk_fill}


def imbalance_factor(sizes: np.ndarray) -> float | None:
    """faiss's ``n * sum(s^2) / (sum s)^2``: 1.0 for equal sizes, larger the more lopsided (None: no rows)."""
    s = np.asarray(sizes, np.float64)
    total = s.sum()
    if not s.size or total == 0:
        return None
    return float(s.size * np.square(s).sum() / (total * total))


def index_balance(h: Hierarchy, summary: IndexSummary,
                  leaf_sizes: np.ndarray | None = None) -> tuple[LevelBalance, ...]:
    """The balance of every level 1..levels, from the shared level statistics (reused by other views).

    ``leaf_sizes`` (items per leaf, in leaf id order, e.g. counted from an item map already read)
    stands in for the leaf level's statistics, which read every leaf's metadata."""
    levels = summary.levels or 0
    found = []
    for level in range(1, levels + 1):
        if level == levels and leaf_sizes is not None:
            chunk_rows = _leaf_chunk_rows(h, level)
            fill = float(np.minimum(leaf_sizes / chunk_rows, 1.0).mean()) if chunk_rows and leaf_sizes.size else None
            found.append(LevelBalance(level, True, np.asarray(leaf_sizes, np.int64), chunk_rows, fill))
            continue
        stats = shared_level_stats(h, level, summary)
        found.append(LevelBalance(level, level == levels, np.asarray(stats.sizes, np.int64), stats.chunk_rows,
                                  stats.underfill))
    return tuple(found)


def _leaf_chunk_rows(h: Hierarchy, level: int) -> int | None:
    """Chunk rows of the first leaf's embeddings (the builder gives every node the same chunks)."""
    names = [n.name for n in h.children(f"lvl_{level}") if n.name.startswith("node_")]
    if not names:
        return None
    details = h.details(f"lvl_{level}/{min(names, key=lambda n: int(n[5:]) if n[5:].isdigit() else 0)}/embeddings")
    return int(details.array.chunk_shape[0]) if details.array is not None and details.array.chunk_shape else None
