"""How long the GUI's event loop stalls while a user browses an index (the 200,000-vector
benchmark index unless one is named).

A 10 ms QTimer records the gap between its ticks; the longest gap is the longest time the window
could not repaint or react. Phases: opening the index, expanding its leaf level (rows and
their row counts), selecting nodes (metadata, chunk map, overview), previewing node data, the
projection of the leaf level on a leaf's page (every representative), and the Search panel (a
search compared with exact search, opening results' leaves at their rows, Go to Item, a recall
sweep with its plot and misses; --skip leaves them out).
Target: no stall above 100 ms. The baseline is the same model work done on the GUI thread,
which is how long the window would freeze without background workers.

    .venv-newest/bin/python benchmarks/bench_gui_stalls.py [INDEX] [--remote [--delay-ms 50]] [--off KNOB,...]

INDEX is a folder, a zip or a URL of an ecpfs index with 3 levels (default: the 200,000-item
benchmark index; ``python benchmarks/_bench_index.py 2000000`` prints the 2,000,000-item one).
A phase that does not finish within --timeout seconds ends the run: the figures so far are
printed and the window shuts down as the application's does (exit 1).

--off turns knobs of the responsiveness policy off (gui/runtime/scheduling.py names them:
heavy_turns, nice, switch_interval, gc_freeze), to measure what each one is worth.

--remote opens a local index from a loopback web server that lists no folders and adds a fixed
delay to every request (benchmarks/_remote_server.py): the tree is derived, every read is a
round trip, and the window must stay as responsive as on a local folder. With --s3 the server is
moto's S3 server instead (it lists folders; loading the index into it takes a while). The expand
phase prints its requests and their floor: requests / in flight x the server's quickest answer.
ECPFS_REMOTE_HELPER=0 makes the window's requests in process (as before the helper process).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import FrameType
from typing import ClassVar

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_index import bench_index_path
from _remote_server import S3_BUCKET, S3_ENVIRONMENT, ChildServer, serve_s3_child, serve_static_child
from PySide6.QtCore import QEventLoop, QTimer

from ecpfs_viewer.gui.app import create_main_window, ensure_application, tune_interpreter_for_gui
from ecpfs_viewer.gui.overview.projection_view import LEVEL
from ecpfs_viewer.gui.runtime import scheduling
from ecpfs_viewer.gui.runtime import settings as app_settings
from ecpfs_viewer.gui.runtime.shutdown import enable_crash_trace, shut_down
from ecpfs_viewer.gui.tree.tree_item import LoadState, TreeItem
from ecpfs_viewer.gui.window.main_window import MainWindow
from ecpfs_viewer.model.ecpfs.opened_index import open_index
from ecpfs_viewer.model.search import IndexReader, SearchParams
from ecpfs_viewer.model.search.explore import QuerySpec, RecallSpec, explore, recall_explore
from ecpfs_viewer.model.storage.options import RemoteOptions
from ecpfs_viewer.model.views.projection import ProjectionKind
from ecpfs_viewer.model.views.tree_rows import summarize_nodes
from ecpfs_viewer.process_exit import leave_process

TICK_MS = 10
STALL_LIMIT_MS = 100
GO_TO_ITEM = 4242


class StallMeter:
    """Records the gaps between the ticks of a 10 ms timer running in the GUI thread.

    With ``explain`` (milliseconds), a sampler thread looks at the GUI thread's stack whenever a
    tick is late, so each stall longer than that can be printed with where the GUI thread spent it.
    """

    def __init__(self, explain: float | None = None) -> None:
        self.timer = QTimer()
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self._tick)
        self.gaps: list[float] = []
        self.busy: list[float] = []  # CPU time the GUI thread itself spent in each gap
        self._last = time.perf_counter()
        self._last_cpu = time.thread_time()
        self._gui_thread = threading.get_ident()
        self._samples: list[str] = []  # stacks seen during the current gap
        self.explained: list[tuple[float, list[str]]] = []  # (stall ms, distinct stacks)
        self._explain_over = explain or 0.0
        self._sampling = threading.Event()
        self._sampler: threading.Thread | None = None
        if explain is not None:
            self._sampling.set()
            self._sampler = threading.Thread(target=self._sample, daemon=True)
            self._sampler.start()

    def close(self) -> None:
        """Stop the sampler before the window goes (a dump during teardown can crash)."""
        self._sampling.clear()
        if self._sampler is not None:
            self._sampler.join()

    def start(self) -> None:
        self.gaps, self.busy = [], []
        self._last = time.perf_counter()
        self._last_cpu = time.thread_time()
        self._samples = []
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()
        self._tick()

    def _tick(self) -> None:
        now = time.perf_counter()
        cpu = time.thread_time()
        gap = (now - self._last) * 1000
        self.gaps.append(gap)
        self.busy.append((cpu - self._last_cpu) * 1000)
        self._last, self._last_cpu = now, cpu
        samples, self._samples = self._samples, []
        if samples and gap > self._explain_over:
            self.explained.append((gap, samples))

    def _sample(self) -> None:
        # sys._current_frames() copies the frames under the interpreter lock; faulthandler's dump
        # reads other threads' frames without it and crashed CPython 3.13 at 2M (SIGSEGV)
        while self._sampling.is_set():
            time.sleep(0.02)
            if time.perf_counter() - self._last < 0.04:
                continue
            self._samples.append(_gui_stack(sys._current_frames(), self._gui_thread))

    @property
    def longest(self) -> float:
        return max(self.gaps, default=0.0)

    @property
    def longest_busy(self) -> float:
        """The GUI thread's own CPU time in the longest gap; the rest it waited (GIL, other processes)."""
        return self.busy[self.gaps.index(self.longest)] if self.gaps else 0.0

    def over(self, limit: float) -> int:
        return sum(1 for gap in self.gaps if gap > limit)


def _gui_stack(frames: dict[int, FrameType], gui_thread: int) -> str:
    """The GUI thread's innermost frames on one line, and the innermost frames of every other
    thread that is running Python (it may hold the interpreter lock the GUI waits for)."""
    me = threading.get_ident()
    gui, others = "(not in Python code)", []
    for ident, frame in frames.items():
        stack = [(Path(f.filename).stem, f.name, f.lineno) for f in reversed(traceback.extract_stack(frame))]
        if ident == me or not stack:
            continue
        if ident == gui_thread:
            gui = " < ".join(f"{stem}:{name}:{line}" for stem, name, line in stack[:8])
        elif stack[0][0] not in ("threading", "queue", "thread", "selectors"):
            others.append(" < ".join(f"{stem}:{name}:{line}" for stem, name, line in stack[:3]))
    return gui + "".join(f"\n        other thread: {other}" for other in sorted(others))


class RemoteAt:
    """The remote options the index is opened with (--s3: moto's endpoint), and its server."""

    options: RemoteOptions | None = None
    server: ChildServer | None = None
    #: what the expand phase asked the server for, and at most how many at once (replayed at the end)
    expand_targets: ClassVar[list[str]] = []
    in_flight = 0


#: the request floor of a phase, printed after the table
FLOORS: list[str] = []
EXPAND_SECONDS: list[float] = []
#: phases left out (--skip)
SKIP: set[str] = set()
#: seconds one wait of a phase may take (--timeout)
WAIT_LIMIT_S = 600.0


def wait_until(condition: Callable[[], bool]) -> None:
    """Run the event loop (never sleep: that would be a stall we cause) until condition holds."""
    loop = QEventLoop()
    poll = QTimer()
    poll.setInterval(5)
    deadline = time.perf_counter() + WAIT_LIMIT_S

    def check() -> None:
        if condition() or time.perf_counter() > deadline:
            loop.quit()

    poll.timeout.connect(check)
    poll.start()
    loop.exec()
    poll.stop()
    if not condition():
        raise TimeoutError(f"the window did not finish within {WAIT_LIMIT_S:g} s")


def idle(window: MainWindow) -> bool:
    return not window.is_busy()


def phase(meter: StallMeter, name: str, action: Callable[[], None], done: Callable[[], bool]) -> tuple:
    meter.start()
    started = time.perf_counter()
    action()
    wait_until(done)
    seconds = time.perf_counter() - started
    meter.stop()
    return name, seconds, meter.longest, meter.longest_busy, meter.over(STALL_LIMIT_MS)


def search(window: MainWindow, items: tuple[int, ...], leaf_level: str, go_to: tuple[int, tuple[int, int]]) -> None:
    """What a user does in the Search panel: search items, open results at their rows, go to an item."""
    feature = window.search
    panel = feature.panel
    feature.show_panel()
    for item in map(str, items):
        panel.form.item_edit.setText(item)
        panel.run()
        wait_until(lambda i=item: idle(window) and panel.exploration is not None
                   and panel.exploration.label == f"item {i}")
        for row in (1, 5):
            hit = panel.exploration.result.hits[row]
            feature.show_leaf_row(f"{leaf_level}/node_{hit.leaf}", hit.row)
            wait_until(lambda h=hit: idle(window) and window.plot.selected_row() == h.row)
    item, (leaf, row) = go_to
    feature.go_to_item(item)
    wait_until(lambda: idle(window) and window.current_item() is not None
               and window.current_item().path == f"{leaf_level}/node_{leaf}/embeddings"
               and window.plot.selected_row() == row)


def gui_thread_baseline(path: str, leaf_level: str) -> list[tuple[str, float]]:
    """The same model work done synchronously: how long the GUI would freeze without workers."""
    figures = []
    started = time.perf_counter()
    # derives the tree where the server lists no folders
    hierarchy = open_index(path, remote=RemoteAt.options).hierarchy
    hierarchy.root()
    from ecpfs_viewer.model.ecpfs import detect_index

    detect_index(hierarchy)
    hierarchy.children("")
    figures.append(("open (store, root, index detection, root listing)", time.perf_counter() - started))
    started = time.perf_counter()
    nodes = hierarchy.children(leaf_level)
    summarize_nodes(hierarchy, [node.path for node in nodes], progress=lambda batch: None, cancel=threading.Event())
    figures.append((f"list {leaf_level} ({len(nodes):,} nodes) with row counts", time.perf_counter() - started))
    started = time.perf_counter()
    reader = IndexReader(hierarchy)
    explore(reader, QuerySpec("item", item_id=17), SearchParams(), compare=True)
    figures.append(("first search of item 17 vs exact (reads every leaf)", time.perf_counter() - started))
    started = time.perf_counter()
    recall_explore(reader, RecallSpec("sample", n=50), 10, [1, 2, 4, 8, 16])
    figures.append(("recall: 50 sampled items x 5 search_exp, with misses", time.perf_counter() - started))
    return figures


def main() -> int:
    global WAIT_LIMIT_S
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("index", nargs="?", help="a folder, zip or URL of an ecpfs index (default: the 200,000-item "
                                                 "benchmark index)")
    parser.add_argument("--remote", action="store_true", help="open a local index over a delayed loopback web server")
    parser.add_argument("--explain", nargs="?", type=float, const=STALL_LIMIT_MS, default=None, metavar="MS",
                        help="sample the GUI thread's stack during stalls and print where each one over MS "
                             f"(default {STALL_LIMIT_MS}) was spent (the sampler reads other threads' frames: on "
                             "Python 3.13 it crashed a run once; the crash trace named at the start shows it)")
    parser.add_argument("--s3", action="store_true", help="with --remote: serve the index from moto's S3 server")
    parser.add_argument("--delay-ms", type=float, default=50.0, help="delay per request with --remote (default 50)")
    parser.add_argument("--off", default="", metavar="KNOB,...",
                        help=f"turn scheduling knobs off: {', '.join(scheduling.KNOBS)}")
    parser.add_argument("--skip", default="", metavar="PHASE,...",
                        help="leave out the last phases: search (and recall after it), recall; and the baseline")
    parser.add_argument("--timeout", type=float, default=WAIT_LIMIT_S,
                        help=f"seconds one step of a phase may take before the run ends (default {WAIT_LIMIT_S:g})")
    args = parser.parse_args()
    try:
        scheduling.use_knobs(scheduling.Knobs.without(args.off))
    except ValueError as exc:  # a knob that does not exist (or no longer: give_way)
        parser.error(str(exc))
    WAIT_LIMIT_S = args.timeout
    SKIP.update(name.strip() for name in args.skip.split(",") if name.strip())
    if SKIP - {"search", "recall"}:
        parser.error(f"--skip takes search, recall; not {', '.join(sorted(SKIP - {'search', 'recall'}))}")
    index = args.index or str(bench_index_path())
    with contextlib.ExitStack() as stack:
        if "://" in index:
            if args.remote:
                parser.error("--remote serves a local index; a URL is opened as it is")
            location, where = index, index
        elif args.remote and args.s3:
            local = Path(index).resolve()
            server = RemoteAt.server = stack.enter_context(serve_s3_child(local, args.delay_ms / 1000, niceness=10))
            os.environ.update(S3_ENVIRONMENT)
            location = f"s3://{S3_BUCKET}/{local.name}"
            RemoteAt.options = RemoteOptions(endpoint=server.base)
            where = f"{local.name} from moto's S3 server, {args.delay_ms:g} ms per request"
        elif args.remote:
            local = Path(index).resolve()
            server = RemoteAt.server = stack.enter_context(serve_static_child(local.parent, args.delay_ms / 1000,
                                                                              niceness=10))
            location = f"{server.base}/{local.name}"
            where = f"{local.name} over loopback HTTP without listings, {args.delay_ms:g} ms per request"
        else:
            location, where = index, Path(index).name
        return run(location, where, args.explain)


def run(path: str, where: str, explain: float | None = None) -> int:
    """Browse path in the window phase by phase, print the stalls; 1 when a phase did not finish.

    The window is shut down as the application shuts it down (gui/runtime/shutdown.py) whether the
    phases finished or not, and a crash leaves its stacks in the file named at the start."""
    settings_dir = tempfile.TemporaryDirectory(prefix="ecpfs-bench-settings-")  # removed at exit
    crash_trace = enable_crash_trace(Path(settings_dir.name))
    if crash_trace is not None:
        print(f"a crash would leave its stacks in {crash_trace.path}", file=sys.stderr, flush=True)
    app_settings.use_settings_dir(settings_dir.name)
    ensure_application()
    collector = tune_interpreter_for_gui()  # as the application does
    # its size and leaf level name what the phases do (not timed)
    reader = IndexReader(open_index(path, remote=RemoteAt.options))
    leaf_level = f"lvl_{reader.levels}"
    total = reader.total_items or 200_000
    items = (17, min(123_456, total // 2 + 17), total - 1)
    meter = StallMeter(explain)
    results: list[tuple] = []
    failure = ""
    window = create_main_window()  # building the widgets is start-up, not browsing: outside the meter
    collector.follow_index(window.store_opened, window.store_dropped)
    window.resize(1280, 800)
    window.show()
    try:
        wait_until(lambda: True)
        browse(window, meter, results, path, leaf_level, items, reader)
    except TimeoutError as exc:
        failure = f"phase {len(results) + 1} did not finish: {exc}"
    finally:
        meter.close()
        window.close()
        clean = shut_down(window, [collector.timer, meter.timer])

    print(f"GUI event-loop stalls on {where} (timer every {TICK_MS} ms; target: none above "
          f"{STALL_LIMIT_MS} ms; {scheduling.KNOBS_ON.describe()})")
    print(f"{'phase':58s} {'wall':>8s} {'longest stall':>14s} {'GUI CPU in it':>14s} {'stalls >100ms':>14s}")
    for name, seconds, longest, busy, over in results:
        print(f"{name:58s} {seconds * 1000:6.0f} ms {longest:11.0f} ms {busy:11.0f} ms {over:14d}")
    for floor in FLOORS:
        print(floor)
    if RemoteAt.server is not None and RemoteAt.expand_targets and EXPAND_SECONDS:
        targets = RemoteAt.expand_targets  # replayed after the window is shut: nothing else runs
        bare = RemoteAt.server.replay(targets, RemoteAt.in_flight)
        print(f"the same {len(targets):,} requests from a bare obstore client, {RemoteAt.in_flight} in flight (no "
              f"parsing, no cache; the floor as this machine meets it): {bare:.1f} s; expand took "
              f"{EXPAND_SECONDS[-1] / max(bare, 1e-9):.2f}x that")
    if hasattr(os, "getloadavg"):  # stalls grow with the machine's load: say what it was
        print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    for gap, stacks in meter.explained:
        print(f"\nstall of {gap:.0f} ms; the GUI thread was in ({len(stacks)} samples, 20 ms apart):")
        for stack, count in collections.Counter(stacks).most_common(4):
            print(f"  {count:3d} x {stack}")
    if not clean:
        print("\nsome background task was still running after the shutdown wait (abandoned)")
    if failure:
        print(f"\n{failure}")
    elif SKIP:
        print(f"\n(left out: {', '.join(sorted(SKIP))} and the GUI-thread baseline)")
    else:
        print("\nbaseline: the same model work on the GUI thread (the freeze without background workers)")
        for name, seconds in gui_thread_baseline(path, leaf_level):
            print(f"{name:58s} {seconds * 1000:6.0f} ms")
    if crash_trace is not None:
        crash_trace.close()
    return 1 if failure else 0


def node_rows(level: TreeItem) -> list[TreeItem]:
    """The rows of a level's nodes, also where the tree shows them in ranges (gui/tree/ranges.py)."""
    return [node for row in level.children for node in (row.children if row.ranged else [row])]


def last_node_row(level: TreeItem) -> TreeItem:
    """The last of node_rows(level), without walking 40,000 rows on every poll of a wait (that
    walk, on the GUI thread every 5 ms, was itself a stall the meter counted)."""
    last = level.children[-1]
    return last.children[-1] if last.ranged else last


def browse(window: MainWindow, meter: StallMeter, results: list[tuple], path: str, leaf_level: str,
           items: tuple[int, ...], reader: IndexReader) -> None:
    """The phases, each appended to results as it ends."""
    def open_index() -> None:
        window.open_location(path, RemoteAt.options)

    results.append(phase(meter, "open the index (root listed, overview shown)", open_index,
                         lambda: idle(window) and window.tree_model.is_loaded(leaf_level)))
    model = window.tree_model

    def expand_level() -> None:
        window.tree_panel.tree.expand(window.tree_panel.view_index(model.index_for_path(leaf_level)))

    def level_described() -> bool:
        item = model.item(model.index_for_path(leaf_level))
        return item.state is LoadState.LISTED and idle(window) and bool(last_node_row(item).detail)

    store = model.hierarchy.store if model.hierarchy is not None else None
    before = store.stats().requests if store is not None else 0
    served_before = RemoteAt.server.requests() if RemoteAt.server is not None else 0
    result = phase(meter, "", expand_level, level_described)
    if RemoteAt.server is not None:
        RemoteAt.expand_targets = RemoteAt.server.targets(served_before)
    nodes = node_rows(model.item(model.index_for_path(leaf_level)))
    results.append((f"expand {leaf_level} ({len(nodes):,} nodes, then their row counts)", *result[1:]))
    floor = store.request_floor() if store is not None else None
    if floor is not None:
        floor = replace(floor, requests=floor.requests - before, from_cache=0)
        RemoteAt.in_flight = floor.in_flight
        FLOORS.append(f"expand {leaf_level}: {floor.describe().split(', 0 document')[0]}; took "
                      f"{result[1] / max(floor.seconds, 1e-9):.2f}x the floor")
        EXPAND_SECONDS.append(result[1])
    picks = [nodes[i].path for i in range(0, len(nodes), max(1, len(nodes) // 20))]

    def select_nodes() -> None:
        for node in picks:
            window.reveal_path(node)
            wait_until(lambda n=node: window.current_item() is not None and window.current_item().path == n
                       and idle(window))
        window.reveal_path(leaf_level)  # the level overview (a size per node)
        wait_until(lambda: window.current_item().path == leaf_level and idle(window))

    results.append(phase(meter, f"select {len(picks)} nodes, then {leaf_level} (metadata, overview)", select_nodes,
                         lambda: idle(window)))

    def preview() -> None:
        window.tabs.setCurrentIndex(window.TAB_DATA)
        for node in [*picks[:10], "rep_embeddings", "index_root/embeddings"]:
            target = f"{node}/embeddings" if node.startswith("lvl_") else node
            window.reveal_path(target)
            wait_until(lambda t=target: window.current_item() is not None and window.current_item().path == t
                       and idle(window) and window.plot.current_data() is not None)

    results.append(phase(meter, "preview 12 embeddings arrays (metadata, chunk map, heatmap)", preview,
                         lambda: idle(window)))
    page = window.node_page

    def project_level() -> None:
        window.tabs.setCurrentIndex(window.TAB_OVERVIEW)
        window.reveal_path(picks[1])
        wait_until(lambda: page.data is not None and page.data.info.path == picks[1] and idle(window))
        page.tabs.setCurrentWidget(page.projection)
        page.projection.mode.setCurrentIndex(page.projection.mode.findData(LEVEL))

    results.append(phase(meter, f"project {leaf_level} on a leaf's page (every representative)", project_level,
                         lambda: idle(window) and page.projection.projection is not None
                         and page.projection.projection.kind is ProjectionKind.LEVEL))
    if "search" in SKIP:
        return
    item = min(GO_TO_ITEM, items[-1])
    go_to = item, reader.locator.find_one(item)  # where Go to Item must land (not timed)
    results.append(phase(meter, f"search: {len(items)} items vs exact, open 3 results, Go to Item",
                         lambda: search(window, items, leaf_level, go_to), lambda: idle(window)))
    if "recall" in SKIP:
        return
    recall = window.search.panel.recall_view

    def sweep() -> None:
        window.search.panel.tabs.setCurrentIndex(window.search.panel.TAB_RECALL)
        recall.n_spin.setValue(50)
        recall.exps_edit.setText("1, 2, 4, 8, 16")
        recall.run()

    results.append(phase(meter, "recall: 50 sampled items x 5 search_exp (plot, misses)", sweep,
                         lambda: idle(window) and recall.outcome is not None))


if __name__ == "__main__":
    # like the application after its window closed: the figures are printed, and interpreter
    # shutdown under obstore's and zarr's threads (and a frozen heap) crashed now and then here
    leave_process(main())
