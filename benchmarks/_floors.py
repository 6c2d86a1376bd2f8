"""A cold OS page cache, and the floor of an action: the time to read exactly the files it read.

bench_scale.py's ``--cold`` drops the page cache before every timed run where it may (root on
Linux: ``sync; echo 3 > /proc/sys/vm/drop_caches``), else asks the kernel to forget the files of
the index (``posix_fadvise(POSIX_FADV_DONTNEED)`` on each; what the app's own code and libraries
need stays cached then, so that cold is colder for the data than for the start-up).

A floor reads the files an action opened (benchmarks/_read_log.py logs them) with ``cat``, many reads in
flight, in path order (the builder writes an index in path order, so that is the order its files
were allocated in), each file whole: the device's rate for that set of files, not one request at
a time. Cold: after the same eviction as the timed runs; warm: right after a read of them all.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

DROP_CACHES = Path("/proc/sys/vm/drop_caches")
IN_FLIGHT = 64  # files read at once by a floor


def can_drop_caches() -> bool:
    return sys.platform.startswith("linux") and os.access(DROP_CACHES, os.W_OK)


def eviction_name() -> str:
    return ("drop_caches (sync; echo 3 > /proc/sys/vm/drop_caches)" if can_drop_caches()
            else "posix_fadvise(DONTNEED) on every file of the index" if hasattr(os, "posix_fadvise")
            else "none possible here (figures are warm)")


DAMON = Path("/sys/kernel/mm/damon/admin/kdamonds")


def page_reclaim() -> str | None:
    """What reclaims idle pages of the page cache behind a warm run's back, where the system says:
    a DAMON scheme paging out physical memory idle for a while makes "warm" mean "read within that
    while" (each file an action reads once ages out between two runs of it, and between a run and
    its floor). None where no such scheme is on."""
    found = []
    for kdamond in sorted(DAMON.glob("[0-9]*")):
        try:
            if (kdamond / "state").read_text().strip() != "on":
                continue
            for scheme in sorted(kdamond.glob("contexts/*/schemes/[0-9]*")):
                if (scheme / "action").read_text().strip() != "pageout":
                    continue
                context = scheme.parent.parent
                aggregation_us = int((context / "monitoring_attrs/intervals/aggr_us").read_text())
                age = int((scheme / "access_pattern/age/min").read_text())
                found.append(f"DAMON pages out memory idle {age * aggregation_us / 1e6:g} s or more")
        except (OSError, ValueError):
            continue
    return "; ".join(found) or None


def evict(folders: Iterable[Path]) -> None:
    """Make the next reads of the folders' files come from the device (see the module's note)."""
    if can_drop_caches():
        subprocess.run(["sync"], check=False)
        DROP_CACHES.write_text("3\n")
        return
    if not hasattr(os, "posix_fadvise"):
        return
    for folder in folders:
        for top, _dirs, files in os.walk(folder):
            for name in files:
                forget(os.path.join(top, name))


def forget(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def read_whole(path: str) -> int:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return 0
    total = 0
    try:
        while block := os.read(fd, 1 << 20):
            total += len(block)
    finally:
        os.close(fd)
    return total


def read_all(paths: list[str]) -> tuple[float, int]:
    """(seconds, bytes) reading every path whole, IN_FLIGHT at a time, in path order: by ``cat``
    (IN_FLIGHT of them, each given its share of the paths in order, through ``xargs``) where there
    is one; else by IN_FLIGHT threads of this interpreter, which hand its lock to each other around
    every read (the 600,000 leaf documents of the 10M index, warm: 29-30 s, against 3.7-4.0 s by ``cat``)."""
    cat, xargs = shutil.which("cat"), shutil.which("xargs")
    if cat is None or xargs is None or not paths:
        started = time.perf_counter()
        with ThreadPoolExecutor(IN_FLIGHT) as pool:
            total = sum(pool.map(read_whole, paths, chunksize=64))
        return time.perf_counter() - started, total
    names = b"\0".join(os.fsencode(path) for path in paths)
    share = -(-len(paths) // IN_FLIGHT)
    started = time.perf_counter()
    subprocess.run([xargs, "-0", "-P", str(IN_FLIGHT), "-n", str(share), cat], input=names,
                   stdout=subprocess.DEVNULL, check=True)
    seconds = time.perf_counter() - started
    return seconds, sum(os.stat(path).st_size for path in paths)  # after: a stat first would warm a cold floor


@dataclass(frozen=True)
class Floor:
    files: int
    nbytes: int
    warm_s: float
    cold_s: float | None  # None: not measured (no --cold)

    def text(self) -> str:
        cold = f"cold {seconds(self.cold_s)}, " if self.cold_s is not None else ""
        return f"floor {cold}warm {seconds(self.warm_s)} ({self.files:,} files, {self.nbytes / 1e6:,.1f} MB)"


def seconds(value: float) -> str:
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def floor_of(logged: list[str], cold: bool, folders: Iterable[Path]) -> Floor:
    """The floor of reading the logged files, warm and (with cold) cold."""
    paths = sorted({path for path in logged if os.path.isfile(path)})
    cold_s = None
    if cold:
        evict(folders)
        cold_s, _ = read_all(paths)
    read_all(paths)  # now every one is cached
    warm_s, nbytes = read_all(paths)
    return Floor(len(paths), nbytes, warm_s, cold_s)
