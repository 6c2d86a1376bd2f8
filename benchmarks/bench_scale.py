"""The actions of issues 21 and 35 at 200,000, 2,000,000 and 10,000,000 items, side by side: figures, not pass/fail.

    ECPFS_BENCH_CACHE=/work/bench-data/scale .venv-newest/bin/python benchmarks/bench_scale.py
        [--sizes 200k,2M,10M | --rows-small 200000 --rows-large 2000000 | --index A.zarr --index B.zarr ...]
        [--cold] [--no-floors] [--only ACTION,...] [--repeat 2] [--delay-ms 50] [--no-zarr] [--json OUT]

Every index comes from benchmarks/_bench_index.py (64-d float32, levels 3, target 50), built on
first use. Every figure is a fresh process, as a user runs it: the real command line
(`python -m ecpfs_viewer ...`), or a small child for the window, timed from outside, the best of
--repeat runs, with the child's peak resident memory (from ``os.wait4``) and the machine's load
average when that run started. Each run gets an empty cache folder unless the action is about the
second process (then one untimed run fills it first). With --cold the OS page cache is dropped
before every timed run (benchmarks/_floors.py says how, where that is not allowed). Beside every
local figure its floor: the files that action read (one more run, logged by _read_log.py), read
with many in flight, cold and warm. Remote actions read the index over
benchmarks/_remote_server.py with a delay per request (50 ms unless --delay-ms) and count the
requests the server answered; the request floor is requests / in flight x delay.

Beside each figure: the issue's target, the issue's figure from before, and zarr-python doing the
same job where there is one (one run each): reading every leaf's item_ids (locate), reading every
leaf's embeddings and a numpy brute force (exact search), reading every zarr.json (info, check).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_index import DIM, HUGE_ROWS, ROWS, SCALE_ROWS, bench_index_path
from _floors import evict, eviction_name, floor_of, page_reclaim
from _remote_server import ChildServer, serve_static_child
from _scale_children import IN_FLIGHT

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CHILDREN = HERE / "_scale_children.py"  # what the children that are not the command line do

NODE_ID = 100  # the leaf whose page the window opens (the screenshot shows it); else the first one
CHILD_TIMEOUT_S = 1800.0


# ------------------------------------------------------------------------------------ figures


@dataclass(frozen=True)
class Run:
    """One child process: wall time, peak resident memory, exit status and output, CPU seconds."""

    seconds: float
    rss_mb: float
    returncode: int
    stdout: str
    stderr: str
    load: float
    cpu_s: float = 0.0  # user + system time of the child (from wait4), to judge a wall time under load


@dataclass
class Figure:
    """The best run of an action on one index (None seconds: not measured, the note says why)."""

    seconds: float | None
    rss_mb: float | None = None
    load: float | None = None
    note: str = ""
    cpu_s: float | None = None
    unit: str = "s"  # or "ms", for stalls
    extra: dict[str, float] = field(default_factory=dict)

    def text(self) -> str:
        if self.seconds is None:
            return "-"
        value = f"{self.seconds * 1000:.0f} ms" if self.unit == "ms" else f"{self.seconds:.2f} s"
        memory = f" {self.rss_mb:,.0f} MB" if self.rss_mb is not None else ""
        cpu = f" cpu {self.cpu_s:.2f}" if self.cpu_s is not None and self.unit == "s" else ""
        return f"{value}{memory}{cpu} (load {self.load:.1f})"


def loadavg() -> float:
    """The one-minute load average (/proc/loadavg, or os.getloadavg where there is none)."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except OSError:
        return os.getloadavg()[0]


#: Starts the command in a fresh process and writes its wait4 figures to a pipe. On Linux a process
#: started by this one (vfork or fork, then exec) begins with this process's peak resident memory
#: (ru_maxrss survives exec), and this process grows as it reads the floors: so the command is a
#: grandchild, forked by this small launcher, whose own peak is all ru_maxrss then holds; its time is
#: taken there too (the launcher's start is not the command's).
_LAUNCHER = """
import os, sys, time
report, command = int(sys.argv[1]), sys.argv[2:]
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.close(report)
    try:
        os.execvp(command[0], command)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
seconds = time.perf_counter() - started
cpu = usage.ru_utime + usage.ru_stime
os.write(report, f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss} {cpu} {seconds}".encode())
"""


def run_child(command: list[str], env: dict[str, str], timeout: float = CHILD_TIMEOUT_S) -> Run:
    """Run command to its end; its own peak RSS and CPU come from wait4 in a launcher (_LAUNCHER)."""
    load = loadavg()
    read_end, write_end = os.pipe()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        try:
            process = subprocess.Popen([sys.executable, "-S", "-c", _LAUNCHER, str(write_end), *command], stdout=out,
                                       stderr=err, stdin=subprocess.DEVNULL, cwd=REPO, env=env, pass_fds=(write_end,),
                                       start_new_session=True)
        finally:
            os.close(write_end)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            os.close(read_end)
            raise TimeoutError(f"{' '.join(command)} ran over {timeout:.0f} s") from None
        with os.fdopen(read_end, "rb") as report:
            figures = report.read().split()
        if len(figures) != 4:
            raise RuntimeError(f"the launcher of {' '.join(command)} said nothing (exit {process.returncode})")
        out.seek(0)
        err.seek(0)
        return Run(float(figures[3]), int(figures[1]) / 1024, int(figures[0]), out.read(), err.read(), load,
                   float(figures[2]))


def child_env(cache: Path) -> dict[str, str]:
    """This checkout's code, an offscreen Qt, and the app's cache folder (all of it) under cache."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
            "QT_QPA_PLATFORM": "offscreen", "ECPFS_VIEWER_CACHE": str(cache), "XDG_CACHE_HOME": str(cache / "xdg")}


def failure(run: Run) -> str:
    lines = (run.stderr.strip() or run.stdout.strip()).splitlines()
    return f"exit {run.returncode}: {lines[-1] if lines else 'no output'}"


# ------------------------------------------------------------------------------------ one index


@dataclass
class Case:
    """One benchmark index and what the runs on it share."""

    rows: int
    index: Path
    repeat: int
    delay_s: float
    work: Path  # scratch folder: query files, cache folders, key lists
    with_zarr: bool = True
    cold: bool = False  # drop the OS page cache before every timed run
    floors: bool = True  # log the files each action reads, and time reading them
    baselines: dict[str, Figure] = field(default_factory=dict)  # zarr-python figures, shared by actions

    @property
    def absent_id(self) -> int:
        return self.rows + 1000  # inside uint32, the item_ids type, and held by no leaf

    def leaf_path(self) -> str:
        """lvl_L/node_NODE_ID of the deepest level, or its first node where that id is not there."""
        level = max((p for p in self.index.glob("lvl_*") if p.name[4:].isdigit()), key=lambda p: int(p.name[4:]))
        if (level / f"node_{NODE_ID}").is_dir():
            return f"{level.name}/node_{NODE_ID}"
        nodes = [p.name for p in level.iterdir() if p.name.startswith("node_") and p.name[5:].isdigit()]
        return f"{level.name}/{min(nodes, key=lambda name: int(name[5:]))}"

    def cache(self) -> Path:
        return Path(tempfile.mkdtemp(prefix="app-cache-", dir=self.work))

    def cli(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "ecpfs_viewer", *args]

    def best(self, command: list[str], *, ok: tuple[int, ...] = (0,),
             warm: bool = False, server: ChildServer | None = None,
             measure: Callable[[Run], float] | None = None, fill: list[str] | None = None) -> Figure:
        """The best of `repeat` fresh processes; warm: one untimed run (of fill, else of command)
        fills a cache folder they share."""
        cache = self.cache()
        runs: list[tuple[float, Run, int]] = []
        if warm:
            run = run_child(fill or command, child_env(cache))
            if run.returncode not in ok:
                return Figure(None, note=f"warm-up {failure(run)}")
        for _ in range(self.repeat):
            if not warm:
                cache = self.cache()
            if self.cold:
                evict([self.index, cache])
            before = server.requests() if server else 0
            run = run_child(command, child_env(cache))
            if run.returncode not in ok:
                return Figure(None, note=failure(run))
            runs.append((measure(run) if measure else run.seconds, run, (server.requests() - before) if server else 0))
        seconds, run, requests = min(runs, key=lambda r: r[0])
        figure = Figure(seconds, max(r.rss_mb for _, r, _ in runs), run.load, cpu_s=run.cpu_s)
        if server:
            floor = requests / IN_FLIGHT * self.delay_s
            figure.note = f"{requests:,} requests, floor {floor:.1f} s"
            figure.note += f", {seconds / floor:.1f} x the floor" if floor else ""
            figure.extra.update(requests=requests, floor_s=floor)
        elif self.floors:
            self.add_floor(figure, command, None if warm else self.cache(), cache)
        return figure

    def add_floor(self, figure: Figure, command: list[str], fresh: Path | None, warm_cache: Path) -> None:
        """Run command once more, logging the files it opens below the index and the cache folder
        (a fresh one, or the filled one of a later-process action); the floor of reading them."""
        cache = fresh or warm_cache
        log = self.work / f"read-log-{time.monotonic_ns()}.txt"
        folders = os.pathsep.join([str(self.index), str(cache)])
        run_child([sys.executable, str(HERE / "_read_log.py"), str(log), folders, *command[1:]], child_env(cache))
        logged = log.read_text().splitlines() if log.exists() else []
        floor = floor_of(logged, self.cold, [self.index, cache])
        mode = floor.cold_s if self.cold else floor.warm_s
        ratio = f"; {figure.seconds / mode:.1f}x its {'cold' if self.cold else 'warm'} floor" if (
            mode and figure.seconds is not None and figure.unit == "s") else ""
        figure.note = "; ".join(filter(None, [figure.note, floor.text() + ratio]))
        figure.extra.update(floor_files=floor.files, floor_bytes=floor.nbytes, floor_warm_s=floor.warm_s)
        if floor.cold_s is not None:
            figure.extra.update(floor_cold_s=floor.cold_s)

    @contextlib.contextmanager
    def served(self) -> Iterator[tuple[ChildServer, str]]:
        with serve_static_child(self.index.parent, self.delay_s) as server:
            yield server, f"{server.base}/{self.index.name}"

    def query_file(self) -> Path:
        import numpy as np

        path = self.work / "query.npy"
        if not path.exists():
            np.save(path, np.random.default_rng(3).normal(0, 10, (1, DIM)).astype(np.float32))
        return path

    def zarr_baseline(self, job: str, *args: str, server: ChildServer | None = None) -> Figure | None:
        """zarr-python doing the job in a child (one run), with what it read as its note."""
        if not self.with_zarr:
            return None
        if job in self.baselines:
            return self.baselines[job]
        before = server.requests() if server else 0
        if self.cold and server is None:
            evict([self.index])
        run = run_child([sys.executable, str(CHILDREN), job, *args], child_env(self.cache()))
        if run.returncode != 0:
            figure = Figure(None, note=failure(run))
        else:
            figure = Figure(run.seconds, run.rss_mb, run.load, note=run.stdout.strip().splitlines()[-1],
                            cpu_s=run.cpu_s)
            if server:
                figure.note += f", {server.requests() - before:,} requests"
        self.baselines[job] = figure
        return figure

    def document_keys(self) -> Path:
        """Every zarr.json of the index (relative keys), one a line, listed once from the local folder."""
        path = self.work / "documents.txt"
        if not path.exists():
            keys = [os.path.relpath(os.path.join(top, "zarr.json"), self.index)
                    for top, _dirs, files in os.walk(self.index) if "zarr.json" in files]
            path.write_text("\n".join(sorted(keys)))
        return path


# ------------------------------------------------------------------------------------ actions


@dataclass(frozen=True)
class Action:
    title: str
    target: str  # from the issue
    before: str  # the figures, 200k / 2M
    measure: Callable[[Case], tuple[Figure, Figure | None]]  # ours, zarr-python's (None: no such job)


def locate_first(case: Case) -> tuple[Figure, Figure | None]:
    ours = case.best(case.cli("locate", str(case.index), str(case.absent_id)), ok=(1,))
    return ours, case.zarr_baseline("zarr-item-ids", str(case.index))


def locate_again(case: Case) -> tuple[Figure, Figure | None]:
    return case.best(case.cli("locate", str(case.index), str(case.absent_id)), ok=(1,), warm=True), None


def search_item(case: Case) -> tuple[Figure, Figure | None]:
    return case.best(case.cli("search", str(case.index), "--item", "5")), case.zarr_baseline(
        "zarr-item-ids", str(case.index))


def search_item_again(case: Case) -> tuple[Figure, Figure | None]:
    return case.best(case.cli("search", str(case.index), "--item", "5"), warm=True), None


def locate_present_again(case: Case) -> tuple[Figure, Figure | None]:
    return case.best(case.cli("locate", str(case.index), "5"), warm=True), None


def search_query_file(case: Case) -> tuple[Figure, Figure | None]:
    return case.best(case.cli("search", str(case.index), "--query-file", str(case.query_file()))), None


def info_leaf_sizes(case: Case) -> tuple[Figure, Figure | None]:
    return case.best(case.cli("info", str(case.index), "--leaf-sizes")), None


def info_again(case: Case) -> tuple[Figure, Figure | None]:
    """A plain `info` after one `info --leaf-sizes` kept the leaf sizes in the cache folder."""
    return case.best(case.cli("info", str(case.index)), warm=True,
                     fill=case.cli("info", str(case.index), "--leaf-sizes")), None


def recall(case: Case) -> tuple[Figure, Figure | None]:
    ours = case.best(case.cli("recall", str(case.index), "--sample", "100", "--search-exp", "1,2,4,8"))
    return ours, case.zarr_baseline("zarr-exact", str(case.index))


def explain(case: Case) -> tuple[Figure, Figure | None]:
    ours = case.best(case.cli("search", str(case.index), "--item", "17", "--explain"))
    return ours, case.zarr_baseline("zarr-exact", str(case.index))


def node_page(case: Case) -> tuple[Figure, Figure | None]:
    runs: list[dict[str, float]] = []

    def page_seconds(run: Run) -> float:
        runs.append(json.loads(run.stdout.strip().splitlines()[-1]))
        return float(runs[-1]["page_s"])

    command = [sys.executable, str(CHILDREN), "node-page", str(case.index), case.leaf_path()]
    figure = case.best(command, measure=page_seconds)
    best = min(runs, key=lambda r: r["page_s"]) if runs else {}
    page = (f"{case.leaf_path()}: {best.get('page_cpu_s', 0):.2f} s CPU (all threads) while loading; selected in "
            f"the tree after {best.get('selected_s', 0):.2f} s" if best else case.leaf_path())
    figure.note = "; ".join(filter(None, [page, figure.note]))  # the floor's note (that of the whole window) after
    return figure, None


def leaf_stall(case: Case) -> tuple[Figure, Figure | None]:
    """bench_gui_stalls.py as a child; only its 'expand lvl_N' row is read from what it prints."""
    script = HERE / "bench_gui_stalls.py"
    env = {**child_env(case.cache()), "ECPFS_BENCH_CACHE": str(case.index.parent)}
    where = index_argument(script, env, case.index)
    if where is None:
        if case.rows != ROWS:
            return Figure(None, note="bench_gui_stalls.py takes no index path"), None
        where = []  # its own index: the ROWS one, from the same cache folder
    best: Figure | None = None
    for _ in range(case.repeat):
        run = run_child([sys.executable, str(script), *where], env)
        found = re.search(r"^expand lvl_\d.*?(\d+) ms\s+(\d+) ms\s+(\d+) ms\s+(\d+)\s*$", run.stdout, re.M)
        if run.returncode != 0 or not found:
            return Figure(None, note=failure(run) if run.returncode else "no 'expand lvl_' row printed"), None
        stall = float(found.group(2)) / 1000
        if best is None or best.seconds is None or stall < best.seconds:
            best = Figure(stall, run.rss_mb, run.load, note=f"expanding took {found.group(1)} ms", unit="ms")
    return best or Figure(None, note="--repeat 0"), None


def index_argument(script: Path, env: dict[str, str], index: Path) -> list[str] | None:
    """How bench_gui_stalls.py takes an index, read from its --help (None: it takes none)."""
    usage = run_child([sys.executable, str(script), "--help"], env).stdout.split("\n\n")[0]  # the usage lines
    if re.search(r"--index\b", usage):
        return ["--index", str(index)]
    tokens = usage.split()
    for before, token in itertools.pairwise(tokens):
        if token.strip("[]") in ("INDEX", "PATH", "LOCATION", "PATH_OR_URL", "index", "location") and not (
                before.lstrip("[").startswith("-")):
            return [str(index)]
    return None


def remote(command: str, *extra: str, warm: bool = False, baseline: bool = True) -> Callable[[Case], tuple]:
    def measure(case: Case) -> tuple[Figure, Figure | None]:
        with case.served() as (server, url):
            ours = case.best(case.cli(command, url, *extra), warm=warm, server=server)
            theirs = (case.zarr_baseline("zarr-documents", url, str(case.document_keys()), server=server)
                      if baseline and case.with_zarr else None)
        return ours, theirs

    return measure


ACTIONS: dict[str, Action] = {
    "locate": Action("locate an absent id, first process", "2M <= 3 s", "0.76 s / 12.1 s", locate_first),
    "locate-again": Action("locate an absent id, a later process", "<= 0.5 s", "(new)", locate_again),
    "search-item": Action("search --item 5, cold", "2M <= 3 s", "0.61 s / 5.51 s", search_item),
    "search-item-again": Action("search --item 5, a later process", "<= 0.5 s", "(new)", search_item_again),
    "locate-present-again": Action("locate item 5, a later process", "<= 0.5 s", "(new)", locate_present_again),
    "info-leaf-sizes": Action("info --leaf-sizes (every leaf's documents)", "10M <= 1.5 x floor", "(10M: 74 s)",
                              info_leaf_sizes),
    "info-again": Action("info, a later process (leaf sizes cached)", "10M <= 2 s", "(10M: 31 s)", info_again),
    "search-query": Action("search --query-file, cold", "no growth", "0.29 s / 0.29 s", search_query_file),
    "recall": Action("recall --sample 100 --search-exp 1,2,4,8", "2M <= 8 s, <= 500 MB",
                     "1.90 s 254 MB / 15.8 s 1,399 MB", recall),
    "explain": Action("search --item 17 --explain", "memory bounded (<= 500 MB)",
                      "1.75 s 216 MB / 15.8 s 1,336 MB", explain),
    "node-page": Action(f"node page loaded in the window (node_{NODE_ID})", "<= 1 s", "0.52 s / 3.06 s", node_page),
    "leaf-stall": Action("longest stall expanding the leaf level", "<= 100 ms", "37 ms / 110-142 ms", leaf_stall),
    "remote-info": Action("info over the delay", "summary only", "5.4 s / 41 s", remote("info")),
    "remote-check": Action("check over the delay", "<= 1.5 x floor", "6.0 s / 44 s", remote("check")),
    "remote-info-again": Action("info over the delay, a later process", "<= 5 s", "(new)",
                                remote("info", warm=True, baseline=False)),
    "remote-check-again": Action("check over the delay, a later process", "<= 5 s", "(new)",
                                 remote("check", warm=True, baseline=False)),
    "remote-locate": Action("locate item 5 over the delay (the rest of the map read after)", "", "(new)",
                            remote("locate", "5", baseline=False)),
    "remote-locate-again": Action("locate item 5 over the delay, a later process", "", "(new)",
                                  remote("locate", "5", warm=True, baseline=False)),
    "remote-explain": Action("search --item 17 --explain over the delay", "", "15.1 s / 134.9 s",
                             remote("search", "--item", "17", "--explain", baseline=False)),
}


# ------------------------------------------------------------------------------------ the table


def parse_size(text: str) -> int:
    """200k, 2M, 10M or a plain count of items."""
    text = text.strip().lower().replace("_", "").replace(",", "")
    scale = {"k": 1000, "m": 1_000_000}.get(text[-1:], 1)
    try:
        rows = int(float(text[:-1] if scale > 1 else text) * scale)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is no size (like 200k, 2M, 10M)") from None
    if rows < 1000:
        raise argparse.ArgumentTypeError(f"{text!r}: at least 1k items")
    return rows


def size_name(rows: int) -> str:
    return f"{rows // 1_000_000}M" if rows >= 1_000_000 and rows % 1_000_000 == 0 else f"{rows / 1000:g}k"


def stamped_rows(index: Path, parser: argparse.ArgumentParser) -> int:
    """The rows of an index that _bench_index.py built, from the stamp it wrote beside it."""
    try:
        return int(json.loads(index.with_suffix(".json").read_text())["rows"])
    except (OSError, ValueError, KeyError) as exc:
        parser.error(f"{index}: no stamp of _bench_index.py beside it ({exc})")


def growth(small: Figure, large: Figure) -> str:
    if small is large or not small.seconds or large.seconds is None:
        return "-"
    return f"{large.seconds / small.seconds:.1f}x"


def growths(figures: list[Figure]) -> str:
    """The growth from each size to the next (one figure: none)."""
    return " ".join(growth(a, b) for a, b in itertools.pairwise(figures)) or "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=lambda text: [parse_size(t) for t in text.split(",") if t.strip()],
                        metavar="SIZE,...", help="the indexes' items, e.g. 200k,2M (default 200k,2M,10M; each is "
                                                 "built on first use: 10M takes minutes and 2.6 GB on disk)")
    parser.add_argument("--rows-small", type=int, help=f"items of the small index (instead of --sizes; {ROWS:,})")
    parser.add_argument("--rows-large", type=int,
                        help=f"items of the large index (instead of --sizes; {SCALE_ROWS:,}; 0: the small one only)")
    parser.add_argument("--cold", action="store_true",
                        help="drop the OS page cache before every timed run (root on Linux; else "
                             "posix_fadvise(DONTNEED) on the index's files), and time the floors cold too")
    parser.add_argument("--no-floors", action="store_true",
                        help="leave out the floors (the time to read the files each action read)")
    parser.add_argument("--index", type=Path, action="append", default=[], metavar="PATH",
                        help="a built benchmark index instead of --rows-small/--rows-large (give one or two; "
                             "the stamp beside it, NAME.json, tells its rows)")
    parser.add_argument("--only", default="", metavar="ACTION,...", help=f"some actions: {', '.join(ACTIONS)}")
    parser.add_argument("--repeat", type=int, default=2, help="fresh processes per figure, best kept (default 2)")
    parser.add_argument("--delay-ms", type=float, default=50.0, help="delay per request of the remote actions")
    parser.add_argument("--no-zarr", action="store_true", help="leave zarr-python's figures out (they take long)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the figures to OUT as JSON")
    args = parser.parse_args()
    names = [name.strip() for name in args.only.split(",") if name.strip()] or list(ACTIONS)
    unknown = sorted(set(names) - set(ACTIONS))
    if unknown:
        parser.error(f"unknown action {', '.join(unknown)}; choose from {', '.join(ACTIONS)}")
    work = Path(tempfile.mkdtemp(prefix="ecpfs-bench-scale-"))
    try:
        compile_checkout()
        if args.rows_small is not None or args.rows_large is not None:
            sizes = [rows for rows in (args.rows_small if args.rows_small is not None else ROWS,
                                       args.rows_large if args.rows_large is not None else SCALE_ROWS) if rows > 0]
        else:
            sizes = args.sizes or [ROWS, SCALE_ROWS, HUGE_ROWS]
        indexes = [(stamped_rows(path, parser), path.resolve()) for path in args.index] or [
            (rows, bench_index_path(rows=rows)) for rows in sizes]
        cases = []
        for number, (rows, index) in enumerate(indexes):
            scratch = work / str(number)
            scratch.mkdir()
            cases.append(Case(rows, index, args.repeat, args.delay_ms / 1000, scratch, with_zarr=not args.no_zarr,
                              cold=args.cold, floors=not args.no_floors))
        return report(cases, names, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def compile_checkout() -> None:
    """Compile this checkout's package in place, as pip compiles an installed ecpfs-viewer: a checkout
    run with PYTHONDONTWRITEBYTECODE set (as on this machine and CI images) would compile each module
    in every child, which no user pays. (A PYTHONPYCACHEPREFIX folder would not do: it also hides the
    bytecode pip wrote for zarr and numpy, so every child would compile those instead.)"""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "ecpfs_viewer")], check=True,
                   env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""}, stdout=subprocess.DEVNULL)


def report(cases: list[Case], names: list[str], args: argparse.Namespace) -> int:
    import numpy
    import zarr

    sizes = [size_name(case.rows) for case in cases]
    print(f"issues 21/35 at size: {', '.join(case.index.name for case in cases)}; best of {args.repeat} fresh "
          f"processes, peak RSS, load average at the run; remote: {args.delay_ms:g} ms per request, {IN_FLIGHT} in "
          f"flight; Python {sys.version.split()[0]}, zarr {zarr.__version__}, numpy {numpy.__version__}, "
          f"{os.cpu_count()} CPUs")
    reclaim = page_reclaim()
    print(f"OS page cache: {'COLD before every timed run: ' + eviction_name() if args.cold else 'warm'}"
          f"{f' ({reclaim}: warm is what was read that recently)' if reclaim else ''}; "
          f"floors: {'none' if args.no_floors else 'the files each action read by cat, 64 in flight, path order'}")
    print(f"{'action':<44} {''.join(f'{size:<38}' for size in sizes)}{'growth':>11}  {'target':<26} "
          f"issue before (200k / 2M)")
    results = []
    for name in names:
        action = ACTIONS[name]
        figures = [action.measure(case) for case in cases]
        ours, theirs = [f[0] for f in figures], [f[1] for f in figures]
        print(f"{action.title:<44} {row(ours)}  {action.target:<26} {action.before}", flush=True)
        for size, figure in zip(sizes, ours, strict=True):
            if figure.note:
                print(f"    {size}: {figure.note}")
        if all(figure is not None for figure in theirs):
            known = [figure for figure in theirs if figure is not None]
            print(f"    {'zarr-python, one run':<40} {row(known)}", flush=True)
            for size, figure in zip(sizes, known, strict=True):
                print(f"        {size}: {figure.note}")
        results.append({"action": name, "title": action.title, "target": action.target, "before": action.before,
                        "figures": {size: asdict(f) for size, f in zip(sizes, ours, strict=True)},
                        "zarr_python": {size: asdict(f) for size, f in zip(sizes, theirs, strict=True)
                                        if f is not None}})
    if args.json:
        args.json.write_text(json.dumps({"sizes": sizes, "repeat": args.repeat, "cold": args.cold,
                                         "results": results}, indent=2))
    return 0


def row(figures: list[Figure]) -> str:
    """The figures of the sizes in columns, then the growth from the first to the last."""
    return "".join(f"{figure.text():<38}" for figure in figures) + f"{growths(figures):>11}"


if __name__ == "__main__":
    sys.exit(main())
