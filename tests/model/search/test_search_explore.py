"""What the query explorer computes: query sources, a search's opened nodes and leaves, recall with misses."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest
from index_factory import build_clustered_index

from ecpfs_viewer.model.search import IndexReader, QueryError, SearchCancelled, SearchParams, UnknownItemError
from ecpfs_viewer.model.search.explore import QuerySpec, RecallSpec, explore, query_vector, recall_explore


@pytest.fixture(scope="module")
def clustered_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_clustered_index(tmp_path_factory.mktemp("explore"), items=1500, dim=8)


def test_origin_query_opened_nodes_and_leaves(two_clusters_path: Path, tmp_path: Path) -> None:
    np.save(tmp_path / "q.npy", np.zeros((1, 2), np.float32))
    reader = IndexReader(two_clusters_path)
    found = explore(reader, QuerySpec("file", file=str(tmp_path / "q.npy")), SearchParams(k=8, search_exp=4))
    # trace (see test_search): lvl_1/node_0, lvl_2/node_0, lvl_1/node_1, lvl_2/node_1, node_2, node_3
    root, first, second = found.opened
    assert (root.path, root.visit, root.entered) == ("index_root", 0, {0: 1, 1: 3})
    assert (first.path, first.visit, first.entered) == ("lvl_1/node_0", 1, {0: 2})
    assert (second.path, second.visit, second.entered) == ("lvl_1/node_1", 3, {1: 4, 2: 5, 3: 6})
    assert second.child_ids.tolist() == [1, 2, 3] and len(second.child_scores) == 3
    assert [(v.visit, v.leaf, v.items) for v in found.leaves] == [(2, 0, 2), (4, 1, 2), (5, 2, 2), (6, 3, 2)]
    assert sum(v.kept for v in found.leaves) == 8
    assert found.leaves[0].best == pytest.approx(found.result.hits[0].score)
    assert found.exact is None and found.recall is None and found.label.endswith("q.npy row 0")


def test_compare_with_exact_lists_misses(clustered_index: Path) -> None:
    reader = IndexReader(clustered_index)
    found = explore(reader, QuerySpec("item", item_id=3), SearchParams(k=20, search_exp=1), compare=True)
    assert found.exact is not None and len(found.exact) == 20
    returned = {h.item_id for h in found.result.hits}
    assert {m.item_id for m in found.misses} == {h.item_id for h in found.exact} - returned
    assert found.recall == pytest.approx(1 - len(found.misses) / 20)
    assert found.misses, "one leaf cannot hold all 20 neighbours of a clustered item"
    assert all(m.describe().startswith(f"item {m.item_id} is in lvl_2/node_") for m in found.misses)


def test_exclude_leaves_items_out_of_leaf_best(two_clusters_path: Path) -> None:
    reader = IndexReader(two_clusters_path)
    params = SearchParams(k=2, search_exp=1, max_increments=0, exclude=frozenset({0}))
    found = explore(reader, QuerySpec("array", path="lvl_2/node_0/embeddings", row=0), params)
    assert found.leaves[0].items == 1  # item 0 is excluded: one row scanned in its leaf
    assert [h.item_id for h in found.result.hits] == [1]


def test_query_sources(two_clusters_path: Path, tmp_path: Path) -> None:
    reader = IndexReader(two_clusters_path)
    stored = reader.vector_for_item(5)
    assert np.array_equal(query_vector(reader, QuerySpec("item", item_id=5)), stored)
    leaf, row = reader.locator.find_one(5)
    from_array = query_vector(reader, QuerySpec("array", path=f"lvl_2/node_{leaf}/embeddings", row=row))
    assert np.allclose(from_array, stored)
    np.save(tmp_path / "q.npy", np.arange(6, dtype=np.float32).reshape(3, 2))
    assert query_vector(reader, QuerySpec("file", file=str(tmp_path / "q.npy"), row=2)).tolist() == [4, 5]
    with pytest.raises(QueryError, match="row 3 is outside"):
        query_vector(reader, QuerySpec("file", file=str(tmp_path / "q.npy"), row=3))
    with pytest.raises(QueryError, match="file not found"):
        query_vector(reader, QuerySpec("file", file=str(tmp_path / "absent.npy")))
    (tmp_path / "bad.npy").write_text("not numpy")
    with pytest.raises(QueryError, match=r"bad\.npy: not a \.npy file"):
        query_vector(reader, QuerySpec("file", file=str(tmp_path / "bad.npy")))
    with pytest.raises(UnknownItemError, match="item 999"):
        query_vector(reader, QuerySpec("item", item_id=999))
    assert QuerySpec("saved", saved_id="3").label == "saved query 3"


def test_recall_misses_match_the_numbers(clustered_index: Path) -> None:
    reader = IndexReader(clustered_index)
    outcome = recall_explore(reader, RecallSpec("sample", n=15, seed=2), k=10, search_exps=[1, 4])
    assert [r.search_exp for r in outcome.report.rows] == [1, 4]
    for row in outcome.report.rows:
        missed = sum(m.search_exp == row.search_exp for m in outcome.misses)
        assert missed == round((1 - row.recall) * 15 * 10)
    assert outcome.missed_total == len(outcome.misses) > 0
    query_items = {m.query for m in outcome.misses}
    assert all(q.startswith("item ") for q in query_items)
    assert all(f"item {m.miss.item_id}" != m.query for m in outcome.misses)  # each item left out of its lists
    lines = outcome.csv_text().splitlines()
    assert lines[0].startswith("search_exp,recall@10,leaves_mean") and len(lines) == 3
    data = json.loads(json.dumps(outcome.to_dict()))
    assert data["k"] == 10 and len(data["missed"]) == len(outcome.misses) and data["missed"][0]["text"]


def test_recall_from_file_rows_and_cancel(clustered_index: Path, tmp_path: Path) -> None:
    reader = IndexReader(clustered_index)
    np.save(tmp_path / "q.npy", np.random.default_rng(0).standard_normal((30, 8)).astype(np.float32))
    outcome = recall_explore(reader, RecallSpec("file", n=5, seed=1, file=str(tmp_path / "q.npy")), 5, [2])
    assert outcome.report.rows[0].queries == 5
    assert all(m.query.startswith("row ") for m in outcome.misses)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(SearchCancelled):
        recall_explore(reader, RecallSpec("sample", n=5), 5, [1], cancel=cancel)
