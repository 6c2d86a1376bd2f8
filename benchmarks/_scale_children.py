"""What bench_scale.py's child processes do: open a node page in the window, and zarr-python doing
the jobs the command line does (read every leaf's item_ids; every leaf's embeddings, then a numpy
brute force; every zarr.json over HTTP). Each prints one line (JSON for the node page) and leaves.

    python benchmarks/_scale_children.py JOB ARG...     (bench_scale.py runs it and times it)
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

IN_FLIGHT = 128  # the command line's default --max-in-flight


def child_node_page(index: str, node: str) -> None:
    """Open the index in the window, select node, and time until its page is loaded (JSON on stdout)."""
    from PySide6.QtCore import QEventLoop, QTimer

    from ecpfs_viewer.gui.app import create_main_window, ensure_application, tune_interpreter_for_gui
    from ecpfs_viewer.gui.runtime import settings as app_settings
    from ecpfs_viewer.gui.runtime.workers import stop_workers
    from ecpfs_viewer.process_exit import leave_process

    def wait_until(condition: Callable[[], bool], timeout: float = 300.0) -> None:
        loop, poll = QEventLoop(), QTimer()
        deadline = time.perf_counter() + timeout
        poll.setInterval(5)
        poll.timeout.connect(lambda: (condition() or time.perf_counter() > deadline) and loop.quit())
        poll.start()
        loop.exec()
        poll.stop()
        if not condition():
            raise TimeoutError(f"the window did not finish in {timeout:.0f} s")

    app_settings.use_settings_dir(tempfile.mkdtemp(prefix="ecpfs-bench-settings-"))
    ensure_application()
    collector = tune_interpreter_for_gui()
    window = create_main_window()
    collector.follow_index(window.store_opened, window.store_dropped)
    window.resize(1280, 800)
    window.show()
    started = time.perf_counter()
    window.open_location(index)
    wait_until(lambda: not window.is_busy() and window.tree_model.is_loaded(node.rsplit("/", 1)[0]))
    opened = time.perf_counter()
    cpu = time.process_time()
    window.reveal_path(node)
    # loaded: the page on screen shows node's facts and members (the tree selects it when its level is listed)
    wait_until(lambda: window.overview_stack.currentWidget() is window.node_page and window.node_page.data is not None
               and window.node_page.data.info.path == node)
    loaded, page_cpu = time.perf_counter(), time.process_time() - cpu
    wait_until(lambda: window.current_item() is not None and window.current_item().path == node)
    selected = time.perf_counter()
    print(json.dumps({"open_s": opened - started, "page_s": loaded - opened, "page_cpu_s": page_cpu,
                      "selected_s": selected - opened}), flush=True)
    window.close()
    stop_workers()
    leave_process(0)


async def _leaf_arrays(index: str, names: tuple[str, ...]) -> list[list[object]]:
    """Every leaf's arrays `names`, read with zarr-python's async API, 64 reads at a time."""
    import zarr
    import zarr.api.asynchronous as zarr_async

    zarr.config.set({"async.concurrency": 64})
    root = await zarr_async.open_group(store=index, mode="r")
    levels = [int(name[4:]) async for name in root.group_keys() if name.startswith("lvl_")]
    level = await root.getitem(f"lvl_{max(levels)}")
    leaves = [node async for _name, node in level.members()]
    gate = asyncio.Semaphore(64)

    async def read(leaf: object) -> list[object]:
        async with gate:
            return [await (await leaf.getitem(name)).getitem(slice(None)) for name in names]  # type: ignore[attr-defined]

    return list(await asyncio.gather(*(read(leaf) for leaf in leaves)))


def child_item_ids(index: str) -> None:
    import numpy as np

    ids = np.concatenate([arrays[0] for arrays in asyncio.run(_leaf_arrays(index, ("item_ids",)))])
    print(f"every leaf's item_ids: {len(ids):,} ids")


def child_exact(index: str) -> None:
    """Read every leaf's embeddings, then a numpy brute force of 100 sampled items' top 10."""
    import numpy as np

    leaves = asyncio.run(_leaf_arrays(index, ("item_ids", "embeddings")))
    ids = np.concatenate([leaf[0] for leaf in leaves])
    vectors = np.concatenate([leaf[1] for leaf in leaves]).astype(np.float32, copy=False)
    del leaves
    queries = vectors[np.random.default_rng(0).choice(len(vectors), 100, replace=False)]
    norms = np.einsum("ij,ij->i", vectors, vectors)
    best = np.full((len(queries), 10), np.inf, np.float32), np.zeros((len(queries), 10), np.int64)
    for start in range(0, len(vectors), 100_000):  # blocks, so the figure is the reading, not a 100 x N matrix
        d = norms[None, start:start + 100_000] - 2 * (queries @ vectors[start:start + 100_000].T)
        both = np.concatenate([best[0], d], axis=1)
        rows = np.concatenate([best[1], np.broadcast_to(np.arange(start, start + d.shape[1]), d.shape)], axis=1)
        keep = np.argpartition(both, 9, axis=1)[:, :10]
        best = np.take_along_axis(both, keep, 1), np.take_along_axis(rows, keep, 1)
    print(f"every leaf's embeddings: {len(ids):,} x {vectors.shape[1]}, top 10 of 100 queries")


def child_documents(url: str, keys_file: str) -> None:
    """Read every zarr.json over HTTP through zarr-python's ObjectStore, IN_FLIGHT at a time."""
    from obstore.store import HTTPStore
    from zarr.core.buffer import default_buffer_prototype
    from zarr.storage import ObjectStore

    keys = Path(keys_file).read_text().split()

    async def read_all() -> int:
        store = ObjectStore(HTTPStore.from_url(url, client_options={"allow_http": True}), read_only=True)
        gate, prototype = asyncio.Semaphore(IN_FLIGHT), default_buffer_prototype()

        async def one(key: str) -> int:
            async with gate:
                buffer = await store.get(key, prototype=prototype)
                return 0 if buffer is None else len(buffer.to_bytes())

        return sum(await asyncio.gather(*(one(key) for key in keys)))

    size = asyncio.run(read_all())
    print(f"every zarr.json: {len(keys):,} documents, {size / 1e6:.1f} MB")


CHILDREN: dict[str, Callable[..., None]] = {"node-page": child_node_page, "zarr-item-ids": child_item_ids,
                                            "zarr-exact": child_exact, "zarr-documents": child_documents}


if __name__ == "__main__":
    CHILDREN[sys.argv[1]](*sys.argv[2:])
    sys.stdout.flush()  # then no interpreter shutdown: obstore's threads aborted it now and then (zarr 3.1)
    os._exit(0)
