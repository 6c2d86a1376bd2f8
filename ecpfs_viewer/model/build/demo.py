"""The demo index: built on first use from the bundled UCI digits, so the application works out of the box.

The dataset ships in ``ecpfs_viewer.resources`` (see ``resources/DEMO_DATA.md``); the index is
built with our own builder into the user cache directory and reused on later starts. Qt-free.
"""

from __future__ import annotations

import gzip
import importlib.resources
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from ecpfs_viewer.model.build.builder import BuildError, BuildParams, BuildProgress, build_index
from ecpfs_viewer.model.ecpfs.paths import level_path
from ecpfs_viewer.model.storage.disk_cache import CACHE_ENV as CACHE_ENV
from ecpfs_viewer.model.storage.disk_cache import cache_root

DEMO_RESOURCE = "digits.csv.gz"
DEMO_ROWS, DEMO_DIM = 1797, 64
#: How the demo index is built; change DEMO_INDEX_NAME with it so old caches are not reused.
DEMO_PARAMS = BuildParams(levels=2, target_cluster_items=30, metric="L2", dtype="native")
DEMO_INDEX_NAME = "digits-demo-v1.zarr"


def cache_dir() -> Path:
    """The app's cache folder (model/storage/disk_cache.py), where the demo index is built."""
    return cache_root()


def demo_index_path() -> Path:
    """Where the demo index lives (it may not be built yet: see :func:`ensure_demo_index`)."""
    return cache_dir() / DEMO_INDEX_NAME


def load_demo_vectors() -> np.ndarray:
    """The 1797 x 64 uint8 pixel vectors of the bundled digits (the label column dropped)."""
    resource = importlib.resources.files("ecpfs_viewer.resources").joinpath(DEMO_RESOURCE)
    with resource.open("rb") as raw, gzip.open(raw, "rt") as text:
        table = np.loadtxt(text, delimiter=",", dtype=np.int64)
    if table.shape != (DEMO_ROWS, DEMO_DIM + 1):
        raise ValueError(f"{DEMO_RESOURCE}: expected {DEMO_ROWS} x {DEMO_DIM + 1} values, "
                         f"found {table.shape[0]} x {table.shape[1] if table.ndim > 1 else 1}")
    return np.ascontiguousarray(table[:, :DEMO_DIM], dtype=np.uint8)


def demo_index_is_complete(path: Path | None = None) -> bool:
    """True when a finished demo index is at ``path``: its metadata and every level are there."""
    path = demo_index_path() if path is None else path
    wanted = ["zarr.json", "info/zarr.json", "info/total_items/zarr.json", "rep_embeddings/zarr.json",
              "rep_item_ids/zarr.json", "index_root/embeddings/zarr.json"]
    wanted += [f"{level_path(level)}/zarr.json" for level in range(1, DEMO_PARAMS.levels + 1)]
    if not all((path / name).is_file() for name in wanted):
        return False
    leaf_level = path / level_path(DEMO_PARAMS.levels)
    return any(child.name.startswith("node_") for child in leaf_level.iterdir())


def ensure_demo_index(progress: Callable[[BuildProgress], None] | None = None,
                      cancel: threading.Event | None = None) -> Path:
    """Return the demo index path, building it first when it is missing or incomplete."""
    target = demo_index_path()
    if demo_index_is_complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() or target.is_symlink():
        _remove(target)  # a partial or foreign leftover under our own cache name
    vectors = load_demo_vectors()
    fd, name = tempfile.mkstemp(prefix=".digits-", suffix=".npy", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            np.save(handle, vectors, allow_pickle=False)
        build_index(name, target, DEMO_PARAMS, progress=_relabel(progress, name), cancel=cancel)
    except BuildError:
        if not demo_index_is_complete(target):  # another process may have finished it first
            raise
    finally:
        os.unlink(name)
    return target


def _relabel(progress: Callable[[BuildProgress], None] | None,
             temporary: str) -> Callable[[BuildProgress], None] | None:
    """Progress that names the demo data instead of the temporary file it is read from."""
    if progress is None:
        return None

    def report(p: BuildProgress) -> None:
        progress(replace(p, message="demo digits") if p.message == temporary else p)

    return report


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()
