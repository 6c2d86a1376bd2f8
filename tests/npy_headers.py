"""A .npy file whose header says what the test wants (numpy's writer refuses a lying shape)."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_lying_npy(path: Path, shape: tuple[int, ...], descr: str = "<f4", data: bytes = b"\0" * 256) -> Path:
    """A version 1.0 .npy at ``path`` declaring ``shape`` and ``descr``, followed by ``data``."""
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": descr, "fortran_order": False, "shape": shape})
        fh.write(data)
    return path
