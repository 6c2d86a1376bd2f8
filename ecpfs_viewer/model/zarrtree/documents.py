"""Metadata documents as stored: what kind of node one describes, and its decoded details.

A document is classified from its bytes (usually without parsing it all) when a listing finds
it, and parsed into :class:`NodeDetails` only when someone asks; every failure becomes an error
value naming the key, never an exception.
"""

from __future__ import annotations

import json
import re
import warnings
from typing import Any

import zarr
from zarr.storage import MemoryStore, StorePath

from ecpfs_viewer.model.errors import MetadataError, describe_exception
from ecpfs_viewer.model.guarded_json import parse_json
from ecpfs_viewer.model.storage.opening import join_key
from ecpfs_viewer.model.zarrtree.nodes import ArrayDetails, Node, NodeDetails, NodeKind

_NODE_TYPE_RE = re.compile(rb'"node_type"\s*:\s*"(group|array)"')


_KIND_OF_DOCUMENT: dict[bytes, NodeKind] = {}  # small documents seen before (sibling groups repeat)


def classify_v3(path: str, raw: bytes) -> Node:
    known = _KIND_OF_DOCUMENT.get(raw)
    if known is not None:
        return Node(path, known, 3, raw=raw)
    node = _classify_v3_document(path, raw)
    if node.kind is not NodeKind.ERROR and len(raw) <= 256 and len(_KIND_OF_DOCUMENT) < 4096:
        _KIND_OF_DOCUMENT[raw] = node.kind
    return node


def _classify_v3_document(path: str, raw: bytes) -> Node:
    first = raw.find(b'"node_type"')
    if first >= 0 and raw.find(b'"node_type"', first + 11) < 0:
        # The common case, one node_type field: decide without parsing the whole document.
        value = raw[first + 11: first + 48].lstrip(b" \t\r\n")
        if value.startswith(b":"):
            value = value[1:].lstrip(b" \t\r\n")
            if value.startswith(b'"group"'):
                return Node(path, NodeKind.GROUP, 3, raw=raw)
            if value.startswith(b'"array"'):
                return Node(path, NodeKind.ARRAY, 3, raw=raw)
    matches = _NODE_TYPE_RE.findall(raw)
    if matches:  # nested documents (consolidated metadata): only the top-level field counts
        try:
            top = parse_json(raw, join_key(path, "zarr.json") or "zarr.json").get("node_type")
        except (ValueError, AttributeError):
            top = None
        if top in ("group", "array"):
            return Node(path, NodeKind.GROUP if top == "group" else NodeKind.ARRAY, 3, raw=raw)
    error = _document_error(path, raw, "zarr.json")
    return Node(path, NodeKind.ERROR, 3, raw=raw, error=error)


def classify_v2(path: str, raw: bytes, attrs: bytes | None, kind: NodeKind) -> Node:
    return Node(path, kind, 2, raw=raw, raw_attrs=attrs)


def load_json_object(raw: bytes, where: str) -> dict[str, Any] | str:
    """A stored metadata document as a dict, or the message saying why it is not one."""
    try:
        document = parse_json(raw, where)
    except MetadataError as exc:  # not JSON, or past the caps on what parsing may cost
        return str(exc)
    if not isinstance(document, dict):
        return f"{where}: metadata must be a JSON object"
    return document


def _document_error(path: str, raw: bytes, key: str) -> str:
    document = load_json_object(raw, join_key(path, key) or key)
    if isinstance(document, str):
        return document
    where = join_key(path, key) or key
    node_type = document.get("node_type")
    if node_type is None:
        return f"{where}: no node_type field"
    return f"{where}: unknown node_type {node_type!r} (expected 'group' or 'array')"


def parse_details(node: Node) -> NodeDetails:
    """Decode a node's stored metadata; failures become an error value, never an exception."""
    if node.kind is NodeKind.IMPLICIT_GROUP:
        return NodeDetails(node, None)
    if node.raw is None:
        return NodeDetails(node, None, error=node.error or f"{node.path or '/'}: no metadata")
    key = node.metadata_key or "zarr.json"
    where = join_key(node.path, key) or key
    document = load_json_object(node.raw, where)
    if isinstance(document, str):
        return NodeDetails(node, None, error=document)
    if node.kind is NodeKind.ERROR:
        return NodeDetails(node, document, error=node.error)
    attributes: dict[str, Any] = {}
    if node.zarr_format == 3:
        attributes = document.get("attributes") or {}
        if document.get("zarr_format") != 3:
            return NodeDetails(node, document, attributes,
                               error=f"{where}: zarr_format is {document.get('zarr_format')!r}, expected 3")
    elif node.raw_attrs:
        try:
            attributes = parse_json(node.raw_attrs, join_key(node.path, ".zattrs"))
        except MetadataError as exc:
            return NodeDetails(node, document, error=str(exc))
    if not isinstance(attributes, dict):
        return NodeDetails(node, document, error=f"{where}: attributes must be a JSON object")
    if node.kind is not NodeKind.ARRAY:
        return NodeDetails(node, document, attributes)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            array = _array_details(document, node.zarr_format or 3)
        except Exception as exc:  # zarr raises many types for bad metadata; all become an error node
            return NodeDetails(node, document, attributes, error=f"{where}: {describe_exception(exc)}")
    return NodeDetails(node, document, attributes, array, warnings=tuple(str(w.message) for w in caught))


# A parsed metadata object of each format, from a minimal document: its from_dict (the public
# zarr.abc.metadata.Metadata contract) parses and refuses documents. The metadata classes live in
# zarr.core, which is internal; AsyncArray.from_dict would do too, but it also builds a codec
# pipeline and a config, a cost paid again for each of a level's thousands of documents.
_MINIMAL_ARRAYS: dict[int, dict[str, Any]] = {
    3: {"zarr_format": 3, "node_type": "array", "shape": [1], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]},
    2: {"zarr_format": 2, "shape": [1], "chunks": [1], "dtype": "|u1", "compressor": None, "fill_value": 0,
        "order": "C", "filters": None},
}
_METADATA_PARSERS: dict[int, Any] = {}


def _parse_metadata(document: dict[str, Any], zarr_format: int) -> Any:
    """zarr's parsed metadata of an array document of zarr_format (2 or 3); raises for a bad one."""
    if document.get("zarr_format") != zarr_format:
        raise ValueError(f"zarr_format is {document.get('zarr_format')!r}, expected {zarr_format}")
    parser = _METADATA_PARSERS.get(zarr_format)
    if parser is None:
        nowhere = StorePath(MemoryStore(), "")
        parser = _METADATA_PARSERS[zarr_format] = zarr.AsyncArray.from_dict(
            nowhere, dict(_MINIMAL_ARRAYS[zarr_format])).metadata
    return parser.from_dict(dict(document))


def _array_details(document: dict[str, Any], zarr_format: int) -> ArrayDetails:
    if zarr_format == 3:
        meta = _parse_metadata(document, 3)
        codecs: list[dict[str, Any]] = [c if isinstance(c, dict) else {"name": str(c)}
                                        for c in document.get("codecs", [])]
        chunk_shape = tuple(int(c) for c in meta.chunk_grid.chunk_shape)
        shard_shape = None
        for codec in codecs:
            if codec.get("name") == "sharding_indexed":
                shard_shape = chunk_shape
                chunk_shape = tuple(int(c) for c in codec.get("configuration", {}).get("chunk_shape", chunk_shape))
        dtype = _dtype_name(meta.data_type, document.get("data_type"))
        itemsize = _itemsize(meta.data_type)
        encoding = document.get("chunk_key_encoding", {"name": "default"})
        names = meta.dimension_names
        fill = document.get("fill_value")
    else:
        meta2 = _parse_metadata(document, 2)
        codecs = []
        for f in document.get("filters") or []:
            codecs.append({"name": f.get("id", "?"), "configuration": {k: v for k, v in f.items() if k != "id"}})
        if document.get("compressor"):
            comp = document["compressor"]
            codecs.append({"name": comp.get("id", "?"), "configuration": {k: v for k, v in comp.items() if k != "id"}})
        chunk_shape = tuple(int(c) for c in meta2.chunks)
        shard_shape = None
        dtype = _dtype_name(meta2.dtype, document.get("dtype"))
        itemsize = _itemsize(meta2.dtype)
        encoding = {"name": "v2", "configuration": {"separator": document.get("dimension_separator", ".")}}
        names = None
        fill = document.get("fill_value")
        meta = meta2
    shape = tuple(int(s) for s in meta.shape)
    return ArrayDetails(shape, dtype, chunk_shape, shard_shape, fill, codecs, names, encoding, zarr_format, itemsize)


def _dtype_name(data_type: Any, stored: Any) -> str:
    try:
        native = data_type.to_native_dtype()
        if native.kind == "T":
            return "string"
        return str(native.name if native.kind != "U" and native.kind != "S" else native.str)
    except Exception:
        return stored if isinstance(stored, str) else json.dumps(stored)


def _itemsize(data_type: Any) -> int | None:
    try:
        native = data_type.to_native_dtype()
        return None if native.kind in "TO" else int(native.itemsize)
    except Exception:
        return None
