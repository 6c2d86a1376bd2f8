"""Leaving the process when a thread may still be inside a call that cannot be interrupted.

Both front-ends end this way (the CLI after a command, the GUI after its window closed), so it
sits beside them rather than in either.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import NoReturn


def leave_process(code: int) -> NoReturn:
    """End the process at once with code, output and log flushed, skipping interpreter shutdown.

    For a process whose threads may still be inside a call that cannot be interrupted (a request
    to a stalled server, a long computation): shutting the interpreter down under them waits for
    them or crashes (pyo3 panics when such a call returns into a finalised interpreter)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    logging.shutdown()
    os._exit(code)


def abandoned_remote_requests() -> int:
    """Requests to remote stores given up at their deadline whose client call may still run."""
    remote = sys.modules.get("ecpfs_viewer.model.storage.remote")  # not imported: no remote store was used
    return int(remote.abandoned_requests()) if remote is not None else 0
