"""How many nodes a level lists, and its gaps, without reading any node's own documents.

`info` on a remote index shows this for the leaf level: the node sizes need every leaf's
``zarr.json`` (one request each, 4,000 of them for a 200,000-item index), the count only the
listing (on a host without listings, the parent level's id arrays). ``check`` and
``info --leaf-sizes`` read the sizes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ecpfs_viewer.model.ecpfs import finding_codes as fc
from ecpfs_viewer.model.ecpfs.findings import Finding
from ecpfs_viewer.model.ecpfs.levels import MAX_NODE_ID, _gaps
from ecpfs_viewer.model.ecpfs.paths import level_path, parse_node_name
from ecpfs_viewer.model.ecpfs.summary import IndexSummary
from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


@dataclass(frozen=True)
class LevelCount:
    """The listed nodes of one ``lvl_N``: count, the possible maximum and the ids missing below it."""

    level: int
    path: str
    is_leaf: bool | None
    node_count: int
    max_nodes: int | None
    gap_count: int
    findings: tuple[Finding, ...] = ()
    listed: bool = True  # False when the level could not be listed: its count is not known

    @property
    def complete(self) -> bool:
        """True when the count comes from a listing that answered."""
        return self.listed

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "path": self.path, "is_leaf": self.is_leaf, "node_count": self.node_count,
                "max_nodes": self.max_nodes, "gap_count": self.gap_count, "sizes_read": False, "leaf_sum": None,
                "findings": [f.to_dict() for f in self.findings]}


def level_count(h: Hierarchy, level: int, summary: IndexSummary) -> LevelCount:
    """The nodes ``lvl_{level}`` lists (node_<id> containers), from the listing alone; never raises."""
    path = level_path(level)
    leaf = None if summary.levels is None else level == summary.levels
    limit = summary.max_nodes(level)
    try:
        if path not in {n.name for n in h.children("")}:
            return LevelCount(level, path, leaf, 0, limit, 0, (Finding(fc.LEVEL_MISSING,
                                                                       path, "level does not exist"),))
        listed = h.children(path)
    except Exception as exc:  # a store that cannot be listed: said, not raised
        return LevelCount(level, path, leaf, 0, limit, 0, (Finding(fc.CANNOT_LIST,
                                                                   path, f"cannot list: {describe_exception(exc)}"),),
                          listed=False)
    ids = [i for i in (parse_node_name(child.name) for child in listed if child.kind.is_container)
           if i is not None and i <= MAX_NODE_ID]
    node_ids = np.asarray(sorted(ids), dtype=np.int64)
    gap_count = _gaps(node_ids, limit)[0] if limit is not None else 0
    return LevelCount(level, path, leaf, int(node_ids.size), limit, gap_count)
