"""Workload replay on real builds: every trace equals ecp_search's, and the counts equal a direct
count over ecp_search traces."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from ecpfs_viewer.model.diagnostics.workload import replay, traces
from ecpfs_viewer.model.search.ecp import ecp_search
from ecpfs_viewer.model.search.index import IndexReader
from ecpfs_viewer.model.search.queries import queries_from_array, sample_items
from ecpfs_viewer.model.search.results import SearchParams
from tests.index_factory import build_clustered_index


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_clustered_index(tmp_path_factory.mktemp("workload"), 1200, 10, clusters=8, levels=3,
                                 target_cluster_items=15)


@pytest.mark.parametrize(("search_exp", "k"), [(1, 1), (4, 10), (3, 200), (8, 5)])
def test_traces_equal_ecp_search(index_path: Path, search_exp: int, k: int) -> None:
    index = IndexReader(index_path)
    rng = np.random.default_rng(1)
    queries = (rng.standard_normal((60, 10)) * 4).astype(np.float32)
    params = SearchParams(k=k, search_exp=search_exp)
    for q, trace in zip(queries, traces(index, queries, params), strict=True):
        result = ecp_search(index, q, params)
        assert trace.nodes == tuple((v.level, v.node_id) for v in result.trace)
        assert trace.leaves == result.leaves_visited


def test_counts_equal_a_direct_count(index_path: Path) -> None:
    index = IndexReader(index_path)
    queries = sample_items(index, 300, seed=2)
    params = SearchParams(k=10, search_exp=4)
    work = replay(index, queries, params)
    direct: Counter[tuple[int, int]] = Counter()
    leaves = []
    for q in queries.vectors:
        result = ecp_search(index, q, params)
        direct.update((v.level, v.node_id) for v in result.trace)
        leaves.append(result.leaves_visited)
    counted = {(lv.level, int(n)): int(v) for lv in work.levels for n, v in zip(lv.node_ids, lv.visits, strict=True)
               if v}
    assert counted == dict(direct)
    assert work.leaves_per_query.tolist() == leaves
    hot = work.hot_leaves(3)
    assert hot[0]["visits"] == max(c for (lv, _), c in direct.items() if lv == index.levels)
    assert all(0 < s <= 1 for s in work.skew().values())
    assert "300 sampled items" in work.sentence()


def test_outside_queries_from_a_matrix(index_path: Path) -> None:
    index = IndexReader(index_path)
    queries = queries_from_array(index, np.zeros((5, 10), np.float32), "zeros.npy")
    work = replay(index, queries, SearchParams(search_exp=2))
    assert work.queries == 5 and (work.leaves_per_query >= 2).all()


def test_map_values_are_the_visits(index_path: Path) -> None:
    from ecpfs_viewer.model.diagnostics.overlays import visits_by_node

    index = IndexReader(index_path)
    work = replay(index, sample_items(index, 50, seed=4), SearchParams(search_exp=2))
    values = visits_by_node(work)
    assert sum(v for (lv, _), v in values.items() if lv == index.levels) == work.leaves_per_query.sum()


def test_cancel_stops_the_replay(index_path: Path) -> None:
    import threading

    from ecpfs_viewer.model.search.results import SearchCancelled

    index = IndexReader(index_path)
    queries = sample_items(index, 200, seed=2)
    seen: list[int] = []
    cancel = threading.Event()

    def progress(report: object) -> None:
        seen.append(int(getattr(report, "done", 0)))
        if getattr(report, "phase", "") == "replaying queries":
            cancel.set()

    with pytest.raises(SearchCancelled):
        replay(index, queries, SearchParams(), progress=progress, cancel=cancel)
    assert seen and max(seen) < 200
