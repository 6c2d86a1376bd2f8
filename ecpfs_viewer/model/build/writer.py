"""Fast writer of an ecpfs v1 store: metadata serialised once per array kind, chunks encoded with
the same codecs zarr-python uses (``bytes`` little endian + numcodecs Zstd level 3, no checksum)
and written straight to files from a small thread pool.

Going through zarr-python's create_group / create_array / ``a[:] = ...`` per node is far slower
(benchmarks/bench_build.py prints it as its baseline), which turns a large index into minutes of
writing; the files produced here are the same bytes (checked against the upstream fixture and
read back through zarr-python in tests).
"""

from __future__ import annotations

import json
import os
import struct
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numcodecs
import numpy as np

from ecpfs_viewer import __version__
from ecpfs_viewer.model.ecpfs.paths import node_path

_SENTINEL = -987654321
_ZSTD_CODEC: dict[str, object] = {"name": "zstd", "configuration": {"level": 3, "checksum": False}}
_BYTES_CODEC: dict[str, object] = {"name": "bytes", "configuration": {"endian": "little"}}
GROUP_JSON = json.dumps({"zarr_format": 3, "node_type": "group"}, indent=2).encode()

#: We are not zarrs, so we do not claim its ``_zarrs`` attribute; arrays name our writer instead.
WRITER_ATTRIBUTES = {
    "_ecpfs_viewer": {
        "description": "This array was created with ecpfs-viewer",
        "version": __version__,
    }
}

_FILL = {"float32": 0.0, "float16": 0.0, "uint8": 0, "int8": 0, "uint32": 0, "bool": False}


def array_json(
    shape: list[int], chunk_shape: list[int], data_type: str, *, compressed: bool,
    attributes: dict[str, object] | None = None,
) -> bytes:
    """The ``zarr.json`` of an array, key order and formatting as zarrs writes them."""
    if data_type == "string":
        fill: object = ""
        codecs: list[dict[str, object]] = [{"name": "vlen-utf8"}]
    else:
        fill = _FILL[data_type]
        codecs = [_BYTES_CODEC, _ZSTD_CODEC] if compressed else [_BYTES_CODEC]
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk_shape}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill,
        "codecs": codecs,
        "attributes": WRITER_ATTRIBUTES if attributes is None else attributes,
    }
    return json.dumps(meta, indent=2).encode()


class _Template:
    """An array ``zarr.json`` rendered once; only the leading shape entry changes per array."""

    def __init__(self, ndim: int, chunk_rows: int, dim: int, data_type: str) -> None:
        shape = [_SENTINEL] + ([dim] if ndim == 2 else [])
        chunk = [chunk_rows] + ([dim] if ndim == 2 else [])
        text = array_json(shape, chunk, data_type, compressed=True).decode()
        self._head, _, self._tail = text.partition(str(_SENTINEL))

    def render(self, rows: int) -> bytes:
        return f"{self._head}{rows}{self._tail}".encode()


def encode_metric(value: str) -> bytes:
    """vlen-utf8 encoding of one string: element count, byte length, UTF-8 bytes."""
    raw = value.encode("utf-8")
    return struct.pack("<II", 1, len(raw)) + raw


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


class ChunkedArrayKind:
    """Encodes one kind of array (embeddings of dtype E, or uint32 ids) with a fixed chunk shape."""

    def __init__(self, chunk_rows: int, dim: int, data_type: str) -> None:
        self.chunk_rows = chunk_rows
        self.dim = dim
        self.ndim = 1 if dim == 0 else 2
        self.dtype = np.dtype(data_type).newbyteorder("<")
        self.template = _Template(self.ndim, chunk_rows, dim, data_type)
        self._zstd = numcodecs.Zstd(level=3, checksum=False)
        self._local = threading.local()

    def _pad_buffer(self) -> np.ndarray:
        buf = getattr(self._local, "buf", None)
        if buf is None:
            shape = (self.chunk_rows, self.dim) if self.ndim == 2 else (self.chunk_rows,)
            buf = np.zeros(shape, self.dtype)
            self._local.buf = buf
            self._local.used = 0
        return buf

    def encoded_chunks(self, data: np.ndarray) -> list[tuple[int, bytes]]:
        """``(chunk_index, zstd bytes)`` for every chunk not entirely fill (0), padded like zarr."""
        out: list[tuple[int, bytes]] = []
        rows = data.shape[0]
        step = self.chunk_rows
        for ci, lo in enumerate(range(0, rows, step)):
            block = data[lo:lo + step]
            if not block.any():
                continue
            m = block.shape[0]
            if m == step:
                chunk = np.ascontiguousarray(block, dtype=self.dtype)
            else:
                chunk = self._pad_buffer()
                used = self._local.used
                chunk[:m] = block
                if used > m:
                    chunk[m:used] = 0
                self._local.used = m
            out.append((ci, self._zstd.encode(chunk)))
        return out

    def write(self, array_dir: str, data: np.ndarray) -> None:
        """Create the array directory, its ``zarr.json`` and its non-fill chunk files."""
        os.mkdir(array_dir)
        _write(os.path.join(array_dir, "zarr.json"), self.template.render(int(data.shape[0])))
        chunks = self.encoded_chunks(data)
        if not chunks:
            return
        cdir = os.path.join(array_dir, "c")
        os.mkdir(cdir)
        for ci, payload in chunks:
            if self.ndim == 2:
                sub = os.path.join(cdir, str(ci))
                os.mkdir(sub)
                _write(os.path.join(sub, "0"), payload)
            else:
                _write(os.path.join(cdir, str(ci)), payload)


BORDER_JSON = array_json([2], [2], "float32", compressed=False)


class IndexWriter:
    """Writes groups, scalars and node arrays under ``root`` with bounded parallelism."""

    def __init__(self, root: Path, dim: int, stored_dtype: str, node_rows: int, rep_rows: int,
                 workers: int | None = None, max_pending: int = 64) -> None:
        self.root = str(root)
        self.node_emb = ChunkedArrayKind(node_rows, dim, stored_dtype)
        self.node_ids = ChunkedArrayKind(node_rows, 0, "uint32")
        self.rep_emb = ChunkedArrayKind(rep_rows, dim, stored_dtype)
        self.rep_ids = ChunkedArrayKind(rep_rows, 0, "uint32")
        self._pool = ThreadPoolExecutor(max_workers=workers or min(4, (os.cpu_count() or 2)),
                                        thread_name_prefix="ecpfs-write")
        self._pending: deque[Future[None]] = deque()
        self._max_pending = max_pending

    # -- plain pieces ---------------------------------------------------------------------
    def path(self, rel: str) -> str:
        return os.path.join(self.root, rel) if rel else self.root

    def group(self, rel: str) -> None:
        """A group ``zarr.json`` as zarrs writes it (no attributes key)."""
        p = self.path(rel)
        os.makedirs(p, exist_ok=True)
        _write(os.path.join(p, "zarr.json"), GROUP_JSON)

    def scalar(self, rel: str, data_type: str, value: object) -> None:
        """A rank-0 uncompressed array; the ``c`` file is omitted when the value is the fill."""
        p = self.path(rel)
        os.makedirs(p)
        _write(os.path.join(p, "zarr.json"), array_json([], [], data_type, compressed=False))
        if data_type == "string":
            if value != "":
                _write(os.path.join(p, "c"), encode_metric(str(value)))
        elif value:
            _write(os.path.join(p, "c"), np.array(value, dtype=np.dtype(data_type).newbyteorder("<")).tobytes())

    # -- node and pair arrays (parallel) ----------------------------------------------------
    def submit(self, fn: Callable[..., None], *args: object) -> None:
        """Queue a job; waits for the oldest when too many are in flight (bounds memory)."""
        while len(self._pending) >= self._max_pending:
            self._pending.popleft().result()
        self._pending.append(self._pool.submit(fn, *args))

    def _node_job(self, rel: str, emb: np.ndarray, ids: np.ndarray, ids_name: str) -> None:
        p = self.path(rel)
        os.mkdir(p)
        _write(os.path.join(p, "zarr.json"), GROUP_JSON)
        self.node_emb.write(os.path.join(p, "embeddings"), emb)
        self.node_ids.write(os.path.join(p, ids_name), ids)
        b = os.path.join(p, "border")
        os.mkdir(b)
        _write(os.path.join(b, "zarr.json"), BORDER_JSON)

    def node(self, level: int, node_id: int, emb: np.ndarray, ids: np.ndarray, leaf: bool) -> None:
        """Queue ``lvl_N/node_M`` with its group, embeddings, ids and empty border array."""
        self.submit(self._node_job, node_path(level, node_id), emb, ids,
                    "item_ids" if leaf else "node_ids")

    def pair_array(self, rel: str, data: np.ndarray, kind: ChunkedArrayKind) -> None:
        """Queue a free-standing chunked array (rep_embeddings, rep_item_ids, index_root/embeddings)."""
        self.submit(kind.write, self.path(rel), data)

    def flush(self) -> None:
        """Wait for every queued job and re-raise the first failure."""
        while self._pending:
            self._pending.popleft().result()

    def close(self, *, cancel: bool = False) -> None:
        """Stop the pool; with ``cancel`` drop queued work (the caller removes the directory)."""
        if cancel:
            for f in self._pending:
                f.cancel()
            self._pending.clear()
            self._pool.shutdown(wait=True, cancel_futures=True)
        else:
            try:
                self.flush()
            finally:
                self._pool.shutdown(wait=True)
