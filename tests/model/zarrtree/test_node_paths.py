"""The one grammar of node paths a user types (Go to Path, --select, links)."""

from __future__ import annotations

import pytest

from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.zarrtree.paths import NodePathError, parse_node_path


@pytest.mark.parametrize(("text", "path"), [
    ("lvl_3/node_812/embeddings", "lvl_3/node_812/embeddings"),
    ("  /lvl_1//node_2/ ", "lvl_1/node_2"),
    ("//lvl_1//node_2", "lvl_1/node_2"),
    ("", ""),
    ("/", ""),
    ("///", ""),
    ("lvl_1/node 2", "lvl_1/node 2"),  # a blank inside a name is part of it
    ("lvl_1/...", "lvl_1/..."),  # three dots can be a name
])
def test_spellings_of_a_path_name_one_node(text, path):
    assert parse_node_path(text) == path


@pytest.mark.parametrize(("text", "said"), [
    ("../..", "'..' is not a node name; a path goes down from the root"),
    ("lvl_1/./node_2", "'.' is not a node name"),
    ("lvl_1/node\x002", "no control characters"),
    ("lvl_1/node\n2", "no control characters"),
])
def test_parts_that_cannot_be_names_are_refused_in_words(text, said):
    with pytest.raises(NodePathError) as error:
        parse_node_path(text)
    assert said in str(error.value)
    assert isinstance(error.value, UserError)  # shown as is, no exception name in front


def test_a_long_path_is_quoted_short():
    with pytest.raises(NodePathError) as error:
        parse_node_path("x" * 10_000 + "/..")
    assert len(str(error.value)) < 200
