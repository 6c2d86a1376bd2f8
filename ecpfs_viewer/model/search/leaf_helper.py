"""The far end of a pass over every leaf's item_ids, read by a helper process
(model/storage/far_end.py): the same batch reader and the same read stamps
(model/ecpfs/index_cache.py) on the helper's own opening of the folder, each batch sent back as
the item ids it read and the stamps taken before reading them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ecpfs_viewer.model.ecpfs.paths import node_array_path
from ecpfs_viewer.model.search.item_map import _Run
from ecpfs_viewer.model.storage.far_end import FarEnd, local_root, open_local, worth_a_helper
from ecpfs_viewer.model.storage.stamps import Stamps

#: a pass with at least this many leaves left starts a helper (fewer are read before it has started)
HELPER_MIN_LEAVES = 16384
_JOB = f"{__name__}:item_ids_job"

#: what the helper sends for a batch of leaves: the run of their ids and the stamps of their files
Batch = tuple[_Run, list[Stamps | None]]


def start_helper(store: Any, levels: int, leaves: Sequence[int], start: int, step: int) -> FarEnd | None:
    """A helper reading ``leaves[start:]`` of a local store from the far end, when the pass is worth it."""
    root = local_root(store)
    if root is None or not worth_a_helper(len(leaves) - start, HELPER_MIN_LEAVES):
        return None
    every = list(leaves)

    def accept(first: int, end: int, value: Any) -> bool:
        run = value[0]
        return (isinstance(run, _Run) and len(run.sizes) == len(run.leaves)
                and bool(np.isin(run.leaves, every[first:end]).all()))

    return FarEnd(_JOB, (*root, levels, every), len(every), start, step, accept)


def item_ids_job(folder: str, root_key: str, levels: int, leaves: list[int]) -> Callable[[int, int], Batch]:
    """In the helper: the reader of a batch ``leaves[low:high]``."""
    from ecpfs_viewer.model.ecpfs.index_cache import IndexCache
    from ecpfs_viewer.model.zarrtree.array_batch import ArrayBatchReader
    from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

    hierarchy = Hierarchy(open_local(folder, root_key))
    stamper, reader = IndexCache(hierarchy), ArrayBatchReader(hierarchy)

    def batch(low: int, high: int) -> Batch:
        part = leaves[low:high]
        paths = [node_array_path(levels, n, "item_ids") for n in part]
        stamps: list[Stamps | None] = []
        with stamper.stamped_reads(list(zip(paths, part, strict=True)), stamps) as before_chunks:
            arrays = reader.read(paths, None, keep_documents=False, before_chunks=before_chunks)
        present = [(leaf, ids.reshape(-1)) for leaf, ids in zip(part, arrays, strict=True) if ids is not None]
        return _Run.of_leaves([leaf for leaf, _ in present], [ids for _, ids in present]), stamps

    return batch
