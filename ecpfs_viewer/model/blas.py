"""One BLAS thread for the skinny matrix products of routing and exact search.

Routing makes thousands of small products and exact search scores queries x 64 blocks; OpenBLAS
wakes its worker threads for each, which on a machine with few cores makes each product slower
(the figures: benchmarks/README.md). The limit is process-wide and restored after the block.

threadpoolctl finds the BLAS libraries by scanning the loaded ones in a ctypes callback. Here the
scan runs once per process (``threadpool_limits`` scans again at every call), and a program that
installs signal handlers scans first (:func:`scan_libraries`): Python prints and swallows an
exception that a handler raises inside a ctypes callback, so a stop signal landing in the scan
would not stop the program.
"""

from __future__ import annotations

import functools
from contextlib import AbstractContextManager
from typing import Any

from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]


@functools.cache
def _controller() -> Any:
    return ThreadpoolController()


def scan_libraries() -> None:
    """Find the BLAS libraries now, before signal handlers go in (see the module docstring)."""
    _controller()


def one_blas_thread() -> AbstractContextManager[Any]:
    """BLAS on one thread inside the ``with`` block, as it was after it (the limit is process-wide)."""
    limited: AbstractContextManager[Any] = _controller().limit(limits=1, user_api="blas")
    return limited
