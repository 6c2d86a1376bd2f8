"""Whether a local file is in the OS page cache, asked without waiting for the disk.

How long a read took cannot tell a cold disk from threads taking turns at the interpreter lock; the
page cache can (model/storage/side_by_side.py decides from it whether to read side by side).
"""

from __future__ import annotations

import os

#: a read that returns at once, or fails (EAGAIN), when its pages are not in the OS page cache
_NOWAIT: int | None = getattr(os, "RWF_NOWAIT", None)


def first_page_cached(fd: int) -> bool | None:
    """Whether an open file's first page is in memory; None where that cannot be told (another
    system, tmpfs, a FIFO)."""
    if _NOWAIT is None:
        return None
    try:
        os.preadv(fd, [bytearray(1)], 0, _NOWAIT)
    except BlockingIOError:
        return False
    except OSError:
        return None
    return True
