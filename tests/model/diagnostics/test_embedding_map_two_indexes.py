"""Two indexes on one embedding map (model/diagnostics/embedding_map/two_indexes.py): B placed on A's
axes, the items that moved (the main B leaf of each A leaf, counted here with dicts from the item
maps), items only one index holds reported, and indexes of other dimensions refused."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from index_factory import build_two_clusters

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.diagnostics.embedding_map.two_indexes import DifferentSpaces, place_both
from ecpfs_viewer.model.search import IndexReader
from ecpfs_viewer.model.tuning.compare import migration

ITEMS, DIM = 600, 6


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, np.ndarray]:
    """(A: leaves of about 20, B: the same rows in leaves of about 60, C: A's first 500 rows, vectors)."""
    folder = tmp_path_factory.mktemp("two_maps")
    a, data, _side = build_two_clusters(folder, ITEMS, DIM, 3, target_cluster_items=20)
    build_index(folder / "data.npy", folder / "b.zarr", BuildParams(levels=2, target_cluster_items=60))
    np.save(folder / "part.npy", data[:500])
    build_index(folder / "part.npy", folder / "c.zarr", BuildParams(levels=2, target_cluster_items=20))
    return a, folder / "b.zarr", folder / "c.zarr", data


def _leaf_of(placement) -> dict[int, int]:  # type: ignore[no-untyped-def]
    leaf_ids = placement.leaf_ids[placement.leaf_pos]
    return {int(i): int(leaf) for i, leaf in zip(placement.item_ids, leaf_ids, strict=True)}


def test_an_index_against_itself_moves_nothing_and_lands_where_it_is(builds) -> None:
    a, _b, _c, _data = builds
    two = place_both(IndexReader(a), IndexReader(a))
    pa, pb = two.a.placement, two.b.placement
    assert two.moved.moved == 0 and two.moved.moved_a.size == two.moved.moved_b.size == 0
    assert (two.moved.common, two.moved.only_a, two.moved.only_b) == (ITEMS, 0, 0)
    assert np.array_equal(pa.item_ids, pb.item_ids) and np.array_equal(pa.coords, pb.coords)
    # each B leaf takes the colour of its own A leaf: the two pictures are the same picture
    assert np.array_equal(two.colours_b.leaf_codes, two.colours_a.leaf_codes)


def test_another_build_is_placed_on_a_s_axes_and_the_moved_items_follow_the_main_leaf_rule(builds) -> None:
    a, b, _c, data = builds
    two = place_both(IndexReader(a), IndexReader(b))
    pa, pb = two.a.placement, two.b.placement
    assert pb.projection is pa.projection
    assert np.array_equal(np.sort(pb.item_ids), np.arange(ITEMS))
    assert np.allclose(pb.coords, pa.projection.project(data[pb.item_ids]), atol=1e-4)  # one frame for both
    # the rule, counted here: the B leaf most of an A leaf's items went to (ties: lowest node id) keeps them
    leaf_a, leaf_b = _leaf_of(pa), _leaf_of(pb)
    went: dict[int, Counter[int]] = {}
    for item, leaf in leaf_a.items():
        went.setdefault(leaf, Counter())[leaf_b[item]] += 1
    main = {leaf: min(c, key=lambda lb: (-c[lb], lb)) for leaf, c in went.items()}
    moved = {item for item, leaf in leaf_a.items() if leaf_b[item] != main[leaf]}
    assert 0 < len(moved) < ITEMS and two.moved.moved == len(moved)
    assert set(pa.item_ids[two.moved.moved_a].tolist()) == moved == set(pb.item_ids[two.moved.moved_b].tolist())
    assert two.moved.moved == migration(IndexReader(a), IndexReader(b)).moved_items  # Compare's Migration count
    # a B leaf is drawn in the colour of the A leaf most of its items came from
    leaf_pos_a = {int(n): p for p, n in enumerate(pa.leaf_ids)}
    for p, leaf in enumerate(pb.leaf_ids.tolist()):
        came = Counter(leaf_a[i] for i, lb in leaf_b.items() if lb == leaf)
        expected = min(came, key=lambda la: (-came[la], la))
        assert two.colours_b.leaf_codes[p] == leaf_pos_a[expected]
    assert "moved" in two.moved.describe and f"{len(moved):,} of the {ITEMS:,}" in two.moved.describe


def test_items_only_one_index_holds_are_reported_not_dropped(builds) -> None:
    a, _b, c, _data = builds
    two = place_both(IndexReader(a), IndexReader(c))
    m = two.moved
    assert (m.common, m.only_a, m.only_b) == (500, 100, 0)
    assert sorted(two.a.placement.item_ids[m.only_in_a].tolist()) == list(range(500, ITEMS))
    assert m.only_in_b.size == 0 and "100 only in A" in m.describe


def test_indexes_of_other_dimensions_are_refused(builds, tmp_path: Path) -> None:
    a, _b, _c, data = builds
    np.save(tmp_path / "wide.npy", np.hstack([data, data])[:100])
    build_index(tmp_path / "wide.npy", tmp_path / "wide.zarr", BuildParams(levels=2, target_cluster_items=20))
    with pytest.raises(DifferentSpaces, match="6-dimensional vectors and B 12-dimensional"):
        place_both(IndexReader(a), IndexReader(tmp_path / "wide.zarr"))


def test_a_leaf_of_b_that_cannot_be_read_is_named_and_its_items_counted_as_only_in_a(builds, tmp_path: Path) -> None:
    import shutil

    a, _b, _c, _data = builds
    copy = tmp_path / "bad.zarr"
    shutil.copytree(a, copy)
    leaf = IndexReader(copy).leaf_ids()[2]
    (copy / "lvl_2" / f"node_{leaf}" / "embeddings" / "zarr.json").write_text("{ not json")
    two = place_both(IndexReader(a), IndexReader(copy))
    lost = set(IndexReader(a).node(2, leaf).ids.tolist())
    assert [n for n, _why in two.b.placement.unplaced] == [leaf]
    assert two.moved.moved == 0 and two.moved.only_a == len(lost) > 0
    assert set(two.a.placement.item_ids[two.moved.only_in_a].tolist()) == lost
    assert len(two.notes) == 1 and two.notes[0].startswith("B: ") and f"node_{leaf}" in two.notes[0]
