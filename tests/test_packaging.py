"""What ships: the sdist holds its tests and passes them, the wheel carries the resources and the
entry points, the metadata follows PEP 639 and 735, the desktop files are valid."""

from __future__ import annotations

import configparser
import email.parser
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
from script_modules import load_script

ROOT = Path(__file__).resolve().parent.parent
PACKAGING = ROOT / "packaging"
RESOURCES = ROOT / "ecpfs_viewer" / "resources"
APP_ID = "io.github.ecpfs_viewer.ecpfs_viewer"
RESOURCES_IN_WHEEL = ("digits.csv.gz", "DEMO_DATA.md", "guide.md", f"{APP_ID}.svg", f"{APP_ID}.desktop",
                      f"{APP_ID}.metainfo.xml", "__init__.py",
                      *(f"icons/{size}x{size}/{APP_ID}.png" for size in (48, 128, 256)))
METAINFO = RESOURCES / f"{APP_ID}.metainfo.xml"
DESKTOP = RESOURCES / f"{APP_ID}.desktop"
#: what a source tree needs to build and test: the rest (caches, environments, .git) is left out
SOURCE_FILES = ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "MANIFEST.in", ".pre-commit-config.yaml")
SOURCE_FOLDERS = ("ecpfs_viewer", "tests", "benchmarks", "packaging", "docs", "scripts", ".ci")


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist and, built from it, the wheel (python -m build), from a copy of the sources so
    the checkout gets no build/ folder. Without isolation: the test group holds the backend."""
    work = tmp_path_factory.mktemp("dist")
    source = work / "src"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".cache")
    for name in SOURCE_FILES:
        shutil.copy2(ROOT / name, source / name)
    for name in SOURCE_FOLDERS:
        shutil.copytree(ROOT / name, source / name, ignore=ignore)
    command = [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(work / "dist"), str(source)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return work / "dist"


@pytest.fixture(scope="module")
def wheel(dist: Path) -> Path:
    (built,) = dist.glob("ecpfs_viewer-*.whl")
    return built


@pytest.fixture(scope="module")
def sdist(dist: Path) -> Path:
    (built,) = dist.glob("ecpfs_viewer-*.tar.gz")
    return built


def _wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as zf:
        (metadata,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        return email.parser.Parser().parsestr(zf.read(metadata).decode())


def test_wheel_contains_resources_and_entry_point(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for resource in RESOURCES_IN_WHEEL:
            assert f"ecpfs_viewer/resources/{resource}" in names
        # PEP 561: "Typing :: Typed" is claimed, so the marker ships (an empty file)
        assert "ecpfs_viewer/py.typed" in names and zf.read("ecpfs_viewer/py.typed") == b""

        from ecpfs_viewer.cli.schema import SCHEMA_NAMES  # `ecpfs-viewer schema` reads them from the package

        assert {f"ecpfs_viewer/resources/schemas/{name}.schema.json" for name in SCHEMA_NAMES} <= names
        shipped = zf.getinfo("ecpfs_viewer/resources/digits.csv.gz").file_size
        assert shipped == (RESOURCES / "digits.csv.gz").stat().st_size
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        parser = configparser.ConfigParser()
        parser.read_string(zf.read(entry_points).decode())
    assert parser["console_scripts"]["ecpfs-viewer"].strip() == "ecpfs_viewer.cli:main"
    # a GUI script: Windows starts it with pythonw, so no console window opens beside the GUI
    assert parser["gui_scripts"]["ecpfs-viewer-gui"].strip() == "ecpfs_viewer.cli:main"
    assert "ecpfs_viewer/gui/build/dialog.py" in names and "ecpfs_viewer/model/build/demo.py" in names
    assert not any(n.startswith(("tests/", "packaging/", "resources/", "scripts/", "docs/")) for n in names)
    # package discovery: every package of the checkout is in the wheel, none is listed by hand
    packages = {init.parent.relative_to(ROOT).as_posix() for init in (ROOT / "ecpfs_viewer").rglob("__init__.py")}
    assert {f"{package}/__init__.py" for package in packages} <= names
    assert list(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]) == ["find"]


def test_wheel_metadata_declares_licence_and_only_the_application_dependencies(wheel):
    """PEP 639 licence fields; test and lint tools are dependency groups, not in the metadata."""
    metadata = _wheel_metadata(wheel)
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert "License" not in metadata  # the free-text field PEP 639 deprecates
    assert not any(c.startswith("License ::") for c in metadata.get_all("Classifier"))
    assert "Programming Language :: Python :: 3.13" in metadata.get_all("Classifier")
    assert "zarr" in metadata["Keywords"]
    assert "Typing :: Typed" in metadata.get_all("Classifier") and (ROOT / "ecpfs_viewer" / "py.typed").is_file()
    assert sorted(metadata.get_all("Provides-Extra")) == ["fsspec", "layout", "remote", "scale"]
    requirements = " ".join(metadata.get_all("Requires-Dist"))
    for tool in ("pytest", "ruff", "mypy", "moto", "faiss", "aiohttp", "pyftpdlib", "wsgidav"):
        assert tool not in requirements
    fsspec = [r for r in metadata.get_all("Requires-Dist") if r.startswith("fsspec")]
    assert fsspec and all('extra == "fsspec"' in r for r in fsspec)  # only with the extra
    groups = tomllib.loads((ROOT / "pyproject.toml").read_text())["dependency-groups"]
    assert any(r.startswith("pytest>=") for r in groups["test"]) and any(r.startswith("ruff") for r in groups["lint"])


def test_sdist_holds_what_its_tests_need(sdist):
    with tarfile.open(sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    for needed in ("tests/conftest.py", "tests/test_packaging.py", "tests/data/two_clusters.zarr/zarr.json",
                   "packaging/ecpfs-viewer.spec", "docs/architecture.md", "CHANGELOG.md", "LICENSE",
                   "scripts/changelog.py", "ecpfs_viewer/resources/digits.csv.gz", "ecpfs_viewer/py.typed",
                   "benchmarks/README.md", "benchmarks/bench_search.py", "benchmarks/_bench_index.py",
                   ".ci/run", ".pre-commit-config.yaml", "scripts/dev.py"):
        assert needed in names, needed
    # every benchmark script: test_every_benchmark_script_imports imports each from the sdist
    assert {n for n in names if n.startswith("benchmarks/")} >= {
        p.relative_to(ROOT).as_posix() for p in (ROOT / "benchmarks").glob("*.py")}
    assert not any("__pycache__" in name or "/.cache/" in name for name in names)
    with tarfile.open(sdist) as tar:  # the CI entry point stays a program
        (ci_run,) = [m for m in tar.getmembers() if m.name.endswith("/.ci/run")]
        assert ci_run.mode & 0o111


def test_check_manifest_finds_every_versioned_file_in_the_sdist():
    """check-manifest compares the files under version control with the sdist it builds: a new
    file that MANIFEST.in leaves out fails here, not in a distributor's build."""
    if not (ROOT / ".git").exists():
        pytest.skip("check-manifest compares with version control: this tree is not a git checkout (an sdist)")
    done = subprocess.run([sys.executable, "-m", "check_manifest", "--no-build-isolation", str(ROOT)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_tests_pass_from_the_unpacked_sdist(sdist, tmp_path):
    """A distributor runs the tests from the sdist, with this interpreter: the demo data, the
    fixtures of conftest.py and tests/data, the benchmark scripts, the changelog check and the
    model's tests all work from its files alone."""
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, filter="data")
    (unpacked,) = tmp_path.iterdir()
    env = {**os.environ, "PYTHONPATH": str(unpacked)}
    where = subprocess.run([sys.executable, "-c", "import ecpfs_viewer; print(ecpfs_viewer.__file__)"],
                           capture_output=True, text=True, env=env, cwd=unpacked, timeout=60)
    assert Path(where.stdout.strip()).is_relative_to(unpacked), where.stdout + where.stderr
    tests = ["tests/model/build/test_demo.py::test_demo_vectors_are_the_uci_digits",
             "tests/model/storage/test_stores.py::test_zip_written_by_us_under_a_folder",
             "tests/test_packaging.py::test_changelog_and_metainfo_releases_agree",
             "tests/test_benchmarks.py::test_every_benchmark_script_imports",
             "tests/model/ecpfs/test_paths.py",
             "tests/model/validation/test_validation.py::test_two_clusters_is_clean",
             "tests/model/validation/test_validation.py::test_format_version_2_is_an_error"]
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           f"--basetemp={tmp_path / 'basetemp'}", *tests],
                          capture_output=True, text=True, env=env, cwd=unpacked, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " failed" not in done.stdout and " skipped" not in done.stdout, done.stdout[-3000:]
    assert "no tests ran" not in done.stdout


def test_wheel_version_is_the_package_version(wheel):
    """One version number: pyproject reads it from ecpfs_viewer.__version__."""
    from ecpfs_viewer import __version__

    assert "version" not in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert wheel.name.startswith(f"ecpfs_viewer-{__version__}-")
    assert _wheel_metadata(wheel)["Version"] == __version__


def test_installed_wheel_loads_the_demo_data_from_its_own_files(wheel, tmp_path):
    target = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)
    code = (
        "import ecpfs_viewer.resources as r; from ecpfs_viewer.model.build.demo import load_demo_vectors; "
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


def test_one_desktop_entry_and_it_is_complete():
    assert [p.relative_to(ROOT).as_posix() for p in ROOT.glob("[!.]*/**/*.desktop")] == [
        f"ecpfs_viewer/resources/{APP_ID}.desktop"]
    text = DESKTOP.read_text()
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    parser.read_string(text)
    entry = parser["Desktop Entry"]
    assert entry["Type"] == "Application"
    assert entry["Exec"].split()[0] == "ecpfs-viewer-gui"
    assert entry["Icon"] == APP_ID and (RESOURCES / f"{APP_ID}.svg").is_file()
    assert entry["Categories"].endswith(";")


def test_metainfo_is_well_formed_and_points_at_the_desktop_entry():
    root = ET.parse(METAINFO).getroot()
    assert root.tag == "component" and root.get("type") == "desktop-application"
    assert root.findtext("id") == APP_ID
    assert root.find("launchable").text == f"{APP_ID}.desktop"
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
    done = subprocess.run([tool, str(DESKTOP)], capture_output=True, text=True)
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

    renderer = QSvgRenderer(str(RESOURCES / f"{APP_ID}.svg"))
    assert renderer.isValid()
    assert renderer.defaultSize().width() == renderer.defaultSize().height() == 256


def _changelog_script():
    return load_script("changelog")


def test_changelog_and_metainfo_releases_agree():
    """CHANGELOG.md is the one source: the metainfo's <releases> is what scripts/changelog.py renders."""
    changelog = _changelog_script()
    text = (ROOT / "CHANGELOG.md").read_text()
    metainfo = METAINFO.read_text()
    assert changelog.synced_metainfo(text, metainfo) == metainfo, "run python3 scripts/changelog.py"
    from ecpfs_viewer import __version__

    released = changelog.parse(text)
    assert released[0].version == __version__  # the newest release is this version
    listed = [(r.get("version"), r.get("date")) for r in ET.parse(METAINFO).getroot().findall("releases/release")]
    assert listed == [(r.version, r.date) for r in released]


def test_changelog_render_follows_an_edit():
    """A new release in the changelog becomes the first <release>, its bullets its description."""
    changelog = _changelog_script()
    text = (ROOT / "CHANGELOG.md").read_text().replace(
        "## [0.1.0]", "## [9.9.9] - 2030-01-02\n\n### Fixed\n\n- A `wrapped`\n  bullet & more\n\n## [0.1.0]")
    synced = changelog.synced_metainfo(text, METAINFO.read_text())
    first = ET.fromstring(synced).find("releases/release")
    assert (first.get("version"), first.get("date")) == ("9.9.9", "2030-01-02")
    assert [p.text for p in first.findall("description/p")] == ["Fixed:"]
    assert [li.text for li in first.findall("description/ul/li")] == ["A wrapped bullet & more"]
