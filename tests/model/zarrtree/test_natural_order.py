"""Natural order of names, and long jobs' steps kept short (model/interpreter.py)."""

from __future__ import annotations

import random
import weakref

import pytest

from ecpfs_viewer.model.interpreter import release_gradually
from ecpfs_viewer.model.zarrtree.nodes import NUMPY_SORT_FROM, natural_key, sorted_naturally


def shuffled(names: list[str], seed: int = 7) -> list[str]:
    names = list(names)
    random.Random(seed).shuffle(names)
    return names


@pytest.mark.parametrize("count", [5, NUMPY_SORT_FROM - 1, NUMPY_SORT_FROM, 40_000])
def test_a_level_of_numbered_nodes_comes_out_as_sorted_with_the_natural_key(count):
    names = shuffled([f"node_{i}" for i in range(count)])
    assert sorted_naturally(names, name=str) == sorted(names, key=natural_key)
    assert sorted_naturally(names, name=str)[:3] == ["node_0", "node_1", "node_2"]


def test_ties_and_case_keep_their_order_as_sorted_would():
    # node_05 and node_5 have the same key, as have Node_7 and node_7: their input order is kept
    names = [*shuffled([f"node_{i}" for i in range(NUMPY_SORT_FROM)]), "node_05", "Node_7", "node_5", "NODE_7"]
    names = shuffled(names, seed=3)
    assert sorted_naturally(names, name=str) == sorted(names, key=natural_key)


@pytest.mark.parametrize("extra", [["zarr.json"], ["lvl_1"], ["node_1a"], ["x"], [f"node_{2**70}"], ["7"]])
def test_names_that_are_not_all_one_prefix_and_a_number_are_still_ordered_naturally(extra):
    names = shuffled([f"node_{i}" for i in range(NUMPY_SORT_FROM)] + extra)
    assert sorted_naturally(names, name=str) == sorted(names, key=natural_key)


def test_items_are_sorted_by_the_name_given_and_kept_whole():
    entries = shuffled([(f"node_{i}", i % 2 == 0) for i in range(3000)])  # (name, is_dir) as a listing gives
    ordered = sorted_naturally(entries, name=lambda entry: entry[0])
    assert ordered == sorted(entries, key=lambda entry: natural_key(entry[0]))
    assert ordered[10] == ("node_10", True)


def test_release_gradually_empties_the_list_and_frees_what_only_it_held():
    class Parsed:
        pass

    items = [Parsed() for _ in range(2500)]
    kept = items[1234]
    watchers = [weakref.ref(item) for item in items]
    release_gradually(items, step=1000)
    assert items == []
    assert sum(watcher() is not None for watcher in watchers) == 1  # only the one still referred to
    assert watchers[1234]() is kept
