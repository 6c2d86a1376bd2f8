"""Whole arrays of many paths read as one batch: metadata in one multi-key read, chunks concurrently.

Reading arrays one after another costs two round trips each (document, then chunk), which is
what makes a remote store slow; here every request of the batch is in flight together, bounded
by the store (``max_in_flight``). The read caps of ``read_guard`` apply to each array as in
:meth:`Hierarchy.read_array`, and a failure is given in place, never raised.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np

from ecpfs_viewer.model.storage import event_loop
from ecpfs_viewer.model.storage.read_scope import drained_reads
from ecpfs_viewer.model.zarrtree.hierarchy import ArrayReadError, Hierarchy, array_read_error
from ecpfs_viewer.model.zarrtree.read_guard import ReadTooLarge, check_read


def read_whole_arrays(h: Hierarchy, paths: Sequence[str]) -> list[np.ndarray | ArrayReadError]:
    """Each whole array at paths, or the ArrayReadError (naming the path) that reading it raised.

    The documents the Hierarchy does not hold yet are read in one batch and kept; then every
    array's chunks are read on the model's event loop at once.
    """
    if not paths:
        return []
    h.prefetch(paths)
    results: list[np.ndarray | ArrayReadError] = [ArrayReadError("not read")] * len(paths)
    pending: list[tuple[int, Any]] = []
    for i, path in enumerate(paths):
        try:
            check_read(path or "/", h.array_details(path), ...)
            pending.append((i, h.open_async_array(path)))
        except ReadTooLarge as exc:
            results[i] = ArrayReadError(str(exc))
        except Exception as exc:
            results[i] = array_read_error(path, exc)

    async def all_of() -> list[Any]:
        return list(await asyncio.gather(*(array.getitem(...) for _, array in pending), return_exceptions=True))

    with drained_reads():  # the chunk reads a failed array left running end with the batch
        values = event_loop.run(all_of()) if pending else []
    for (i, _), value in zip(pending, values, strict=True):
        if isinstance(value, BaseException) and not isinstance(value, Exception):
            raise value  # cancellation, interrupts
        if isinstance(value, Exception):
            results[i] = array_read_error(paths[i], value)
        else:
            results[i] = np.asarray(value)
    return results
