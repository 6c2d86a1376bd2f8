"""Where a build writes: a hidden ``.NAME.building-PID-XXXXXXXX`` sibling, renamed into place at the end.

A build that fails or is cancelled removes its folder itself; one that is killed (SIGKILL, a power
cut) cannot, so the next build into the same parent removes every such folder whose process is
gone (:func:`remove_stale_builds`) and says what it freed. A folder whose process still runs, or
may run (another user's, a zombie not yet reaped counts as gone), is never touched.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ecpfs_viewer.model.build.errors import BuildError, BuildProblem
from ecpfs_viewer.model.build.replaceable import foreign_member, replace_refusal

_BUILDING = re.compile(r"^\.(?P<name>.+)\.building-(?P<pid>\d+)-[0-9a-f]{8}$")


@dataclass(frozen=True)
class StaleBuild:
    """A temporary build folder left by a process that no longer runs."""

    path: Path
    pid: int


def process_gone(pid: int) -> bool:
    """True when no process ``pid`` runs here (a zombie counts as gone); False when unsure."""
    if os.name != "posix" or pid == os.getpid() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it exists but belongs to someone else
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return any(line.startswith("State:") and "Z" in line.split()[1:2] for line in status.splitlines())


def stale_builds(parent: str | os.PathLike[str]) -> list[StaleBuild]:
    """The temporary build folders in ``parent`` whose build process is gone and that hold only what a
    build writes (sorted by name)."""
    found: list[StaleBuild] = []
    try:
        entries = list(os.scandir(parent))
    except OSError:
        return found
    for entry in entries:
        m = _BUILDING.match(entry.name)
        if (m and entry.is_dir(follow_symlinks=False) and process_gone(int(m["pid"]))
                and _holds_only_an_index(entry.path)):
            found.append(StaleBuild(Path(entry.path), int(m["pid"])))
    return sorted(found, key=lambda s: s.path.name)


def _holds_only_an_index(folder: str) -> bool:
    """True when a build folder holds only what a build writes (anything else in it is someone's)."""
    try:
        return foreign_member(folder) is None
    except OSError:
        return False


def _remove_tree(path: Path) -> int:
    """Delete a folder tree; the bytes it held on disk (st_blocks), counted as it goes."""
    freed = 0
    for root, dirs, files in os.walk(path, topdown=False):
        for name in files + dirs:
            p = os.path.join(root, name)
            try:
                st = os.lstat(p)
                freed += st.st_blocks * 512
                if name in dirs and not os.path.islink(p):
                    os.rmdir(p)
                else:
                    os.unlink(p)
            except OSError:
                pass
    try:
        freed += os.lstat(path).st_blocks * 512
        os.rmdir(path)
    except OSError:
        pass
    return freed


def discard_output(tmp: Path, deadline_s: float = 10.0) -> None:
    """Remove an unfinished build folder for good: a write that was under way when the build stopped
    (a writer thread's file, or zarr's own loop finishing a document the stopped call had started)
    can leave an entry behind a first pass, so look again until it is gone or the deadline passes."""
    give_up = time.monotonic() + deadline_s
    while True:
        shutil.rmtree(tmp, ignore_errors=True)
        if not os.path.lexists(tmp) or time.monotonic() > give_up:
            return
        time.sleep(0.05)


def remove_stale_builds(parent: str | os.PathLike[str]) -> tuple[list[StaleBuild], int]:
    """Remove the stale build folders of ``parent``; those removed and the bytes freed."""
    removed: list[StaleBuild] = []
    freed = 0
    for stale in stale_builds(parent):
        freed += _remove_tree(stale.path)
        if not os.path.lexists(stale.path):
            removed.append(stale)
    return removed, freed


def building_folder(output: Path) -> Path:
    """The hidden temporary sibling a build of ``output`` writes into (its name only; nothing is made).

    Named before it is made, so that a stop signal landing between the making and the build's
    clean-up still finds the name to remove."""
    parent = output.expanduser().absolute().parent
    return parent / f".{output.name}.building-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def prepare_output(tmp: Path) -> None:
    """Make the build's folder (:func:`building_folder`), refusing when its parent cannot be written."""
    try:
        os.mkdir(tmp)
    except OSError as exc:
        problem = BuildProblem("output", f"output folder {tmp.parent} cannot be written ({exc.strerror})")
        raise BuildError(problem) from None


def commit_output(tmp: Path, output: Path, overwrite: bool) -> None:
    """Rename the finished build into place (an existing index is moved aside first, then removed).

    What is there is looked at again first: the build may have run for hours since it was checked,
    and only an ecpfs index (:func:`replace_refusal`) is ever replaced.
    """
    output = output.expanduser().absolute()
    old: Path | None = None
    if os.path.lexists(output) and overwrite:
        refusal = replace_refusal(output)
        if refusal is not None:
            raise BuildError(BuildProblem("output", refusal, str(output)))
        old = output.parent / f".{output.name}.old-{uuid.uuid4().hex[:8]}"
        os.rename(output, old)
    try:
        os.rename(tmp, output)
    except OSError:
        if old is not None:
            os.rename(old, output)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
