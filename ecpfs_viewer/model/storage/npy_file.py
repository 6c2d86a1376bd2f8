"""The one way a .npy file of the user's is opened: its header checked against the file, then mapped.

Build inputs, query files and a tune's input all come through here, so a file whose header lies
(a negative or oversized shape, an object type, fewer bytes than it declares) gets one sentence
naming the file and what is wrong, whoever opens it, and nothing is unpickled or read before the
header has been checked. A pipe or device is refused before it is opened (opening one would block).
"""

from __future__ import annotations

import math
import os
import stat
from dataclasses import dataclass

import numpy as np

from ecpfs_viewer.model.errors import UserError


class NpyFileError(UserError, ValueError):
    """A .npy file that cannot be used; ``reason`` says why, the message puts the path in front."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


@dataclass(frozen=True)
class NpyHeader:
    """What a .npy header declares, checked against the file's size."""

    path: str
    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool
    data_offset: int  # where the data starts, in bytes


def _os_failure(path: str, exc: OSError) -> NpyFileError:
    """Why the file could not be examined or read, in words."""
    if isinstance(exc, FileNotFoundError):
        return NpyFileError(path, "file not found")
    if isinstance(exc, PermissionError):
        return NpyFileError(path, "permission denied")
    return NpyFileError(path, f"cannot read ({exc.strerror or exc})")


def _stat(path: str) -> os.stat_result:
    try:
        status = os.stat(path)
    except OSError as exc:
        raise _os_failure(path, exc) from None
    if stat.S_ISDIR(status.st_mode):
        raise NpyFileError(path, "is a folder, not a .npy file")
    if not stat.S_ISREG(status.st_mode):  # opening a FIFO would wait for a writer for ever
        raise NpyFileError(path, "not a regular file (a pipe, device or socket); not read")
    return status


def read_npy_header(path: str | os.PathLike[str]) -> NpyHeader:
    """The checked header of the .npy at ``path``; NpyFileError naming the file and the fault."""
    path = os.fspath(path)
    size = _stat(path).st_size
    try:
        with open(path, "rb") as fh:
            try:
                version = np.lib.format.read_magic(fh)
            except ValueError as exc:
                raise NpyFileError(path, f"not a .npy file ({exc})") from None
            try:
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
                else:
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
            except (ValueError, SyntaxError, TypeError, UnicodeDecodeError) as exc:
                raise NpyFileError(path, f"corrupt .npy header ({exc})") from None
            offset = fh.tell()
    except OSError as exc:
        raise _os_failure(path, exc) from None
    shape = tuple(int(n) for n in shape)
    if any(n < 0 for n in shape):
        raise NpyFileError(path, f"the header declares shape {shape}; a shape cannot be negative")
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise NpyFileError(path, "unsupported element type object (pickled data is never loaded)")
    need = offset + math.prod(shape) * dtype.itemsize  # exact, where numpy's int64 product would wrap
    if size < need:
        raise NpyFileError(path, f"file is truncated ({size} bytes, the header promises {need})")
    return NpyHeader(path, shape, dtype, bool(fortran), offset)


def map_npy_file(path: str | os.PathLike[str]) -> np.ndarray:
    """The .npy at ``path`` memory-mapped read-only, of any shape, after :func:`read_npy_header`."""
    header = read_npy_header(path)
    if math.prod(header.shape) == 0:  # nothing to map (mmap refuses a length of zero)
        return np.empty(header.shape, header.dtype)
    try:
        data: np.ndarray = np.memmap(header.path, dtype=header.dtype, mode="r", offset=header.data_offset,
                                     shape=header.shape, order="F" if header.fortran_order else "C")
    except (OSError, ValueError, OverflowError) as exc:
        raise NpyFileError(header.path, f"cannot be mapped ({exc})") from None
    return data
