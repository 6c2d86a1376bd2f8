"""The soak test: open and close 100 indexes and make 1,000 selections in the real window (the suite's
bounded budget; ``ECPFS_SOAK_OPENS=200 ECPFS_SOAK_SELECTIONS=2000`` for the long soak).

Pass: after a warm-up (the first tenth), resident memory grows by less than 50 MB, no operating-
system thread and no file descriptor is left behind, and no index (Hierarchy, OpenedStore) is
still alive once the window has closed them. Measured from /proc/self (Linux).
``ECPFS_SOAK_OPENS`` and ``ECPFS_SOAK_SELECTIONS`` change the amounts (see docs/reliability.md): the
growth after the warm-up slows as the run goes on (the measured curve is there), so half the run
keeps the same limit and still fails a leak of half a megabyte per index.
"""

from __future__ import annotations

import contextlib
import gc
import os
import random
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from monkey import build_stores

from ecpfs_viewer.gui.app import create_main_window
from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.gui.runtime.workers import thread_pool
from ecpfs_viewer.gui.window.main_window import MainWindow
from ecpfs_viewer.model.storage.opening import OpenedStore
from ecpfs_viewer.model.zarrtree.hierarchy import Hierarchy

OPENS = int(os.environ.get("ECPFS_SOAK_OPENS", 100))
SELECTIONS = int(os.environ.get("ECPFS_SOAK_SELECTIONS", 1000))
MAX_GROWTH_MB = 50
#: stores the soak cycles through: good ones and damaged ones that still open
STORES = ("two_clusters", "built", "built-zip", "negative-dimension", "million-row-leaf", "deep-nesting",
          "symlink-loops", "four-billion-levels")

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="measures through /proc/self")


def resident_mb() -> float:
    """Resident set size of this process, from /proc/self/statm."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def open_fds() -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the descriptor listdir itself used, already closed
            found.append(os.readlink(f"/proc/self/fd/{fd}"))
    return found


def python_threads() -> list[str]:
    """Threads Python started (threads Qt started that ran Python code show as dummies; not counted)."""
    return sorted(t.name for t in threading.enumerate() if not isinstance(t, threading._DummyThread))


#: zarr runs local reads in its event loop's default executor, which starts a thread only when all
#: of its threads are busy, up to min(32, cores + 4), and so does the ecpfs_io loop (both name them
#: asyncio_N): pools that grew to that bound leaked nothing
LAZY_POOLS = {"asyncio": 2 * min(32, (os.cpu_count() or 1) + 4)}


def threads_left_behind(before: list[str], after: list[str]) -> list[str]:
    """Threads in `after` that are not in `before`, beyond what a lazily growing pool may hold."""
    extra = sorted((Counter(after) - Counter(before)).elements())
    pools = Counter(name.rsplit("_", 1)[0] for name in after)
    return [name for name in extra
            if pools[name.rsplit("_", 1)[0]] > LAZY_POOLS.get(name.rsplit("_", 1)[0], 0)]


def live_indexes() -> int:
    return sum(isinstance(o, Hierarchy | OpenedStore) for o in gc.get_objects())


def settled(qtbot, window: MainWindow) -> dict[str, object]:
    """Every task done and garbage collected: the figures compared between warm-up and the end."""
    qtbot.waitUntil(lambda: not window.is_busy(), timeout=60_000)
    assert thread_pool().waitForDone(60_000)
    gc.collect()
    return {"rss": resident_mb(), "threads": os_threads(), "fds": open_fds(), "python": python_threads()}


def open_index(qtbot, window: MainWindow, location: Path) -> None:
    window.open_location(str(location))
    qtbot.waitUntil(lambda: window.tree_model.is_loaded("") and not window.tree_model.is_busy()
                    and not window.is_busy(), timeout=60_000)


def select(qtbot, window: MainWindow, path: str) -> None:
    window.reveal_path(path)
    qtbot.waitUntil(lambda: (window.current_item() is not None and window.current_item().path == path
                             and not window.is_busy()), timeout=60_000)


@pytest.mark.long
@pytest.mark.timeout(900)
def test_opening_closing_and_selecting_leaks_no_memory_threads_or_files(qtbot, tmp_path: Path,
                                                                      two_clusters_path: Path) -> None:
    stores = build_stores(tmp_path / "stores", two_clusters_path)
    app_settings.use_settings_dir(tmp_path / "settings")
    window = create_main_window()
    qtbot.addWidget(window)
    window.resize(1280, 800)
    window.show()
    rng = random.Random(5)
    per_open = max(1, SELECTIONS // OPENS)
    warm_up = max(1, OPENS // 10)
    before: dict[str, object] = {}
    selections = 0
    trend: list[int] = []  # RSS (MB) every tenth of the run, for the report
    for number in range(OPENS):
        if number == warm_up:
            before = settled(qtbot, window)
        if number % warm_up == 0:
            trend.append(round(resident_mb()))
        open_index(qtbot, window, stores[STORES[number % len(STORES)]])
        for _ in range(per_open):
            # a node already in the tree, or one level below it: selecting a group lists it
            paths = sorted(item.path for item in window.tree_model.loaded_items()
                           if not item.placeholder and not item.error)
            select(qtbot, window, rng.choice(paths))
            selections += 1
        window.commands.close_action.trigger()
        assert window.session.hierarchy is None and window.stack.currentWidget() is window.start_page
    after = settled(qtbot, window)
    growth = after["rss"] - before["rss"]  # type: ignore[operator]
    report = (f"{OPENS} opens, {selections} selections: RSS {before['rss']:.1f} -> {after['rss']:.1f} MB "
              f"(+{growth:.1f}), OS threads {before['threads']} -> {after['threads']}, "
              f"fds {len(before['fds'])} -> {len(after['fds'])}; RSS every tenth: {trend}")  # type: ignore[arg-type]
    print(report)
    assert growth < MAX_GROWTH_MB, report
    assert not threads_left_behind(before["python"], after["python"]), (report, after["python"])  # type: ignore[arg-type]
    # the pool's idle threads (at most its maximum) may have been replaced, never accumulated
    assert after["threads"] <= before["threads"] + thread_pool().maxThreadCount(), report  # type: ignore[operator]
    left = sorted(set(after["fds"]) - set(before["fds"]))  # type: ignore[arg-type]
    assert len(after["fds"]) <= len(before["fds"]) and not [f for f in left if "stores" in f], (report, left)
    assert live_indexes() == 0, report
    window.close()
