"""`ecpfs-viewer --version --verbose`: the versions a bug report needs, read from this interpreter's
installation, and the Qt platform plugin named without loading it."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys

from locations import REPO  # tests/ is on sys.path (conftest)

from ecpfs_viewer import __version__
from ecpfs_viewer.cli.about import distribution_version

PROBE = ("import sys; from ecpfs_viewer.cli import main; code = main(sys.argv[1:]); "
         "print('GUI loaded' if 'PySide6.QtGui' in sys.modules else 'no GUI loaded'); sys.exit(code)")


def _version(*args: str, **env: str | None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    for name, value in env.items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    return subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, env=environment,
                          cwd=REPO, timeout=120)


def _fields(stdout: str) -> dict[str, str]:
    lines = stdout.splitlines()
    assert lines[0] == f"ecpfs-viewer {__version__}"
    return dict(line.split(": ", 1) for line in lines[1:] if ": " in line)


def test_version_verbose_names_every_version_a_bug_report_needs() -> None:
    done = _version("--version", "--verbose", QT_QPA_PLATFORM="offscreen")
    assert done.returncode == 0, done.stderr
    fields = _fields(done.stdout)
    assert fields["Python"].startswith(f"{platform.python_version()} (")
    for label, distribution in (("zarr", "zarr"), ("numpy", "numpy"), ("numcodecs", "numcodecs"),
                                ("pyqtgraph", "pyqtgraph"), ("PySide6", "PySide6-Essentials")):
        assert fields[label] == importlib.metadata.version(distribution), label
    assert fields["obstore"] == distribution_version(("obstore",))  # a version, or "not installed"
    from PySide6.QtCore import qVersion

    assert fields["Qt runtime"] == qVersion()
    assert fields["Qt platform plugin"].startswith("offscreen (QT_QPA_PLATFORM); not loaded")
    assert "offscreen" in fields["Qt platform plugin"].split("installed: ")[1].split(", ")
    assert platform.machine() in fields["Platform"] and platform.system() in fields["Platform"]
    # the plugin is named, not loaded: no QApplication, not even QtGui, was made to say it
    assert done.stdout.splitlines()[-1] == "no GUI loaded"


def test_without_a_display_the_plugin_line_says_the_window_cannot_open() -> None:
    done = _version("-v", "--version", QT_QPA_PLATFORM=None, DISPLAY=None, WAYLAND_DISPLAY=None,
                    XDG_SESSION_TYPE=None)
    assert done.returncode == 0, done.stderr
    plugin = _fields(done.stdout)["Qt platform plugin"]
    if sys.platform.startswith("linux"):
        assert plugin.startswith("xcb (QT_QPA_PLATFORM unset; no DISPLAY or WAYLAND_DISPLAY: the window cannot open)")


def test_a_library_that_is_not_installed_is_said() -> None:
    assert distribution_version(("ecpfs-viewer-no-such-distribution",)) == "not installed"
    assert distribution_version(("ecpfs-viewer-no-such-distribution", "numpy")) == importlib.metadata.version("numpy")


def test_plain_version_is_one_line() -> None:
    done = _version("--version")
    assert done.returncode == 0
    assert done.stdout.splitlines()[0] == f"ecpfs-viewer {__version__}"
    assert len(done.stdout.splitlines()) == 1  # argparse's version action exits before the probe's print
