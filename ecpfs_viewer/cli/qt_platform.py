"""Whether Qt's X11 platform plugin can load, asked of the dynamic loader before Qt is started.

Qt's xcb plugin links against a dozen xcb-util libraries that minimal systems lack
(libxcb-icccm4, libxcb-keysyms1, libxcb-cursor0, ...). When one is missing, Qt prints a warning
that names the wrong one and aborts the process (exit 134). Asked first, the loader names every
missing library, and the application exits 2 with one message that says what to install.

Qt is not imported here: PySide6's folder is found with importlib, the libraries are read by the
system's `ldd` (or, without it, by loading them with ctypes, which names the first missing one).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

#: a test hook: libraries (os.pathsep-separated) to check instead of PySide6's xcb plugin
LIBRARIES_ENV = "ECPFS_VIEWER_QT_PLATFORM_LIBRARIES"
#: ldd reads the ELF headers of two files: seconds before the answer is "could not tell"
LDD_TIMEOUT_S = 10.0

_NOT_FOUND = re.compile(r"^\s*(?P<soname>\S+)\s+=>\s+not found\s*$", re.MULTILINE)
_CANNOT_OPEN = re.compile(r"(?P<soname>[^\s:/]+\.so[.\d]*): cannot open shared object file")


def xcb_will_be_used(environ: Mapping[str, str] | None = None) -> bool:
    """Qt will pick its xcb (X11) plugin: asked for by QT_QPA_PLATFORM, or left to Qt's choice on
    an X11 session (DISPLAY set, no Wayland display it would try first)."""
    env = os.environ if environ is None else environ
    if not sys.platform.startswith("linux") or not env.get("DISPLAY"):
        return False
    requested = [p.split(":")[0].strip().lower() for p in env.get("QT_QPA_PLATFORM", "").split(";")]
    requested = [p for p in requested if p]
    if requested:
        return requested[0] == "xcb"
    return not env.get("WAYLAND_DISPLAY")


def qt_xcb_libraries() -> list[Path]:
    """PySide6's xcb platform plugin and the Qt library behind it (the one that needs xcb-util)."""
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return []
    qt = Path(next(iter(spec.submodule_search_locations))) / "Qt"
    candidates = [qt / "plugins" / "platforms" / "libqxcb.so", *sorted((qt / "lib").glob("libQt6XcbQpa.so*"))[:1]]
    return [path for path in candidates if path.is_file()]


def missing_libraries(paths: Sequence[Path]) -> list[str] | None:
    """The sonames the dynamic loader cannot find for these libraries (their dependencies, direct
    or not), in the order found; None when it could not be asked (no ldd and ctypes could not say)."""
    ldd = shutil.which("ldd")
    if ldd is not None:
        found = _ask_ldd(ldd, paths)
        if found is not None:
            return found
    return _ask_ctypes(paths)


def _ask_ldd(ldd: str, paths: Sequence[Path]) -> list[str] | None:
    try:
        done = subprocess.run([ldd, *map(str, paths)], capture_output=True, text=True, timeout=LDD_TIMEOUT_S,
                              env={**os.environ, "LC_ALL": "C"}, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if "=>" not in done.stdout:  # not ELF files, another libc's ldd: it said nothing usable
        return None
    return list(dict.fromkeys(match["soname"] for match in _NOT_FOUND.finditer(done.stdout)))


def _ask_ctypes(paths: Sequence[Path]) -> list[str] | None:
    """Load each library; the loader's message names the first dependency it could not find."""
    missing: list[str] = []
    for path in paths:
        try:
            ctypes.CDLL(str(path))
        except OSError as exc:
            match = _CANNOT_OPEN.search(str(exc))
            if match is None:
                return None
            missing.append(match["soname"])
    return list(dict.fromkeys(missing))


def debian_package(soname: str) -> str:
    """The Debian/Ubuntu package that usually holds a library: libxcb-icccm.so.4 -> libxcb-icccm4."""
    match = re.fullmatch(r"(?P<name>.+?)\.so\.(?P<major>\d+)(?:\.[\d.]+)?", soname)
    if match is None:
        return soname
    name, major = match["name"].lower(), match["major"]
    return f"{name}-{major}" if name[-1].isdigit() else f"{name}{major}"


def missing_platform_libraries(environ: Mapping[str, str] | None = None) -> str | None:
    """Why Qt's X11 plugin would not load (the system libraries it lacks), else None.

    Only asked when Qt will use xcb; None too when the loader could not be asked (Qt then says
    what it says)."""
    env = os.environ if environ is None else environ
    if not xcb_will_be_used(env):
        return None
    hook = env.get(LIBRARIES_ENV)
    paths = [Path(p) for p in hook.split(os.pathsep) if p] if hook else qt_xcb_libraries()
    if not paths:
        return None
    missing = missing_libraries(paths)
    if not missing:
        return None
    packages = " ".join(debian_package(soname) for soname in missing)
    return (f"the window cannot open: Qt's X11 (xcb) platform plugin needs system libraries this machine does not "
            f"have: {', '.join(missing)} (the dynamic loader could not find them for {paths[0].name}). Install them "
            f"(Debian/Ubuntu: apt install {packages}), or use Wayland (QT_QPA_PLATFORM=wayland) or the subcommands "
            "(`ecpfs-viewer --help`)")
