"""The ecpfs path grammar, in one place: where an index keeps its levels, nodes and their arrays.

An index's root holds ``info/<scalar>``, ``index_root/embeddings``, the representatives
(``rep_embeddings``, ``rep_item_ids``) and one group ``lvl_N`` per level (N from 1); a node is
``lvl_N/node_M``, holding ``embeddings`` and ``node_ids`` (internal levels) or ``item_ids``
(the leaves). Everything that builds or recognises one of these paths asks here, so the names are
spelt once. The generic grammar of a typed path (slashes, blanks) is ``zarrtree.paths``.
"""

from __future__ import annotations

import re

INFO = "info"
INDEX_ROOT = "index_root"
ROOT_EMBEDDINGS = "index_root/embeddings"
REP_EMBEDDINGS = "rep_embeddings"
REP_ITEM_IDS = "rep_item_ids"
#: The arrays of a node whose rows are the node's entries (``border`` is not one of them).
NODE_ARRAYS = ("embeddings", "node_ids", "item_ids")

#: A level count past this is not believed (a fingerprint names one document per level).
MAX_FINGERPRINT_LEVELS = 64
#: The info scalars whose documents are part of an index's fingerprint.
_INFO_SCALARS = ("format_version", "levels", "metric", "is_normalized", "total_items", "next_item_id")

_LEVEL_RE = re.compile(r"^lvl_(\d+)$")
_NODE_NAME_RE = re.compile(r"^node_(\d+)$")
_NODE_RE = re.compile(r"^lvl_(\d+)/node_(\d+)$")
_INSIDE_NODE_RE = re.compile(r"^/*lvl_(\d+)/node_(\d+)(?:/.*)?$")
_NODE_ARRAY_RE = re.compile(r"^lvl_(\d+)/node_(\d+)/(embeddings|node_ids|item_ids)$")
# below a prefix too (an index inside a bigger store): the tree and chunk statistics see store paths
_NODE_SUFFIX_RE = re.compile(r"(^|/)lvl_\d+/node_\d+$")
_NODE_ARRAY_SUFFIX_RE = re.compile(r"(^|/)(lvl_\d+/node_\d+/(embeddings|node_ids|item_ids)|index_root/embeddings)$")


#: What the arrays of an index hold, in a sentence each, by their name in a node (or path at the root).
ARRAY_ROLES = {
    "embeddings": "the node's vectors: one row per child (internal node) or per item (leaf)",
    "node_ids": "the ids of the node's children, one per row of its embeddings",
    "item_ids": "the ids of the leaf's items, one per row of its embeddings",
    "border": "reserved by the ecpfs format and never filled: it always reads as its fill value (0.0) "
              "and no search uses it",
    ROOT_EMBEDDINGS: "the vectors of the root's children (the top level's representatives)",
    REP_EMBEDDINGS: "every representative's vector, by node id",
    REP_ITEM_IDS: "every representative's item id, by node id",
}


def array_role(path: str) -> str | None:
    """What an index array at ``path`` holds ('border' -> reserved, never filled), None for others."""
    path = path.strip("/")
    if path in ARRAY_ROLES:
        return ARRAY_ROLES[path]
    parent, _, name = path.rpartition("/")
    if _NODE_SUFFIX_RE.search(parent) and name in ARRAY_ROLES:
        return ARRAY_ROLES[name]
    return None


def info_path(name: str) -> str:
    """'info/levels' for 'levels'."""
    return f"{INFO}/{name}"


def level_path(level: int) -> str:
    """'lvl_3' for level 3."""
    return f"lvl_{level}"


def node_name(node_id: int) -> str:
    """'node_812', a node's name inside its level."""
    return f"node_{node_id}"


def node_path(level: int, node_id: int) -> str:
    """'lvl_3/node_812'."""
    return f"lvl_{level}/node_{node_id}"


def node_array_path(level: int, node_id: int, name: str) -> str:
    """'lvl_3/node_812/item_ids'."""
    return f"lvl_{level}/node_{node_id}/{name}"


def parse_level(path: str) -> int | None:
    """The level of a level group path ('lvl_3' -> 3), else None."""
    match = _LEVEL_RE.match(path)
    return None if match is None else int(match.group(1))


def parse_node_name(name: str) -> int | None:
    """The node id of a node's name ('node_812' -> 812), else None."""
    match = _NODE_NAME_RE.match(name)
    return None if match is None else int(match.group(1))


def parse_node_path(path: str) -> tuple[int, int] | None:
    """(level, node id) of a node group path ('lvl_3/node_812' -> (3, 812)), else None."""
    match = _NODE_RE.match(path)
    return None if match is None else (int(match.group(1)), int(match.group(2)))


def node_containing(path: str) -> tuple[int, int] | None:
    """(level, node id) of the node a path is or lies in ('/lvl_2/node_5/embeddings' -> (2, 5)), else None."""
    match = _INSIDE_NODE_RE.match(path)
    return None if match is None else (int(match.group(1)), int(match.group(2)))


def is_inside_root(path: str) -> bool:
    """True for 'index_root' and the paths inside it (leading slashes allowed)."""
    return path.lstrip("/").split("/", 1)[0] == INDEX_ROOT


def parse_node_array(path: str) -> tuple[int, str] | None:
    """(level, array name) of a node's row array ('lvl_2/node_5/node_ids' -> (2, 'node_ids')), else None."""
    match = _NODE_ARRAY_RE.match(path)
    return None if match is None else (int(match.group(1)), match.group(3))


def ends_in_node(path: str) -> bool:
    """True for a node group path, also below a prefix ('data/idx/lvl_1/node_2')."""
    return bool(_NODE_SUFFIX_RE.search(path))


def is_node_array(path: str) -> bool:
    """True for the row arrays of a node (lvl_N/node_M/embeddings|node_ids|item_ids, index_root/embeddings),
    also below a prefix."""
    return bool(_NODE_ARRAY_SUFFIX_RE.search(path.strip("/")))


def fingerprint_keys(levels: int) -> list[str]:
    """The documents whose state stands for an index of `levels` levels (keys below its root)."""
    keys = ["zarr.json", "info/zarr.json", "index_root/zarr.json", "index_root/embeddings/zarr.json"]
    keys += [f"info/{name}/{part}" for name in _INFO_SCALARS for part in ("zarr.json", "c")]
    keys += [f"{level_path(level)}/zarr.json" for level in range(1, levels + 1)]
    return keys
