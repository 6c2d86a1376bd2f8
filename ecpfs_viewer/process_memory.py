"""How the process hands freed memory back to the system (Linux, glibc).

glibc gives each thread that allocates its own arena, up to eight per core. The window and the
CLI run a dozen worker threads (Qt's pool, two event loops' executors), each allocating and
freeing chunk buffers; freed memory stays in the arena it came from, so resident memory climbs
with every index opened and does not come down (tests/gui/test_soak.py). Two arenas, set before
those threads start, hold it near what is in use; after an index is closed the free pages are
returned. glibc fixes its arena limit once a ninth arena exists, so the limit is set first thing
in ``cli.main`` (and in the tests' conftest). Elsewhere (musl, macOS, Windows) both are no-ops.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys

#: mallopt's parameter for the most arenas (malloc.h)
_M_ARENA_MAX = -8
#: arenas the process may use: the GUI thread and the workers share two
ARENAS = 2


@functools.cache
def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        libc.mallopt  # noqa: B018  (musl has no mallopt)
        libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def limit_allocator_arenas(arenas: int = ARENAS) -> bool:
    """Let threads started from now on share `arenas` arenas; True if the allocator took it."""
    libc = _glibc()
    return bool(libc is not None and libc.mallopt(_M_ARENA_MAX, arenas) == 1)


def return_freed_memory() -> bool:
    """Give free pages in every arena back to the system (after an index was closed)."""
    libc = _glibc()
    return bool(libc is not None and libc.malloc_trim(0) == 1)
