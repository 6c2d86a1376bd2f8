"""scripts/dev.py, the test command: which legs it runs, which Pythons it finds, what each leg installs."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from script_modules import load_script

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dev():
    return load_script("dev")


def test_finds_a_python_of_the_version_asked_and_none_of_one_that_does_not_exist(dev):
    here = sys.version_info[:2]
    found = dev.find_python(here)
    assert found is not None and dev.python_version(found) == here
    assert dev.find_python((3, 99)) is None


def test_ci_runs_both_legs_and_a_plain_run_one(dev, monkeypatch):
    if dev.find_python(dev.NEWEST_PYTHON) is None or dev.find_python(dev.LOWEST_PYTHON) is None:
        pytest.skip("this machine lacks Python 3.13 or 3.11: the matrix has one leg here")
    monkeypatch.setenv("CI", "true")
    assert [env.name for env, _ in dev.test_legs(None)] == ["newest", "lowest"]
    monkeypatch.delenv("CI")
    assert [env.name for env, _ in dev.test_legs(None)] == ["newest"]
    assert [env.name for env, _ in dev.test_legs("lowest")] == ["lowest"]


def test_a_missing_newest_python_is_said_and_the_lowest_leg_runs(dev, monkeypatch, capsys):
    real = dev.find_python
    monkeypatch.setattr(dev, "find_python", lambda version: None if version == dev.NEWEST_PYTHON else real(version))
    monkeypatch.delenv("CI", raising=False)
    legs = [env.name for env, _ in dev.test_legs(None)]
    assert "no Python 3.13 found" in capsys.readouterr().out
    assert legs == (["lowest"] if real(dev.LOWEST_PYTHON) else [])


def test_each_leg_has_its_folder_and_resolution_and_run_installs_no_test_tools(dev):
    folders = {env.folder.name for env in (dev.RUN_ENV, dev.NEWEST_ENV, dev.LOWEST_ENV)}
    assert folders == {".venv", ".venv-newest", ".venv-lowest"}
    assert dev.LOWEST_ENV.install[-2:] == ("--resolution", "lowest-direct")
    assert "--group" not in dev.RUN_ENV.install and dev.RUN_ENV.install == ("-e", ".[remote]")


def test_the_first_leg_starts_while_a_later_legs_environment_is_still_installing(dev, monkeypatch, capsys):
    """uv's installs stand in for by one that holds the lowest leg's until told: the newest leg's
    Python comes at once, what the lowest install says is kept until its leg asks for it."""
    lowest_may_finish = threading.Event()

    def install(env, interpreter, lint=False, tell=None):
        tell(f"Creating the {env.name} environment (lint {lint})")
        if env is dev.LOWEST_ENV:
            assert lowest_may_finish.wait(60)
        return Path(f"/{env.name}/bin/python")

    monkeypatch.setattr(dev, "ensure_uv", lambda: Path("uv"))
    monkeypatch.setattr(dev, "ensure_azurite", lambda: None)
    monkeypatch.setattr(dev, "ensure_environment", install)
    installs = dev.Installs([(dev.NEWEST_ENV, "python3.13"), (dev.LOWEST_ENV, "python3.11")], dev.NEWEST_ENV)
    try:
        assert installs.python(0) == Path("/newest/bin/python")
        assert capsys.readouterr().out == "Creating the newest environment (lint True)\n"
        assert not installs.pythons[1].done()
        lowest_may_finish.set()
        assert installs.python(1) == Path("/lowest/bin/python")
        assert capsys.readouterr().out == "Creating the lowest environment (lint False)\n"
    finally:
        lowest_may_finish.set()
        installs.pool.shutdown()


@pytest.fixture
def ram(dev, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in RAM filesystem (the leg folders' first choice) and 64 GiB of memory available."""
    folder = tmp_path / "shm"
    folder.mkdir()
    monkeypatch.setattr(dev, "RAM_FOLDERS", (folder,))
    monkeypatch.setattr(dev, "available_memory", lambda: 64 << 30)
    monkeypatch.setattr(dev, "LEG_BYTES", 1 << 20)  # the stand-in's disk has room for that
    return folder


def test_each_leg_keeps_its_test_files_in_a_folder_of_its_own_in_memory(dev, ram):
    """Not pytest's shared numbered folders, whose oldest every later session deletes (the lowest
    leg deleted the newest leg's files, and a nested pytest did at its exit): one folder per leg,
    given to pytest, which empties it when the leg starts; in memory when there is room (600,000
    files a leg), the folder named after this checkout and marked with its path."""
    newest, lowest = dev.leg_basetemp(dev.NEWEST_ENV), dev.leg_basetemp(dev.LOWEST_ENV)
    assert newest != lowest and newest.parent == lowest.parent and newest.parent.is_dir()  # pytest makes only the last
    assert newest.parent.parent == ram and newest.parent.name.startswith(dev.RAM_PREFIX)
    assert (newest.parent / dev.CHECKOUT_MARK).read_text() == str(ROOT)
    command = dev.pytest_command(Path(sys.executable), ["-k", "x"], newest)
    assert f"--basetemp={newest}" in command and command.index(f"--basetemp={newest}") < command.index("-k")
    assert not any(arg.startswith("--basetemp") for arg in dev.pytest_command(Path(sys.executable), []))


@pytest.mark.parametrize("short", ["memory", "ram-folder"])
def test_without_room_in_memory_the_legs_files_go_to_the_checkout(dev, ram, monkeypatch, short):
    """Less than twice a leg's files in memory still available, or a RAM filesystem too small: the
    checkout's git-ignored .pytest-tmp (a clean clone has none to delete first)."""
    if short == "memory":
        monkeypatch.setattr(dev, "available_memory", lambda: dev.LEG_BYTES)
    else:
        monkeypatch.setattr(dev, "LEG_BYTES", 1 << 60)
        monkeypatch.setattr(dev, "available_memory", lambda: 1 << 62)
    newest = dev.leg_basetemp(dev.NEWEST_ENV)
    assert newest == ROOT / ".pytest-tmp" / "newest" and newest.parent.is_dir()
    assert ".pytest-tmp/" in (ROOT / ".gitignore").read_text().splitlines()
    assert list(ram.iterdir()) == []


def test_a_passed_legs_files_leave_memory_and_a_failed_legs_stay_for_a_look(dev, ram, capsys):
    passed, failed = dev.leg_basetemp(dev.NEWEST_ENV), dev.leg_basetemp(dev.LOWEST_ENV)
    for folder in (passed, failed):
        (folder / "popen-gw0").mkdir(parents=True)
        (folder / "popen-gw0" / "file").write_text("x")
    dev.end_leg_files(passed, passed=True)
    dev.end_leg_files(failed, passed=False)
    assert not passed.exists() and (failed / "popen-gw0" / "file").exists()
    said = f"{failed}: this leg's test files, in memory until the next run empties the folder\n"
    assert capsys.readouterr().out == said
    on_disk = ROOT / ".pytest-tmp" / "newest"
    dev.end_leg_files(on_disk, passed=True)  # a leg's folder in the checkout is pytest's to empty
    assert on_disk.parent.is_dir()


def test_the_folders_in_memory_of_checkouts_that_are_gone_are_removed(dev, ram, tmp_path):
    """A failed leg's files in memory would stay until a reboot once its checkout is deleted (a CI
    clone): the next run of any checkout removes them; a live checkout's and unmarked folders stay."""
    gone, live, unmarked = (ram / f"{dev.RAM_PREFIX}{name}" for name in ("gone", "live", "unmarked"))
    for folder in (gone, live, unmarked):
        (folder / "lowest").mkdir(parents=True)
    (gone / dev.CHECKOUT_MARK).write_text(str(tmp_path / "deleted-clone"))
    (live / dev.CHECKOUT_MARK).write_text(str(tmp_path))
    dev.remove_stale_ram_folders()
    assert sorted(p.name for p in ram.iterdir()) == sorted([live.name, unmarked.name])


def test_unknown_leg_is_refused():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "dev.py"), "test", "--leg", "middle"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--leg takes newest, lowest, py312 or all" in done.stdout


def test_the_py312_leg_runs_when_asked_and_never_by_default(dev, monkeypatch, capsys):
    """Python 3.12 is supported (README) but not in CI's matrix: `--leg py312` runs it, with the
    newest releases in a folder of its own; neither CI nor a plain run nor `all` includes it."""
    assert dev.PY312_ENV.folder.name == ".venv-py312"
    assert dev.PY312_ENV.install == (*dev.TEST_INSTALL, "--resolution", "highest") == dev.NEWEST_ENV.install
    assert dev.PY312_PYTHON == (3, 12) and dev.LOWEST_PYTHON < dev.PY312_PYTHON < dev.NEWEST_PYTHON
    for ci in ("true", ""):
        monkeypatch.setenv("CI", ci)
        for choice in (None, "all", "newest", "lowest"):
            assert "py312" not in [env.name for env, _ in dev.test_legs(choice)]
    legs = dev.test_legs("py312")
    if dev.find_python(dev.PY312_PYTHON) is None:
        assert legs == [] and "no Python 3.12 found" in capsys.readouterr().out
    else:
        [(env, interpreter)] = legs
        assert env is dev.PY312_ENV and dev.python_version(interpreter) == (3, 12)


def test_a_missing_python_312_is_said_and_nothing_runs(dev, monkeypatch, capsys):
    monkeypatch.setattr(dev, "find_python", lambda version: None)
    assert dev.test_legs("py312") == []
    assert "no Python 3.12 found" in capsys.readouterr().out


def test_the_matrix_covers_every_python_the_package_and_the_readme_support(dev):
    """The support policy (README), the classifiers, requires-python and the legs name the same Pythons."""
    import re
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    classified = {tuple(map(int, c.rsplit(" ", 1)[1].split("."))) for c in project["classifiers"]
                  if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)}
    legs = {dev.NEWEST_PYTHON, dev.LOWEST_PYTHON, dev.PY312_PYTHON}
    assert classified == legs
    assert project["requires-python"] == ">={}.{}".format(*dev.LOWEST_PYTHON) and min(legs) == dev.LOWEST_PYTHON
    row = re.search(r"^\| Python \| ([^|]+) \|", (ROOT / "README.md").read_text(), re.MULTILINE)
    assert row is not None
    assert {tuple(map(int, v.split("."))) for v in re.findall(r"3\.\d+", row.group(1))} == legs



_WORKER_PROBE = '''
import os
from pathlib import Path

import pytest

OUT = Path(__file__).parent / "ran"


def record(name):
    (OUT / name).write_text(os.environ.get("PYTEST_XDIST_WORKER", "main") + " " + str(os.getpid()))


@pytest.mark.parametrize("number", range(12))
def test_probe(number):
    record(f"probe-{number}")
'''


#: a nested run must end (or be ended, with what it printed) well before this test's own timeout
NESTED_RUN_S = 120


#: what a nested run keeps of this process's environment
_PLAIN_ENV = {"PATH", "HOME", "LANG", "TMPDIR", "TERM", "USER", "LOGNAME", "CI"}


#: the last line pytest prints: "==== 12 passed in 1.08s ===="
_SUMMARY = re.compile(r"^=+ (?P<counts>.+) in [\d.]+s(?: \([\d:]+\))? =+$", re.MULTILINE)
#: how long a nested run may take to exit once it printed that line
EXIT_GRACE_S = 15


def _wait_for_the_end(process: subprocess.Popen[str], out: Path, grace_s: float = EXIT_GRACE_S) -> int | None:
    """The nested run's exit status; None past NESTED_RUN_S. A run that printed its summary and then
    did not exit within EXIT_GRACE_S (twice in CI's lowest leg, pytest 8.0 with xdist 3.6, nested in a
    busy worker; never alone) is given its status from that summary, once faulthandler has written
    its stacks (SIGABRT), which the test prints: the probes ask what the run did, not how it exits."""
    deadline, summarised = time.monotonic() + NESTED_RUN_S, None
    while (code := process.poll()) is None:
        now = time.monotonic()
        if summarised is None and _SUMMARY.search(out.read_text(errors="replace")):
            summarised = now
        if now > deadline:
            break
        if summarised is not None and now - summarised > grace_s:
            process.send_signal(signal.SIGABRT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
            counts = _SUMMARY.search(out.read_text(errors="replace"))
            return 1 if counts is None or re.search(r"failed|error", counts["counts"]) else 0
        time.sleep(0.2)
    if code is None:
        process.send_signal(signal.SIGABRT)  # faulthandler: the stacks of the controller's threads
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=10)
    return code


def _nested_pytest(dev, folder: Path, argv: list[str],
                   env_add: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """dev.pytest_command on a folder of probe tests, as a leg runs it, but loading only the plugins
    the probes use (xdist, timeout): a worker that imports every installed plugin (hypothesis, zarr,
    pytest-qt) costs seconds of CPU, and the suite around it is using every CPU. Past NESTED_RUN_S it
    is killed and what it printed so far fails the test."""
    (folder / "pytest.ini").write_text("[pytest]\n")  # not the checkout's configuration
    # its own temporary folder: in pytest's shared ones, a session deletes the oldest at its exit (an
    # earlier leg's gigabyte of files), which held this run minutes after its summary
    command = dev.pytest_command(Path(sys.executable), ["-p", "no:cacheprovider", "-p", "xdist.plugin",
                                                        "-p", "pytest_timeout", *argv, str(folder)],
                                 basetemp=folder.with_name(folder.name + "-basetemp"))
    # a plain environment, not the worker's (its xdist ids, and whatever the tests before this one set
    # for the session: the emulators' credentials, the watchdog's folder); faulthandler on, so that a
    # run ended for its time writes every thread's stack first
    env = {key: value for key, value in os.environ.items() if key in _PLAIN_ENV or key.startswith("LC_")}
    env |= {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONFAULTHANDLER": "1", **(env_add or {})}
    # its output to files, not pipes: a pipe's reader waits for every process holding it, and an
    # xdist worker outliving its controller (seen in CI under the suite's load) kept one open; the
    # run is a process group of its own, ended whole once its controller is done
    out, err = folder / "nested.out", folder / "nested.err"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(command, cwd=folder, env=env, stdout=stdout, stderr=stderr, text=True,
                                   start_new_session=True)
        try:
            code = _wait_for_the_end(process, out)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    printed = out.read_text(errors="replace"), err.read_text(errors="replace")
    if code is not None and process.returncode == -signal.SIGABRT:
        print("the nested pytest did not exit after its summary; its stacks:\n" + printed[1][-4000:])
    if code is None:
        pytest.fail(f"the nested pytest ran past {NESTED_RUN_S} s; it printed:\n{printed[0][-4000:]}\n"
                    f"{printed[1][-4000:]}")
    return subprocess.CompletedProcess(command, code, *printed)


def _run_probe(dev, folder: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    """The suite's pytest command (dev.pytest_command) on a probe file of twelve tests: the output
    and, per test, the worker (and process) that ran it."""
    (folder / "ran").mkdir(exist_ok=True)
    for old in (folder / "ran").iterdir():
        old.unlink()
    (folder / "test_probe.py").write_text(_WORKER_PROBE)
    done = _nested_pytest(dev, folder, list(argv))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done, {path.name: path.read_text() for path in (folder / "ran").iterdir()}


def test_the_suite_runs_in_worker_processes_and_prints_the_ten_slowest(dev, tmp_path):
    done, ran = _run_probe(dev, tmp_path)
    assert len(ran) == 12
    assert all(where.startswith("gw") for where in ran.values())  # xdist workers, not the main process
    assert "slowest 10 durations" in done.stdout
    if (os.cpu_count() or 1) > 1:
        assert len({where.split()[0] for where in ran.values()}) > 1  # more than one of them


def test_arguments_given_to_the_test_command_win_over_the_parallel_options(dev, tmp_path):
    _done, ran = _run_probe(dev, tmp_path, "-n", "0")
    assert len(ran) == 12 and {where.split()[0] for where in ran.values()} == {"main"}


def test_the_long_runs_start_the_first_workers_share_and_the_waiting_ones_the_seconds(request):
    """tests/conftest.py orders what this run collected: every test marked long first, and with
    more than one xdist worker every test marked waits from the first index of the second
    worker's share (worksteal's first split: len // workers each), the rest in between and after."""
    items = request.session.items
    kinds = [0 if item.get_closest_marker("long") else 1 if item.get_closest_marker("waits") else 2
             for item in items]
    long, waiting = kinds.count(0), kinds.count(1)
    assert kinds[:long] == [0] * long
    workers = int(getattr(request.config, "workerinput", {}).get("workercount", 1))
    start = len(items) // workers if workers > 1 and len(items) // workers > long else long
    assert kinds[start:start + waiting] == [1] * waiting
    collected = {item.path.name for item in items}
    marked = {item.path.name for item in items if item.get_closest_marker("long")}
    assert {"test_soak.py", "test_monkey.py", "test_fuzz_truth.py"} & collected <= marked
    should_wait = [item for item in items if item.name.startswith("test_every_command_on_a_hostile_server")
                   or item.path.name in {"test_remote_pages.py", "test_remote_recovery.py"}]
    assert all(item.get_closest_marker("waits") for item in should_wait)


_STUCK_PROBE = '''
import signal
import time

import pytest


@pytest.mark.timeout(1)
def test_stuck_where_pytest_timeout_cannot_reach():
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})  # pytest-timeout's signal never arrives
    time.sleep(60)


def test_crashes():
    import ctypes
    ctypes.string_at(0)  # a segmentation fault, as a Qt object deleted under its wrapper gives
'''


def test_a_stuck_or_crashed_test_shows_where_in_the_summary(dev, tmp_path):
    """tests/stuck_watchdog.py: past its own timeout plus a margin, the watchdog ends the worker; a
    segmentation fault ends another; the controller prints the stacks each worker wrote (xdist alone
    says only "worker crashed")."""
    (tmp_path / "test_stuck.py").write_text(_STUCK_PROBE)
    done = _nested_pytest(dev, tmp_path, ["-p", "stuck_watchdog"], env_add={
        "ECPFS_TEST_STUCK_MARGIN_S": "1", "PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), str(ROOT)])})
    assert done.returncode != 0
    assert "crashed while running 'test_stuck.py::test_stuck_where_pytest_timeout_cannot_reach'" in done.stdout
    sections = {part.split(": the process", 1)[0].rsplit("\n", 1)[-1]: part
                for part in done.stdout.split("stuck test in gw")[1:]}
    stuck = sections.get("test_stuck.py::test_stuck_where_pytest_timeout_cannot_reach")
    assert stuck is not None, done.stdout[-3000:]
    assert "(the watchdog ends it at 2 s, or a fatal signal did)" in stuck and "Timeout (0:00:02)!" in stuck
    assert 'test_stuck.py", line 11 in test_stuck_where_pytest_timeout_cannot_reach' in stuck
    crashed = sections.get("test_stuck.py::test_crashes")
    assert crashed is not None, done.stdout[-3000:]
    assert "Fatal Python error: Segmentation fault" in crashed
    assert 'test_stuck.py", line 16 in test_crashes' in crashed


@pytest.mark.parametrize(("files", "cpus"), [
    ({"cpu.max": "200000 100000\n"}, 2.0),                       # cgroup v2, two CPUs granted
    ({"cpu.max": "max 100000\n"}, None),                         # v2 without a quota
    ({"cpu/cpu.cfs_quota_us": "150000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 1.5),  # v1
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),     # v1 without
    ({}, None),                                                  # no cgroup files at all
])
def test_a_cgroup_quota_caps_the_cpus_the_workers_are_counted_for(dev, tmp_path, files, cpus):
    """A container that shows the host's CPUs but grants two gets workers for two, not for the host."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert dev.cgroup_cpu_quota(tmp_path) == cpus


def test_the_suite_may_keep_its_rewritten_test_modules(dev, monkeypatch):
    """pytest keeps assertion-rewritten test modules only where bytecode may be written: a leg runs
    with PYTHONDONTWRITEBYTECODE dropped, whatever the machine sets, and nothing else changed."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setenv("ECPFS_SOME_SETTING", "kept")
    env = dev.test_environment()
    assert "PYTHONDONTWRITEBYTECODE" not in env and env["ECPFS_SOME_SETTING"] == "kept"


@pytest.mark.parametrize(("summary", "code"), [("12 passed in 1.08s", 0), ("1 failed, 11 passed in 2.00s", 1)])
def test_a_nested_run_that_hangs_after_its_summary_is_judged_by_it_with_its_stacks(tmp_path, summary, code):
    out = tmp_path / "out"
    hang = f"import time; print('{'=' * 10} {summary} {'=' * 10}', flush=True); time.sleep(60)"
    with out.open("w") as stdout:
        process = subprocess.Popen([sys.executable, "-c", hang], stdout=stdout, stderr=subprocess.PIPE, text=True,
                                   env={**os.environ, "PYTHONFAULTHANDLER": "1"})
        assert _wait_for_the_end(process, out, grace_s=0.5) == code
        assert process.returncode == -signal.SIGABRT
        assert "Fatal Python error: Aborted" in process.stderr.read()
