"""Input embeddings for the builder: .npy files (memory-mapped, read in batches) and Zarr arrays.

A build must work on a file larger than memory and must fail with a message that names the
file and the first bad row, so opening, header checks and per-batch validation live here,
apart from the tree logic. Nothing here unpickles (``allow_pickle`` is never enabled).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ecpfs_viewer.model.build.errors import input_error
from ecpfs_viewer.model.ecpfs.sizing import SOURCE_DTYPES
from ecpfs_viewer.model.errors import describe_exception
from ecpfs_viewer.model.storage.npy_file import NpyFileError, read_npy_header

if TYPE_CHECKING:
    import zarr

#: Default size of one read batch, counted in source bytes.
DEFAULT_BATCH_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class SourceInfo:
    """What the header says about an input: enough for a preview, no data read."""

    path: str
    kind: str  # "npy" or "zarr"
    rows: int
    dim: int
    dtype: np.dtype
    label: str  # how messages name the input
    array_path: str = ""  # inside a Zarr store
    data_offset: int = 0  # npy: byte offset of the data
    fortran_order: bool = False


def split_source(source: str | os.PathLike[str]) -> tuple[Path, str | None]:
    """Split ``store.zarr#path/in/store`` into the store path and the array path."""
    text = os.fspath(source)
    if "#" in text:
        base, _, inner = text.partition("#")
        return Path(base), inner.strip("/")
    return Path(text), None


def _check_shape_dtype(shape: tuple[int, ...], dtype: np.dtype, label: str) -> None:
    if len(shape) != 2:
        raise input_error(label, f"expected a 2-D array (rows, dim), got {len(shape)}-D shape {tuple(shape)}")
    if shape[0] == 0 or shape[1] == 0:
        raise input_error(label, f"the array is empty (shape {tuple(shape)})")
    if dtype.name not in SOURCE_DTYPES:
        kind = {"O": "object", "U": "string", "S": "bytes", "c": "complex", "V": "structured"}.get(
            dtype.kind, dtype.name
        )
        raise input_error(
            label, f"unsupported element type {kind} ({dtype.str}); supported: {', '.join(SOURCE_DTYPES)}"
        )


def _inspect_npy(path: Path) -> SourceInfo:
    label = str(path)
    try:
        header = read_npy_header(path)
    except NpyFileError as exc:
        raise input_error(label, exc.reason) from None
    _check_shape_dtype(header.shape, header.dtype, label)
    return SourceInfo(
        path=str(path), kind="npy", rows=header.shape[0], dim=header.shape[1], dtype=header.dtype,
        label=label, data_offset=header.data_offset, fortran_order=header.fortran_order,
    )


def _open_zarr_array(store_path: Path, inner: str | None) -> tuple[zarr.Array[Any], str]:
    import zarr

    from ecpfs_viewer.model.storage.guarded import GuardedLocalStore
    from ecpfs_viewer.model.zarrtree.guarded_codecs import bound_array, install

    install()  # every chunk of the input is decoded by the guarded decode, as every other read

    label = f"{store_path}#{inner}" if inner else str(store_path)
    if not store_path.exists():
        raise input_error(label, "store not found")
    store = GuardedLocalStore(str(store_path), read_only=True)  # a FIFO or /dev/zero inside is refused
    candidates = [inner] if inner else ["embeddings", ""]
    last: Exception | None = None
    for cand in candidates:
        try:
            return bound_array(zarr.open_array(store, path=cand or "", mode="r")), label
        except Exception as exc:
            last = exc
    raise input_error(label, f"no readable Zarr array there ({describe_exception(last) if last else 'nothing found'})")


def inspect_source(source: str | os.PathLike[str]) -> SourceInfo:
    """Read only the header (npy) or metadata (zarr) and check shape and dtype."""
    base, inner = split_source(source)
    if inner is not None or base.suffix == ".zarr" or (base / "zarr.json").exists():
        arr, label = _open_zarr_array(base, inner)
        try:
            dtype = np.dtype(arr.dtype)
        except TypeError:
            raise input_error(label, f"unsupported element type {arr.dtype}") from None
        _check_shape_dtype(tuple(arr.shape), dtype, label)
        return SourceInfo(
            path=str(base), kind="zarr", rows=int(arr.shape[0]), dim=int(arr.shape[1]),
            dtype=dtype, label=label, array_path=arr.path,
        )
    return _inspect_npy(base)


class EmbeddingSource:
    """Batched, validated reads of an input; each batch maps only its own rows of the file."""

    def __init__(self, source: str | os.PathLike[str]) -> None:
        self.info = inspect_source(source)
        self._zarr: zarr.Array[Any] | None = None
        if self.info.kind == "zarr":
            self._zarr, _ = _open_zarr_array(Path(self.info.path), self.info.array_path)

    @property
    def label(self) -> str:
        return self.info.label

    def default_batch_rows(self, batch_bytes: int = DEFAULT_BATCH_BYTES) -> int:
        """Rows per batch so one batch holds about ``batch_bytes`` of source data."""
        return max(1, batch_bytes // (self.info.dim * self.info.dtype.itemsize))

    def read(self, start: int, stop: int) -> np.ndarray:
        """Rows ``[start, stop)`` as an in-memory array of the source dtype.

        A fresh memory map of just those rows is made and dropped per call, so pages of
        earlier batches do not stay resident (a single whole-file map would keep every
        touched page counted in the process's memory).
        """
        info = self.info
        stop = min(stop, info.rows)
        if stop <= start:
            return np.empty((0, info.dim), info.dtype)
        try:
            if self._zarr is not None:
                return np.asarray(self._zarr[start:stop])
            if info.fortran_order:
                mm = np.memmap(info.path, dtype=info.dtype, mode="r", offset=info.data_offset,
                               shape=(info.rows, info.dim), order="F")
                out = np.array(mm[start:stop], order="C")
                del mm
                return out
            row_bytes = info.dim * info.dtype.itemsize
            mm = np.memmap(info.path, dtype=info.dtype, mode="r",
                           offset=info.data_offset + start * row_bytes,
                           shape=(stop - start, info.dim))
            out = np.array(mm)
            del mm
            return out
        except OSError as exc:
            raise input_error(info.label, f"read failed at rows {start}..{stop}: {exc}") from None
        except ValueError as exc:  # the guarded decode's refusal (DecodeRefused), a corrupt chunk
            raise input_error(info.label, f"rows {start}..{stop} cannot be read: {describe_exception(exc)}") from None

    def batches(self, batch_rows: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start_row, rows)`` over the whole input in order."""
        step = batch_rows or self.default_batch_rows()
        for start in range(0, self.info.rows, step):
            yield start, self.read(start, start + step)

    def sample(self, count: int = 256) -> np.ndarray:
        """A few evenly spaced rows (for cheap checks such as 'are these unit length?')."""
        rows = self.info.rows
        idx = np.unique(np.linspace(0, rows - 1, num=min(count, rows)).astype(np.int64))
        if self.info.kind == "npy" and not self.info.fortran_order:
            mm = np.memmap(self.info.path, dtype=self.info.dtype, mode="r",
                           offset=self.info.data_offset, shape=(rows, self.info.dim))
            out = np.array(mm[idx])
            del mm
            return out
        return np.stack([self.read(int(i), int(i) + 1)[0] for i in idx])


def check_finite(batch: np.ndarray, start: int, label: str) -> None:
    """Raise a BuildError (about the input) naming the first row that holds NaN or infinity."""
    if batch.dtype.kind != "f":
        return
    ok = np.isfinite(batch).all(axis=1)
    if not ok.all():
        bad = int(np.argmin(ok))
        vals = batch[bad]
        what = "NaN" if np.isnan(vals).any() else "infinity"
        raise input_error(label, f"row {start + bad} contains {what}")


def to_float32_input(batch: np.ndarray) -> np.ndarray:
    """float64 input is narrowed to float32 before anything else (the index never holds f64)."""
    if batch.dtype == np.float64:
        return batch.astype(np.float32)
    return batch


def narrow(batch: np.ndarray, stored_dtype: str) -> np.ndarray:
    """Convert to the stored dtype as upstream does (§3.1): f16 rounds to nearest; integer
    targets truncate toward zero and saturate at the type bounds; NaN becomes 0."""
    batch = to_float32_input(batch)
    target = np.dtype(stored_dtype)
    if batch.dtype == target:
        return np.ascontiguousarray(batch)
    if target.kind in "iu":
        info = np.iinfo(target)
        if batch.dtype.kind == "f":
            work = np.trunc(batch.astype(np.float32, copy=False))
            work = np.nan_to_num(work, nan=0.0, posinf=info.max, neginf=info.min)
        else:
            work = batch.astype(np.int16)
        return np.clip(work, info.min, info.max).astype(target)
    with np.errstate(over="ignore"):  # |x| > 65504 becomes inf in float16; the builder reports it
        return batch.astype(target)
