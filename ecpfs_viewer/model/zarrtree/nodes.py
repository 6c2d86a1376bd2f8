"""What a hierarchy is made of: nodes as a listing finds them, and what their metadata says.

Plain values (frozen dataclasses), shared by the Hierarchy that lists and caches them, the
document parsing that fills them in, and every page that shows them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from ecpfs_viewer.model.formatting import format_shape


class NodeKind(StrEnum):
    GROUP = "group"
    ARRAY = "array"
    IMPLICIT_GROUP = "implicit group"
    ERROR = "error"

    @property
    def is_container(self) -> bool:
        return self in (NodeKind.GROUP, NodeKind.IMPLICIT_GROUP)


_NATURAL_RE = re.compile(r"(\d+)")
_NAME_NUMBER_RE = re.compile(r"(\D*)(\d+)$")


def natural_key(name: str) -> tuple[Any, ...]:
    """Sort key that puts node_2 before node_10 and lvl_2 before lvl_10."""
    simple = _NAME_NUMBER_RE.match(name)
    if simple:  # fast path for the common 'node_123': same key the general split gives
        return (simple.group(1).lower(), int(simple.group(2)), "")
    return tuple(int(part) if part.isdigit() else part.lower() for part in _NATURAL_RE.split(name))


_T = TypeVar("_T")
#: names from which sorted_naturally orders "prefix + number" names with numpy
NUMPY_SORT_FROM = 2000


def sorted_naturally(items: Iterable[_T], name: Callable[[_T], str]) -> list[_T]:
    """items in the natural order of their names (as ``sorted`` with :func:`natural_key`, ties kept
    in order). Sorting 40,000 key tuples is one C call that holds the interpreter lock for 100 ms
    or more, with the window waiting; names that are one prefix and a number (a level's nodes) are
    ordered by their numbers in numpy instead, in a millisecond."""
    items = list(items)
    keys = [natural_key(name(item)) for item in items]
    order = _numbered_order(keys) if len(keys) >= NUMPY_SORT_FROM else None
    if order is None:
        order = sorted(range(len(keys)), key=keys.__getitem__)
    return [items[i] for i in order]


def _numbered_order(keys: list[tuple[Any, ...]]) -> list[int] | None:
    """The stable order of keys that all are (one prefix, a number, ""); None for any other."""
    prefix = keys[0][0]
    if any(len(key) != 3 or key[0] != prefix or key[2] != "" for key in keys):
        return None
    import numpy as np  # not at import: the path grammar loads without it

    try:
        numbers = np.array([key[1] for key in keys], dtype=np.int64)
    except OverflowError:  # a number past int64: the tuples' own order
        return None
    order: list[int] = np.argsort(numbers, kind="stable").tolist()
    return order




def parent_path(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def base_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class Node:
    """One entry of the hierarchy as the listing found it (kind known, details parsed later)."""

    path: str  # relative to the Zarr root; '' is the root
    kind: NodeKind
    zarr_format: int | None  # 3, 2, or None for an implicit group / unreadable node
    raw: bytes | None = None  # the metadata document exactly as stored (zarr.json or .zarray/.zgroup)
    raw_attrs: bytes | None = None  # v2 .zattrs, if any
    error: str | None = None
    #: the metadata could not be read on the way (no answer, a dropped connection): the node is
    #: "could not be read", never missing or invalid, and is not kept (asked again next time)
    unread: bool = False
    #: nothing is stored at path (an ERROR node that says so, as opposed to one that cannot be read)
    missing: bool = False

    @property
    def name(self) -> str:
        return base_name(self.path) if self.path else "/"

    @property
    def metadata_key(self) -> str | None:
        if self.zarr_format == 3:
            return "zarr.json"
        if self.zarr_format == 2:
            return ".zarray" if self.kind is NodeKind.ARRAY else ".zgroup"
        return None


@dataclass(frozen=True)
class ArrayDetails:
    """What the metadata says about an array, decoded without reading any chunk."""

    shape: tuple[int, ...]
    dtype: str  # numpy-style name, or the Zarr data type name when numpy has none
    chunk_shape: tuple[int, ...]  # the read chunk (inner chunk of a shard)
    shard_shape: tuple[int, ...] | None
    fill_value: Any
    codecs: list[dict[str, Any]]  # as stored: name + configuration
    dimension_names: tuple[str | None, ...] | None
    chunk_key_encoding: dict[str, Any]
    zarr_format: int
    itemsize: int | None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # exact (numpy's int64 product wraps on a declared 10^10 x 10^10)

    @property
    def logical_bytes(self) -> int | None:
        return None if self.itemsize is None else self.size * self.itemsize

    def describe_shape(self) -> str:
        return format_shape(self.shape)


@dataclass(frozen=True)
class NodeDetails:
    """A node with its parsed metadata; for arrays, ArrayDetails; error set when parsing failed."""

    node: Node
    document: dict[str, Any] | None
    attributes: dict[str, Any] = field(default_factory=dict)
    array: ArrayDetails | None = None
    error: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def writer(self) -> str | None:
        """The library that wrote the node, from its attributes, e.g. 'zarrs 0.23.14'."""
        return writer_of(self.attributes) if isinstance(self.attributes, dict) else None


def writer_of(attributes: dict[str, Any]) -> str | None:
    """The library that wrote an array, from its attributes ('zarrs 0.23.14', 'ecpfs-viewer 0.1')."""
    for key, name in (("_zarrs", "zarrs"), ("_ecpfs_viewer", "ecpfs-viewer")):
        info = attributes.get(key)
        if isinstance(info, dict):
            return f"{name} {info.get('version', '?')}"
    return None
