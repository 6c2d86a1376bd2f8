"""The temporary folders of drift reports and simulations that were killed (SIGKILL, a crash).

A report or a simulation removes its ``.ecpfs-drift-PID-…`` folder whatever happens, except when
its process is killed. The next one removes, in the folder it works in, every such folder whose
process is gone and that holds only what drift writes (the items' vectors, the rows a simulation
builds on, indexes and a build's own temporary folders); anything else in it is someone's, and the
folder stays.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from ecpfs_viewer.model.build.output import process_gone
from ecpfs_viewer.model.build.replaceable import foreign_member

_WORK = re.compile(r"^\.ecpfs-drift-(?P<pid>\d+)-[A-Za-z0-9_]+$")
_FILES = re.compile(r"^(items|first-[0-9.]+)\.npy$")


def _holds_only_drift_work(folder: str) -> bool:
    with os.scandir(folder) as it:
        for entry in it:
            if entry.is_symlink():
                return False
            if _FILES.match(entry.name) and entry.is_file(follow_symlinks=False):
                continue
            if not entry.is_dir(follow_symlinks=False) or foreign_member(entry.path) is not None:
                return False
    return True


def remove_stale_drift(parent: str | os.PathLike[str]) -> list[Path]:
    """Remove the folders of killed drift runs in ``parent``; the folders removed."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return removed
    for entry in entries:
        m = _WORK.match(entry.name)
        try:
            if m is None or not entry.is_dir(follow_symlinks=False) or not process_gone(int(m["pid"])):
                continue
            if hasattr(os, "geteuid") and entry.stat(follow_symlinks=False).st_uid != os.geteuid():
                continue
            if not _holds_only_drift_work(entry.path):
                continue
        except OSError:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.lexists(entry.path):
            removed.append(Path(entry.path))
    return removed
