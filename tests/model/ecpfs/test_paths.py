"""The one ecpfs path grammar: what it builds, it parses back; near misses are not ecpfs paths."""

from __future__ import annotations

import pytest

from ecpfs_viewer.model.ecpfs.paths import (
    ends_in_node,
    info_path,
    is_inside_root,
    is_node_array,
    level_path,
    node_array_path,
    node_containing,
    node_path,
    parse_level,
    parse_node_array,
    parse_node_name,
    parse_node_path,
)


def test_built_paths_parse_back() -> None:
    assert (level_path(3), node_path(3, 812), node_array_path(3, 812, "item_ids")) == (
        "lvl_3", "lvl_3/node_812", "lvl_3/node_812/item_ids")
    assert info_path("levels") == "info/levels"
    assert parse_level(level_path(12)) == 12
    assert parse_node_path(node_path(2, 5)) == (2, 5)
    assert parse_node_name("node_5") == 5
    assert parse_node_array(node_array_path(2, 5, "node_ids")) == (2, "node_ids")
    assert node_containing("/lvl_2/node_5/embeddings") == node_containing("lvl_2/node_5") == (2, 5)


@pytest.mark.parametrize("text", ["lvl_x", "lvl_3/", "level_3", "lvl_3/node_2", "lvl_-1", ""])
def test_a_level_is_exactly_lvl_and_digits(text: str) -> None:
    assert parse_level(text) is None


def test_near_misses_are_not_nodes_or_node_arrays() -> None:
    assert parse_node_path("lvl_3/node_812/embeddings") is None and parse_node_path("x/lvl_3/node_1") is None
    assert parse_node_name("node_") is None and parse_node_name("nodes_1") is None
    assert parse_node_array("lvl_1/node_1/border") is None
    assert node_containing("index_root/embeddings") is None and node_containing("xlvl_1/node_1") is None
    assert is_inside_root("/index_root/embeddings") and not is_inside_root("index_rooted")


def test_store_paths_below_a_prefix() -> None:
    assert ends_in_node("data/idx/lvl_1/node_2") and not ends_in_node("data/idx/lvl_1/node_2/embeddings")
    assert is_node_array("lvl_12/node_340/embeddings") and is_node_array("idx/index_root/embeddings")
    assert not is_node_array("lvl_1/node_1/border") and not is_node_array("rep_embeddings")
