"""A document parsed before is not parsed again, but every answer still names its own path."""

from __future__ import annotations

import json

from ecpfs_viewer.model.ecpfs import metadata
from ecpfs_viewer.model.ecpfs.metadata import ArrayMeta, parse_array_meta


def _document(rows: int) -> bytes:
    return json.dumps({"zarr_format": 3, "node_type": "array", "shape": [rows, 4], "data_type": "float32",
                       "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16, 4]}},
                       "attributes": {"note": "x"}}).encode()


def test_the_same_document_at_two_paths_gives_each_its_own_meta() -> None:
    raw = _document(7)
    first = parse_array_meta("lvl_2/node_1/embeddings", raw)
    second = parse_array_meta("lvl_2/node_2/embeddings", raw)
    assert isinstance(first, ArrayMeta) and isinstance(second, ArrayMeta)
    assert (first.path, second.path) == ("lvl_2/node_1/embeddings", "lvl_2/node_2/embeddings")
    assert first.shape == second.shape == (7, 4) and second.chunk_shape == (16, 4)
    second.attributes["note"] = "changed"  # one answer's attributes are its own
    third = parse_array_meta("lvl_2/node_3/embeddings", raw)
    assert isinstance(third, ArrayMeta) and third.attributes == {"note": "x"}
    assert parse_array_meta("a", _document(8)).shape == (8, 4)  # type: ignore[union-attr]


def test_a_broken_document_names_each_path_it_is_read_at() -> None:
    raw = b'{"zarr_format": 3, "node_type": "array", "shape": [-1]}'
    for path in ("lvl_3/node_1/item_ids", "lvl_3/node_2/item_ids"):
        error = parse_array_meta(path, raw)
        assert isinstance(error, str) and error.startswith(f"{path}/zarr.json")


def test_the_kept_documents_are_bounded(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(metadata, "_PARSED_KEPT", 3)
    monkeypatch.setattr(metadata, "_parsed", {})
    for rows in range(10):
        parse_array_meta("x", _document(rows))
        assert len(metadata._parsed) <= 3
