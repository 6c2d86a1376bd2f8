"""How much disk a build will take, counted file by file as the writer lays the index out.

An index is mostly small files (six per node, plus seven folders), so its size on disk is
dominated by block rounding and folders, not by the vectors (an index of small leaves takes
markedly more disk than its bytes). The estimate follows :mod:`.writer` exactly for the layout and the
metadata sizes, assumes chunks do not compress (random floats barely do; it is an upper bound
for the data), and rounds every file up to the filesystem's block.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ecpfs_viewer.model.build.writer import BORDER_JSON, GROUP_JSON, array_json
from ecpfs_viewer.model.ecpfs import sizing

DEFAULT_BLOCK = 4096
_ZSTD_FRAME = 16  # header and end mark of one zstd frame, bytes


@dataclass(frozen=True)
class DiskEstimate:
    """The size of an index to come: on disk (blocks), apparent (file bytes), files and folders."""

    bytes_on_disk: int
    apparent_bytes: int
    files: int
    folders: int


@dataclass(frozen=True)
class DiskUnits:
    """Allocation rules of the target filesystem: file block size, and what a folder costs."""

    block: int = DEFAULT_BLOCK
    folder: int = DEFAULT_BLOCK


def disk_units(output: str | os.PathLike[str] | None) -> DiskUnits:
    """The block size and folder cost of the filesystem ``output`` goes to (defaults when unknown).

    A folder costs one block on ext4 or xfs and nothing on tmpfs; the parent folder tells which.
    """
    if output is None or not os.fspath(output).strip():
        return DiskUnits()
    folder = Path(os.fspath(output).strip()).expanduser().absolute().parent
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    try:
        block = os.statvfs(folder).f_bsize or DEFAULT_BLOCK
        folder_blocks = os.stat(folder).st_blocks
    except (OSError, AttributeError):
        return DiskUnits()
    return DiskUnits(block=block, folder=block if folder_blocks > 0 else 0)


class _Tally:
    def __init__(self, units: DiskUnits) -> None:
        self.units = units
        self.disk = self.apparent = self.files = self.folders = 0

    def folder(self, count: int = 1) -> None:
        self.folders += count
        self.disk += count * self.units.folder

    def file(self, size: int, count: int = 1) -> None:
        block = self.units.block
        self.files += count
        self.apparent += size * count
        self.disk += -(-size // block) * block * count

    def arrays(self, count: int, rows: int, dim: int, itemsize: int, chunk_rows: int, meta: int) -> None:
        """``count`` arrays sharing ``rows`` rows evenly: folder, zarr.json, c/ and chunk files."""
        if count <= 0:
            return
        self.folder(count)
        self.file(meta, count)
        per_array = rows / count
        if per_array <= 0:
            return
        chunks = max(1, -(-int(per_array) // chunk_rows))
        self.folder(count)  # c/
        if dim:
            self.folder(count * chunks)  # c/i/ of a 2-D array
        chunk_bytes = int(per_array * max(dim, 1) * itemsize / chunks) + _ZSTD_FRAME
        self.file(chunk_bytes, count * chunks)


def _meta_size(shape_rows: int, chunk_rows: int, dim: int, data_type: str) -> int:
    shape = [shape_rows] + ([dim] if dim else [])
    chunk = [chunk_rows] + ([dim] if dim else [])
    return len(array_json(shape, chunk, data_type, compressed=True))


def estimate_disk(rows: int, dim: int, stored: str, levels: int, target_cluster_items: int,
                  node_chunk_rows: int, rep_chunk_rows: int, units: DiskUnits | None = None) -> DiskEstimate:
    """The on-disk size of the index a build with these numbers writes (nodes at their upper bound)."""
    t = _Tally(units or DiskUnits())
    itemsize = sizing.itemsize(stored)
    R = sizing.total_clusters(rows, target_cluster_items)
    ns = sizing.fan_out(R, levels)
    nodes = sizing.max_nodes_per_level(ns, R, levels)
    group = len(GROUP_JSON)
    scalar_meta = len(array_json([], [], "uint32", compressed=False))

    t.folder()  # the root, info, index_root and lvl_N groups
    t.file(group)
    t.folder(2 + levels)
    t.file(group, 2 + levels)
    t.folder(6)  # info scalars: five hold a value, is_normalized only when true
    t.file(scalar_meta, 6)
    t.file(8, 5)
    t.arrays(1, ns, dim, itemsize, node_chunk_rows, _meta_size(ns, node_chunk_rows, dim, stored))
    t.arrays(1, R, dim, itemsize, rep_chunk_rows, _meta_size(R, rep_chunk_rows, dim, stored))
    t.arrays(1, R, 0, 4, rep_chunk_rows, _meta_size(R, rep_chunk_rows, 0, "uint32"))
    for level, count in enumerate(nodes, 1):
        level_rows = rows if level == levels else sizing.reps_placed_at_level(level, ns, R)
        per_node = max(1, level_rows // max(1, count))
        t.folder(2 * count)  # the node group and its border array
        t.file(group, count)
        t.file(len(BORDER_JSON), count)
        t.arrays(count, level_rows, dim, itemsize, node_chunk_rows,
                 _meta_size(per_node, node_chunk_rows, dim, stored))
        t.arrays(count, level_rows, 0, 4, node_chunk_rows, _meta_size(per_node, node_chunk_rows, 0, "uint32"))
    return DiskEstimate(bytes_on_disk=t.disk, apparent_bytes=t.apparent, files=t.files, folders=t.folders)
