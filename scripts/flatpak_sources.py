#!/usr/bin/env python3
"""Keep the Flatpak manifest's PyPI wheels (packaging/flatpak/<app id>.yml) in step with pyproject.

The manifest installs the base dependencies from wheels listed as sources (a Flatpak build has no
network), each with its URL on files.pythonhosted.org and its sha256. This script asks pip which
wheels a Python 3.12 x86_64 Linux install of the base dependencies takes (pip's --dry-run
--report: the resolution, the URLs and the hashes, nothing installed) and rewrites the list:
    python3 scripts/flatpak_sources.py                   # rewrite the wheel sources (needs PyPI)
    python3 scripts/flatpak_sources.py --verify WHEELS   # the sha256 of each wheel downloaded into WHEELS
Download the wheels to verify with:
    pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux_2_34_x86_64 \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d WHEELS -r <(python3 scripts/flatpak_sources.py --requirements)
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP_ID = "io.github.ecpfs_viewer.ecpfs_viewer"
MANIFEST = ROOT / "packaging" / "flatpak" / f"{APP_ID}.yml"
#: the Python of the runtime (org.kde.Platform 6.8, on freedesktop-sdk 24.08) and its machine
PYTHON_VERSION = "3.12"
PLATFORMS = ("manylinux_2_34_x86_64", "manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
#: the build backend pyproject names, for building the sdist inside the sandbox (removed after)
BUILD_REQUIREMENTS = ("setuptools==80.9.0",)
_BLOCK = re.compile(r"(?P<head>^(?P<indent>[ \t]*)# wheels: begin[^\n]*\n).*?(?P<tail>^[ \t]*# wheels: end)",
                    re.DOTALL | re.MULTILINE)
_SOURCE = re.compile(r"url: (?P<url>\S+)\n\s*sha256: (?P<sha256>[0-9a-f]{64})")


def base_requirements() -> list[str]:
    """pyproject's [project] dependencies (no extras), the environment markers left to pip."""
    return list(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])


def resolve(requirements: list[str]) -> list[dict[str, str]]:
    """url, sha256 and file name of each wheel pip would install for the runtime's Python."""
    with tempfile.TemporaryDirectory() as work:
        report = Path(work) / "report.json"
        command = [sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--ignore-installed",
                   "--only-binary=:all:", "--python-version", PYTHON_VERSION, "--target", str(Path(work) / "t"),
                   "--index-url", "https://pypi.org/simple", "--report", str(report), "-q"]
        for platform in PLATFORMS:
            command += ["--platform", platform]
        env = {**os.environ, "PIP_CONFIG_FILE": os.devnull}
        subprocess.run([*command, *requirements], check=True, env=env, timeout=600)
        installed = json.loads(report.read_text())["install"]
    wheels = []
    for item in installed:
        url = item["download_info"]["url"]
        wheels.append({"url": url, "sha256": item["download_info"]["archive_info"]["hashes"]["sha256"],
                       "name": url.rsplit("/", 1)[1]})
    return sorted(wheels, key=lambda w: w["name"].lower())


def render(wheels: list[dict[str, str]], indent: str) -> str:
    lines = []
    for wheel in wheels:
        lines += [f"{indent}- type: file", f"{indent}  url: {wheel['url']}", f"{indent}  sha256: {wheel['sha256']}"]
    return "\n".join(lines) + "\n"


def listed_sources(text: str) -> list[tuple[str, str]]:
    """(url, sha256) of each wheel the manifest lists."""
    return [(m["url"], m["sha256"]) for m in _SOURCE.finditer(text) if m["url"].endswith(".whl")]


def verify(folder: Path) -> list[str]:
    """What differs between the manifest's wheels and the files downloaded into folder."""
    problems = []
    for url, sha256 in listed_sources(MANIFEST.read_text()):
        local = folder / url.rsplit("/", 1)[1]
        if not local.is_file():
            problems.append(f"{local.name}: not downloaded into {folder}")
        elif hashlib.sha256(local.read_bytes()).hexdigest() != sha256:
            problems.append(f"{local.name}: its sha256 is not the manifest's")
    return problems


def main(argv: list[str]) -> int:
    if argv[:1] == ["--requirements"]:
        for url, _ in listed_sources(MANIFEST.read_text()):
            name, version = url.rsplit("/", 1)[1].split("-")[:2]
            print(f"{name}=={version}")
        return 0
    if argv[:1] == ["--verify"] and len(argv) == 2:
        problems = verify(Path(argv[1]))
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"{len(listed_sources(MANIFEST.read_text())) - len(problems)} wheel(s) match")
        return 1 if problems else 0
    text = MANIFEST.read_text()
    found = _BLOCK.search(text)
    if found is None:
        print(f"{MANIFEST}: no '# wheels: begin' ... '# wheels: end' block", file=sys.stderr)
        return 1
    wheels = resolve([*base_requirements(), *BUILD_REQUIREMENTS])
    block = found["head"] + render(wheels, found["indent"]) + found["tail"]
    MANIFEST.write_text(text[:found.start()] + block + text[found.end():])
    print(f"{MANIFEST.relative_to(ROOT)}: {len(wheels)} wheels")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
