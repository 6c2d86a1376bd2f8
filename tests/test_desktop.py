"""Desktop integration by the rules: the four-part app id every file is named after, a desktop entry
and AppStream metainfo that follow their specifications (checked here in Python, and by
desktop-file-validate / appstreamcli in test_packaging.py where they are installed), icons at
every size rendered from the SVG, and `ecpfs-viewer install-desktop` into a prefix."""

from __future__ import annotations

import configparser
import os
import re
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from script_modules import load_script

from ecpfs_viewer.cli import main
from ecpfs_viewer.cli.desktop import ICON_SIZES, desktop_files
from ecpfs_viewer.resources import APP_ID

ROOT = Path(__file__).resolve().parent.parent
RESOURCES = ROOT / "ecpfs_viewer" / "resources"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: the Desktop Entry Specification's main categories (an entry needs one to be placed in a menu)
MAIN_CATEGORIES = {"AudioVideo", "Audio", "Video", "Development", "Education", "Game", "Graphics", "Network",
                   "Office", "Science", "Settings", "System", "Utility"}
DESKTOP_KEYS = {"Type", "Version", "Name", "GenericName", "NoDisplay", "Comment", "Icon", "Hidden", "OnlyShowIn",
                "NotShowIn", "DBusActivatable", "TryExec", "Exec", "Path", "Terminal", "Actions", "MimeType",
                "Categories", "Implements", "Keywords", "StartupNotify", "StartupWMClass", "URL",
                "PrefersNonDefaultGPU", "SingleMainWindow"}
#: licences AppStream accepts for the metadata itself
METADATA_LICENCES = {"FSFAP", "MIT", "0BSD", "CC0-1.0", "CC-BY-3.0", "CC-BY-4.0", "CC-BY-SA-3.0", "CC-BY-SA-4.0",
                     "GFDL-1.1", "GFDL-1.2", "GFDL-1.3", "BSL-1.0", "FTL", "FSFUL"}


def _desktop_entry(text: str) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    assert parser.sections()[0] == "Desktop Entry"
    return parser["Desktop Entry"]


def _github_owner_and_repo() -> tuple[str, str]:
    match = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+)", PYPROJECT["project"]["urls"]["Source"])
    assert match is not None
    return match[1], match[2]


def test_app_id_is_flathubs_io_github_user_repo():
    """Flathub: an app on GitHub is io.github.<user>.<repo>, four parts; a '-' (allowed by D-Bus in
    the last part only, and discouraged there by appstreamcli) is written '_'."""
    owner, repo = _github_owner_and_repo()
    parts = APP_ID.split(".")
    assert parts == ["io", "github", owner.lower().replace("-", "_"), repo.replace("-", "_")]
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part) for part in parts)
    assert len(APP_ID) <= 255


def test_every_desktop_file_is_named_after_the_app_id():
    names = {p.relative_to(RESOURCES).as_posix() for p in RESOURCES.rglob("*") if p.is_file()}
    expected = {f"{APP_ID}.desktop", f"{APP_ID}.metainfo.xml", f"{APP_ID}.svg",
                *(f"icons/{size}x{size}/{APP_ID}.png" for size in ICON_SIZES)}
    assert expected <= names
    assert not {n for n in names if n.endswith((".desktop", ".png", ".svg", ".metainfo.xml"))} - expected
    assert set(ICON_SIZES) >= {48, 128, 256}


def test_desktop_entry_follows_the_specification():
    entry = _desktop_entry((RESOURCES / f"{APP_ID}.desktop").read_text(encoding="utf-8"))
    assert set(entry) <= DESKTOP_KEYS, set(entry) - DESKTOP_KEYS
    assert entry["Type"] == "Application" and entry["Version"] in {"1.0", "1.1", "1.2", "1.3", "1.4", "1.5"}
    assert entry["Name"] and entry["Comment"] and not entry["Comment"].endswith(".")
    # Exec: a command of ours, one file argument; %f gives local paths (a folder or a .zip)
    program, *arguments = entry["Exec"].split()
    assert program in PYPROJECT["project"]["gui-scripts"] and arguments == ["%f"]
    assert entry["TryExec"] == program
    assert entry["Icon"] == APP_ID  # a theme name, no path, no extension
    assert entry["Terminal"] in ("false", "true") and entry["StartupNotify"] in ("false", "true")
    categories = entry["Categories"].split(";")
    assert categories[-1] == "" and MAIN_CATEGORIES & set(categories)
    mime_types = entry["MimeType"].split(";")
    assert mime_types[-1] == "" and {"application/zip", "inode/directory"} <= set(mime_types)
    assert all(re.fullmatch(r"[a-z]+/[A-Za-z0-9.+-]+", m) for m in mime_types[:-1])
    assert entry["Keywords"].endswith(";")
    # X11 matches a window to its entry by WM_CLASS, which Qt takes from argv[0] (gui/app.py)
    assert entry["StartupWMClass"] == "ecpfs-viewer"


def test_metainfo_follows_appstream_and_flathub():
    root = ET.parse(RESOURCES / f"{APP_ID}.metainfo.xml").getroot()
    assert root.tag == "component" and root.get("type") == "desktop-application"
    assert root.findtext("id") == APP_ID
    assert root.findtext("metadata_license") in METADATA_LICENCES
    assert root.findtext("project_license") == PYPROJECT["project"]["license"]
    summary = root.findtext("summary")
    assert summary and len(summary) <= 35 and not summary.endswith(".")  # Flathub's linter: at most 35
    assert root.findall("description/p")
    (launchable,) = root.findall("launchable")
    assert launchable.get("type") == "desktop-id" and launchable.text == f"{APP_ID}.desktop"
    assert (RESOURCES / launchable.text).is_file()
    scripts = {*PYPROJECT["project"]["scripts"], *PYPROJECT["project"]["gui-scripts"]}
    binaries = [b.text for b in root.findall("provides/binary")]
    assert binaries and set(binaries) <= scripts
    rating = root.find("content_rating")
    assert rating is not None and rating.get("type") == "oars-1.1"
    assert root.find("developer/name") is not None and root.find("developer").get("id")
    assert {u.get("type") for u in root.findall("url")} >= {"homepage", "bugtracker"}
    assert all(u.text.startswith("https://") for u in root.findall("url"))
    shots = root.findall("screenshots/screenshot")
    assert [s.get("type") for s in shots].count("default") == 1
    assert all(s.findtext("image").startswith("https://") and s.findtext("caption") for s in shots)
    releases = [(r.get("version"), r.get("date")) for r in root.findall("releases/release")]
    assert releases and all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", date) for _, date in releases)
    assert [d for _, d in releases] == sorted((d for _, d in releases), reverse=True)  # newest first
    assert {c.text for c in root.findall("categories/category")} & MAIN_CATEGORIES
    assert {c.text for c in root.findall("supports/control")} >= {"pointing", "keyboard"}


def test_png_icons_are_the_svg_rendered_at_each_size(qapp):
    """The PNGs are committed renders of the SVG (scripts/render_icons.py): each at its size, and
    redrawn now they differ from it by no more than anti-aliasing does."""
    icons = load_script("render_icons")
    assert tuple(icons.SIZES) == ICON_SIZES
    assert icons.differences() == {}


def test_render_check_sees_a_png_that_is_not_the_svg(qapp, tmp_path, monkeypatch):
    icons = load_script("render_icons")
    fake = tmp_path / "ecpfs_viewer" / "resources"
    shutil.copytree(RESOURCES / "icons", fake / "icons")
    shutil.copy2(RESOURCES / f"{APP_ID}.svg", fake)
    from PySide6.QtGui import QTransform

    swapped = icons.render(48).transformed(QTransform().rotate(180))  # the same pixels, upside down
    assert swapped.save(str(fake / "icons" / "48x48" / f"{APP_ID}.png"))
    (fake / "icons" / "128x128" / f"{APP_ID}.png").unlink()
    monkeypatch.setattr(icons, "RESOURCES", fake)
    monkeypatch.setattr(icons, "ROOT", tmp_path)
    problems = icons.differences()
    assert set(problems) == {48, 128}
    assert "differs from the SVG" in problems[48] and "missing" in problems[128]


def test_install_desktop_into_a_prefix_and_uninstall(tmp_path, capsys):
    prefix = tmp_path / "share"
    # a user's own files beside ours are never touched
    mine = prefix / "applications" / "someone-else.desktop"
    mine.parent.mkdir(parents=True)
    mine.write_text("[Desktop Entry]\nType=Application\nName=x\nExec=x\n")
    assert main(["install-desktop", "--prefix", str(prefix)]) == 0
    expected = {prefix / item.target for item in desktop_files()}
    assert {p for p in prefix.rglob("*") if p.is_file() and APP_ID in p.name} == expected
    for size in ICON_SIZES:
        png = prefix / "icons" / "hicolor" / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
        assert png.read_bytes() == (RESOURCES / "icons" / f"{size}x{size}" / f"{APP_ID}.png").read_bytes()
    assert (prefix / "metainfo" / f"{APP_ID}.metainfo.xml").read_bytes() == (
        RESOURCES / f"{APP_ID}.metainfo.xml").read_bytes()
    entry = _desktop_entry((prefix / "applications" / f"{APP_ID}.desktop").read_text())
    program = entry["Exec"].removesuffix(" %f").strip('"')
    # the command runs: by name when PATH finds it, else by the path of the one beside this Python
    if (Path(sys.executable).parent / "ecpfs-viewer-gui").is_file():
        assert shutil.which(program) is not None
    assert entry["TryExec"] == program
    out = capsys.readouterr().out
    assert out.count("installed ") == len(expected)
    if shutil.which("update-desktop-database"):  # it says which entry opens a .zip or a folder
        cache = (prefix / "applications" / "mimeinfo.cache").read_text()
        assert f"application/zip={APP_ID}.desktop;" in cache and f"inode/directory={APP_ID}.desktop;" in cache

    assert main(["install-desktop", "--prefix", str(prefix), "--uninstall"]) == 0
    assert not [p for p in prefix.rglob("*") if p.is_file() and APP_ID in p.name]
    assert mine.is_file()
    assert main(["install-desktop", "--prefix", str(prefix), "--uninstall"]) == 0
    assert "nothing of" in capsys.readouterr().out


def test_install_desktop_into_a_prefix_that_cannot_be_written_exits_2(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert main(["install-desktop", "--prefix", str(blocker)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("ecpfs-viewer: error: cannot write the desktop files under") and "Not a directory" in line
    assert blocker.read_text() == "not a folder"


def test_install_desktop_defaults_to_xdg_data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert main(["install-desktop"]) == 0
    assert (tmp_path / "data" / "applications" / f"{APP_ID}.desktop").is_file()
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert main(["install-desktop"]) == 0
    assert (tmp_path / "home" / ".local" / "share" / "icons" / "hicolor" / "48x48" / "apps" / f"{APP_ID}.png").is_file()


def test_install_desktop_refreshes_an_existing_icon_cache(tmp_path):
    """An icon cache that is there is refreshed (a stale one would hide the icon); none is created."""
    tool = shutil.which("gtk-update-icon-cache")
    fresh = tmp_path / "fresh"
    assert main(["install-desktop", "--prefix", str(fresh)]) == 0
    assert not (fresh / "icons" / "hicolor" / "icon-theme.cache").exists()
    if tool is None:
        pytest.skip("gtk-update-icon-cache is not installed (Debian: libgtk-3-bin or gtk-update-icon-cache)")
    hicolor = tmp_path / "share" / "icons" / "hicolor"
    (hicolor / "16x16" / "apps").mkdir(parents=True)
    shutil.copy2(RESOURCES / "icons" / "48x48" / f"{APP_ID}.png", hicolor / "16x16" / "apps" / "someone-else.png")
    subprocess.run([tool, "-q", "-f", "-t", str(hicolor)], check=True, timeout=60)
    assert APP_ID.encode() not in (hicolor / "icon-theme.cache").read_bytes()
    assert main(["install-desktop", "--prefix", str(tmp_path / "share")]) == 0
    assert APP_ID.encode() in (hicolor / "icon-theme.cache").read_bytes()


def test_installed_entry_passes_desktop_file_validate(tmp_path):
    """The entry as installed (Exec possibly an absolute path) is still valid."""
    tool = shutil.which("desktop-file-validate")
    if tool is None:
        pytest.skip("desktop-file-validate is not installed (Debian: desktop-file-utils)")
    env = {**os.environ, "PATH": os.defpath}  # not on PATH: Exec becomes the absolute path
    code = ("from ecpfs_viewer.cli import main; "
            f"raise SystemExit(main(['install-desktop', '--prefix', {str(tmp_path)!r}]))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    entry_path = tmp_path / "applications" / f"{APP_ID}.desktop"
    if (Path(sys.executable).parent / "ecpfs-viewer-gui").is_file():
        assert _desktop_entry(entry_path.read_text())["Exec"].startswith("/")
    checked = subprocess.run([tool, str(entry_path)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and ": error:" not in checked.stdout, checked.stdout
