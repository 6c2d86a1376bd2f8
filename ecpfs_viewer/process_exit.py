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


def remote_clients_made() -> bool:
    """True once this process loaded obstore (it is imported only to make a remote store's client).

    Its runtime's threads outlive the last request (pools, a request ended at its timeout), and
    finalising the interpreter under them crashes now and then (SIGSEGV or SIGABRT after the last
    line was printed; a pyo3 panic when a call returns into a finalised interpreter): such a
    process leaves with leave_process."""
    return "obstore" in sys.modules
