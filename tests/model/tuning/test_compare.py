"""Comparing two real builds: balance, migration (checked against pair counts made here) and recall vs cost."""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ecpfs_viewer.model.build.builder import BuildParams, build_index
from ecpfs_viewer.model.search import IndexReader, SearchCancelled, SearchParams
from ecpfs_viewer.model.tuning.balance import imbalance_factor
from ecpfs_viewer.model.tuning.compare import compare_indexes, query_paths, side_by_side
from ecpfs_viewer.model.tuning.migration import compare_assignments

ITEMS = 900


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One clustered input built three times: twice alike (25 items per leaf) and once with 80."""
    folder = tmp_path_factory.mktemp("compare")
    rng = np.random.default_rng(3)
    centres = rng.standard_normal((15, 16)) * 4
    data = (centres[rng.integers(0, 15, ITEMS)] + rng.standard_normal((ITEMS, 16))).astype(np.float32)
    np.save(folder / "data.npy", data)
    out = {}
    for name, target in (("a", 25), ("a_again", 25), ("b", 80)):
        build_index(folder / "data.npy", folder / f"{name}.zarr", BuildParams(levels=2, target_cluster_items=target))
        out[name] = folder / f"{name}.zarr"
    return out


def _leaf_of_each(path: Path) -> dict[int, int]:
    """item id -> leaf, read here straight from every leaf's item_ids (not through the item map)."""
    reader = IndexReader(path)
    found = {}
    for leaf, node in zip(reader.leaf_ids(), reader.nodes(reader.levels, reader.leaf_ids()), strict=True):
        assert node is not None
        found.update({int(i): leaf for i in node.ids})
    return found


def test_identical_builds_agree_fully_with_no_flows(builds: dict[str, Path]) -> None:
    a, b = IndexReader(builds["a"]), IndexReader(builds["a_again"])
    comparison = compare_indexes(a, b, sample=30, k=5, search_exps=(1, 4))
    moved = comparison.migration
    assert moved is not None
    assert moved.common_items == ITEMS and moved.only_a == moved.only_b == 0
    assert moved.pair_agreement == 1.0 and moved.pair_agreement_b == 1.0 and moved.adjusted_rand == 1.0
    assert moved.flows == () and moved.flow_count == 0 and moved.moved_items == 0
    assert not any(row.differs for row in comparison.sides.rows)
    recall = comparison.recall
    assert recall.shared_truth and "computed once" in recall.note
    assert recall.curve_a == tuple(p.__class__(**{**p.__dict__, "ms": q.ms}) for p, q in
                                   zip(recall.curve_b, recall.curve_a, strict=True))  # all but the time agree
    assert recall.differing == ()


def test_different_builds_report_the_migration_counted_independently(builds: dict[str, Path]) -> None:
    a, b = IndexReader(builds["a"]), IndexReader(builds["b"])
    moved = compare_assignments(a.locator.read_everything(), b.locator.read_everything())  # type: ignore[arg-type]
    in_a, in_b = _leaf_of_each(builds["a"]), _leaf_of_each(builds["b"])
    ids = sorted(in_a)
    la, lb = np.array([in_a[i] for i in ids]), np.array([in_b[i] for i in ids])
    upper = np.triu(np.ones((ITEMS, ITEMS), bool), 1)
    same_a, same_b = (la[:, None] == la[None, :]) & upper, (lb[:, None] == lb[None, :]) & upper
    both = int((same_a & same_b).sum())
    only_a, only_b = int((same_a & ~same_b).sum()), int((~same_a & same_b).sum())
    neither = int(upper.sum()) - both - only_a - only_b
    ari = 2 * (both * neither - only_a * only_b) / (
        (both + only_a) * (only_a + neither) + (both + only_b) * (only_b + neither))
    assert moved.pair_agreement == pytest.approx(both / (both + only_a))
    assert moved.pair_agreement_b == pytest.approx(both / (both + only_b))
    assert moved.adjusted_rand == pytest.approx(ari)
    assert 0 < moved.adjusted_rand < 1 and moved.leaves_a > moved.leaves_b
    cells = Counter(zip(la.tolist(), lb.tolist(), strict=True))
    main = {}
    for (leaf_a, leaf_b), _n in sorted(cells.items(), key=lambda c: (c[0][0], -c[1], c[0][1])):
        main.setdefault(leaf_a, leaf_b)
    flows = sorted(((n, leaf_a, leaf_b) for (leaf_a, leaf_b), n in cells.items() if main[leaf_a] != leaf_b),
                   key=lambda f: (-f[0], f[1], f[2]))
    assert moved.flow_count == len(flows) and moved.moved_items == sum(f[0] for f in flows)
    assert [(f.items, f.leaf_a, f.leaf_b) for f in moved.flows] == flows[:len(moved.flows)]
    assert all(f.stayed_in == main[f.leaf_a] for f in moved.flows)


def test_side_by_side_marks_the_levels_that_differ(builds: dict[str, Path]) -> None:
    sides = side_by_side(IndexReader(builds["a"]), IndexReader(builds["b"]))
    rows = {r.name: r for r in sides.rows}
    assert not rows["levels"].differs and not rows["total items"].differs
    assert rows["lvl_2 nodes"].differs and rows["lvl_2 nodes"].a > rows["lvl_2 nodes"].b
    sizes = sides.a.balance[-1].sizes
    assert sizes.sum() == ITEMS
    assert sides.a.balance[-1].imbalance_factor == pytest.approx(len(sizes) * (sizes.astype(float) ** 2).sum()
                                                                 / ITEMS ** 2)
    assert rows["disk bytes"].a == sum(p.stat().st_size for p in builds["a"].rglob("*") if p.is_file())
    assert imbalance_factor(np.array([5, 5, 5])) == 1.0


def test_recall_curves_and_the_most_differing_queries(builds: dict[str, Path]) -> None:
    a, b = IndexReader(builds["a"]), IndexReader(builds["b"])
    comparison = compare_indexes(a, b, sample=60, k=10, search_exps=(1, 2, 8))
    recall = comparison.recall
    assert [p.search_exp for p in recall.curve_a] == [1, 2, 8]
    truth = a.exact(recall.queries_a.vectors, 10, frozenset(), list(recall.queries_a.self_ids))
    for curve, reader in ((recall.curve_a, a), (recall.curve_b, b)):
        for point in curve:
            results = [reader.search(q, SearchParams(10, point.search_exp, -1, frozenset({own})))
                       for q, own in zip(recall.queries_a.vectors, recall.queries_a.self_ids, strict=True)]
            hits = [len({h.item_id for h in r.hits} & set(truth.ids[j].tolist())) for j, r in enumerate(results)]
            assert point.recall == pytest.approx(sum(hits) / (10 * len(results)))
            assert point.distance_computations == pytest.approx(np.mean([r.cost.distance_computations
                                                                        for r in results]))
            assert point.leaves_scanned == pytest.approx(np.mean([r.cost.leaves_scanned for r in results]))
    assert recall.curve_b[0].distance_computations != recall.curve_a[0].distance_computations
    for curve in (recall.curve_a, recall.curve_b):  # more leaves opened: more bytes a cold search reads
        assert 0 < curve[0].bytes_cold < curve[-1].bytes_cold
    gaps = [abs(d.difference) for d in recall.differing]
    assert gaps == sorted(gaps, reverse=True) and all(g > 0 for g in gaps)
    if recall.differing:
        first = recall.differing[0]
        in_a, in_b = query_paths(a, b, recall, first)
        found_a = {h.item_id for h in in_a.hits} & set(truth.ids[first.query].tolist())
        assert len(found_a) / 10 == pytest.approx(first.recall_a)
        assert in_a.trace and in_b.trace and first.item_id not in {h.item_id for h in in_b.hits}


def test_queries_from_a_file_and_cancel(builds: dict[str, Path]) -> None:
    a, b = IndexReader(builds["a"]), IndexReader(builds["b"])
    queries = np.load(builds["a"].parent / "data.npy")[:12] + 0.1
    comparison = compare_indexes(a, b, queries=queries, query_source="q.npy", k=5, search_exps=(2,))
    assert comparison.recall.source == "q.npy" and comparison.recall.queries_a.self_ids == (None,) * 12
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(SearchCancelled):
        compare_indexes(IndexReader(builds["a"]), IndexReader(builds["b"]), sample=10, cancel=cancel)


def test_leaf_sizes_counted_from_the_item_maps_match_the_level_statistics(builds: dict[str, Path]) -> None:
    a, b = IndexReader(builds["a"]), IndexReader(builds["b"])
    maps = (a.locator.read_everything(), b.locator.read_everything())
    counted = side_by_side(a, b, maps)  # type: ignore[arg-type]
    read = side_by_side(IndexReader(builds["a"]), IndexReader(builds["b"]))
    assert counted.rows == read.rows
    for x, y in zip(counted.a.balance + counted.b.balance, read.a.balance + read.b.balance, strict=True):
        assert np.array_equal(x.sizes, y.sizes) and x.chunk_rows == y.chunk_rows and x.chunk_fill == y.chunk_fill
