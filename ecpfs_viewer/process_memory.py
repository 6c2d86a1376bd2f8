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
import os
import sys

#: mallopt's parameter for the most arenas (malloc.h)
_M_ARENA_MAX = -8
#: arenas the process may use: the GUI thread and the workers share two
ARENAS = 2
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


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


#: resident bytes of the process right after the last return_freed_memory_past returned memory
_RETURNED_AT = [0]


def resident_bytes() -> int | None:
    """The process's resident memory (Linux: /proc/self/statm); None where it cannot be read."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def return_freed_memory_past(growth: int) -> bool:
    """Give free pages back only once the process has grown by more than ``growth`` bytes since it last
    did here: a step repeated often (a map's frames) keeps its freed temporaries bounded without
    faulting every page in again each time (a 10M-item map's median frame: 18 ms, 22 ms with a return
    after each)."""
    now = resident_bytes()
    if now is not None and now - _RETURNED_AT[0] <= growth:
        return False
    returned = return_freed_memory()
    after = resident_bytes()
    _RETURNED_AT[0] = after if after is not None else 0
    return returned
