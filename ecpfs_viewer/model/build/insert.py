"""Add vectors to a built index the way upstream's ``Index.insert`` / ``ecp add-data`` does (spec §3.8).

One model job for the window (Build ▸ Add Vectors…) and the CLI (``ecpfs-viewer add``):

1. the rows and the index are checked (insert_checks.py); the index's advisory write lock is taken
   (write_lock.py: other writers of ours wait or are refused; upstream's writers are not covered);
2. every row is narrowed to the index's stored dtype and routed root → leaf with the build's own
   router (routing.py: nearest rule and "last maximum wins" tie rule, on the narrowed values, as the
   build routes its items); only the internal nodes the rows pass through are read; a missing
   internal node stops the add, naming it, before anything is written;
3. ids are reserved: ``info/next_item_id`` is rewritten before any vector;
4. each touched leaf is appended in place: its two ``zarr.json`` get the new row count (nothing else
   in them changes) and zarr-python writes the rows from the old end, so only a leaf's last chunk
   is rewritten and new chunks are added; a leaf that does not exist is created with the root's
   chunk shape, its group and an empty ``border``, as a build pass creates it;
5. ``info/total_items`` is rewritten last.

Cancelling is possible until step 3; from then on the writes run to the end. Ctrl+C or a failure
between 3 and 5 leaves what upstream leaves after a crash: ``next_item_id > total_items`` (the
reserved ids are never reused) and ``ecpfs-viewer info`` reports the gap.
"""

from __future__ import annotations

import copy
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ecpfs_viewer.model.blas import one_blas_thread
from ecpfs_viewer.model.build.builder import BuildProgress
from ecpfs_viewer.model.build.errors import BuildError, BuildProblem
from ecpfs_viewer.model.build.insert_checks import AddPlan, IndexFacts, check_add, read_index_facts
from ecpfs_viewer.model.build.routing import MissingNodeError, NodeTable, Router, group_rows
from ecpfs_viewer.model.build.sources import narrow
from ecpfs_viewer.model.build.write_lock import UPSTREAM_NOT_COVERED, index_write_lock
from ecpfs_viewer.model.build.writer import BORDER_JSON, GROUP_JSON, WRITER_ATTRIBUTES
from ecpfs_viewer.model.ecpfs.opened_index import open_index
from ecpfs_viewer.model.ecpfs.paths import node_array_path, node_path
from ecpfs_viewer.model.errors import UserError, describe_exception
from ecpfs_viewer.model.guarded_json import parse_json
from ecpfs_viewer.model.tasks import Cancelled, checkpoint
from ecpfs_viewer.model.zarrtree.array_batch import ArrayBatchReader

__all__ = ["AddCancelled", "AddFailed", "AddInterrupted", "AddPlan", "AddResult", "IdRange", "add_rows", "check_add"]

#: codecs a new leaf's ids array may copy from the root's chain (anything else gets bytes + zstd)
_PLAIN_CODECS = frozenset({"bytes", "zstd", "gzip", "blosc", "crc32c"})
#: rows are routed in batches of about this many bytes of float64 (memory stays bounded for a large add)
ROUTE_BATCH_BYTES = 32 * 1024 * 1024
_STANDARD_CODECS = [{"name": "bytes", "configuration": {"endian": "little"}},
                    {"name": "zstd", "configuration": {"level": 3, "checksum": False}}]


@dataclass(frozen=True)
class IdRange:
    """The ids given to the added rows: ``start`` up to, not including, ``stop``."""

    start: int
    stop: int

    def __len__(self) -> int:
        return self.stop - self.start

    def __str__(self) -> str:
        return f"{self.start}..{self.stop - 1}" if self.stop > self.start else "none"


@dataclass(frozen=True)
class AddResult:
    """What an add did."""

    index: Path
    ids: IdRange
    leaves_appended: int
    leaves_created: list[int]
    seconds: float
    warnings: list[str] = field(default_factory=list)


class AddCancelled(Cancelled):
    """The add was cancelled before ids were reserved: the index is untouched."""

    def __init__(self, message: str = "add cancelled before anything was written; the index is unchanged") -> None:
        super().__init__(message)


def gap_note(ids: IdRange) -> str:
    return (f"ids {ids} were reserved (info/next_item_id = {ids.stop}) but info/total_items was not updated: the "
            f"index has a gap of {len(ids):,} ids, as upstream's insert leaves after a crash (the ids are never "
            f"reused; `ecpfs-viewer info` reports the gap)")


class AddInterrupted(KeyboardInterrupt):
    """Ctrl+C (or a stop signal) arrived after the ids were reserved; the message says what is left."""

    def __init__(self, ids: IdRange) -> None:
        self.ids = ids
        super().__init__(f"add interrupted while writing; {gap_note(ids)}")


class AddFailed(UserError):
    """Writing failed after the ids were reserved; the message names the cause and the gap left."""


def _read_doc(path: Path) -> dict[str, Any]:
    raw = path.read_bytes()
    doc = parse_json(raw, str(path))
    if not isinstance(doc, dict) or not isinstance(doc.get("shape"), list):
        raise BuildError(BuildProblem("output", "is not an array document with a shape", str(path)))
    return doc


def _write_doc(path: Path, doc: dict[str, Any]) -> None:
    """Replace a document whole (a crash leaves the old one or the new one, never half of each)."""
    tmp = path.with_name(path.name + ".ecpfs-viewer-tmp")
    tmp.write_bytes(json.dumps(doc, indent=2).encode())
    os.replace(tmp, path)


@dataclass
class _Leaf:
    node_id: int
    rows: np.ndarray  # row indices of the input, ascending
    existing: int | None  # rows stored now (None: the leaf is created)


def _report(progress: Callable[[BuildProgress], None] | None, phase: str, done: int, total: int,
            message: str = "") -> None:
    if progress is not None:
        progress(BuildProgress(phase, done, total, message))


def add_rows(index: str | os.PathLike[str], rows: str | os.PathLike[str] | np.ndarray, *,
             progress: Callable[[BuildProgress], None] | None = None, cancel: threading.Event | None = None,
             lock_wait_seconds: float = 10.0, force: bool = False) -> AddResult:
    """Append ``rows`` (a .npy path or an array) to the local index folder ``index``; their ids.

    Raises BuildError (the rows or the index cannot be used; nothing written), IndexLocked (another
    writer of ours), AddCancelled (before reservation; nothing written), AddInterrupted / AddFailed
    (after reservation: the upstream gap is left, as the message says).
    """
    t0 = time.perf_counter()
    _report(progress, "checking", 0, 1, os.fspath(index))
    plan, data = check_add(index, rows, force=force)
    if plan.problems or data is None or plan.facts is None:
        raise BuildError(*plan.problems)
    path = plan.facts.path
    with index_write_lock(path, lock_wait_seconds, cancel):
        facts = read_index_facts(path)  # again, under the lock: another writer may have added meanwhile
        if facts.next_item_id != plan.facts.next_item_id:
            plan = check_add(index, data, force=force)[0]
            if plan.problems:
                raise BuildError(*plan.problems)
        checkpoint(cancel, AddCancelled)
        stored = narrow(data, facts.stored_dtype)
        with one_blas_thread():
            leaf_of_row = _route(facts, stored, progress, cancel)
        leaves = _plan_leaves(facts, leaf_of_row)
        checkpoint(cancel, AddCancelled)
        ids = IdRange(facts.next_item_id, facts.next_item_id + stored.shape[0])
        _write_scalar(path, "info/next_item_id", ids.stop)  # reserved before any vector is written
        try:
            _report(progress, "reserved", 0, len(leaves), f"ids {ids} reserved")
            created = _write_leaves(facts, leaves, stored, ids.start, progress)
            _write_scalar(path, "info/total_items", facts.total_items + len(ids))  # last
        except KeyboardInterrupt as exc:
            raise AddInterrupted(ids) from exc
        except Exception as exc:
            raise AddFailed(f"{path}: writing failed ({describe_exception(exc)}); {gap_note(ids)}") from exc
    _report(progress, "done", len(leaves), len(leaves), f"ids {ids}")
    return AddResult(index=path, ids=ids, leaves_appended=len(leaves) - len(created), leaves_created=created,
                     seconds=time.perf_counter() - t0, warnings=[*plan.warnings, UPSTREAM_NOT_COVERED])


def _route(facts: IndexFacts, stored: np.ndarray, progress: Callable[[BuildProgress], None] | None,
           cancel: threading.Event | None) -> np.ndarray:
    """The leaf of every row, by the build's router; reads only the internal nodes the rows reach."""
    h = open_index(facts.path).hierarchy
    reader = ArrayBatchReader(h)
    use_dot = facts.metric == "IP" or facts.is_normalized

    def fetch(level: int, node_ids: list[int]) -> None:
        table = router.levels[level - 1]
        wanted = [n for n in node_ids if n not in table]
        paths = [node_array_path(level, n, name) for n in wanted for name in ("embeddings", "node_ids")]
        try:
            arrays = reader.read(paths, lambda: checkpoint(cancel, AddCancelled))
        except Cancelled:
            raise
        except Exception as exc:
            raise BuildError(BuildProblem("output", f"cannot read level {level} ({describe_exception(exc)})",
                                          str(facts.path))) from exc
        for j, n in enumerate(wanted):
            emb, ids = arrays[2 * j], arrays[2 * j + 1]
            if emb is None:
                continue  # the router names the missing node
            where = f"{facts.path}/{node_path(level, n)}"
            if ids is None or emb.ndim != 2 or emb.shape[1] != facts.dim or ids.shape != (emb.shape[0],):
                raise BuildError(BuildProblem("output", "internal node with unreadable or mismatched embeddings "
                                                        "and node_ids", where))
            table[n] = NodeTable.from_rows(emb, ids)

    root = NodeTable.from_rows(facts.root, np.arange(facts.root.shape[0]))
    router = Router(root, use_dot, fetch)
    for _ in range(1, facts.levels):
        router.add_level({})
    rows = stored.shape[0]
    step = max(1, ROUTE_BATCH_BYTES // (8 * facts.dim))  # the router widens a batch to float64
    leaf_of_row = np.empty(rows, dtype=np.int64)
    try:
        for start in range(0, rows, step):
            checkpoint(cancel, AddCancelled)
            leaf_of_row[start:start + step] = router.route(stored[start:start + step], facts.levels)
            _report(progress, "routing", min(start + step, rows), rows, "rows routed to their leaves")
        return leaf_of_row
    except MissingNodeError as exc:
        raise BuildError(BuildProblem(
            "output", f"a row's route reaches internal node {exc.path}, which is not stored; upstream's insert "
                      f"fails the same way (nothing was written)", str(facts.path))) from exc


def _plan_leaves(facts: IndexFacts, leaf_of_row: np.ndarray) -> list[_Leaf]:
    """Each touched leaf with its rows and current size, checked before any write."""
    out: list[_Leaf] = []
    for leaf, rows in group_rows(leaf_of_row):
        base = facts.path / node_path(facts.levels, leaf)
        emb_doc, ids_doc = base / "embeddings" / "zarr.json", base / "item_ids" / "zarr.json"
        if not emb_doc.exists() and not ids_doc.exists():
            out.append(_Leaf(leaf, rows, None))
            continue
        shapes = []
        for doc_path in (emb_doc, ids_doc):
            if not doc_path.exists():
                raise BuildError(BuildProblem("output", "leaf array missing (the other one is stored)",
                                              str(doc_path.parent)))
            shapes.append(_read_doc(doc_path)["shape"])
        emb_shape, ids_shape = shapes
        if len(emb_shape) != 2 or emb_shape[1] != facts.dim or ids_shape != [emb_shape[0]]:
            raise BuildError(BuildProblem("output", f"leaf arrays disagree (embeddings {emb_shape}, item_ids "
                                                    f"{ids_shape}, index dimension {facts.dim})", str(base)))
        out.append(_Leaf(leaf, rows, int(emb_shape[0])))
    return out


def _zarr_store(path: Path) -> Any:
    from zarr.storage import LocalStore

    return LocalStore(str(path))


def _write_scalar(path: Path, name: str, value: int) -> None:
    import zarr

    arr = zarr.open_array(_zarr_store(path), path=name, mode="r+")
    arr[...] = np.asarray(value, dtype=arr.dtype)


def _write_leaves(facts: IndexFacts, leaves: list[_Leaf], stored: np.ndarray, first_id: int,
                  progress: Callable[[BuildProgress], None] | None) -> list[int]:
    import zarr

    store = _zarr_store(facts.path)
    created: list[int] = []
    templates = _NewLeafDocs(facts)
    for i, leaf in enumerate(leaves):
        rel = node_path(facts.levels, leaf.node_id)
        emb = stored[leaf.rows]
        ids = (first_id + leaf.rows).astype("<u4")
        start = 0 if leaf.existing is None else leaf.existing
        if leaf.existing is None:
            templates.create(facts.path / rel, len(ids))
            created.append(leaf.node_id)
        else:
            for name in ("embeddings", "item_ids"):
                doc_path = facts.path / rel / name / "zarr.json"
                doc = _read_doc(doc_path)
                doc["shape"][0] = start + len(ids)
                _write_doc(doc_path, doc)
        # from the old end on: only the old last chunk is read back and rewritten, new chunks added
        zarr.open_array(store, path=f"{rel}/embeddings", mode="r+")[start:start + len(ids)] = emb
        zarr.open_array(store, path=f"{rel}/item_ids", mode="r+")[start:start + len(ids)] = ids
        if i % 32 == 0 or i == len(leaves) - 1:
            _report(progress, "writing", i + 1, len(leaves), "leaves (no longer cancellable)")
    return created


class _NewLeafDocs:
    """The documents of a leaf the add creates: the root's embeddings document (chunk shape, codecs)
    with the new row count, an ids array alike, a group and an empty border, as a build writes them."""

    def __init__(self, facts: IndexFacts) -> None:
        root = _read_doc(facts.path / "index_root" / "embeddings" / "zarr.json")
        self.embeddings = copy.deepcopy(root)
        self.embeddings["attributes"] = copy.deepcopy(WRITER_ATTRIBUTES)
        chunk_rows = int(root["chunk_grid"]["configuration"]["chunk_shape"][0])
        ids = copy.deepcopy(self.embeddings)
        ids["data_type"] = "uint32"
        ids["fill_value"] = 0
        ids["chunk_grid"]["configuration"]["chunk_shape"] = [chunk_rows]
        codecs = ids.get("codecs")
        if not isinstance(codecs, list) or not all(isinstance(c, dict) and c.get("name") in _PLAIN_CODECS
                                                   for c in codecs):
            ids["codecs"] = copy.deepcopy(_STANDARD_CODECS)
        self.ids = ids

    def create(self, base: Path, rows: int) -> None:
        base.mkdir(parents=True)
        (base / "zarr.json").write_bytes(GROUP_JSON)
        for name, template, shape in (("embeddings", self.embeddings, [rows, *self.embeddings["shape"][1:]]),
                                      ("item_ids", self.ids, [rows])):
            (base / name).mkdir()
            doc = copy.deepcopy(template)
            doc["shape"] = shape
            (base / name / "zarr.json").write_bytes(json.dumps(doc, indent=2).encode())
        (base / "border").mkdir()
        (base / "border" / "zarr.json").write_bytes(BORDER_JSON)
