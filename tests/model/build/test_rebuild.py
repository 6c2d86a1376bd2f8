"""Rebuilding a legacy index from its own vectors: the command, the vectors file, and what it refuses."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.build.rebuild import RebuildError, plan_rebuild, write_item_vectors
from ecpfs_viewer.model.ecpfs import summarize
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.validation import validate
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy


def legacy(root: Path) -> Path:
    for name in ("info/format_version", "info/total_items", "info/next_item_id"):
        shutil.rmtree(root / name)
    return root


def test_the_command_rebuilds_the_same_items_from_the_vectors_written(two_clusters_copy: Path, tmp_path: Path) -> None:
    original = Hierarchy(open_store(two_clusters_copy))
    h = Hierarchy(open_store(legacy(two_clusters_copy)))
    summary = summarize(h)
    plan = plan_rebuild(h, summary)
    assert plan is not None and plan.leaf_size == 2
    assert plan.command.endswith("two_clusters-v1.zarr --levels 2 --target-cluster-items 2 --metric L2")
    assert write_item_vectors(h, summary, plan.vectors) == 8
    vectors = np.load(plan.vectors)
    for leaf in range(4):
        ids = original.read_array(f"lvl_2/node_{leaf}/item_ids")
        np.testing.assert_array_equal(vectors[ids], original.read_array(f"lvl_2/node_{leaf}/embeddings"))
    build_index(plan.vectors, plan.output, BuildParams(levels=2, target_cluster_items=2))
    rebuilt = Hierarchy(open_store(plan.output))
    assert validate(rebuilt).ok and summarize(rebuilt).total_items == 8


def test_a_leaf_without_usable_embeddings_is_refused_by_name_and_no_file_is_left(two_clusters_copy: Path) -> None:
    (legacy(two_clusters_copy) / "lvl_2/node_1/embeddings/zarr.json").write_text("{not json")
    h = Hierarchy(open_store(two_clusters_copy))
    out = two_clusters_copy.parent / "vectors.npy"
    with pytest.raises(RebuildError, match=r"lvl_2/node_1 has unreadable embeddings"):
        write_item_vectors(h, summarize(h), out)
    assert not out.exists()


def test_an_item_in_two_leaves_is_refused(two_clusters_copy: Path) -> None:
    import zarr

    legacy(two_clusters_copy)
    zarr.open_array(two_clusters_copy / "lvl_2/node_1/item_ids", mode="r+")[...] = [0, 1]  # leaf 0 holds 0 and 1
    h = Hierarchy(open_store(two_clusters_copy))
    out = two_clusters_copy.parent / "vectors.npy"
    with pytest.raises(RebuildError, match="held by two leaves"):
        write_item_vectors(h, summarize(h), out)
    assert not out.exists()
