#!/usr/bin/env python3
"""Set up private virtual environments and run ecpfs-viewer or its tests.

Needs only python3 (>= 3.11). Usage:
    python3 scripts/dev.py run [ecpfs-viewer arguments]   # GUI on the demo index by default
    python3 scripts/dev.py test                           # static checks, then the whole suite on one leg
                                                          # (in parallel: two pytest-xdist workers per CPU)
    CI=true python3 scripts/dev.py test                   # ... on both legs, newest and lowest
    python3 scripts/dev.py test --leg lowest|newest|all   # choose the legs yourself (all: CI's two)
    python3 scripts/dev.py test --leg py312               # the newest releases on Python 3.12 (not in CI)
    python3 scripts/dev.py test [pytest arguments]        # only the tests named (no static checks)
    python3 scripts/dev.py check                          # only the static checks
    python3 scripts/dev.py setup                          # only create the environments

The legs of the test matrix, each in its own folder beside this checkout:
    .venv-newest  Python 3.13 (python3.13 on PATH or under pyenv), the newest releases of everything
    .venv-lowest  Python 3.11, every direct dependency at the lower bound pyproject.toml declares
    .venv-py312   Python 3.12, the newest releases (only when asked: --leg py312)
`run` uses .venv (the application and its `remote` extra, nothing else). Every folder is rebuilt
from scratch when pyproject.toml (or the way it is installed) changes. uv does the installing:
it is installed from PyPI into .venv-uv first. Azurite (the Azure Blob emulator the az://
tests run against) is installed with npm into .venv-azurite, when npm is there.
"""
from __future__ import annotations

import glob
import hashlib
import io
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import venv
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parent.parent
UV_VENV = ROOT / ".venv-uv"
UV_REQUIREMENT = "uv>=0.9"  # `uv pip install --group` (PEP 735) and --resolution lowest-direct
STAMP_NAME = ".ecpfs-viewer-installed"
AZURITE_VERSION = "3.37.0"  # the Azure Blob emulator of the az:// tests (tests/cloud_emulators.py)
AZURITE = ROOT / ".venv-azurite"
NEWEST_PYTHON = (3, 13)
LOWEST_PYTHON = (3, 11)  # requires-python's lower bound
#: supported (the README's support policy) but run only when asked: a third leg of the whole suite
#: would take CI past its time budget
PY312_PYTHON = (3, 12)


@dataclass(frozen=True)
class Environment:
    """One virtual environment: where, from which Python, and what `uv pip install` puts in it."""

    name: str
    folder: Path
    install: tuple[str, ...]  # arguments after `uv pip install --python ...`

    @property
    def python(self) -> Path:
        return self.folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


RUN_ENV = Environment("run", ROOT / ".venv", ("-e", ".[remote]"))
TEST_INSTALL = ("-e", ".[remote,scale,fsspec,layout]", "--group", "test")
NEWEST_ENV = Environment("newest", ROOT / ".venv-newest", (*TEST_INSTALL, "--resolution", "highest"))
LOWEST_ENV = Environment("lowest", ROOT / ".venv-lowest", (*TEST_INSTALL, "--resolution", "lowest-direct"))
PY312_ENV = Environment("py312", ROOT / ".venv-py312", (*TEST_INSTALL, "--resolution", "highest"))


def bin_path(folder: Path, name: str) -> Path:
    return folder / ("Scripts" if os.name == "nt" else "bin") / (name + (".exe" if os.name == "nt" else ""))


def python_version(executable: str) -> tuple[int, int] | None:
    """The (major, minor) of an interpreter that runs, or None (a pyenv shim of a version not selected fails)."""
    try:
        done = subprocess.run([executable, "-c", "import sys; print(*sys.version_info[:2])"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    try:
        major, minor = map(int, done.stdout.split())
    except ValueError:
        return None
    return (major, minor)


def find_python(version: tuple[int, int]) -> str | None:
    """An interpreter of that version: this one, `pythonX.Y` on PATH, or the newest pyenv build of it."""
    dotted = f"{version[0]}.{version[1]}"
    candidates = [sys.executable] if sys.version_info[:2] == version else []
    candidates += [p for p in (shutil.which(f"python{dotted}"),) if p]
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    builds = glob.glob(str(pyenv_root / "versions" / f"{dotted}.*" / "bin" / f"python{dotted}"))
    candidates += sorted(builds, key=lambda p: [int(x) if x.isdigit() else 0 for x in Path(p).parts[-3].split(".")],
                         reverse=True)
    return next((c for c in candidates if python_version(c) == version), None)


def ensure_uv() -> Path:
    """uv in its own bootstrap environment (.venv-uv), installed from PyPI with pip on first use."""
    uv = bin_path(UV_VENV, "uv")
    if not uv.exists():
        print(f"Installing uv into {UV_VENV} ...", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(UV_VENV)
        subprocess.run([str(bin_path(UV_VENV, "python")), "-m", "pip", "install", "--quiet",
                        "--disable-pip-version-check", UV_REQUIREMENT], check=True)
    return uv


#: compiled at install, as pip does: with PYTHONDONTWRITEBYTECODE set (as on some machines and CI
#: images) every process would otherwise compile zarr, numpy and the rest from source at import
INSTALL_OPTIONS = ("--compile-bytecode",)


def say(line: str) -> None:
    print(line, flush=True)


def ensure_environment(env: Environment, interpreter: str, lint: bool = False,
                       tell: Callable[[str], None] = say) -> Path:
    """Create env from interpreter and install into it, from scratch when pyproject.toml or the
    install command changed since the last time (so a lowest leg never keeps newer releases).
    lint: the static checkers (the lint group) are needed there too; an environment that has
    them serves a run that does not need them as it is. tell: where the line saying so goes."""
    stamp = env.folder / STAMP_NAME
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()
                            + json.dumps([interpreter, *env.install, *INSTALL_OPTIONS]).encode()).hexdigest()
    try:
        installed = json.loads(stamp.read_text())
    except (OSError, ValueError):
        installed = {}
    if env.python.exists() and installed.get("hash") == wanted and (installed.get("lint") or not lint):
        return env.python
    uv = ensure_uv()
    tell(f"Creating the {env.name} environment in {env.folder} (Python {interpreter}) ...")
    # copies, not links, of the interpreter: the tests run it as another user (uid 65534), who may
    # not be allowed into the folder a linked interpreter lives in (pyenv's under /root)
    copies = ["--copies"] if os.name == "posix" else []
    subprocess.run([interpreter, "-m", "venv", "--clear", *copies, str(env.folder)], check=True)
    # uv ignores pip's configuration (here a constraints file), so installs resolve the same everywhere
    install = [*env.install, *(["--group", "lint"] if lint else [])]
    subprocess.run([str(uv), "pip", "install", "--quiet", *INSTALL_OPTIONS, "--python", str(env.python), *install],
                   check=True, cwd=ROOT)
    stamp.write_text(json.dumps({"hash": wanted, "lint": lint}))
    return env.python


def compile_project(python: Path) -> None:
    """Byte-compile the project's own modules for this interpreter (only what changed), as an
    install does: it is installed editable, so INSTALL_OPTIONS does not reach it."""
    subprocess.run([str(python), "-m", "compileall", "-q", "ecpfs_viewer"], check=False, cwd=ROOT,
                   stdout=subprocess.DEVNULL)


def test_environment() -> dict[str, str]:
    """The environment pytest runs in: this one, but bytecode may be written. With
    PYTHONDONTWRITEBYTECODE set (as on this project's machines and many CI images) pytest keeps no
    assertion-rewritten test module, so every xdist worker rewrote and compiled all of them again
    (three times the CPU of a collection that reads them back), and so did every run after it."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def print_versions(env: Environment) -> None:
    """The versions a leg resolved for the dependencies that matter most, on one line."""
    names = ["zarr", "numpy", "numcodecs", "PySide6-Essentials", "pyqtgraph", "obstore"]
    code = ("import importlib.metadata as m, sys; "
            f"print('Python %d.%d.%d' % sys.version_info[:3], *[n + ' ' + m.version(n) for n in {names!r}], sep=', ')")
    subprocess.call([str(env.python), "-c", code], cwd=ROOT)


def azurite_version() -> str | None:
    """The Azurite version installed in .venv-azurite, or None."""
    try:
        manifest = json.loads((AZURITE / "node_modules" / "azurite" / "package.json").read_text())
    except (OSError, ValueError):
        return None
    return str(manifest.get("version"))


def ensure_azurite() -> None:
    """npm-install the pinned Azurite into .venv-azurite when it is missing or another version;
    without npm (or offline) say so and go on: the az:// tests then skip (and fail in CI)."""
    if azurite_version() == AZURITE_VERSION:
        return
    npm = shutil.which("npm")
    if npm is None:
        print("note: npm not found; the az:// tests need Azurite (install Node.js and npm, then run "
              "python3 scripts/dev.py setup)", flush=True)
        return
    print(f"Installing Azurite {AZURITE_VERSION} (the Azure Blob emulator for the tests) into {AZURITE} ...",
          flush=True)
    AZURITE.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([npm, "install", "--prefer-offline", "--prefix", str(AZURITE), "--no-audit", "--no-fund",
                           "--loglevel=error", f"azurite@{AZURITE_VERSION}"], check=False)
    if done.returncode or azurite_version() != AZURITE_VERSION:
        print(f"note: npm could not install Azurite (exit {done.returncode}); the az:// tests need it",
              flush=True)


def static_checks(python: Path, out: TextIO | None = None) -> int:
    """ruff, the import contracts and mypy (strict on the model), stopping at the first failure.
    out: where their output goes (kept while the tests run), instead of straight to the terminal."""
    steps = [
        ("ruff", [str(python), "-m", "ruff", "check", "."]),
        ("import contracts", [str(bin_path(python.parent.parent, "lint-imports"))]),
        ("mypy", [str(python), "-m", "mypy"]),
    ]
    for name, command in steps:
        print(f"== {name}", file=out, flush=True)
        if out is not None:
            done = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  check=False)
            out.write(done.stdout)
            code = done.returncode
        else:
            code = subprocess.call(command, cwd=ROOT)
        if code:
            print(f"== {name} failed (exit {code})", file=out, flush=True)
            return code
    return 0


class StaticChecks:
    """static_checks in a thread of its own, its output kept: the checks run while the first leg's
    tests do (they need one CPU for a few seconds, the tests leave one idle now and then)."""

    def __init__(self, python: Path) -> None:
        self.started = time.monotonic()
        self.output = io.StringIO()
        self.code = 1
        self.seconds = 0.0
        self.thread = threading.Thread(target=self._run, args=(python,), name="static checks")
        self.thread.start()

    def _run(self, python: Path) -> None:
        self.code = static_checks(python, self.output)
        self.seconds = time.monotonic() - self.started

    def report(self) -> tuple[str, int, float]:
        """Wait for the checks, print what they printed; (name, exit code, seconds) for the summary."""
        self.thread.join()
        print(self.output.getvalue(), end="", flush=True)
        return "static checks", self.code, self.seconds


def run_forwarding_signals(command: list[str]) -> int:
    """Run a child and pass SIGTERM/SIGINT on to it, so killing dev.py also ends the GUI."""
    child = subprocess.Popen(command, cwd=ROOT)

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, forward)
    return child.wait()


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def test_legs(choice: str | None) -> list[tuple[Environment, str]]:
    """The legs to run with their interpreters. Default: both in CI, else the newest alone (the
    lowest where no Python 3.13 exists); py312 only when chosen. A leg without its Python is said
    and left out."""
    choice = choice or ("all" if in_ci() else "newest")
    if choice == "py312":
        middle = find_python(PY312_PYTHON)
        if middle is None:
            print("note: no Python 3.12 found (python3.12 on PATH or under pyenv): the py312 leg is skipped",
                  flush=True)
            return []
        return [(PY312_ENV, middle)]
    newest, lowest = find_python(NEWEST_PYTHON), find_python(LOWEST_PYTHON)
    legs: list[tuple[Environment, str]] = []
    if choice in ("newest", "all"):
        if newest is None:
            print("note: no Python 3.13 found (python3.13 on PATH or under pyenv): the newest leg is skipped",
                  flush=True)
        else:
            legs.append((NEWEST_ENV, newest))
    if choice in ("lowest", "all") or (choice == "newest" and newest is None):
        if lowest is None:
            print("note: no Python 3.11 found (python3.11 on PATH or under pyenv): the lowest leg is skipped",
                  flush=True)
        else:
            legs.append((LOWEST_ENV, lowest))
    return legs


def cgroup_cpu_quota(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The CPUs a cgroup quota grants (cgroup v2 cpu.max, v1 cpu.cfs_quota_us), None without one."""
    for quota_file, period_file in (("cpu.max", None), ("cpu/cpu.cfs_quota_us", "cpu/cpu.cfs_period_us")):
        try:
            fields = (root / quota_file).read_text().split()
            if period_file is not None:
                fields.append((root / period_file).read_text().strip())
        except (OSError, IndexError):
            continue
        if len(fields) == 2 and fields[0] not in ("max", "-1") and float(fields[1]) > 0:
            return float(fields[0]) / float(fields[1])
    return None


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity, not the machine's count, capped by a cgroup
    quota (a container can see the host's CPUs and be given two)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    return max(1, min(cpus, math.ceil(quota)) if quota is not None else cpus)


#: how pytest runs in every leg: two worker processes per CPU (pytest-xdist), an idle worker taking
#: half of a busy one's queue (--dist worksteal, so all end together), and the ten slowest tests
#: printed at the end. More than one per CPU, because many tests wait rather than compute (loopback
#: servers, emulators, deadlines, subprocesses). With the test files in memory (leg_basetemp), on 2
#: CPUs, 4 workers ran the newest leg in 335 s against 348 s for 3 and the lowest in 339 s against
#: 365 s (3 left 90 CPU-seconds of a leg idle, 4 about 25; 4 cost up to 50 CPU-seconds more, each
#: worker importing, collecting and starting its own emulators). With the files on ext4, 3 had been
#: the faster. Nothing needs a worker of its own: servers listen on ephemeral ports, each worker
#: starts its own emulators, files go to per-test temporary folders. (Not --dist loadgroup: pytest
#: 9.2 silently drops its xdist_group marks, pytest-xdist issue #1386.) Arguments after `test` come
#: later, so they win (`-n 0`: one process).
WORKERS_PER_CPU = 2
PYTEST_OPTIONS = ("-n", str(math.ceil(WORKERS_PER_CPU * usable_cpus())), "--dist", "worksteal", "--durations=10")


def pytest_command(python: Path, argv: list[str], basetemp: Path | None = None) -> list[str]:
    """The pytest command line of a leg: PYTEST_OPTIONS, the leg's temporary folder when given,
    then what the user gave."""
    return [str(python), "-m", "pytest", *PYTEST_OPTIONS, *([f"--basetemp={basetemp}"] if basetemp else []), *argv]


#: RAM filesystems a leg's test files may go to, in order of preference
RAM_FOLDERS: tuple[Path, ...] = (Path("/dev/shm"),)
#: what one leg may write, with room to spare (a lowest leg leaves 2.8 GB in 610,000 files)
LEG_BYTES = 6 << 30
RAM_PREFIX = "ecpfs-viewer-tests-"
CHECKOUT_MARK = "checkout"  # in a RAM folder: the checkout whose legs it holds


def available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes; None where there is none."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            return next(int(line.split()[1]) << 10 for line in meminfo if line.startswith("MemAvailable:"))
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def ram_tests_folder() -> Path | None:
    """This checkout's folder on the first RAM filesystem with room for a leg, when a leg's files take
    at most half the memory still available; None otherwise."""
    memory = available_memory()
    if memory is None or memory // 2 < LEG_BYTES:
        return None
    for ram in RAM_FOLDERS:
        try:
            if os.access(ram, os.W_OK | os.X_OK) and shutil.disk_usage(ram).free >= LEG_BYTES:
                return ram / (RAM_PREFIX + hashlib.sha256(str(ROOT).encode()).hexdigest()[:12])
        except OSError:
            continue
    return None


def leg_basetemp(env: Environment) -> Path:
    """The temporary folder of a leg's tests (pytest empties it when the leg starts; its parent is
    made here). In memory when there is room (ram_tests_folder): a leg makes 600,000 files, which on
    a disk that journals and discards blocks cost it 40 CPU-seconds of kernel time and waits for the
    disk. Else in the checkout (git-ignored). Never pytest's shared numbered folders: every pytest
    session deletes the oldest of those, so the lowest leg spent minutes deleting the newest leg's
    files. Never a fixed folder on disk outside the checkout either: a CI that clones into the same
    path each time had each leg start by deleting the last run's files (62 s here), and ext4 then
    slows the creation of every file for minutes (it passes over inodes freed in the last 60 s)."""
    parent = ram_tests_folder() or ROOT / ".pytest-tmp"
    parent.mkdir(mode=0o700, exist_ok=True)  # pytest makes the leg's folder, not its parent
    if parent.name.startswith(RAM_PREFIX):
        (parent / CHECKOUT_MARK).write_text(str(ROOT))
    return parent / env.name


def remove_stale_ram_folders() -> None:
    """Remove the RAM folders of checkouts that are gone (a failed leg keeps its files for a look;
    in memory they would stay until a reboot)."""
    for ram in RAM_FOLDERS:
        for folder in ram.glob(RAM_PREFIX + "*") if ram.is_dir() else ():
            try:
                checkout = Path((folder / CHECKOUT_MARK).read_text())
            except OSError:
                continue  # not made by this script, or being made
            if not checkout.is_dir():
                shutil.rmtree(folder, ignore_errors=True)


def end_leg_files(basetemp: Path, passed: bool) -> None:
    """A leg's files in memory: removed when it passed, kept (and said where) when it failed."""
    if not basetemp.parent.name.startswith(RAM_PREFIX):
        return
    if passed:
        shutil.rmtree(basetemp, ignore_errors=True)
    else:
        say(f"{basetemp}: this leg's test files, in memory until the next run empties the folder")


class Installs:
    """Each leg's environment (``lint``'s also gets the static checkers) and Azurite, installed side
    by side: uv installs the legs while npm installs the emulator (mostly waiting on I/O). uv is
    bootstrapped first, once, before the installs share it. The first leg waits for its own
    environment and Azurite only: a later leg's install goes on while the first leg's tests run
    (which leave a CPU idle now and then), what it says kept until that leg starts."""

    def __init__(self, legs: list[tuple[Environment, str]], lint: Environment | None) -> None:
        ensure_uv()
        self.pool = ThreadPoolExecutor(max_workers=len(legs) + 1)
        self.azurite = self.pool.submit(ensure_azurite)
        self.said: list[list[str]] = [[] for _ in legs]
        self.pythons = [self.pool.submit(ensure_environment, env, interpreter, env is lint,
                                         say if number == 0 else self.said[number].append)
                        for number, (env, interpreter) in enumerate(legs)]

    def python(self, number: int) -> Path:
        """The Python of leg `number` once it is installed (and Azurite with the first); raises
        what its install raised."""
        if number == 0:
            self.azurite.result()
        python = self.pythons[number].result()
        for line in self.said[number]:
            say(line)
        return python

    def wait(self) -> list[Path]:
        """Every leg's Python, in order, and Azurite installed."""
        try:
            return [self.python(number) for number in range(len(self.pythons))]
        finally:
            self.close()

    def close(self) -> None:
        """Wait for the installs still going (a leg's run failed, or was the last asked for)."""
        self.pool.shutdown()


def run_tests(argv: list[str]) -> int:
    """Static checks once (in the newest environment, also when only the lowest leg runs: its older
    numpy types flag what newer ones allow), then pytest
    in every leg; a summary of each step's exit status and time at the end, non-zero when any failed."""
    choice = None
    if argv[:1] == ["--leg"] and len(argv) > 1:
        choice, argv = argv[1], argv[2:]
        if choice not in ("newest", "lowest", "py312", "all"):
            print(f"--leg takes newest, lowest, py312 or all, not {choice!r}")
            return 2
    legs = test_legs(choice)
    if not legs:
        print("error: no Python to test with")
        return 2
    checks = None if argv else test_legs("newest")[0]  # the newest releases' types, whatever the legs
    remove_stale_ram_folders()
    installs = Installs(legs, None if checks is None else checks[0])
    results = []
    static = None
    try:
        first = installs.python(0)
        if checks is not None:  # run beside the first leg; its output and result are shown after that leg
            python = first if legs[0][0] is checks[0] else ensure_environment(checks[0], checks[1], lint=True)
            static = StaticChecks(python)
        for number, (env, _) in enumerate(legs):
            python = installs.python(number)
            results.append(run_leg(env, python, argv))
            if number == 0 and static is not None:
                results.insert(0, static.report())
    finally:
        installs.close()
    print("== summary", flush=True)
    for name, code, seconds in results:
        label = name if name == "static checks" else f"{name} leg"
        print(f"{label}: {'passed' if code == 0 else f'FAILED (exit {code})'} in {seconds / 60:.1f} min")
    return next((code for _, code, _ in results if code), 0)


def run_leg(env: Environment, python: Path, argv: list[str]) -> tuple[str, int, float]:
    """pytest in one leg's environment: (its name, exit status, seconds)."""
    print(f"== tests, {env.name} leg ({env.folder.name}; {PYTEST_OPTIONS[1]} workers for {usable_cpus()} CPUs)",
          flush=True)
    print_versions(env)
    compile_project(python)
    basetemp = leg_basetemp(env)
    started = time.monotonic()
    code = subprocess.call(pytest_command(python, argv, basetemp), cwd=ROOT, env=test_environment())
    seconds = time.monotonic() - started
    end_leg_files(basetemp, code == 0)
    return env.name, code, seconds


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"run", "test", "check", "setup"}:
        print(__doc__)
        return 2
    command, rest = argv[0], argv[1:]
    if command == "run":
        python = ensure_environment(RUN_ENV, sys.executable)
        compile_project(python)
        return run_forwarding_signals([str(python), "-m", "ecpfs_viewer", *(rest or ["--demo"])])
    if command == "test":
        return run_tests(rest)
    legs = test_legs(None)
    if not legs:
        print("error: no Python to test with")
        return 2
    if command == "check":
        env, interpreter = test_legs("newest")[0]
        return static_checks(ensure_environment(env, interpreter, lint=True))
    Installs(legs, legs[0][0]).wait()  # setup: what `test` would use
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
