"""Indexes with a known defect, for the diagnostics tests (issue 24): built on clustered data, then
one leaf's items moved by hand so that search no longer finds its way to them (``build_moved_leaf_index``,
or ``move_leaf`` on an index already built)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import zarr
from index_factory import build_clustered_index

from ecpfs_viewer.model.search import IndexReader


@dataclass(frozen=True)
class MovedLeaf:
    """An index whose leaf ``leaf`` holds items moved next to leaf ``host``'s (far from its own
    representative): search routed to the host never opens the moved leaf."""

    path: Path
    levels: int
    leaf: int
    host: int
    item_ids: np.ndarray  # the moved items
    vectors: np.ndarray  # their new vectors


def build_moved_leaf_index(folder: Path, items: int = 1500, dim: int = 8, levels: int = 2) -> MovedLeaf:
    """Build on 12 clusters, then overwrite the largest leaf's vectors with a tight cluster beside the
    leaf farthest from it (its embeddings only; ids and routing untouched)."""
    path = build_clustered_index(folder, items, dim, clusters=12, levels=levels, target_cluster_items=25)
    leaf_level = zarr.open_group(str(path / f"lvl_{levels}"), mode="r")
    leaves = {int(name[5:]): leaf_level[name] for name in leaf_level.group_keys()}
    sizes = {n: g["embeddings"].shape[0] for n, g in leaves.items()}
    leaf = max(sizes, key=lambda n: (sizes[n], -n))
    own = np.asarray(leaves[leaf]["embeddings"][...], np.float32).mean(axis=0)
    centres = {n: np.asarray(g["embeddings"][...], np.float32).mean(axis=0) for n, g in leaves.items()}
    host = max(centres, key=lambda n: float(np.linalg.norm(centres[n] - own)))
    rng = np.random.default_rng(3)
    offset = rng.standard_normal(dim).astype(np.float32)
    moved = (centres[host] + 0.3 * offset / np.linalg.norm(offset)
             + 0.02 * rng.standard_normal((sizes[leaf], dim))).astype(np.float32)
    zarr.open_array(str(path / f"lvl_{levels}" / f"node_{leaf}" / "embeddings"), mode="r+")[...] = moved
    ids = np.asarray(leaves[leaf]["item_ids"][...], np.int64)
    return MovedLeaf(path, levels, leaf, host, ids, moved)


def move_leaf(index_path: Path) -> tuple[int, list[int], int]:
    """Give one leaf the vectors of items of a leaf under another lvl_1 branch; (leaf, its items, branch)."""
    index = IndexReader(index_path)
    root = zarr.open_group(str(index_path), mode="r+")
    lvl1 = root["lvl_1"]
    first_children = np.asarray(lvl1["node_0"]["node_ids"][...])
    other = [int(n[5:]) for n in lvl1.group_keys() if n != "node_0"]
    far_children = np.asarray(lvl1[f"node_{other[0]}"]["node_ids"][...])
    leaf_parent = root[f"lvl_2/node_{int(first_children[0])}"]
    leaf = int(np.asarray(leaf_parent["node_ids"][...])[0])
    donor_parent = root[f"lvl_2/node_{int(far_children[0])}"]
    donor = int(np.asarray(donor_parent["node_ids"][...])[0])
    target = root[f"lvl_3/node_{leaf}"]
    moved = np.asarray(root[f"lvl_3/node_{donor}"]["embeddings"][...])
    rows = target["embeddings"].shape[0]
    picked = np.resize(moved, (rows, moved.shape[1]))
    target["embeddings"][...] = picked
    items = np.asarray(target["item_ids"][...]).astype(int).tolist()
    index.close()
    return leaf, items, 1
