"""When Qt's X11 plugin cannot load, the window names the system libraries it lacks (found by
asking the dynamic loader) and exits 2, instead of Qt's abort (134). The libraries are real shared
objects built here, one of whose dependencies is deleted: the loader itself is asked, not a fake."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ecpfs_viewer.cli import qt_platform
from ecpfs_viewer.cli.qt_platform import (
    LIBRARIES_ENV,
    debian_package,
    missing_libraries,
    missing_platform_libraries,
    qt_xcb_libraries,
    xcb_will_be_used,
)

GONE = "libecpfs-test-gone3.so.7"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF shared libraries: Linux only")


def _compile(tmp: Path, name: str, source: str, *link: str, soname: str | None = None) -> Path:
    (tmp / f"{name}.c").write_text(source)
    out = tmp / (soname or f"lib{name}.so")
    command = ["gcc", "-shared", "-fPIC", "-o", str(out), str(tmp / f"{name}.c"), "-Wl,--no-as-needed", *link]
    if soname:
        command.insert(1, f"-Wl,-soname,{soname}")
    subprocess.run(command, check=True, capture_output=True, timeout=120)
    return out


@pytest.fixture(scope="module")
def libraries(tmp_path_factory) -> dict[str, Path]:
    """'broken': a library that needs GONE, which was deleted after linking; 'whole': one that
    needs only libc and libm."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the test libraries")
    tmp = tmp_path_factory.mktemp("elf")
    gone = _compile(tmp, "gone", "int gone(void) { return 1; }\n", soname=GONE)
    broken = _compile(tmp, "broken", "int gone(void);\nint probe(void) { return gone(); }\n",
                      f"-L{tmp}", f"-l:{GONE}")
    whole = _compile(tmp, "whole", "#include <math.h>\ndouble probe(double x) { return sqrt(x); }\n", "-lm")
    gone.unlink()
    return {"broken": broken, "whole": whole}


def test_the_loader_names_a_dependency_it_cannot_find(libraries):
    assert missing_libraries([libraries["broken"]]) == [GONE]
    assert missing_libraries([libraries["whole"]]) == []
    assert missing_libraries([libraries["whole"], libraries["broken"]]) == [GONE]


def test_without_ldd_loading_the_library_names_it_too(libraries, monkeypatch):
    monkeypatch.setattr(qt_platform.shutil, "which", lambda name: None)  # a system without ldd
    assert missing_libraries([libraries["broken"]]) == [GONE]
    assert missing_libraries([libraries["whole"]]) == []


def test_what_is_said_of_the_real_qt_plugin_is_true():
    """Each library named missing for PySide6's own xcb plugin really cannot be loaded here."""
    paths = qt_xcb_libraries()
    assert [p.name for p in paths][:1] == ["libqxcb.so"]
    missing = missing_libraries(paths)
    assert missing is not None
    for soname in missing:
        with pytest.raises(OSError):
            ctypes.CDLL(soname)


def test_qt_is_checked_only_when_it_will_use_x11():
    assert xcb_will_be_used({"DISPLAY": ":0"})
    assert xcb_will_be_used({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0", "QT_QPA_PLATFORM": "xcb"})
    assert not xcb_will_be_used({"DISPLAY": ":0", "WAYLAND_DISPLAY": "wayland-0"})
    assert not xcb_will_be_used({"DISPLAY": ":0", "QT_QPA_PLATFORM": "offscreen"})
    assert not xcb_will_be_used({"DISPLAY": ":0", "QT_QPA_PLATFORM": "wayland;xcb"})
    assert not xcb_will_be_used({})


def test_the_message_names_libraries_and_packages(libraries):
    env = {"DISPLAY": ":0", LIBRARIES_ENV: str(libraries["broken"])}
    message = missing_platform_libraries(env)
    assert message is not None and GONE in message and "libecpfs-test-gone3-7" in message
    assert missing_platform_libraries({**env, "QT_QPA_PLATFORM": "offscreen"}) is None
    assert missing_platform_libraries({**env, LIBRARIES_ENV: str(libraries["whole"])}) is None
    assert [debian_package(s) for s in ("libxcb-icccm.so.4", "libxcb-keysyms.so.1", "libxcb-cursor.so.0",
                                        "libX11-xcb.so.1", "libxkbcommon-x11.so.0")] == [
        "libxcb-icccm4", "libxcb-keysyms1", "libxcb-cursor0", "libx11-xcb1", "libxkbcommon-x11-0"]


def test_the_window_exits_2_naming_the_missing_library(libraries, tmp_path):
    """The program itself, on an X11 display whose plugin cannot load: one error line, exit 2."""
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    env.update({"DISPLAY": ":97", LIBRARIES_ENV: str(libraries["broken"]), "XDG_CONFIG_HOME": str(tmp_path)})
    done = subprocess.run([sys.executable, "-m", "ecpfs_viewer", "--demo"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("ecpfs-viewer: error: the window cannot open") and GONE in line
    assert "apt install libecpfs-test-gone3-7" in line
