"""A pytest plugin: a test stuck past its own timeout is ended with every thread's stack on record.

pytest-timeout cannot end every hang: a deadlock holding the GIL, or a Qt event loop (a modal
dialog's exec()) that swallows the exception its signal raises. faulthandler's C watchdog can; it
writes the stacks and ends the process. Under pytest-xdist that process is a worker whose stderr
dies with it ("worker crashed", nothing more), so each process writes to a file of its own in a
folder the controller made, and the controller prints the files a stuck test left in its summary.
"""

from __future__ import annotations

import faulthandler
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

#: how long after its own pytest-timeout a test counts as stuck
MARGIN_ENV, DEFAULT_MARGIN_S = "ECPFS_TEST_STUCK_MARGIN_S", 220.0
_FOLDER_ENV = "ECPFS_TEST_STUCK_DIR"
_HEADER = "the process ended while this ran"
_report: IO[str] | None = None


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller, or a run without xdist: workers inherit it
        os.environ[_FOLDER_ENV] = tempfile.mkdtemp(prefix="ecpfs-stuck-")


def _report_file() -> IO[str]:
    global _report
    if _report is None:
        folder = Path(os.environ.get(_FOLDER_ENV) or tempfile.mkdtemp(prefix="ecpfs-stuck-"))
        name = f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-{os.getpid()}.txt"
        _report = open(folder / name, "w+")  # noqa: SIM115 -- open for the watchdog as long as the process
        # a crash (a segmentation fault in Qt) writes its stacks there too, after pytest's own
        # faulthandler set-up, which writes to the stderr xdist loses
        faulthandler.enable(file=_report, all_threads=True)
    return _report


def arm(seconds: float, what: str) -> None:
    """End this process with every thread's stack in its report if it is still running in
    seconds (what: the first line of the report, naming what was stuck); replaces the last arm."""
    report = _report_file()
    report.seek(0)
    report.truncate()
    report.write(f"{what}: {_HEADER} (the watchdog ends it at {seconds:.0f} s, or a fatal signal did), "
                 "what ended it and every thread's stack:\n")
    report.flush()
    faulthandler.dump_traceback_later(seconds, exit=True, file=report)


def disarm() -> None:
    faulthandler.cancel_dump_traceback_later()
    report = _report_file()
    report.seek(0)
    report.truncate()


@pytest.fixture(autouse=True)
def stuck_watchdog(request: pytest.FixtureRequest) -> Iterator[None]:
    marker = request.node.get_closest_marker("timeout")
    own = float(marker.args[0]) if marker and marker.args else float(request.config.getini("timeout") or 180)
    arm(own + float(os.environ.get(MARGIN_ENV, DEFAULT_MARGIN_S)), request.node.nodeid)
    yield
    disarm()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    folder = os.environ.get(_FOLDER_ENV)
    if hasattr(config, "workerinput") or not folder or not Path(folder).is_dir():
        return
    for stuck in sorted(Path(folder).glob("*.txt")):
        text = stuck.read_text(errors="replace")
        if _HEADER in text and "Thread" in text:  # a stack was written: this process was ended
            terminalreporter.section(f"stuck test in {stuck.stem}", sep="=", red=True)
            terminalreporter.write_line(text[-20_000:])


def pytest_unconfigure(config: pytest.Config) -> None:
    global _report
    if _report is not None:
        faulthandler.cancel_dump_traceback_later()
        faulthandler.disable()
        _report.close()
        _report = None
    folder = os.environ.get(_FOLDER_ENV)
    if not hasattr(config, "workerinput") and folder:
        shutil.rmtree(folder, ignore_errors=True)
