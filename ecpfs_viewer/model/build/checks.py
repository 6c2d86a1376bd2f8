"""What is wrong with a build before it starts, and what it will make: one check for the dialog and the CLI.

:func:`check_build` finds every problem with the input, the parameters and the output folder,
each tied to its field (:class:`BuildProblem`); the builder refuses to start on any of them, the
Build dialog shows each beside its field and the command line prints each on a line.
:func:`preview_build` adds the numbers of the index to come, from the input's header only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ecpfs_viewer.model.build.errors import BuildError, BuildProblem, ProblemField
from ecpfs_viewer.model.build.estimate import disk_units, estimate_disk
from ecpfs_viewer.model.build.output import stale_builds
from ecpfs_viewer.model.build.replaceable import replace_refusal
from ecpfs_viewer.model.build.sources import EmbeddingSource, SourceInfo, inspect_source
from ecpfs_viewer.model.ecpfs import sizing
from ecpfs_viewer.model.formatting import format_bytes

METRICS = ("L2", "IP")
REP_SELECTIONS = ("offset", "random")
MAX_ROWS = 2**32 - 1  # item ids are uint32

#: A build is "unusually large", and needs a confirmation (GUI) or --force (CLI), when its estimate
#: exceeds both this many times the input and :data:`LARGE_BUILD_FLOOR_BYTES`: the mark of a
#: parameter typo (``--levels 64`` on 3,000 rows makes gigabytes of near-empty nodes).
LARGE_BUILD_RATIO = 4
LARGE_BUILD_FLOOR_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class BuildParams:
    """Everything that shapes the index (not where it goes)."""

    levels: int = 3
    target_cluster_items: int = 100
    metric: str = "L2"
    is_normalized: bool = False
    dtype: str = "native"
    rep_selection: str = "offset"
    seed: int | None = None
    node_chunk_bytes: int = sizing.DEFAULT_NODE_CHUNK_BYTES
    rep_chunk_bytes: int = sizing.DEFAULT_REP_CHUNK_BYTES


@dataclass(frozen=True)
class BuildPreview:
    """Cheap forecast of a build from the input header (and a tiny sample), with its problems."""

    source: str
    rows: int = 0
    dim: int = 0
    source_dtype: str = ""
    stored_dtype: str = ""
    representatives: int = 0
    fan_out: int = 0
    max_nodes_per_level: list[int] = field(default_factory=list)
    node_chunk_rows: int = 0
    rep_chunk_rows: int = 0
    estimated_bytes: int = 0  # on disk: files rounded up to blocks, plus folders
    estimated_apparent_bytes: int = 0  # the files' own sizes
    estimated_files: int = 0  # files and folders
    input_bytes: int = 0
    warnings: list[str] = field(default_factory=list)
    problems: list[BuildProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def oversize(self) -> str:
        """Why this build is unusually large for its input ("" when it is not): ask before starting it."""
        size = self.estimated_bytes
        if size <= max(LARGE_BUILD_RATIO * self.input_bytes, LARGE_BUILD_FLOOR_BYTES):
            return ""
        return (f"the index would take about {format_bytes(size)} on disk in {self.estimated_files:,} files "
                f"and folders, {size / max(1, self.input_bytes):,.0f} times the {format_bytes(self.input_bytes)} "
                f"of the input; fewer levels or a larger target cluster size make a smaller index")


def param_problems(params: BuildParams, info: SourceInfo | None) -> list[BuildProblem]:
    """The parameters' problems; those that depend on the input are checked only when it is known."""
    problems: list[BuildProblem] = []
    if params.levels < 1:
        problems.append(BuildProblem("levels", f"levels must be at least 1 (got {params.levels})"))
    target = params.target_cluster_items
    if target < 1:
        problems.append(BuildProblem("target", f"target_cluster_items must be at least 1 (got {target})"))
    elif info is not None and target > info.rows:
        problems.append(BuildProblem(
            "target", f"target_cluster_items ({target}) is larger than the number of rows ({info.rows}) "
                      f"in {info.label}"))
    if params.metric not in METRICS:
        problems.append(BuildProblem("metric", f"metric must be L2 or IP (got {params.metric!r})"))
    if params.rep_selection not in REP_SELECTIONS:
        problems.append(BuildProblem(
            "rep_selection", f"rep_selection must be offset or random (got {params.rep_selection!r})"))
    stored: str | None = None
    if params.dtype not in sizing.DTYPE_CHOICES:
        problems.append(BuildProblem(
            "dtype", f"dtype must be one of {', '.join(sizing.DTYPE_CHOICES)} (got {params.dtype!r})"))
    elif info is not None:
        stored = sizing.resolve_stored_dtype(info.dtype, params.dtype)
    if info is not None and info.rows > MAX_ROWS:
        problems.append(BuildProblem("input", f"{info.rows} rows do not fit uint32 item ids", info.label))
    budgets: tuple[tuple[ProblemField, str, int], ...] = (("node_chunk", "node chunk", params.node_chunk_bytes),
               ("rep_chunk", "rep chunk", params.rep_chunk_bytes))
    for name, title, budget in budgets:
        if budget < 1:
            problems.append(BuildProblem(name, f"{title} budget must be positive (got {budget} bytes)"))
        elif info is not None and stored is not None:
            try:
                sizing.chunk_rows(info.dim, stored, budget)
            except ValueError as exc:
                problems.append(BuildProblem(name, f"{title} budget too small: {exc}"))
    return problems


def output_problems(output: str | os.PathLike[str], overwrite: bool) -> list[BuildProblem]:
    """Why the index cannot be written at ``output`` (empty when it can); touches the disk."""
    text = os.fspath(output).strip()
    if not text:
        return [BuildProblem("output", "choose where to write the index")]
    path = Path(text).expanduser().absolute()
    if path.exists() or path.is_symlink():
        if not overwrite:
            return [BuildProblem("output", "already exists: choose a new name, or replace it", str(path))]
        refusal = replace_refusal(path)
        if refusal is not None:
            return [BuildProblem("output", refusal, str(path))]
    parent = path.parent
    if not parent.is_dir():
        return [BuildProblem("output", f"output folder {parent} does not exist")]
    if not os.access(parent, os.W_OK | os.X_OK):
        return [BuildProblem("output", f"output folder {parent} cannot be written")]
    return []


def check_build(source: str | os.PathLike[str], params: BuildParams, output: str | os.PathLike[str] | None = None,
                *, overwrite: bool = False) -> tuple[SourceInfo | None, list[BuildProblem]]:
    """The input's header (None when unreadable) and every problem of the build (the output's if given)."""
    info: SourceInfo | None = None
    problems: list[BuildProblem] = []
    if not os.fspath(source).strip():
        problems.append(BuildProblem("input", "choose a .npy file of vectors"))
    else:
        try:
            info = inspect_source(source)
        except BuildError as exc:
            problems.extend(exc.problems)
    problems += param_problems(params, info)
    if output is not None:
        problems += output_problems(output, overwrite)
    return info, problems


def shape_warnings(ns: int, levels: int, representatives: int) -> list[str]:
    """Warnings about a tree shape that searches badly (allowed, but probably not meant)."""
    warnings: list[str] = []
    if ns <= 2 and representatives > 1:
        warnings.append(
            f"fan-out is {ns}: each node has at most {ns} children, so search walks a deep, "
            "narrow tree; use fewer levels or a smaller target_cluster_items"
        )
    if levels > 1 and ns < levels:
        warnings.append(
            f"{levels} levels with fan-out {ns}: the tree is all depth and no breadth; "
            f"fewer levels give wider nodes for the same {representatives} representatives"
        )
    return warnings


def normalized_warning(sample: np.ndarray, label: str) -> str | None:
    """A warning when is_normalized is promised but the sampled vectors are not unit length."""
    v = sample.astype(np.float64)
    norms = np.sqrt((v * v).sum(axis=1))
    if norms.size and np.nanmax(np.abs(norms - 1.0)) > 1e-3:
        return (
            f"{label}: is_normalized is set but sampled vectors are not unit length "
            f"(norms {np.nanmin(norms):.4g} .. {np.nanmax(norms):.4g}); L2 distances will be wrong"
        )
    return None


def preview_build(source: str | os.PathLike[str], params: BuildParams,
                  output: str | os.PathLike[str] | None = None, *, overwrite: bool = False) -> BuildPreview:
    """Forecast sizes, warnings and problems of a build from the header only (fast enough per keystroke)."""
    info, problems = check_build(source, params, output, overwrite=overwrite)
    if info is None:
        return BuildPreview(source=os.fspath(source), problems=problems)
    base = BuildPreview(source=info.label, rows=info.rows, dim=info.dim, source_dtype=info.dtype.name,
                        problems=problems)
    if any(p.field != "output" for p in problems):
        return base
    stored = sizing.resolve_stored_dtype(info.dtype, params.dtype)
    R = sizing.total_clusters(info.rows, params.target_cluster_items)
    ns = sizing.fan_out(R, params.levels)
    max_nodes = sizing.max_nodes_per_level(ns, R, params.levels)
    warnings = shape_warnings(ns, params.levels, R)
    if info.dtype == np.float64:
        warnings.append(f"{info.label}: float64 input is narrowed to float32")
    if sizing.is_narrowing(sizing.resolve_stored_dtype(info.dtype, "native"), stored):
        warnings.append(f"storing {info.dtype.name} input as {stored} loses precision")
    if params.is_normalized:
        try:
            w = normalized_warning(EmbeddingSource(source).sample(64), info.label)
        except BuildError as exc:
            w = str(exc)
        if w:
            warnings.append(w)
    if output is not None:
        warnings += stale_warnings(output)
    node_rows = sizing.chunk_rows(info.dim, stored, params.node_chunk_bytes)
    rep_rows = sizing.chunk_rows(info.dim, stored, params.rep_chunk_bytes)
    disk = estimate_disk(info.rows, info.dim, stored, params.levels, params.target_cluster_items, node_rows,
                         rep_rows, disk_units(output))
    return BuildPreview(
        source=info.label, rows=info.rows, dim=info.dim, source_dtype=info.dtype.name, stored_dtype=stored,
        representatives=R, fan_out=ns, max_nodes_per_level=max_nodes, node_chunk_rows=node_rows,
        rep_chunk_rows=rep_rows, estimated_bytes=disk.bytes_on_disk, estimated_apparent_bytes=disk.apparent_bytes,
        estimated_files=disk.files + disk.folders, input_bytes=info.rows * info.dim * info.dtype.itemsize,
        warnings=warnings, problems=problems,
    )


def stale_warnings(output: str | os.PathLike[str]) -> list[str]:
    """A line about the unfinished build folders of killed builds that the next build removes."""
    text = os.fspath(output).strip()
    if not text:
        return []
    stale = stale_builds(Path(text).expanduser().absolute().parent)
    if not stale:
        return []
    names = ", ".join(s.path.name for s in stale[:3]) + (", …" if len(stale) > 3 else "")
    return [f"{len(stale)} unfinished build folder{'s' if len(stale) > 1 else ''} left by killed builds "
            f"will be removed ({names})"]
