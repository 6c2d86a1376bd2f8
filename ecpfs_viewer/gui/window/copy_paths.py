"""What Copy Path offers besides the path inside the store: where the node lives (a file-system
path or URL) and a Python snippet that opens it with zarr. Plain text, no Qt."""

from __future__ import annotations

from ecpfs_viewer.model.storage.opening import OpenedStore
from ecpfs_viewer.model.zarrtree.nodes import NodeKind


def full_location(store: OpenedStore, path: str) -> str:
    """The node's file-system path, its fsspec zip URL, or its URL (the store's own for memory)."""
    key = store.key(path)
    if store.kind == "local" and store.local_path is not None:
        return str(store.local_path / key) if key else str(store.local_path)
    if store.kind == "zip" and store.archive_path is not None:
        return f"zip://{key}::{store.archive_path}" if key else str(store.archive_path)
    base = store.label.split("#", 1)[0].rstrip("/")
    return f"{base}/{key}" if key else base


def zarr_snippet(store: OpenedStore, path: str, kind: NodeKind | None) -> str:
    """Python that opens this node read-only with zarr (an array, else a group)."""
    opener = "open_array" if kind is NodeKind.ARRAY else "open_group"
    key = store.key(path)
    where = f", path={key!r}" if key else ""
    if store.kind == "local" and store.local_path is not None:
        source = repr(str(store.local_path))
        lines = ["import zarr", ""]
    elif store.kind == "zip" and store.archive_path is not None:
        lines = ["import zarr", "", f"store = zarr.storage.ZipStore({str(store.archive_path)!r}, mode='r')"]
        source = "store"
    else:
        lines = ["import zarr", ""]
        source = repr(store.label.split("#", 1)[0].rstrip("/"))
    name = "array" if kind is NodeKind.ARRAY else "group"
    lines.append(f"{name} = zarr.{opener}({source}{where}, mode='r')")
    if kind is NodeKind.ARRAY:
        lines.append(f"data = {name}[:]  # or a selection such as {name}[0:100]")
    return "\n".join(lines) + "\n"
