"""The fresh build a drift report measures an index against: its own items, built again.

The items are written in id order to a ``.npy`` (model/build/rebuild.py) and built with the
index's levels, metric, stored type and the build's own leaf target (origin.py), in a hidden
``.ecpfs-drift-PID-…`` folder of the temporary folder that is removed whatever happens (done,
failed, cancelled; a killed run's folder is removed by the next, stale.py). Before anything is
written the space it takes is estimated: more than the free space is refused, and a build over
Build's own size guard asks for ``force``.
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ecpfs_viewer.model.build.builder import BuildParams, BuildProgress, build_index
from ecpfs_viewer.model.build.checks import LARGE_BUILD_FLOOR_BYTES, LARGE_BUILD_RATIO
from ecpfs_viewer.model.build.estimate import estimate_disk
from ecpfs_viewer.model.build.rebuild import write_item_vectors
from ecpfs_viewer.model.drift.origin import BuildOrigin
from ecpfs_viewer.model.drift.stale import remove_stale_drift
from ecpfs_viewer.model.ecpfs import sizing
from ecpfs_viewer.model.ecpfs.summary import IndexSummary
from ecpfs_viewer.model.errors import UserError
from ecpfs_viewer.model.formatting import format_bytes
from ecpfs_viewer.model.search.index import IndexReader
from ecpfs_viewer.model.search.results import ProgressCallback, SearchProgress
from ecpfs_viewer.model.tasks import Cancelled, checkpoint

PREFIX = ".ecpfs-drift-"


class DriftError(UserError):
    """The drift report cannot be made (the message says why); nothing was left behind."""


class DriftOversize(DriftError):
    """The fresh build is over Build's size guard: the CLI asks for --force, the window asks the user."""


class DriftCancelled(Cancelled):
    def __init__(self, message: str = "drift report cancelled; nothing was left behind") -> None:
        super().__init__(message)


@dataclass(frozen=True)
class FreshPlan:
    """What the fresh build is and what it takes on disk."""

    params: BuildParams
    rows: int
    vectors_bytes: int
    index_bytes: int

    @property
    def need_bytes(self) -> int:
        return self.vectors_bytes + self.index_bytes


def fresh_params(summary: IndexSummary, origin: BuildOrigin) -> BuildParams:
    """The build the index would get today: its own shape and the original leaf target."""
    return BuildParams(levels=summary.levels or 1, target_cluster_items=origin.target,
                       metric=summary.metric or "L2", is_normalized=bool(summary.is_normalized),
                       dtype=_build_dtype(summary.dtype), rep_selection=origin.rep_selection,
                       seed=0 if origin.rep_selection == "random" else None)


def _build_dtype(stored: str | None) -> str:
    return stored if stored in sizing.DTYPE_CHOICES else "native"


def rebuild_command(params: BuildParams, vectors: str, output: str) -> str:
    """The exact ``ecpfs-viewer build`` line of a rebuild with ``params``."""
    args = ["ecpfs-viewer", "build", vectors, output, "--levels", str(params.levels),
            "--target-cluster-items", str(params.target_cluster_items), "--metric", params.metric,
            "--dtype", params.dtype, "--rep-selection", params.rep_selection]
    if params.seed is not None:
        args += ["--seed", str(params.seed)]
    if params.is_normalized:
        args.append("--normalized")
    return shlex.join(args)


def plan_fresh(summary: IndexSummary, origin: BuildOrigin, rows: int) -> FreshPlan:
    params = fresh_params(summary, origin)
    dim = summary.dim or 0
    stored = summary.dtype or "float32"
    estimate = estimate_disk(rows, dim, stored, params.levels, params.target_cluster_items,
                             sizing.chunk_rows(dim, stored, params.node_chunk_bytes),
                             sizing.chunk_rows(dim, stored, params.rep_chunk_bytes))
    return FreshPlan(params, rows, rows * dim * 4, estimate.bytes_on_disk)


def guard(plan: FreshPlan, parent: Path, force: bool) -> None:
    """DriftError when the fresh build does not fit, or is unusually large and not forced (as Build asks)."""
    free = shutil.disk_usage(parent).free
    if plan.need_bytes > free:
        raise DriftError(f"{parent}: the fresh build of {plan.rows:,} items needs about "
                         f"{format_bytes(plan.need_bytes)}, only {format_bytes(free)} is free; set TMPDIR to "
                         f"another folder, or build it yourself and give it with --against")
    limit = max(LARGE_BUILD_RATIO * plan.vectors_bytes, LARGE_BUILD_FLOOR_BYTES)
    if plan.index_bytes > limit and not force:
        raise DriftOversize(f"the fresh build would take about {format_bytes(plan.index_bytes)} on disk, "
                         f"{plan.index_bytes / max(1, plan.vectors_bytes):,.0f} times its items' vectors; "
                         f"confirm with --force (the window asks), or give a build with --against")


@contextmanager
def fresh_build(reader: IndexReader, summary: IndexSummary, plan: FreshPlan, *, parent: Path | None = None,
                force: bool = False, progress: ProgressCallback | None = None,
                cancel: threading.Event | None = None) -> Iterator[Path]:
    """A fresh build of the index's items in a temporary folder, removed when the block ends."""
    parent = Path(parent or tempfile.gettempdir())
    remove_stale_drift(parent)
    guard(plan, parent, force)
    work = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent))
    try:
        vectors = work / "items.npy"

        def wrote(done: int, total: int) -> None:
            checkpoint(cancel, DriftCancelled)
            if progress is not None:
                progress(SearchProgress("fresh build: writing the items' vectors", done, total))

        try:
            write_item_vectors(reader.hierarchy, summary, vectors, progress=wrote, cancel=cancel)
        except Cancelled:
            raise DriftCancelled() from None
        except Exception as exc:
            raise DriftError(f"{reader.label}: its items cannot be read for a fresh build ({exc})") from exc

        def built(p: BuildProgress) -> None:
            if progress is not None:
                progress(SearchProgress(f"fresh build: {p.phase}", p.done, p.total))

        try:
            build_index(vectors, work / "fresh.zarr", plan.params, progress=built, cancel=cancel)
        except Cancelled:
            raise DriftCancelled() from None
        vectors.unlink()
        yield work / "fresh.zarr"
    finally:
        shutil.rmtree(work, ignore_errors=True)
