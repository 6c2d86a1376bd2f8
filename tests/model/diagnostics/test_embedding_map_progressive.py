"""The embedding map made progressively (model/diagnostics/embedding_map/progressive.py): the first
picture reads only the tree above the leaves and a sample of leaves, the pictures on the way grow
and agree with the answer, the answer places every item once on the fitted axes in the order of
the index map's leaves, it is kept and answered from the cache while its files hold, a cancel
keeps nothing, and a leaf that cannot be read is named. Figures computed here from the vectors the
index was built from."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest
from index_factory import build_two_clusters

from ecpfs_viewer.model.diagnostics.embedding_map import by_level, items_beneath
from ecpfs_viewer.model.diagnostics.embedding_map.progressive import MapPicture, progressive_placement
from ecpfs_viewer.model.diagnostics.index_map import BROKEN
from ecpfs_viewer.model.diagnostics.index_map_layout import layout_index
from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.tasks import Cancelled

ITEMS, DIM = 2000, 8


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, np.ndarray]:
    """Two clusters 40 apart along a random direction, about 200 leaves: (path, vectors, cluster per item)."""
    return build_two_clusters(tmp_path_factory.mktemp("progressive"), ITEMS, DIM, 5, levels=3,
                              target_cluster_items=10)


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ECPFS_VIEWER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_the_first_picture_reads_the_tree_and_a_sample_and_the_pictures_grow_to_every_item(built, own_cache) -> None:
    path, data, side = built
    reader = IndexReader(path)
    pictures: list[tuple[MapPicture, int]] = []
    done = progressive_placement(reader, fit_items=40, block_leaves=8,
                                 on_picture=lambda p: pictures.append((p, reader.store.counter.snapshot().requests)))
    end_requests = reader.store.counter.snapshot().requests
    leaves = len(reader.leaf_ids())
    assert done.leaves == leaves > 100 and done.complete and not done.placement.from_cache

    first, first_requests = pictures[0]
    assert first.placement.sample and 40 <= first.placement.projection.fitted_on < 40 + 40  # whole leaves
    assert first.placement.count < ITEMS / 4
    # the old way read every leaf's metadata before its first picture: at least one request a leaf
    assert first_requests < leaves and first_requests < end_requests / 4
    counts = [p.placement.count for p, _ in pictures]
    assert len(pictures) >= 2 and counts == sorted(counts) and counts[-1] < ITEMS
    # after the first, a picture on the way comes only while the answer is 4 times larger still
    assert all(4 * shown.placed_leaves <= shown.leaves for shown, _ in pictures[1:])

    answer = done.placement
    assert np.array_equal(np.sort(answer.item_ids), np.arange(ITEMS))  # every item once
    assert np.allclose(answer.coords, answer.projection.project(data[answer.item_ids]), atol=1e-4)
    for shown, _ in pictures:  # the same axes throughout: a picture's items stay where they were drawn
        assert shown.placement.projection is answer.projection
        where = np.argsort(answer.item_ids)[shown.placement.item_ids]
        assert np.array_equal(shown.placement.coords, answer.coords[where])
    # the answer's items follow the leaf band of its map, which is the map layout_index makes
    assert np.array_equal(answer.leaf_ids, done.index_map.band(reader.levels).node_ids)
    assert np.array_equal(answer.leaf_ids, layout_index(IndexReader(path)).band(reader.levels).node_ids)
    assert np.array_equal(np.diff(answer.leaf_start), done.index_map.band(reader.levels).rows)
    # the two clusters land apart along the first axis, and each level-1 colour sits on one side
    own = side[answer.item_ids]
    gap = abs(answer.coords[own == 0, 0].mean() - answer.coords[own == 1, 0].mean())
    assert gap > 6 * max(answer.coords[own == 0, 0].std(), answer.coords[own == 1, 0].std())
    codes = by_level(done.index_map, 1).leaf_codes
    assert codes is not None
    for code in np.unique(codes):
        assert np.unique(own[codes[answer.leaf_pos] == code]).size == 1


def test_the_same_seed_gives_the_same_axes_and_the_second_opening_answers_from_the_cache(built, own_cache) -> None:
    path, _data, _side = built
    first = progressive_placement(IndexReader(path), fit_items=100, use_cache=False)
    again = progressive_placement(IndexReader(path), fit_items=100)
    assert np.array_equal(first.placement.projection.axes, again.placement.projection.axes)
    assert np.array_equal(first.placement.coords, again.placement.coords)
    shown: list[MapPicture] = []
    kept = progressive_placement(IndexReader(path), fit_items=100, on_picture=shown.append)
    assert kept.placement.from_cache and not shown  # immediate: no picture on the way
    assert np.array_equal(kept.placement.coords, again.placement.coords)
    assert kept.placement.item_ids.dtype == again.placement.item_ids.dtype == np.uint32  # kept narrow, read back so
    assert np.array_equal(kept.placement.item_ids, again.placement.item_ids)
    assert np.array_equal(kept.placement.leaf_ids, kept.index_map.band(3).node_ids)
    other_seed = progressive_placement(IndexReader(path), fit_items=100, seed=1)
    assert not other_seed.placement.from_cache


def test_a_kept_placement_cut_short_is_placed_again_not_answered(built, own_cache) -> None:
    """The second opening reads the placement straight from the entry's file after its stamps: a file
    cut in the placement's middle (its stamps whole) is no answer, and the map is placed again."""
    from ecpfs_viewer.model.diagnostics.embedding_map.progressive import entry_name

    path, _data, _side = built
    first = progressive_placement(IndexReader(path), fit_items=100)
    entry = next(own_cache.rglob(f"*.{entry_name(100)}"))
    entry.write_bytes(entry.read_bytes()[:-4000])
    again = progressive_placement(IndexReader(path), fit_items=100)
    assert not again.placement.from_cache
    assert np.array_equal(again.placement.coords, first.placement.coords)
    assert progressive_placement(IndexReader(path), fit_items=100).placement.from_cache  # kept again, whole


def test_a_changed_leaf_is_placed_again_and_a_cancel_keeps_nothing(built, own_cache, tmp_path: Path) -> None:
    path, _data, _side = built
    import shutil

    copy = tmp_path / "copy.zarr"
    shutil.copytree(path, copy)
    token = threading.Event()

    def stop(_picture: MapPicture) -> None:
        token.set()

    with pytest.raises(Cancelled):
        progressive_placement(IndexReader(copy), fit_items=100, on_picture=stop, cancel=token)
    assert not progressive_placement(IndexReader(copy), fit_items=100).placement.from_cache  # nothing was kept
    assert progressive_placement(IndexReader(copy), fit_items=100).placement.from_cache
    leaf = IndexReader(copy).leaf_ids()[3]
    doc = copy / "lvl_3" / f"node_{leaf}" / "embeddings" / "zarr.json"
    stat = doc.stat()
    doc.write_text(doc.read_text())  # rewritten in place, its mtime put back: the ctime still changed
    os.utime(doc, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert not progressive_placement(IndexReader(copy), fit_items=100).placement.from_cache


def test_a_leaf_that_cannot_be_read_is_named_broken_on_the_map_and_not_kept(built, own_cache, tmp_path: Path) -> None:
    path, _data, _side = built
    import shutil

    copy = tmp_path / "bad.zarr"
    shutil.copytree(path, copy)
    leaf = IndexReader(copy).leaf_ids()[5]
    (copy / "lvl_3" / f"node_{leaf}" / "embeddings" / "zarr.json").write_text("{ not json")
    done = progressive_placement(IndexReader(copy), fit_items=100)
    assert [n for n, _why in done.placement.unplaced] == [leaf]
    assert "node_" in done.placement.note and str(leaf) in done.placement.note
    band = done.index_map.band(3)
    assert band.state[band.index_of(leaf)] == BROKEN
    assert done.placement.count == ITEMS - len(IndexReader(path).node(3, leaf).ids)
    assert not progressive_placement(IndexReader(copy), fit_items=100).placement.from_cache


def test_the_items_beneath_a_node_are_the_items_its_subtree_stores(built, own_cache) -> None:
    path, _data, _side = built
    reader = IndexReader(path)
    done = progressive_placement(reader, fit_items=100)
    placement, index_map = done.placement, done.index_map

    def stored(level: int, node_id: int) -> set[int]:  # walked down the stored tree, not the map
        ids = reader.node(level, node_id).ids
        return set(ids.tolist()) if level == reader.levels else set().union(*(stored(level + 1, int(c)) for c in ids))

    for level in (1, 2, 3):
        node_id = int(index_map.band(level).node_ids[1])
        found = items_beneath(placement, index_map, level, node_id)
        assert found.size and set(placement.item_ids[found].tolist()) == stored(level, node_id)
        assert np.array_equal(found, np.sort(found))
    assert items_beneath(placement, index_map, 2, 10**9).size == 0  # no such node
    assert items_beneath(placement, index_map, 9, 0).size == 0  # no such level


def test_a_kept_placement_shows_a_checked_sample_first_and_a_later_changed_leaf_is_placed_again(
        built, own_cache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept placement's stamps are checked in blocks of leaves (seeded order): the first block's
    items are a first picture before the rest is checked, and a leaf changed in a later block
    still makes the whole kept placement unused."""
    import shutil

    from ecpfs_viewer.model.diagnostics.embedding_map import progressive

    monkeypatch.setattr(progressive, "KEPT_FIRST_LEAVES", 16)
    monkeypatch.setattr(progressive, "KEPT_BLOCK_LEAVES", 64)
    copy = tmp_path / "copy.zarr"
    shutil.copytree(built[0], copy)
    answer = progressive_placement(IndexReader(copy), fit_items=100).placement
    shown: list[MapPicture] = []
    checked: list[int] = []
    kept = progressive_placement(IndexReader(copy), fit_items=100, on_picture=shown.append,
                                 progress=lambda p: checked.append(p.done))  # type: ignore[attr-defined]
    assert kept.placement.from_cache and np.array_equal(kept.placement.coords, answer.coords)
    (first,) = shown
    assert first.placement.sample and first.placed_leaves == 16 and first.leaves == kept.leaves
    assert int((np.diff(first.placement.leaf_start) > 0).sum()) <= 16 and 0 < first.placement.count < answer.count
    where = np.argsort(answer.item_ids)[first.placement.item_ids]
    assert np.array_equal(first.placement.coords, answer.coords[where])  # drawn where the answer has them
    assert checked[0] == 16 and checked[-1] == kept.leaves and checked == sorted(checked)

    order = np.asarray(IndexReader(copy).leaf_ids())[np.random.default_rng(progressive.DEFAULT_SEED).permutation(
        kept.leaves)]
    late = int(order[-1])  # checked in the last block, after the first picture
    doc = copy / "lvl_3" / f"node_{late}" / "item_ids" / "zarr.json"
    doc.write_text(doc.read_text())
    shown.clear()
    again = progressive_placement(IndexReader(copy), fit_items=100, on_picture=shown.append)
    assert not again.placement.from_cache
    assert shown and shown[0].placement.sample  # the kept sample was shown, then every leaf read again


def test_the_items_of_a_block_are_kept_as_one_array_not_one_per_leaf() -> None:
    """The ids and coordinates kept per leaf are views of one array per block: a small array kept
    per leaf, among the block's freed vectors, pinned the C heap (hundreds of MB at 2M items)."""
    from ecpfs_viewer.model.diagnostics.embedding_map.placement import MapProjection
    from ecpfs_viewer.model.diagnostics.embedding_map.progressive import _Blocks

    rng = np.random.default_rng(0)
    sizes = [3, 5, 4]
    got = [(p, rng.normal(size=(n, 4)).astype(np.float32), np.arange(10 * p, 10 * p + n, dtype=np.int64))
           for p, n in enumerate(sizes)]
    projection = MapProjection(np.zeros(4), np.eye(4)[:2], (0.5, 0.5), 12, 0)
    blocks = _Blocks(len(sizes))
    blocks.add_projected(projection, np.array([7, 8, 9]), got)
    assert blocks.position == [7, 8, 9] and blocks.count == sizes
    for kept in (blocks.ids, blocks.coords):
        assert len({id(a.base) for a in kept}) == 1 and all(a.base is not None for a in kept)
    for (_p, vectors, ids), kept_ids, kept_xy in zip(got, blocks.ids, blocks.coords, strict=True):
        assert np.array_equal(kept_ids, ids)
        np.testing.assert_allclose(kept_xy, projection.project(vectors), rtol=1e-6)


def test_a_block_keeps_ids_as_uint32_when_they_fit_and_the_answer_too_unless_one_does_not(monkeypatch) -> None:
    """Ids wait in a block as their stored uint32 (12 bytes an item, not 16); ids that do not fit stay
    int64, and so does the answer that holds them; the answer, copied with the freed blocks returned
    every RELEASE_LEAVES leaves, is exact. Without them the answer holds uint32 (40 MB less at 10M)."""
    import ecpfs_viewer.model.diagnostics.embedding_map.progressive as progressive
    from ecpfs_viewer.model.diagnostics.embedding_map.placement import MapProjection

    rng = np.random.default_rng(1)
    projection = MapProjection(np.zeros(4), np.eye(4)[:2], (0.5, 0.5), 12, 0)
    small = [(p, rng.normal(size=(3, 4)).astype(np.float32), np.arange(3, dtype=np.int64) + 5 * p) for p in range(4)]
    huge = [(4, rng.normal(size=(2, 4)).astype(np.float32), np.array([2**33, 1], np.int64))]
    blocks = progressive._Blocks(5)
    blocks.add_projected(projection, np.arange(5), small)
    blocks.add_projected(projection, np.arange(5), huge)
    assert blocks.ids[0].dtype == np.uint32 and blocks.ids[4].dtype == np.int64
    returned = []
    monkeypatch.setattr(progressive, "RELEASE_LEAVES", 2)
    monkeypatch.setattr(progressive.process_memory, "return_freed_memory", lambda: returned.append(1))
    answer = blocks.placement(projection, np.array([4, 2, 0, 3, 1]), sample=False)
    assert len(returned) == 2  # after the second and the fourth leaf copied
    by_leaf = {p: ids for p, _v, ids in small + huge}
    expected = np.concatenate([by_leaf[p] for p in (4, 2, 0, 3, 1)])
    assert answer.item_ids.dtype == np.int64 and np.array_equal(answer.item_ids, expected)
    xy = {p: projection.project(v) for p, v, _ids in small + huge}
    np.testing.assert_allclose(answer.coords, np.concatenate([xy[p] for p in (4, 2, 0, 3, 1)]), rtol=1e-6)
    assert all(a.size == 0 for a in blocks.ids)  # every leaf released as it was copied
    fitting = progressive._Blocks(4)
    fitting.add_projected(projection, np.arange(4), small)
    narrow = fitting.placement(projection, np.array([2, 0, 3, 1]), sample=False)
    assert narrow.item_ids.dtype == np.uint32
    assert np.array_equal(narrow.item_ids, np.concatenate([by_leaf[p] for p in (2, 0, 3, 1)]))


def test_pictures_on_the_way_stop_growing_past_their_most_items(built, own_cache, monkeypatch) -> None:
    """Past PICTURE_MOST_ITEMS no picture is handed over (each is a copy of everything read): the last
    picture holds at most that many, and the answer still holds every item."""
    from ecpfs_viewer.model.diagnostics.embedding_map import progressive

    path, _data, _side = built
    monkeypatch.setattr(progressive, "PICTURE_MOST_ITEMS", 400)
    pictures: list[MapPicture] = []
    done = progressive_placement(IndexReader(path), fit_items=100, block_leaves=8, on_picture=pictures.append)
    counts = [p.placement.count for p in pictures]
    assert counts and max(counts) <= 400 < ITEMS and done.placement.count == ITEMS
    assert max(counts) * progressive.PICTURE_GROWTH > 400  # the pictures grew up to the most, then stopped


def test_the_placement_is_kept_with_its_blocks_stamps_joined_as_they_are_written(built, own_cache,
                                                                                 monkeypatch) -> None:
    """The stamps of every block are saved as one without being joined in memory first (joined, and
    then written to a buffer, each was 110 MB of a 10M-item map's peak); the kept entry still holds
    every leaf's files, so a changed leaf still makes it unused."""
    from ecpfs_viewer.model.storage.stamps import Stamps

    path, _data, _side = built

    def refused(_parts: object) -> None:
        raise AssertionError("the blocks' stamps were joined in memory")

    with monkeypatch.context() as patched:
        patched.setattr(Stamps, "joined", staticmethod(refused))
        placed = progressive_placement(IndexReader(path), fit_items=100, block_leaves=16)
    kept = progressive_placement(IndexReader(path), fit_items=100)
    assert not placed.placement.from_cache and kept.placement.from_cache
    assert np.array_equal(kept.placement.coords, placed.placement.coords)


def test_the_files_read_are_stamped_a_chunk_stored_later_and_a_chunk_changed_while_read_place_again(
        built, own_cache, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a folder the map stamps the files it reads: each leaf's array documents, then the chunks they
    name, before those are read. A chunk that was not stored (read as the fill value) and is stored
    later is a change (a leaf's folder listed at the first opening had no such file to stamp), and so
    is a chunk rewritten just after it was read: neither is answered from the cache."""
    import shutil

    from ecpfs_viewer.model.zarrtree.array_batch import ArrayBatchReader

    copy = tmp_path / "copy.zarr"
    shutil.copytree(path := built[0], copy)
    leaf = IndexReader(copy).leaf_ids()[7]
    chunk = copy / "lvl_3" / f"node_{leaf}" / "embeddings" / "c" / "0" / "0"
    stored = chunk.read_bytes()
    chunk.unlink()  # the leaf's vectors read as the fill value
    first = progressive_placement(IndexReader(copy), fit_items=100)
    assert not first.placement.unplaced and progressive_placement(IndexReader(copy), fit_items=100).placement.from_cache
    chunk.write_bytes(stored)
    again = progressive_placement(IndexReader(copy), fit_items=100)
    assert not again.placement.from_cache
    truth = progressive_placement(IndexReader(path), fit_items=100, use_cache=False).placement
    assert np.array_equal(again.placement.coords, truth.coords)

    other = copy / "lvl_3" / f"node_{IndexReader(copy).leaf_ids()[11]}" / "item_ids" / "c" / "0"
    original = ArrayBatchReader._read_chunks

    def read_then_rewritten(self, paths, batch, check, isolate):  # a writer right after the read
        out = original(self, paths, batch, check, isolate)
        if any(str(other.parent.parent.relative_to(copy)) == p for p in paths):
            other.write_bytes(other.read_bytes())
        return out

    with monkeypatch.context() as patched:
        patched.setattr(ArrayBatchReader, "_read_chunks", read_then_rewritten)
        progressive_placement(IndexReader(copy), fit_items=100, use_cache=False)
    assert not progressive_placement(IndexReader(copy), fit_items=100).placement.from_cache


def test_an_array_read_another_way_is_stamped_by_its_folder(built, own_cache, tmp_path: Path) -> None:
    """A leaf array the batch reader leaves to the Hierarchy (here sharded) has no chunk list to stamp:
    its folder is stamped, every file below it, and a change to one of them places the map again."""
    import shutil

    import zarr

    copy = tmp_path / "sharded.zarr"
    shutil.copytree(built[0], copy)
    leaf = IndexReader(copy).leaf_ids()[2]
    folder = copy / "lvl_3" / f"node_{leaf}" / "embeddings"
    vectors = zarr.open_array(folder, mode="r")[:]
    shutil.rmtree(folder)
    zarr.create_array(folder, data=vectors, chunks=(1, vectors.shape[1]), shards=vectors.shape)
    told: list[list[str]] = []
    reader = IndexReader(copy)
    reader.read_nodes(3, [leaf], before_chunks=lambda chunks, others: told.append(others))
    assert told == [[f"lvl_3/node_{leaf}/embeddings"]]  # read another way: named for its folder to be stamped

    first = progressive_placement(IndexReader(copy), fit_items=100)
    assert not first.placement.unplaced and progressive_placement(IndexReader(copy), fit_items=100).placement.from_cache
    shard = next(p for p in (folder / "c").rglob("*") if p.is_file())
    shard.write_bytes(shard.read_bytes())
    assert not progressive_placement(IndexReader(copy), fit_items=100).placement.from_cache


@pytest.mark.parametrize("from_items", [ITEMS // 2, ITEMS + 1])
def test_freed_blocks_go_back_on_a_large_map_only_and_no_norm_is_computed(built, own_cache, monkeypatch,
                                                                          from_items: int) -> None:
    """After each block and at the end a map of RETURN_FROM_ITEMS items or more hands the freed
    vectors back to the system; a smaller one leaves them to the allocator (a return after each block
    was a twentieth of a 200,000-item placement). The squared norms search scores with are never
    computed for the map (another twentieth)."""
    import ecpfs_viewer.model.diagnostics.embedding_map.progressive as progressive_module
    import ecpfs_viewer.model.search.reader as reader_module

    returned: list[None] = []
    monkeypatch.setattr(progressive_module.process_memory, "return_freed_memory", lambda: returned.append(None))
    monkeypatch.setattr(progressive_module, "RETURN_FROM_ITEMS", from_items)

    def no_norms(_vectors: np.ndarray) -> np.ndarray:
        raise AssertionError("the map computed squared norms")

    monkeypatch.setattr(reader_module, "squared_norms", no_norms)
    done = progressive_placement(IndexReader(built[0]), fit_items=100, block_leaves=32, use_cache=False)
    assert done.placement.count == ITEMS
    assert len(returned) >= 4 + 2 if from_items <= ITEMS else returned == []  # 200 leaves: blocks of 32, the end
