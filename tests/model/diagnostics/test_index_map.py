"""The index map's icicle layout and overlays, on real builds."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from defect_indexes import build_moved_leaf_index
from index_factory import build_clustered_index

from ecpfs_viewer.model.diagnostics.index_map import (
    BROKEN,
    IndexMap,
    fill_overlay,
    findings_overlay,
    overlay_from_arrays,
    overlay_from_nodes,
    size_overlay,
)
from ecpfs_viewer.model.diagnostics.index_map_layout import LevelInput, layout_index, map_layout
from ecpfs_viewer.model.ecpfs.findings import Finding
from ecpfs_viewer.model.ecpfs.summary import summarize
from ecpfs_viewer.model.search import IndexReader


@pytest.fixture(scope="module")
def three_levels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_clustered_index(tmp_path_factory.mktemp("map"), 2000, 6, levels=3, target_cluster_items=20)


def test_every_node_is_as_wide_as_the_items_beneath_it_and_nested_under_its_parent(three_levels: Path) -> None:
    reader = IndexReader(three_levels)
    index_map = layout_index(reader)
    assert len(index_map.levels) == 3 and index_map.total == 2000
    for band in index_map.levels:
        assert band.node_ids.tolist() == sorted(band.node_ids.tolist(), key=lambda n: band.x0[band.index_of(n)])
        assert (band.x0[1:] >= band.x1[:-1] - 1e-9).all()  # side by side, never overlapping
        assert sorted(band.node_ids.tolist()) == reader.level_node_ids(band.level)
    leaves = index_map.band(3)
    for i, leaf in enumerate(leaves.node_ids):
        assert leaves.sizes[i] == reader.node(3, int(leaf)).ids.size
    for depth in (1, 2):
        band, below = index_map.levels[depth - 1], index_map.levels[depth]
        for i, node in enumerate(band.node_ids):
            children = reader.node(depth, int(node)).ids.tolist()
            mine = np.flatnonzero(below.parents == i)
            assert sorted(below.node_ids[mine].tolist()) == sorted(c for c in children if c in below.node_ids)
            assert band.sizes[i] == below.sizes[mine].sum()
            if mine.size:
                assert below.x0[mine].min() == band.x0[i] and below.x1[mine].max() == band.x1[i]
    level, node = index_map.node_at(float(leaves.x0[5]) + 0.5, 2.5)
    assert (level, node) == (3, int(leaves.node_ids[5]))
    assert index_map.node_at(-1, 0.5) is None and index_map.node_at(1.0, 3.5) is None


def test_a_node_that_cannot_be_read_is_marked_not_left_out(three_levels: Path, tmp_path: Path) -> None:
    copy = tmp_path / "idx.zarr"
    shutil.copytree(three_levels, copy)
    reader = IndexReader(three_levels)
    victim = reader.level_node_ids(2)[3]
    shutil.rmtree(copy / "lvl_2" / f"node_{victim}" / "node_ids")
    index_map = layout_index(IndexReader(copy))
    band = index_map.band(2)
    i = band.index_of(victim)
    assert i is not None and band.state[i] == BROKEN
    assert "broken" in " ".join(index_map.facts(2, victim))
    flagged = findings_overlay(index_map, [])
    assert flagged.value(2, i) == 2.0


def test_overlays_give_each_node_its_value(three_levels: Path) -> None:
    index_map = layout_index(IndexReader(three_levels))
    leaves = index_map.band(3)
    sizes = size_overlay(index_map)
    biggest = int(np.argmax(leaves.rows))
    assert sizes.value(3, biggest) == pytest.approx(np.log2(leaves.rows[biggest] / np.median(leaves.rows)))
    band = index_map.band(1)
    assert sizes.value(1, 0) == pytest.approx(np.log2(band.sizes[0] / np.median(band.sizes)))
    fill = fill_overlay(index_map)
    chunk = index_map.chunk_rows[3]
    assert chunk and fill.value(3, biggest) == pytest.approx(
        leaves.rows[biggest] / (np.ceil(leaves.rows[biggest] / chunk) * chunk))
    leaf = int(leaves.node_ids[2])
    found = findings_overlay(index_map, [Finding("ECPFS-E010", f"lvl_3/node_{leaf}/embeddings", "bad")])
    assert found.value(3, 2) == 2.0 and found.value(3, 3) == 0.0
    named = overlay_from_nodes(index_map, "workload", {(3, leaf): 7.0}, "visits per node")
    same = overlay_from_arrays(index_map, "workload", {3: (np.array([leaf]), np.array([7.0]))}, "visits per node")
    assert named.value(3, 2) == same.value(3, 2) == 7.0 and named.value(3, 3) is None is same.value(3, 3)
    assert "workload visits: 7" in index_map.facts(3, leaf, [named])


def test_unlinked_nodes_are_laid_out_after_the_linked_ones() -> None:
    inputs = [LevelInput(np.array([0, 1]), np.array([2, 1]), [np.array([0, 1]), np.array([2])], np.zeros(2, np.int8)),
              LevelInput(np.array([0, 1, 2, 9]), np.array([5, 3, 4, 6]), [None] * 4, np.zeros(4, np.int8))]
    index_map = map_layout("t", inputs)
    leaves = index_map.band(2)
    assert leaves.node_ids.tolist() == [0, 1, 2, 9]
    assert leaves.x0.tolist() == [0, 5, 8, 12] and index_map.total == 18
    assert leaves.parents[3] == -1 and "unlinked" in " ".join(index_map.facts(2, 9))
    assert index_map.band(1).sizes.tolist() == [8, 4]


def test_the_moved_leaf_stands_out_on_no_size_overlay_but_keeps_its_place(tmp_path: Path) -> None:
    defect = build_moved_leaf_index(tmp_path)
    index_map = layout_index(IndexReader(defect.path))
    assert index_map.band(2).index_of(defect.leaf) is not None
    assert index_map.total == 1500


def test_one_reader_lays_out_its_index_once(three_levels: Path) -> None:
    from ecpfs_viewer.model.diagnostics.index_map_layout import shared_layout

    reader = IndexReader(three_levels)
    first = shared_layout(reader)
    assert shared_layout(reader) is first and shared_layout(IndexReader(three_levels)) is not first
    assert [b.node_ids.tolist() for b in first.levels] == [b.node_ids.tolist() for b in layout_index(reader).levels]


def test_an_index_declaring_four_billion_levels_is_refused_not_walked(two_clusters_copy: Path) -> None:
    """info/levels is what a store declares: a map of 2**32 - 1 levels was walked level by level (the
    window's map and the monkey's run never ended); it is refused at once, saying why."""
    from hostile_builders import BROKEN_COPIES

    from ecpfs_viewer.model.diagnostics.index_map_layout import IndexMapError

    BROKEN_COPIES["four-billion-levels"](two_clusters_copy)
    with pytest.raises(IndexMapError, match="declares 4,294,967,295 levels but 2 are stored"):
        layout_index(IndexReader(two_clusters_copy))


def test_the_refusal_is_an_answer_for_the_user_not_a_bug() -> None:
    """The window logs a UserError as an answer (no traceback in the log: the monkey checks it)."""
    from ecpfs_viewer.model.diagnostics.index_map_layout import IndexMapError
    from ecpfs_viewer.model.errors import UserError

    assert issubclass(IndexMapError, UserError)


def _leaf_document_reads(index: Path) -> tuple[list[int], int]:
    """A map laid out by a fresh reader (a later process): its leaf sizes, and how many leaf
    documents it read beyond the one the index's summary reads (the first leaf's embeddings)."""
    reader = IndexReader(index)
    read: list[str] = []
    real = reader.store.read_many_or_errors

    def counted(keys, *args, **kwargs):  # type: ignore[no-untyped-def]
        read.extend(k for k in keys if k.startswith(f"lvl_{reader.levels}/") and k.endswith("zarr.json"))
        return real(keys, *args, **kwargs)

    reader.store.read_many_or_errors = counted  # type: ignore[method-assign]
    summarize(reader.hierarchy)
    read.clear()
    band = layout_index(reader).levels[-1]
    return band.sizes.tolist(), len(read)


def test_a_later_map_takes_the_leaf_sizes_from_the_cache_folder_until_a_leaf_document_changes(tmp_path: Path) -> None:
    """The leaf level's statistics are what `info` keeps in the cache folder: a later map (the
    window's, a recall's miss map) reads no leaf document while none changed (10M items: 10 s and
    860 MB to read 200,000 leaves' documents again)."""
    index = build_clustered_index(tmp_path, 3000, 8)
    leaves = len(list((index / "lvl_2").glob("node_*")))
    sizes, first = _leaf_document_reads(index)
    assert first >= 2 * leaves and sum(sizes) == 3000  # read: each leaf's embeddings and item_ids documents
    again, reads = _leaf_document_reads(index)
    assert again == sizes and reads == 0
    leaf = max((index / "lvl_2").glob("node_*"), key=lambda p: int(p.name[5:])) / "item_ids" / "zarr.json"
    leaf.write_bytes(leaf.read_bytes())  # rewritten in place: its stamp changed
    after, reads = _leaf_document_reads(index)
    assert after == sizes and reads >= 2 * leaves


def test_a_sketch_of_the_tree_comes_before_any_leaf_document_is_read(three_levels: Path) -> None:
    """The first picture (10M items: 0.4 s against 7 s for the leaves' 400,000 documents): the tree as
    listed, every leaf one unit wide and each node as wide as the leaves beneath it, and hover says
    the items are not read yet; the answer is the map a call without a sketch gives."""
    reader = IndexReader(three_levels)
    summarize(reader.hierarchy)
    leaf_reads: list[str] = []
    real = reader.store.read_many_or_errors

    def counted(keys, *args, **kwargs):  # type: ignore[no-untyped-def]
        leaf_reads.extend(k for k in keys if k.startswith("lvl_3/") and k.endswith("zarr.json"))
        return real(keys, *args, **kwargs)

    reader.store.read_many_or_errors = counted  # type: ignore[method-assign]
    sketches: list[tuple[IndexMap, int]] = []
    answer = layout_index(reader, on_sketch=lambda m: sketches.append((m, len(leaf_reads))))
    assert len(sketches) == 1 and leaf_reads
    sketch, reads_before = sketches[0]
    assert sketch.sketch and not answer.sketch and reads_before == 0
    assert [b.node_ids.tolist() for b in sketch.levels] == [b.node_ids.tolist() for b in answer.levels]
    leaves = sketch.band(3)
    assert (leaves.sizes == 1).all() and sketch.total == len(leaves)
    for depth in (1, 2):
        band, below = sketch.levels[depth - 1], sketch.levels[depth]
        for i in range(len(band)):
            assert band.sizes[i] == below.sizes[below.parents == i].sum() > 0
    node = int(sketch.band(2).node_ids[0])
    assert f"{int(sketch.band(2).sizes[0]):,} leaves beneath (their items not read yet)" in sketch.facts(2, node)
    assert "items not read yet" in sketch.facts(3, int(leaves.node_ids[0]))
    fresh = layout_index(IndexReader(three_levels))
    for a, b in zip(answer.levels, fresh.levels, strict=True):
        assert a.node_ids.tolist() == b.node_ids.tolist() and a.x0.tolist() == b.x0.tolist()
        assert a.rows.tolist() == b.rows.tolist() and a.state.tolist() == b.state.tolist()
