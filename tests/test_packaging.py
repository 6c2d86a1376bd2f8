"""What ships: the wheel carries the resources and the entry point; the desktop files are valid."""

from __future__ import annotations

import configparser
import importlib.util
import os
import shutil
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGING = ROOT / "packaging"
RESOURCES_IN_WHEEL = ("digits.csv.gz", "DEMO_DATA.md", "ecpfs-viewer.svg", "ecpfs-viewer.png",
                      "ecpfs-viewer.desktop", "io.github.ecpfs_viewer.metainfo.xml", "__init__.py")
METAINFO = ROOT / "resources" / "io.github.ecpfs_viewer.metainfo.xml"


def _can_build_without_isolation() -> bool:
    """True when this environment has the build backend pyproject asks for (setuptools>=68, wheel)."""
    if importlib.util.find_spec("wheel") is None:
        return False
    import setuptools

    return int(setuptools.__version__.split(".")[0]) >= 68


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """Build the wheel from a copy of the sources (so the checkout gets no build/ folder)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for name in ("ecpfs_viewer", "resources"):
        shutil.copytree(ROOT / name, source / name, ignore=ignore)
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(work / "dist"), str(source)]
    if _can_build_without_isolation():
        command.insert(4, "--no-build-isolation")
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    (built,) = (work / "dist").glob("ecpfs_viewer-*.whl")
    return built


def test_wheel_contains_resources_and_entry_point(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for resource in RESOURCES_IN_WHEEL:
            assert f"ecpfs_viewer/resources/{resource}" in names
        assert (
            zf.getinfo("ecpfs_viewer/resources/digits.csv.gz").file_size
            == (ROOT / "resources/digits.csv.gz").stat().st_size
        )
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        parser = configparser.ConfigParser()
        parser.read_string(zf.read(entry_points).decode())
    assert parser["console_scripts"]["ecpfs-viewer"].strip() == "ecpfs_viewer.cli:main"
    assert "ecpfs_viewer/gui/build_dialog.py" in names and "ecpfs_viewer/model/demo.py" in names
    assert not any(n.startswith(("tests/", "packaging/", "resources/")) for n in names)


def test_wheel_version_is_the_package_version(wheel):
    """One version number: pyproject reads it from ecpfs_viewer.__version__."""
    from ecpfs_viewer import __version__

    assert "version" not in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert wheel.name.startswith(f"ecpfs_viewer-{__version__}-")
    with zipfile.ZipFile(wheel) as zf:
        (metadata,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        assert f"\nVersion: {__version__}\n" in zf.read(metadata).decode()


def test_installed_wheel_loads_the_demo_data_from_its_own_files(wheel, tmp_path):
    target = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)
    code = (
        "import ecpfs_viewer.resources as r; from ecpfs_viewer.model.demo import load_demo_vectors; "
        "v = load_demo_vectors(); print(r.__file__); print(v.shape, v.dtype)"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
    )
    assert done.returncode == 0, done.stderr
    where, shape = done.stdout.splitlines()
    assert Path(where).is_relative_to(target)
    assert shape == "(1797, 64) uint8"


def test_desktop_entry_is_complete_and_shipped_unchanged():
    text = (PACKAGING / "ecpfs-viewer.desktop").read_text()
    assert (ROOT / "resources" / "ecpfs-viewer.desktop").read_text() == text  # the copy in the wheel
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    parser.read_string(text)
    entry = parser["Desktop Entry"]
    assert entry["Type"] == "Application"
    assert entry["Exec"].split()[0] == "ecpfs-viewer"
    assert entry["Icon"] == "ecpfs-viewer" and (ROOT / "resources" / "ecpfs-viewer.svg").is_file()
    assert entry["Categories"].endswith(";")


def test_metainfo_is_well_formed_and_points_at_the_desktop_entry():
    root = ET.parse(METAINFO).getroot()
    assert root.tag == "component" and root.get("type") == "desktop-application"
    assert root.findtext("id") == "io.github.ecpfs_viewer"
    assert root.find("launchable").text == "ecpfs-viewer.desktop"
    assert root.findtext("provides/binary") == "ecpfs-viewer"
    assert root.findtext("project_license") == "MIT"
    from ecpfs_viewer import __version__

    assert root.find("releases/release").get("version") == __version__
    assert root.findtext("url[@type='homepage']").startswith("https://")
    assert root.findtext("developer/name")
    assert [i.text for i in root.findall("screenshots/screenshot/image")]


def test_desktop_entry_passes_desktop_file_validate():
    tool = shutil.which("desktop-file-validate")
    if tool is None:
        pytest.skip("desktop-file-validate is not installed (Debian: desktop-file-utils)")
    for path in (PACKAGING / "ecpfs-viewer.desktop", ROOT / "resources" / "ecpfs-viewer.desktop"):
        done = subprocess.run([tool, str(path)], capture_output=True, text=True)
        # hints are advice; errors and warnings fail
        problems = [line for line in done.stdout.splitlines() if ": error:" in line or ": warning:" in line]
        assert done.returncode == 0 and not problems, done.stdout


def test_metainfo_passes_appstreamcli_validate():
    tool = shutil.which("appstreamcli")
    if tool is None:
        pytest.skip("appstreamcli is not installed (Debian: appstream)")
    done = subprocess.run([tool, "validate", "--no-net", str(METAINFO)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_licence_file_and_project_urls():
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["urls"]["Homepage"].startswith("https://")


def test_readme_images_are_absolute_links():
    """A package index shows the README without the repository's files beside it."""
    import re

    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", (ROOT / "README.md").read_text())
    assert images and all(link.startswith("https://") for link in images)


def test_pyinstaller_spec_takes_the_package_from_the_environment():
    spec = (PACKAGING / "ecpfs-viewer.spec").read_text()
    assert "pathex=[]" in spec and ".xml" in spec


def test_icon_is_a_valid_svg(qtbot):
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(ROOT / "resources" / "ecpfs-viewer.svg"))
    assert renderer.isValid()
    assert renderer.defaultSize().width() == renderer.defaultSize().height() == 256


def test_every_package_is_listed_for_setuptools():
    """A sub-package missing from [tool.setuptools] packages is silently left out of the wheel."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "ecpfs_viewer").rglob("__init__.py")}
    assert found - listed == set()
