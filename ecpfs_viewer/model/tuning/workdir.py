"""Where a tune works: a hidden ``.ecpfs-tune-PID-XXXXXXXX`` folder, in memory when there is room.

Each variant is thousands of small folders. On a disk that discards blocks, writing them is slow
and removing them slower (about 2.4 ms a folder here), so unless the user chose the temporary
folder (``TMPDIR``, ``TEMP`` or ``TMP`` in the environment), a tune works on the first RAM
filesystem (``/dev/shm`` on Linux) whose free space, and half the memory still available, hold
what it writes at a time; otherwise in the usual temporary folder.

A tune that is killed cannot remove its folder (in memory, it holds RAM until a reboot). The next
tune removes every work folder, where it looks, whose process is gone or that has not changed for
a day (a live tune changes its folder with every variant).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from ecpfs_viewer.model.build.output import process_gone
from ecpfs_viewer.model.build.replaceable import foreign_member

#: RAM filesystems a tune may work on, in order of preference.
RAM_FOLDERS: tuple[str, ...] = ("/dev/shm",)
PREFIX = ".ecpfs-tune-"
#: The copy of the input's rows that are not held out as queries, in the work folder.
REMAINING = "remaining.npy"
#: A work folder unchanged for this long is stale whatever its process.
STALE_SECONDS = 24 * 3600.0
# mkdtemp's random part has no "-": older tunes' folders (no process id) match without the pid
_WORK = re.compile(r"^\.ecpfs-tune-(?:(?P<pid>\d+)-)?[A-Za-z0-9_]+$")


def user_chose_tempdir() -> bool:
    """True when the environment names the temporary folder (``tempfile.tempdir`` cannot tell: the first
    ``gettempdir()`` of any library sets it)."""
    return any(os.environ.get(name) for name in ("TMPDIR", "TEMP", "TMP"))


def _available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes, or None where there is no such file."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def ram_folder(need_bytes: int) -> Path | None:
    """The RAM filesystem to work on for ``need_bytes`` at a time, or None (no room, none, or not chosen)."""
    if user_chose_tempdir():
        return None
    memory = _available_memory()
    if memory is not None and need_bytes > memory // 2:
        return None
    for folder in RAM_FOLDERS:
        if not (os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK)):
            continue
        try:
            free = shutil.disk_usage(folder).free
        except OSError:
            continue
        if need_bytes <= free:
            return Path(folder)
    return None


def make_work_folder(parent: Path) -> Path:
    """A new empty work folder in ``parent``, named with this process's id."""
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent))


def _holds_only_tune_work(folder: str) -> bool:
    """True when ``folder`` holds only what a tune writes: the remaining-rows copy and variant indexes
    (finished, or a build's temporary folder); anything else in it is someone's, and stays."""
    with os.scandir(folder) as it:
        for entry in it:
            if entry.is_symlink():
                return False
            if entry.name == REMAINING and entry.is_file(follow_symlinks=False):
                continue
            if not entry.is_dir(follow_symlinks=False) or foreign_member(entry.path) is not None:
                return False
    return True


def _stale(entry: os.DirEntry[str], now: float) -> bool:
    m = _WORK.match(entry.name)
    if m is None or not entry.is_dir(follow_symlinks=False):
        return False
    try:
        if not _holds_only_tune_work(entry.path):
            return False
    except OSError:
        return False
    st = entry.stat(follow_symlinks=False)
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        return False
    if m["pid"] is not None and process_gone(int(m["pid"])):
        return True
    return now - st.st_mtime > STALE_SECONDS


def remove_stale_work(parents: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Remove the work folders of killed tunes in ``parents``; the folders removed."""
    removed: list[Path] = []
    now = time.time()
    for parent in dict.fromkeys(os.path.abspath(p) for p in parents):
        try:
            entries = list(os.scandir(parent))
        except OSError:
            continue
        for entry in entries:
            try:
                stale = _stale(entry, now)
            except OSError:
                continue
            if stale:
                shutil.rmtree(entry.path, ignore_errors=True)
                if not os.path.lexists(entry.path):
                    removed.append(Path(entry.path))
    return removed


def search_places(keep: Path | None) -> list[Path]:
    """Where a tune may have worked: the RAM filesystems, the temporary folder, the kept folder."""
    places = [Path(p) for p in RAM_FOLDERS if os.path.isdir(p)] + [Path(tempfile.gettempdir())]
    if keep is not None and keep.is_dir():
        places.append(keep)
    return places
