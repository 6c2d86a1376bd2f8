"""`ecpfs-viewer install-desktop [--uninstall] [--prefix DIR]`: the menu entry, AppStream metainfo and
icons for the current user, from the files shipped in ecpfs_viewer.resources.

Everything is named after the app id (ecpfs_viewer.resources.APP_ID); --uninstall removes exactly
those files and nothing else. The desktop's caches are refreshed when their tools are installed:
update-desktop-database (which app opens a .zip or a folder), and gtk-update-icon-cache where an
icon cache already exists (a stale cache would hide the new icon; without one the theme folders
are read directly, so none is created).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from ecpfs_viewer.cli.commands import add_command
from ecpfs_viewer.cli.contract import EXIT_OK, CannotOpen
from ecpfs_viewer.resources import APP_ID, DESKTOP_ENTRY, ICON_SVG, METAINFO

#: the sizes of the PNG icons shipped in resources/icons/<size>x<size>/
ICON_SIZES = (48, 128, 256)
GUI_COMMAND = "ecpfs-viewer-gui"
#: seconds each cache tool may take before it is left behind (the files are installed by then)
TOOL_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class DesktopFile:
    """One file of the desktop integration: where it comes from in the package, where it goes under the prefix."""

    resource: str
    target: str


def desktop_files() -> list[DesktopFile]:
    """What install-desktop installs, relative to the prefix (a share/ folder)."""
    items = [DesktopFile(DESKTOP_ENTRY, f"applications/{DESKTOP_ENTRY}"),
             DesktopFile(METAINFO, f"metainfo/{METAINFO}"),
             DesktopFile(ICON_SVG, f"icons/hicolor/scalable/apps/{ICON_SVG}")]
    items += [DesktopFile(f"icons/{size}x{size}/{APP_ID}.png", f"icons/hicolor/{size}x{size}/apps/{APP_ID}.png")
              for size in ICON_SIZES]
    return items


def default_prefix() -> Path:
    """$XDG_DATA_HOME, else ~/.local/share: where a desktop looks for the current user's entries."""
    data_home = os.environ.get("XDG_DATA_HOME", "")
    return Path(data_home) if os.path.isabs(data_home) else Path.home() / ".local" / "share"


def gui_command() -> str:
    """How the menu entry starts the window: `ecpfs-viewer-gui` when the session's PATH finds it,
    else the absolute path of the one installed beside this Python (a venv not on PATH)."""
    if shutil.which(GUI_COMMAND) is not None:
        return GUI_COMMAND
    for candidate in (Path(sys.executable).parent / GUI_COMMAND, Path(sys.argv[0]).resolve().parent / GUI_COMMAND):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate.absolute())
    return GUI_COMMAND


def desktop_entry_text(command: str) -> str:
    """The shipped desktop entry with Exec and TryExec running command (quoted as the spec asks)."""
    text = (files("ecpfs_viewer.resources") / DESKTOP_ENTRY).read_text(encoding="utf-8")
    if command == GUI_COMMAND:
        return text
    quoted = f'"{command}"' if any(c in command for c in ' \t\n"\'\\><~|&;$*?#()`') else command
    lines = []
    for line in text.splitlines():
        if line.startswith("Exec="):
            line = f"Exec={quoted} %f"
        elif line.startswith("TryExec="):
            line = f"TryExec={command}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def install(prefix: Path, command: str | None = None) -> list[Path]:
    """Copy the desktop files under prefix; the paths written."""
    written = []
    for item in desktop_files():
        target = prefix / item.target
        target.parent.mkdir(parents=True, exist_ok=True)
        if item.resource == DESKTOP_ENTRY:
            target.write_text(desktop_entry_text(command or gui_command()), encoding="utf-8")
        else:
            target.write_bytes((files("ecpfs_viewer.resources") / item.resource).read_bytes())
        written.append(target)
    return written


def uninstall(prefix: Path) -> list[Path]:
    """Remove the files install() writes (only those); the paths removed."""
    removed = []
    for item in desktop_files():
        target = prefix / item.target
        if target.is_file() or target.is_symlink():
            target.unlink()
            removed.append(target)
    return removed


def refresh_caches(prefix: Path) -> list[str]:
    """Run the desktop's cache tools that are installed; a line per tool saying what it did."""
    said = []
    runs = [("update-desktop-database", prefix / "applications", ["-q"])]
    hicolor = prefix / "icons" / "hicolor"
    if (hicolor / "icon-theme.cache").is_file():
        runs.append(("gtk-update-icon-cache", hicolor, ["-q", "-f", "-t"]))
    for tool, folder, options in runs:
        found = shutil.which(tool)
        if found is None or not folder.is_dir():
            continue
        try:
            done = subprocess.run([found, *options, str(folder)], capture_output=True, text=True,
                                  timeout=TOOL_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            said.append(f"{tool} {folder}: did not finish ({exc})")
            continue
        outcome = "updated" if done.returncode == 0 else f"failed: {(done.stderr or done.stdout).strip()[:200]}"
        said.append(f"{tool} {folder}: {outcome}")
    return said


def add_install_desktop_parser(
        subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register `install-desktop`."""
    parser = add_command(subparsers, "install-desktop")
    parser.add_argument("--prefix", type=Path, metavar="DIR",
                        help="the share folder to install into (default: $XDG_DATA_HOME, else ~/.local/share)")
    parser.add_argument("--uninstall", action="store_true", help="remove the files install-desktop installs")
    parser.set_defaults(func=run_install_desktop)
    return parser


def run_install_desktop(args: argparse.Namespace) -> int:
    prefix = (args.prefix or default_prefix()).expanduser()
    try:
        return _install_or_uninstall(prefix, args.uninstall)
    except OSError as exc:  # the prefix named (or defaulted to) cannot be written: exit 2, as for any output
        where = exc.filename or prefix
        raise CannotOpen(f"cannot write the desktop files under {prefix}: {where}: {exc.strerror or exc}") from None


def _install_or_uninstall(prefix: Path, remove: bool) -> int:
    if remove:
        removed = uninstall(prefix)
        for path in removed:
            print(f"removed {path}")
        if not removed:
            print(f"nothing of {APP_ID} was installed under {prefix}")
    else:
        command = gui_command()
        for path in install(prefix, command):
            print(f"installed {path}")
        if command == GUI_COMMAND and shutil.which(GUI_COMMAND) is None:
            print(f"note: {GUI_COMMAND} is not on PATH; the menu entry starts once it is", file=sys.stderr)
    for line in refresh_caches(prefix):
        print(line)
    return EXIT_OK
