"""The lazy hierarchy: what the tree shows for groups, arrays, implicit groups, v2 nodes and broken nodes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from index_factory import hierarchy  # tests/ is on sys.path (conftest)
from locations import DATA  # tests/ is on sys.path (conftest)

from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.formatting import format_shape
from ecpfs_viewer.model.storage.opening import open_store
from ecpfs_viewer.model.zarrtree.hierarchy import ArrayReadError, Hierarchy
from ecpfs_viewer.model.zarrtree.nodes import NodeKind, natural_key

ZARRS = DATA / "peer-data" / "zarrs" / "zarrs" / "tests" / "data"


def test_two_clusters_tree_as_in_the_format_document(two_clusters_path: Path) -> None:
    h = hierarchy(two_clusters_path)
    assert h.root().kind is NodeKind.GROUP
    top = {n.name: n.kind for n in h.children()}
    assert top == {"index_root": NodeKind.GROUP, "info": NodeKind.GROUP, "lvl_1": NodeKind.GROUP,
                   "lvl_2": NodeKind.GROUP, "rep_embeddings": NodeKind.ARRAY, "rep_item_ids": NodeKind.ARRAY}
    assert [n.name for n in h.children("info")] == ["format_version", "is_normalized", "levels", "metric",
                                                    "next_item_id", "total_items"]
    assert [n.name for n in h.children("lvl_1/node_1")] == ["border", "embeddings", "node_ids"]
    assert [n.name for n in h.children("lvl_2/node_3")] == ["border", "embeddings", "item_ids"]
    details = h.details("lvl_1/node_1/embeddings")
    assert details.error is None
    assert details.array.shape == (3, 2) and details.array.chunk_shape == (65536, 2)
    assert details.array.dtype == "float32" and details.writer == "zarrs 0.23.14"
    assert details.node.raw == (two_clusters_path / "lvl_1/node_1/embeddings/zarr.json").read_bytes()


def test_scalars_read_as_python_values(two_clusters_path: Path) -> None:
    h = hierarchy(two_clusters_path)
    assert h.read_scalar("info/metric") == "L2"
    assert h.read_scalar("info/levels") == 2
    assert h.read_scalar("info/is_normalized") is False  # no chunk file: the fill value
    assert h.read_scalar("info/total_items") == 8


def test_natural_order(tmp_path: Path) -> None:
    root = tmp_path / "n.zarr"
    root.mkdir()
    (root / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    for name in ["node_10", "node_2", "node_1", "lvl_10", "lvl_2", "Alpha", "beta"]:
        (root / name).mkdir()
        (root / name / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    names = [n.name for n in hierarchy(root).children()]
    assert names == ["Alpha", "beta", "lvl_2", "lvl_10", "node_1", "node_2", "node_10"]
    assert sorted(["node_10", "node_9", "node_100"], key=natural_key) == ["node_9", "node_10", "node_100"]


def test_children_are_listed_once_and_cached(two_clusters_path: Path) -> None:
    h = hierarchy(two_clusters_path)
    first = h.children("lvl_2")
    before = h.store.stats()
    assert h.children("lvl_2") is first
    assert h.details("lvl_2/node_0").node is first[0]
    assert (h.store.stats() - before).requests == 0


def test_implicit_groups_in_the_zarrs_sharded_store() -> None:
    h = hierarchy(ZARRS / "sharded_array_write_read.zarr")
    assert h.root().kind is NodeKind.IMPLICIT_GROUP  # zarrs wrote no root zarr.json
    assert [(n.name, n.kind) for n in h.children()] == [("group", NodeKind.GROUP)]
    assert [(n.name, n.kind) for n in h.children("group")] == [("array", NodeKind.ARRAY)]
    details = h.details("group/array")
    assert details.error is None and details.array.shard_shape is not None
    assert h.read_array("group/array").shape == details.array.shape


def test_implicit_group_without_metadata_between_groups(two_clusters_copy: Path) -> None:
    (two_clusters_copy / "lvl_1" / "zarr.json").unlink()
    h = hierarchy(two_clusters_copy)
    kinds = {n.name: n.kind for n in h.children()}
    assert kinds["lvl_1"] is NodeKind.IMPLICIT_GROUP
    assert [n.name for n in h.children("lvl_1")] == ["node_0", "node_1"]
    assert h.details("lvl_1").error is None
    assert h.read_array("lvl_1/node_1/node_ids").tolist() == [1, 2, 3]


def test_zarr_v2_nodes() -> None:
    h = hierarchy(DATA / "peer-data" / "generated" / "zarr_python_3.4.2_v2.zarr")
    root = h.root()
    assert root.kind is NodeKind.GROUP and root.zarr_format == 2
    for node in h.children():
        assert node.zarr_format == 2
        details = h.details(node.path)
        assert details.error is None, details.error
        if node.kind is NodeKind.ARRAY:
            assert details.array.zarr_format == 2
            assert details.array.chunk_key_encoding["name"] == "v2"
            h.read_array(node.path)


def test_v2_array_attributes_are_read(tmp_path: Path) -> None:
    import zarr

    root = tmp_path / "v2.zarr"
    group = zarr.open_group(root, mode="w", zarr_format=2)
    array = group.create_array("values", shape=(5,), chunks=(2,), dtype="int16", fill_value=0)
    array[:] = np.arange(5)
    array.attrs["unit"] = "metre"
    h = hierarchy(root)
    details = h.details("values")
    assert details.attributes == {"unit": "metre"}
    assert h.read_array("values").tolist() == [0, 1, 2, 3, 4]


BROKEN = {
    "bad_json": (b'{"zarr_format": 3, "node_type": "array", ', "not valid JSON"),
    "not_object": (b'[1, 2, 3]', "must be a JSON object"),
    "odd_node_type": (b'{"zarr_format": 3, "node_type": "table"}', "unknown node_type 'table'"),
}


def _array_document(**changes: object) -> bytes:
    document = {
        "zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }
    document.update(changes)
    return json.dumps(document).encode()


@pytest.fixture
def broken_store(two_clusters_copy: Path) -> Path:
    """two_clusters with one broken node of each kind under lvl_2, next to the good nodes."""
    nodes = dict(BROKEN)
    nodes["unknown_codec"] = (_array_document(codecs=[{"name": "bytes"}, {"name": "no_such_codec"}]), "no_such_codec")
    nodes["unknown_dtype"] = (_array_document(data_type="bfloat17"), "bfloat17")
    for name, (raw, _) in nodes.items():
        (two_clusters_copy / "lvl_2" / name).mkdir()
        (two_clusters_copy / "lvl_2" / name / "zarr.json").write_bytes(raw)
    return two_clusters_copy


@pytest.mark.parametrize("name,expected", [
    ("bad_json", "not valid JSON"),
    ("not_object", "must be a JSON object"),
    ("odd_node_type", "unknown node_type 'table'"),
    ("unknown_codec", "no_such_codec"),
    ("unknown_dtype", "bfloat17"),
])
def test_broken_node_carries_its_message_while_siblings_load(broken_store: Path, name: str, expected: str) -> None:
    h = hierarchy(broken_store)
    by_name = {n.name: n for n in h.children("lvl_2")}
    assert {"node_0", "node_1", "node_2", "node_3", name} <= set(by_name)
    details = h.details(f"lvl_2/{name}")
    assert details.error is not None and expected in details.error
    assert f"lvl_2/{name}/zarr.json" in details.error
    assert details.node.raw is not None  # the raw bytes stay available for display
    for sibling in ("node_0", "node_3"):
        assert h.details(f"lvl_2/{sibling}").error is None
        assert h.read_array(f"lvl_2/{sibling}/item_ids").shape == (2,)
    with pytest.raises((ValueError, ArrayReadError)):
        h.read_array(f"lvl_2/{name}")


def test_node_that_does_not_exist_is_an_error_value(two_clusters_path: Path) -> None:
    h = hierarchy(two_clusters_path)
    node = h.node("lvl_2/node_9")  # e.g. a referenced-but-missing child the user jumps to
    assert node.kind is NodeKind.ERROR and node.error == "lvl_2/node_9: no such node"
    details = h.details("lvl_1/node_0/no_such_array")
    assert details.array is None and details.error == "lvl_1/node_0/no_such_array: no such node"
    assert h.node("lvl_1/node_1").kind is NodeKind.GROUP  # probing an unlisted, existing path still works


def test_node_probed_without_listing_finds_an_implicit_group(two_clusters_copy: Path) -> None:
    (two_clusters_copy / "lvl_1" / "zarr.json").unlink()
    assert hierarchy(two_clusters_copy).node("lvl_1").kind is NodeKind.IMPLICIT_GROUP


def test_refresh_sees_a_node_added_while_open(two_clusters_copy: Path) -> None:
    h = hierarchy(two_clusters_copy)
    assert [n.name for n in h.children("lvl_2")] == ["node_0", "node_1", "node_2", "node_3"]
    shutil.copytree(two_clusters_copy / "lvl_2" / "node_3", two_clusters_copy / "lvl_2" / "node_10")
    assert len(h.children("lvl_2")) == 4  # cached until refreshed
    h.refresh("lvl_2")
    assert [n.name for n in h.children("lvl_2")] == ["node_0", "node_1", "node_2", "node_3", "node_10"]
    assert h.read_array("lvl_2/node_10/item_ids").tolist() == [6, 7]


def test_refresh_sees_an_array_that_grew(two_clusters_copy: Path) -> None:
    h = hierarchy(two_clusters_copy)
    assert h.details("rep_item_ids").array.shape == (4,)
    meta_path = two_clusters_copy / "rep_item_ids" / "zarr.json"
    document = json.loads(meta_path.read_text())
    document["shape"] = [6]
    meta_path.write_text(json.dumps(document))
    assert h.details("rep_item_ids").array.shape == (4,)
    h.refresh("rep_item_ids")
    assert h.details("rep_item_ids").array.shape == (6,)
    assert h.read_array("rep_item_ids").tolist() == [0, 2, 4, 6, 0, 0]


def test_stray_files_are_not_nodes(two_clusters_copy: Path) -> None:
    (two_clusters_copy / "README.txt").write_text("notes")
    names = [n.name for n in hierarchy(two_clusters_copy).children()]
    assert "README.txt" not in names


def test_unreadable_metadata_is_an_error_row_and_siblings_load(two_clusters_copy: Path, monkeypatch) -> None:
    """Permission denied on one child's zarr.json (faked: tests run as root) spoils only that child."""
    from ecpfs_viewer.model.storage import local_reads as stores  # where a store reads its files
    real_read_file = stores.read_file

    def refusing(path: str, bound: Any = None, cached: Any = None, stamp: Any = None) -> bytes | None:
        if path.endswith("lvl_2/node_1/zarr.json"):
            raise PermissionError(13, "Permission denied", path)
        return real_read_file(path, bound, cached, stamp)

    monkeypatch.setattr(stores, "read_file", refusing)
    children = {n.name: n for n in Hierarchy(open_store(two_clusters_copy)).children("lvl_2")}
    assert children["node_1"].kind is NodeKind.ERROR
    assert "lvl_2/node_1/zarr.json: cannot read (Permission denied)" in children["node_1"].error
    assert [children[f"node_{i}"].kind for i in (0, 2, 3)] == [NodeKind.GROUP] * 3


def test_shapes_are_written_one_way() -> None:


    assert format_shape((4000, 64)) == "4,000 x 64"
    assert format_shape(()) == "scalar"


def test_array_details_of_a_broken_node_is_a_user_error(two_clusters_copy: Path) -> None:
    """Found by the monkey test: the plot's worker logged a traceback for it, as for a bug."""
    (two_clusters_copy / "rep_item_ids" / "zarr.json").write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(UserError, match=r"rep_item_ids/zarr\.json") as error:
        Hierarchy(open_store(two_clusters_copy)).array_details("rep_item_ids")
    assert isinstance(error.value, ValueError)  # what callers caught before
