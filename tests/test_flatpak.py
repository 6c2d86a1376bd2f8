"""The Flatpak manifest, checked as far as this machine allows without flatpak-builder: it parses,
is named after the app id, builds the sdist of this version, and lists every wheel of the base
install's dependencies (and nothing of the extras or the developers' tools) by PyPI URL and sha256."""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_wheel_filename
from script_modules import load_script

from ecpfs_viewer import __version__
from ecpfs_viewer.resources import APP_ID

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "packaging" / "flatpak" / f"{APP_ID}.yml"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
#: the runtime's Python and machine (org.kde.Platform 6.8: freedesktop-sdk 24.08, Python 3.12)
RUNTIME_MARKERS = {"python_version": "3.12", "python_full_version": "3.12.0", "sys_platform": "linux",
                   "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
                   "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}


def _manifest() -> dict:
    return yaml.safe_load(MANIFEST.read_text())


def _wheel_sources() -> list[dict]:
    (module,) = _manifest()["modules"]
    return [s for s in module["sources"] if s["type"] == "file"]


def _wheels() -> dict[str, str]:
    """Normalized project name -> version of each listed wheel."""
    wheels = {}
    for source in _wheel_sources():
        name, version, _, _ = parse_wheel_filename(source["url"].rsplit("/", 1)[1])
        wheels[name] = str(version)
    return wheels


def test_manifest_is_named_after_the_app_id_and_runs_the_gui_command():
    manifest = _manifest()
    assert manifest["id"] == APP_ID
    assert manifest["command"] in PYPROJECT["project"]["gui-scripts"]
    assert manifest["runtime"] == "org.kde.Platform" and manifest["sdk"] == "org.kde.Sdk"
    assert {"--socket=wayland", "--socket=fallback-x11", "--share=ipc"} <= set(manifest["finish-args"])
    assert not list(MANIFEST.parent.glob("*.json"))  # one manifest


def test_manifest_builds_this_versions_sdist_and_installs_the_desktop_files():
    (module,) = _manifest()["modules"]
    (sdist,) = [s for s in module["sources"] if s["type"] == "archive"]
    assert sdist["path"] == f"../../dist/ecpfs_viewer-{__version__}.tar.gz"
    assert (MANIFEST.parent / sdist["path"]).resolve().parent == ROOT / "dist"
    commands = "\n".join(module["build-commands"])
    assert "--no-index" in commands  # offline: every wheel comes from the sources
    assert 'ecpfs-viewer install-desktop --prefix "${FLATPAK_DEST}/share"' in commands


def test_every_wheel_has_a_pypi_url_and_sha256_and_fits_the_runtime():
    sources = _wheel_sources()
    assert sources
    for source in sources:
        assert set(source) == {"type", "url", "sha256"}
        assert source["url"].startswith("https://files.pythonhosted.org/packages/")
        assert re.fullmatch(r"[0-9a-f]{64}", source["sha256"])
        _, _, _, tags = parse_wheel_filename(source["url"].rsplit("/", 1)[1])
        assert any(t.interpreter in ("py3", "cp312") or (t.abi == "abi3" and t.interpreter <= "cp312")
                   for t in tags), tags
        assert any(t.platform == "any" or (t.platform.startswith("manylinux") and t.platform.endswith("x86_64"))
                   for t in tags), tags


def test_wheels_are_the_base_installs_dependencies_and_nothing_else():
    wheels = _wheels()
    direct = {canonicalize_name(Requirement(r).name) for r in PYPROJECT["project"]["dependencies"]}
    assert direct <= set(wheels), direct - set(wheels)
    assert "setuptools" in wheels  # the build backend of the sdist, for pip's isolated build
    extras = {canonicalize_name(Requirement(r).name) for rs in PYPROJECT["project"]["optional-dependencies"].values()
              for r in rs}
    tools = {canonicalize_name(Requirement(r).name) for rs in PYPROJECT["dependency-groups"].values() for r in rs
             if isinstance(r, str)}
    assert not ((extras | tools) - {"setuptools"}) & set(wheels)
    # each listed wheel whose very release is installed here (another release may need other
    # things): what it requires on the runtime's Python is listed too
    for name, version in wheels.items():
        try:
            installed = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if installed.version != version:
            continue
        for line in installed.requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate(RUNTIME_MARKERS):
                assert canonicalize_name(requirement.name) in wheels, f"{name} needs {requirement}"


def test_the_script_reads_the_list_yaml_does_and_verifies_hashes(tmp_path, monkeypatch):
    script = load_script("flatpak_sources")
    listed = script.listed_sources(MANIFEST.read_text())
    assert listed == [(s["url"], s["sha256"]) for s in _wheel_sources()]
    # --verify against downloaded files: one right, one altered, one absent
    right, altered = tmp_path / "right-1.0-py3-none-any.whl", tmp_path / "altered-1.0-py3-none-any.whl"
    right.write_bytes(b"wheel one")
    altered.write_bytes(b"wheel two, changed")
    entries = [(right.name, hashlib.sha256(b"wheel one").hexdigest()),
               (altered.name, hashlib.sha256(b"wheel two").hexdigest()),
               ("absent-1.0-py3-none-any.whl", "0" * 64)]
    fake = tmp_path / "manifest.yml"
    fake.write_text("".join(f"      - type: file\n        url: https://files.pythonhosted.org/packages/x/{n}\n"
                            f"        sha256: {h}\n" for n, h in entries))
    monkeypatch.setattr(script, "MANIFEST", fake)
    problems = script.verify(tmp_path)
    assert problems == [f"{altered.name}: its sha256 is not the manifest's",
                        f"absent-1.0-py3-none-any.whl: not downloaded into {tmp_path}"]
