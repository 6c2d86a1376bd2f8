"""What is wrong with adding rows to an index before it starts: one check for the dialog and the CLI.

The rows are checked as a build's input is (model/build/checks.py, sources.py: a 2-D array of a
supported type, no NaN or infinity), then against the index (its dimension, the uint32 id space,
its ``is_normalized`` promise); the index must be a local folder that this user can write, with
readable ``info`` scalars and ``index_root``. Problems name the field they concern ("input" for
the rows, "output" for the index), as a build's do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ecpfs_viewer.model.build.errors import BuildError, BuildProblem
from ecpfs_viewer.model.build.sources import EmbeddingSource, check_finite, to_float32_input
from ecpfs_viewer.model.ecpfs import sizing
from ecpfs_viewer.model.ecpfs.opened_index import open_index
from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.zarrtree.array_batch import ArrayBatchReader
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

#: item ids and ``info/next_item_id`` are uint32
MAX_NEXT_ID = 2**32 - 1
#: rows checked at a time (their float64 copy is what the check holds)
CHECK_BATCH_ROWS = 16384
#: a row whose norm is further than this from 1 breaks an ``is_normalized`` promise (as a build's check)
NORM_TOLERANCE = 1e-3


@dataclass(frozen=True)
class IndexFacts:
    """The index's info scalars and root, as an insert needs them."""

    path: Path
    levels: int
    metric: str
    is_normalized: bool
    total_items: int
    next_item_id: int
    dim: int
    stored_dtype: str
    root: np.ndarray  # index_root/embeddings, stored dtype


@dataclass(frozen=True)
class AddPlan:
    """What an add will do, and why it cannot (``problems``) or what to know first (``warnings``)."""

    index: str
    rows_label: str
    rows: int = 0
    dim: int = 0
    rows_dtype: str = ""
    facts: IndexFacts | None = None
    warnings: list[str] = field(default_factory=list)
    problems: list[BuildProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def first_id(self) -> int | None:
        return None if self.facts is None else self.facts.next_item_id


def local_index_problem(index: str | os.PathLike[str]) -> BuildProblem | None:
    """Why ``index`` is not a local folder we may write into (None when it is)."""
    text = os.fspath(index).strip()
    if not text:
        return BuildProblem("output", "choose the index folder to add to")
    if "://" in text:
        return BuildProblem("output", "vectors are added to local index folders only, not to a URL", text)
    path = Path(text).expanduser()
    if not path.exists():
        return BuildProblem("output", "no such index folder", text)
    if not path.is_dir():
        return BuildProblem("output", "vectors are added to an index folder only (not a .zip or a file)", text)
    if not os.access(path, os.W_OK | os.X_OK):
        return BuildProblem("output", "the index folder cannot be written", text)
    return None


def read_index_facts(index: str | os.PathLike[str], hierarchy: Hierarchy | None = None) -> IndexFacts:
    """The index's info scalars and root; BuildError (about the index) when one cannot be read."""
    path = Path(index).expanduser().absolute()
    label = str(path)
    h = hierarchy if hierarchy is not None else open_index(path).hierarchy

    def fail(message: str) -> BuildError:
        return BuildError(BuildProblem("output", message, label))

    def scalar(name: str, required: bool = True) -> object:
        details = h.details(f"info/{name}")
        if details.array is None:
            if not required and details.node.missing:
                return None
            raise fail(f"info/{name} cannot be read ({details.error or 'not an array'}); is this an ecpfs index?")
        try:
            return h.read_scalar(f"info/{name}")
        except Exception as exc:
            raise fail(f"info/{name} cannot be read ({describe_exception(exc)})") from exc

    version = scalar("format_version", required=False)
    if version is not None and int(version) > 1:  # type: ignore[call-overload]
        raise fail(f"format_version {version} is newer than 1; refusing to write into it")
    levels = int(scalar("levels"))  # type: ignore[call-overload]
    if levels < 1:
        raise fail(f"info/levels is {levels}; an index has at least 1 level")
    metric = str(scalar("metric"))
    if metric not in ("L2", "IP"):
        raise fail(f"info/metric must be L2 or IP, found {metric!r}")
    normalized = scalar("is_normalized", required=False)
    total = int(scalar("total_items"))  # type: ignore[call-overload]
    next_id = int(scalar("next_item_id"))  # type: ignore[call-overload]
    if next_id < total:
        raise fail(f"info/next_item_id ({next_id}) is below info/total_items ({total}); the index is inconsistent")
    try:
        root = ArrayBatchReader(h).read(["index_root/embeddings"])[0]
    except Exception as exc:
        raise fail(f"index_root/embeddings cannot be read ({describe_exception(exc)})") from exc
    if root is None or root.ndim != 2 or root.shape[0] == 0:
        raise fail("index_root/embeddings is " + ("missing" if root is None else f"of shape {root.shape}"))
    if root.dtype.name not in sizing.STORED_DTYPES:
        raise fail(f"index_root/embeddings has type {root.dtype.name}, not one an index stores")
    return IndexFacts(path=path, levels=levels, metric=metric, is_normalized=bool(normalized), total_items=total,
                      next_item_id=next_id, dim=int(root.shape[1]), stored_dtype=root.dtype.name, root=root)


def load_rows(rows: str | os.PathLike[str] | np.ndarray) -> tuple[np.ndarray, str]:
    """The rows to add and how messages name them; a .npy goes through the build's guarded reader."""
    if isinstance(rows, np.ndarray):
        label = f"{rows.shape[0] if rows.ndim else 0} rows given"
        if rows.ndim != 2 or rows.shape[0] == 0 or rows.shape[1] == 0:
            raise BuildError(BuildProblem("input", f"expected a non-empty 2-D array (rows, dim), got shape "
                                                   f"{rows.shape}", label))
        if rows.dtype.name not in sizing.SOURCE_DTYPES:
            raise BuildError(BuildProblem("input", f"unsupported element type {rows.dtype}; supported: "
                                                   f"{', '.join(sizing.SOURCE_DTYPES)}", label))
        return rows, label
    src = EmbeddingSource(rows)
    return src.read(0, src.info.rows), src.label


def row_problems(data: np.ndarray, label: str, facts: IndexFacts, *, force: bool = False) -> tuple[
        list[BuildProblem], list[str]]:
    """The rows' problems and warnings against the index (dimension, finiteness, ids, normalisation)."""
    problems: list[BuildProblem] = []
    warnings: list[str] = []
    n, dim = data.shape
    if dim != facts.dim:
        problems.append(BuildProblem("input", f"rows have dimension {dim}, the index has {facts.dim}", label))
        return problems, warnings
    try:
        check_finite(data, 0, label)
    except BuildError as exc:
        problems.extend(exc.problems)
        return problems, warnings
    if facts.next_item_id + n > MAX_NEXT_ID:
        problems.append(BuildProblem("input", f"{n:,} rows from id {facts.next_item_id:,} pass the largest uint32 "
                                              f"item id", label))
    native = sizing.resolve_stored_dtype(data.dtype, "native")
    if data.dtype == np.float64:
        warnings.append(f"{label}: float64 rows are narrowed to float32")
    if sizing.is_narrowing(native, facts.stored_dtype):
        warnings.append(f"{label}: {native} rows are stored as {facts.stored_dtype} (lossy), as the index stores "
                        f"its vectors")
    norms = np.empty(n, dtype=np.float64)
    too_big = False
    for start in range(0, n, CHECK_BATCH_ROWS):  # bounded copies, whatever the number of rows
        part = data[start:start + CHECK_BATCH_ROWS]
        if facts.stored_dtype == "float16" and part.dtype.kind == "f":
            with np.errstate(over="ignore"):
                too_big = too_big or not bool(np.isfinite(part.astype(np.float16)).all())
        v = to_float32_input(part).astype(np.float64)
        norms[start:start + len(part)] = np.sqrt(np.einsum("ij,ij->i", v, v))
    if too_big:
        problems.append(BuildProblem("input", "values beyond ±65504 do not fit the index's float16", label))
    off = np.abs(norms - 1.0) > NORM_TOLERANCE
    if facts.is_normalized and off.any():
        text = (f"the index promises unit-length vectors (is_normalized) but {int(off.sum()):,} of {n:,} rows are "
                f"not (norms {float(np.min(norms)):.4g} .. {float(np.max(norms)):.4g}); they would be routed and "
                f"scored with wrong distances: normalise them first")
        if force:
            warnings.append(f"{label}: {text} (added anyway: --force)")
        else:
            problems.append(BuildProblem("input", text + ", or force the add", label))
    return problems, warnings


def check_add(index: str | os.PathLike[str], rows: str | os.PathLike[str] | np.ndarray, *,
              force: bool = False) -> tuple[AddPlan, np.ndarray | None]:
    """Every problem of adding ``rows`` to ``index`` (nothing is written), and the rows when readable."""
    index_text = os.fspath(index)
    label = "rows" if isinstance(rows, np.ndarray) else os.fspath(rows)
    problems: list[BuildProblem] = []
    facts: IndexFacts | None = None
    where = local_index_problem(index)
    if where is not None:
        problems.append(where)
    else:
        try:
            facts = read_index_facts(index)
        except BuildError as exc:
            problems.extend(exc.problems)
    data: np.ndarray | None = None
    if not isinstance(rows, np.ndarray) and not os.fspath(rows).strip():
        problems.append(BuildProblem("input", "choose a .npy file of vectors to add"))
    else:
        try:
            data, label = load_rows(rows)
        except BuildError as exc:
            problems.extend(exc.problems)
    warnings: list[str] = []
    if data is not None and facts is not None:
        more, warnings = row_problems(data, label, facts, force=force)
        problems += more
    plan = AddPlan(index=index_text, rows_label=label, rows=0 if data is None else int(data.shape[0]),
                   dim=0 if data is None else int(data.shape[1]), rows_dtype="" if data is None else data.dtype.name,
                   facts=facts, warnings=warnings, problems=problems)
    return plan, data
