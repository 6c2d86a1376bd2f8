"""Imported at start-up by the Python processes a logged command starts (benchmarks/_read_log.py
puts this folder on their PYTHONPATH): the files a helper process reads are its action's too."""

import os
import sys

_LOG = os.environ.get("ECPFS_READ_LOG")
if _LOG:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        import _read_log
    finally:
        del sys.path[0]
    _read_log.install(_LOG, [f for f in os.environ.get("ECPFS_READ_LOG_FOLDERS", "").split(os.pathsep) if f])
