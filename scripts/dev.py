#!/usr/bin/env python3
"""Set up a private virtual environment and run ecpfs-viewer or its tests.

Needs only python3 (>= 3.11). Usage:
    python3 scripts/dev.py run [ecpfs-viewer arguments]   # GUI on the demo index by default
    python3 scripts/dev.py test [pytest arguments]        # the whole test suite
The environment lives in .venv/ beside this checkout and is refreshed whenever
pyproject.toml changes.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
STAMP = VENV / ".ecpfs-viewer-installed"


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_environment() -> Path:
    """Create .venv and install the project with its test extra when missing or stale."""
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if not venv_python().exists():
        print(f"Creating virtual environment in {VENV} ...", flush=True)
        venv.EnvBuilder(with_pip=True, clear=True).create(VENV)
    if not STAMP.exists() or STAMP.read_text().strip() != wanted:
        print("Installing ecpfs-viewer and its dependencies ...", flush=True)
        subprocess.run(
            [str(venv_python()), "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[test]"],
            check=True,
        )
        STAMP.write_text(wanted)
    return venv_python()


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in {"run", "test", "setup"}:
        print(__doc__)
        return 2
    python = ensure_environment()
    command, rest = argv[0], argv[1:]
    if command == "setup":
        return 0
    if command == "run":
        args = rest or ["--demo"]
        return subprocess.call([str(python), "-m", "ecpfs_viewer", *args], cwd=ROOT)
    return subprocess.call([str(python), "-m", "pytest", *rest], cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
